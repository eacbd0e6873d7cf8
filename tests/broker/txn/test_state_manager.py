"""TransactionStateManager on fakes (no sockets, no cluster): loading a __transaction_state partition,
appending transitions and what a failed append leaves behind, ownership, timeouts and expiration.

Expected values follow Kafka's TransactionStateManager: the latest record per id wins and a tombstone
removes the id; PREPARE_* transactions are re-driven after a load; a transition is applied only once
its record is durable; append errors become the coordinator errors of Kafka's appendTransactionToLog.
"""

from __future__ import annotations

import struct

import pytest

from kafka_txn_broker.clock import ManualClock
from kafka_txn_broker.configs.broker_config import BrokerConfig
from kafka_txn_broker.coordinator.loader import CoordinatorLoader
from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.errors import (
    KafkaStorageError,
    NotEnoughReplicasError,
    NotLeaderForPartitionError,
    UnknownTopicOrPartitionError,
)
from kafka_txn_broker.formats.partitioning import TXN_TOPIC
from kafka_txn_broker.formats.record_batch import build_batch, iter_records
from kafka_txn_broker.formats.transaction_log import TransactionLogValue, encode_key, encode_value
from kafka_txn_broker.formats.transactions import TWO_PC_TIMEOUT_MS, TransactionState
from kafka_txn_broker.txn.state_manager import CoordinatorError, PendingCompletion, TransactionStateManager
from kafka_txn_broker.txn.transaction_metadata import TransactionMetadata
from tests.broker.coordinator.fakes import Gate, run, settle
from tests.broker.txn.fakes import FakeMetadata, FakePartitionLog

S = TransactionState
NOW = 1_700_000_000_000


def make(partitions: int = 1, **config: object) -> tuple[TransactionStateManager, FakePartitionLog, ManualClock]:
    clock = ManualClock(NOW)
    log = FakePartitionLog()
    log.lead(*range(partitions))
    sm = TransactionStateManager(1, BrokerConfig(config), clock, log, FakeMetadata({TXN_TOPIC: partitions}))
    return sm, log, clock


def write(log: FakePartitionLog, tid: str, value: TransactionLogValue | None, version: int = 1) -> None:
    raw = None if value is None else encode_value(value, version)
    log.append(0, build_batch([(encode_key(tid), raw)], timestamp_ms=NOW))


def value(state: TransactionState, pid: int = 10, epoch: int = 0, parts: tuple[tuple[str, int], ...] = (),
          timeout: int = 60_000, start: int = -1) -> TransactionLogValue:
    return TransactionLogValue(pid, epoch, timeout, state, parts, NOW, start)


def begin(sm: TransactionStateManager, tid: str, pid: int = 42, timeout: int = 60_000) -> TransactionMetadata:
    """A new id with an Ongoing transaction on ("t", 0), through real appends."""
    epoch, md = sm.put_if_not_exists(TransactionMetadata(tid, pid, producer_epoch=0, txn_timeout_ms=timeout,
                                                         txn_last_update_timestamp=NOW))
    transit = md.prepare_add_partitions({("t", 0)}, sm.clock.millis(), 0)
    assert sm.append_transaction_to_log(tid, epoch, transit) == E.NONE
    return md


def test_load_replays_the_latest_record_per_id_and_re_drives_prepared_ones() -> None:
    sm, log, _clock = make()
    write(log, "a", value(S.EMPTY))
    write(log, "a", value(S.ONGOING, parts=(("t", 0),), start=NOW))
    write(log, "b", value(S.COMPLETE_COMMIT, pid=11, start=NOW))
    write(log, "b", None)  # expired
    write(log, "c", value(S.PREPARE_COMMIT, pid=12, epoch=3, parts=(("t", 1), ("u", 0)), start=NOW), version=0)
    log.append(0, build_batch([(struct.pack(">hh", 1, 1) + b"x", b"other record type")], timestamp_ms=NOW))
    log.append(0, build_batch([(encode_key("e"), b"\x00\x02" + encode_value(value(S.EMPTY), 1)[2:])],
                              timestamp_ms=NOW))  # a value version this coordinator does not know

    pending: list[PendingCompletion] = []
    sm.load_partition(0, coordinator_epoch=7, send_markers=pending.append)

    epoch, a = sm.get("a")
    assert epoch == 7 and a is not None
    assert (a.state, a.producer_id, a.topic_partitions, a.txn_start_timestamp) == (S.ONGOING, 10, {("t", 0)}, NOW)
    assert a.last_producer_epoch == -1  # Kafka does not persist it
    assert sm.get("b")[1] is None and sm.get("e")[1] is None
    [c] = pending
    assert (c.transactional_id, c.coordinator_epoch, c.commit) == ("c", 7, True)
    assert c.metadata.topic_partitions == {("t", 1), ("u", 0)}
    assert (c.transit.state, c.transit.producer_epoch) == (S.COMPLETE_COMMIT, 3)
    assert sm.owns(0, 7) and not sm.owns(0, 6)


def test_requests_during_a_load_are_told_to_wait() -> None:
    # Kafka's TransactionStateManager: an id of a partition still loading gets COORDINATOR_LOAD_IN_PROGRESS, and
    # ListTransactions too while any partition loads; both are served once the load is done.
    clock = ManualClock(NOW)
    log = FakePartitionLog()
    log.lead(0)
    for i in range(3):
        write(log, f"id-{i}", value(S.EMPTY, pid=10 + i))
    gate = Gate()
    sm = TransactionStateManager(1, BrokerConfig(), clock, log, FakeMetadata({TXN_TOPIC: 1}),
                                 CoordinatorLoader(log, 1, clock, gate))  # one batch per chunk

    async def scenario() -> list[object]:
        sm.load_partition(0, 1)
        await gate.reached(1)  # one of three records replayed
        seen: list[object] = []
        for tid in ("id-0", "id-2", "never-written"):
            with pytest.raises(CoordinatorError) as exc:
                sm.get(tid)
            seen.append(exc.value.code)
        seen.append(sm.list_transaction_states(set(), set(), -1, None, NOW)[0])
        gate.open_all()
        await settle()
        seen.append(sm.list_transaction_states(set(), set(), -1, None, NOW)[0])
        seen.append(sm.get("id-2")[1] is not None and sm.get("never-written")[1] is None)
        return seen

    wait = E.COORDINATOR_LOAD_IN_PROGRESS
    assert run(scenario()) == [wait, wait, wait, wait, E.NONE, True]


def test_a_load_replaced_by_a_load_at_a_newer_coordinator_epoch_hands_over_nothing() -> None:
    # Kafka's loadTransactionsForTxnTopicPartition: only the load of the current (partition, epoch) fills the
    # cache and sends the markers of the transactions it found in PREPARE_*.
    clock = ManualClock(NOW)
    log = FakePartitionLog()
    log.lead(0)
    write(log, "a", value(S.EMPTY))
    write(log, "p", value(S.PREPARE_ABORT, pid=12, parts=(("t", 1),), start=NOW))
    gate = Gate()
    sm = TransactionStateManager(1, BrokerConfig(), clock, log, FakeMetadata({TXN_TOPIC: 1}),
                                 CoordinatorLoader(log, 1, clock, gate))
    first: list[PendingCompletion] = []
    second: list[PendingCompletion] = []

    async def scenario() -> None:
        sm.load_partition(0, 1, first.append)
        await gate.reached(1)
        sm.load_partition(0, 2, second.append)  # elected again, at a newer epoch, before the first load ended
        assert sm.is_loading(0, 2) and not sm.is_loading(0, 1)
        gate.open_all()
        await settle()

    run(scenario())
    assert first == [] and [(p.transactional_id, p.coordinator_epoch, p.commit) for p in second] == [("p", 2, False)]
    assert sm.owns(0, 2) and sm.get("a") == (2, sm.get("a")[1]) and sm.holds(0)
    sm.remove_partition(0)
    assert not sm.holds(0)


def test_an_id_of_a_partition_this_node_does_not_own_is_not_coordinator() -> None:
    sm, _log, _clock = make()
    with pytest.raises(CoordinatorError) as exc:
        sm.get("a")
    assert exc.value.code == E.NOT_COORDINATOR
    sm.load_partition(0, 1)
    sm.remove_partition(0)
    with pytest.raises(CoordinatorError):
        sm.get("a")


@pytest.mark.parametrize("level, version", [(0, 0), (1, 1), (2, 1)])
def test_a_transition_is_written_then_applied(level: int, version: int) -> None:
    sm, log, _clock = make(**{"transaction.version": level})
    sm.load_partition(0, 3)
    md = begin(sm, "a")
    [(tid, written)] = log.records(0)
    assert tid == "a" and written is not None
    assert (written.state, written.producer_id, written.partitions, written.start_ms) == (
        S.ONGOING, 42, (("t", 0),), NOW)
    record = next(iter_records(log.batches[0][-1]))
    assert record.value is not None and struct.unpack_from(">h", record.value)[0] == version
    assert (md.state, md.pending_state, md.topic_partitions) == (S.ONGOING, None, {("t", 0)})


@pytest.mark.parametrize("failure, code", [
    (NotEnoughReplicasError("isr"), E.COORDINATOR_NOT_AVAILABLE),
    (E.for_code(E.NOT_ENOUGH_REPLICAS_AFTER_APPEND)("isr"), E.COORDINATOR_NOT_AVAILABLE),
    (E.for_code(E.REQUEST_TIMED_OUT)("slow"), E.COORDINATOR_NOT_AVAILABLE),
    (UnknownTopicOrPartitionError("gone"), E.COORDINATOR_NOT_AVAILABLE),
    (NotLeaderForPartitionError("moved"), E.NOT_COORDINATOR),
    (KafkaStorageError("disk"), E.NOT_COORDINATOR),
    (E.MessageTooLargeError("big"), E.UNKNOWN_SERVER_ERROR),
])
def test_a_failed_append_changes_nothing_and_unblocks_the_id(failure: Exception, code: int) -> None:
    sm, log, _clock = make()
    sm.load_partition(0, 3)
    epoch, md = sm.put_if_not_exists(TransactionMetadata("a", 42, producer_epoch=0, txn_last_update_timestamp=NOW))
    transit = md.prepare_add_partitions({("t", 0)}, NOW, 0)
    log.fail_with = failure
    assert sm.append_transaction_to_log("a", epoch, transit) == code
    assert (md.state, md.topic_partitions, md.pending_state) == (S.EMPTY, set(), None)
    assert log.records(0) == []


def test_a_failed_append_the_caller_retries_keeps_the_pending_state() -> None:
    sm, log, _clock = make()
    sm.load_partition(0, 3)
    epoch, md = sm.put_if_not_exists(TransactionMetadata("a", 42, producer_epoch=0, txn_last_update_timestamp=NOW))
    transit = md.prepare_add_partitions({("t", 0)}, NOW, 0)
    log.fail_with = NotEnoughReplicasError("isr")
    code = sm.append_transaction_to_log("a", epoch, transit, retry_on_error=lambda c: c == E.COORDINATOR_NOT_AVAILABLE)
    assert code == E.COORDINATOR_NOT_AVAILABLE and md.pending_state is S.ONGOING
    log.fail_with = None
    assert sm.append_transaction_to_log("a", epoch, transit) == E.NONE and md.state is S.ONGOING


def test_leadership_moving_during_the_append_answers_not_coordinator() -> None:
    sm, log, _clock = make()
    sm.load_partition(0, 3)
    epoch, md = sm.put_if_not_exists(TransactionMetadata("a", 42, producer_epoch=0, txn_last_update_timestamp=NOW))
    transit = md.prepare_add_partitions({("t", 0)}, NOW, 0)

    def move_away_and_back() -> None:  # a new coordinator epoch while the record is being written
        sm.remove_partition(0)
        sm.load_partition(0, 4)

    log.on_append.append(move_away_and_back)
    assert sm.append_transaction_to_log("a", epoch, transit) == E.NOT_COORDINATOR
    new_epoch, reloaded = sm.get("a")
    assert new_epoch == 4 and reloaded is not None and reloaded is not md
    assert reloaded.state is S.ONGOING  # the record was durable: the new coordinator read it from the log


def test_the_partition_count_comes_from_the_topic_else_the_config() -> None:
    clock, log = ManualClock(NOW), FakePartitionLog()
    config = BrokerConfig({"transaction.state.log.num.partitions": 50})
    assert TransactionStateManager(1, config, clock, log, FakeMetadata({TXN_TOPIC: 7})).partition_count == 7
    assert TransactionStateManager(1, config, clock, log, FakeMetadata()).partition_count == 50


def test_timed_out_transactions_on_the_monotonic_clock_but_never_2pc_ones() -> None:
    sm, _log, clock = make()
    sm.load_partition(0, 1)
    begin(sm, "short", pid=1, timeout=1_000)
    begin(sm, "2pc", pid=2, timeout=TWO_PC_TIMEOUT_MS)
    clock.set_wall(NOW + 10 * 60_000)  # a wall-clock step is not elapsed time
    assert sm.timed_out_transactions(clock.millis()) == []
    clock.advance(1_001)
    assert sm.timed_out_transactions(clock.millis()) == [("short", 1, 0)]


def test_expired_ids_get_a_tombstone_and_leave_the_cache() -> None:
    sm, log, clock = make(**{"transactional.id.expiration.ms": 1_000})
    write(log, "idle", value(S.COMPLETE_COMMIT, start=NOW))
    write(log, "busy", value(S.ONGOING, parts=(("t", 0),), start=NOW))
    sm.load_partition(0, 1)
    clock.advance(1_000)
    assert sm.remove_expired_transactional_ids(clock.millis()) == ["idle"]  # Ongoing never expires
    assert log.records(0)[-1] == ("idle", None)
    assert sm.get("idle")[1] is None and sm.get("busy")[1] is not None


def test_an_expiration_whose_tombstone_fails_keeps_the_id() -> None:
    sm, log, clock = make(**{"transactional.id.expiration.ms": 1_000})
    write(log, "idle", value(S.EMPTY))
    sm.load_partition(0, 1)
    clock.advance(1_000)
    log.fail_with = NotEnoughReplicasError("isr")
    assert sm.remove_expired_transactional_ids(clock.millis()) == []
    md = sm.get("idle")[1]
    assert md is not None and md.pending_state is None and md.state is S.EMPTY


def test_loaded_transactions_keep_their_age() -> None:
    # TransactionStateManager.timedOutTransactions: txnStartTimestamp + txnTimeoutMs < now, so a transaction
    # loaded 50 s after it started (a coordinator moved) times out 10 s later, not a full timeout later; and
    # transactional.id.expiration.ms counts from txnLastUpdateTimestamp the same way.
    sm, log, clock = make(**{"transactional.id.expiration.ms": 20_000})
    write(log, "running", TransactionLogValue(10, 0, 60_000, S.ONGOING, (("t", 0),), NOW, NOW))
    write(log, "idle", TransactionLogValue(11, 0, 60_000, S.COMPLETE_COMMIT, (), NOW, NOW))
    clock.advance(50_000)
    sm.load_partition(0, 1)
    clock.advance(10_000)  # exactly 60 s since the start
    assert sm.timed_out_transactions(clock.millis()) == []
    clock.advance(1)
    assert sm.timed_out_transactions(clock.millis()) == [("running", 10, 0)]
    assert sm.remove_expired_transactional_ids(clock.millis()) == ["idle"]  # 60 s idle >= 20 s


def test_loaded_timestamps_in_the_future_count_as_now() -> None:
    sm, log, clock = make(**{"transactional.id.expiration.ms": 20_000})
    later = NOW + 3_600_000  # written by a coordinator whose clock ran ahead
    write(log, "running", TransactionLogValue(10, 0, 60_000, S.ONGOING, (("t", 0),), later, later))
    write(log, "idle", TransactionLogValue(11, 0, 60_000, S.EMPTY, (), later, -1))
    sm.load_partition(0, 1)
    clock.advance(59_999)
    assert sm.timed_out_transactions(clock.millis()) == []
    assert sm.remove_expired_transactional_ids(clock.millis()) == ["idle"]  # 60 s since the load
    clock.advance(2)
    assert sm.timed_out_transactions(clock.millis()) == [("running", 10, 0)]


def test_ids_without_a_mark_are_measured_on_the_wall_clock() -> None:
    # An id put in the cache without a transition of ours (as the coordinator's first InitProducerId does)
    # has no monotonic mark: its recorded timestamps are used, as Kafka uses them.
    sm, _log, clock = make(**{"transactional.id.expiration.ms": 30_000})
    sm.load_partition(0, 1)
    for tid, start, state in (("old", NOW - 61_000, S.ONGOING), ("young", NOW - 59_000, S.ONGOING),
                              ("ahead", NOW + 5_000, S.ONGOING), ("stale", NOW - 30_000, S.EMPTY),
                              ("fresh", NOW - 29_999, S.EMPTY)):
        sm.put_if_not_exists(TransactionMetadata(tid, 7, producer_epoch=0, state=state,
                                                 topic_partitions={("t", 0)} if state is S.ONGOING else set(),
                                                 txn_start_timestamp=start, txn_last_update_timestamp=start))
    assert sm.timed_out_transactions(clock.millis()) == [("old", 7, 0)]
    assert sm.remove_expired_transactional_ids(clock.millis()) == ["stale"]


def test_the_timeout_scan_skips_what_it_must_and_goes_on() -> None:
    sm, _log, clock = make()
    sm.load_partition(0, 1)
    busy = begin(sm, "busy", pid=1, timeout=1_000)
    busy.pending_state = S.PREPARE_COMMIT  # its end is being written
    done = begin(sm, "done", pid=2, timeout=1_000)
    done.state = S.COMPLETE_COMMIT
    begin(sm, "2pc", pid=3, timeout=TWO_PC_TIMEOUT_MS)
    begin(sm, "late", pid=4, timeout=1_000)
    clock.advance(1_001)
    assert sm.timed_out_transactions(clock.millis()) == [("late", 4, 0)]


def test_a_late_partition_does_not_move_the_start_mark() -> None:
    sm, _log, clock = make()
    sm.load_partition(0, 1)
    md = begin(sm, "a", pid=1, timeout=10_000)
    clock.advance(6_000)
    epoch, _ = sm.get("a")
    assert sm.append_transaction_to_log("a", epoch, md.prepare_add_partitions({("t", 1)}, clock.millis(), 0)) == E.NONE
    clock.advance(4_001)
    assert sm.timed_out_transactions(clock.millis()) == [("a", 1, 0)]


@pytest.mark.parametrize(("timeout_ms", "valid"), [(0, False), (1, True), (900_000, True), (900_001, False),
                                                   (-1, False)])
def test_transaction_timeout_bounds(timeout_ms: int, valid: bool) -> None:
    # InitProducerId: 0 < transaction.timeout.ms <= transaction.max.timeout.ms (default 15 min), else
    # INVALID_TRANSACTION_TIMEOUT.
    sm, _log, _clock = make()
    assert sm.validate_transaction_timeout_ms(timeout_ms) is valid
