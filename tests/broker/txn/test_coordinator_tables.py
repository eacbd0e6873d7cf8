"""TransactionCoordinator's answers, state by state, on fakes (tests/broker/txn/fakes.py).

Every expected answer is Kafka's: TransactionCoordinator.scala's endTransactionWithTV1 and endTransaction
(TV2), handleInitProducerId, handleAddPartitionsToTransaction, handleVerifyPartitionsInTransaction,
handleDescribeTransactions / handleListTransactions, the transaction-abort scheduler and onElection /
onResignation. Each request is checked in Kafka's order: the producer id, the epoch, a pending transition,
then the state.
"""

from __future__ import annotations

import asyncio

import pytest

from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.partitioning import TXN_TOPIC
from kafka_txn_broker.formats.transactions import MAX_EPOCH, TransactionState
from kafka_txn_broker.metadata.topics import PartitionState
from tests.broker.txn.fakes import FakeCoordinator

S = TransactionState
TP = ("t", 0)


def in_state(c: FakeCoordinator, state: TransactionState, tv: int) -> tuple[int, int]:
    """Drive 'app' into `state` with real requests; returns (producer id, the coordinator's epoch now)."""
    _, pid, epoch = c.init("app")
    if state is not S.EMPTY:
        assert c.add("app", pid, epoch, TP, tv=tv) == E.NONE
    if state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
        c.markers.answer(TP, E.NOT_LEADER_OR_FOLLOWER)  # the marker waits: the transaction stays prepared
    if state in (S.PREPARE_COMMIT, S.COMPLETE_COMMIT, S.PREPARE_ABORT, S.COMPLETE_ABORT):
        assert c.end("app", pid, epoch, state in (S.PREPARE_COMMIT, S.COMPLETE_COMMIT), tv=tv)[0] == E.NONE
    md = c.metadata("app")
    assert md is not None and md.state is state
    return pid, md.producer_epoch


EPOCHS = {"current": 0, "previous": -1, "next": 1, "older": -2}
# (state, commit?, the request's epoch relative to the coordinator's, expected code)
TV1 = [
    (S.ONGOING, True, "current", E.NONE),
    (S.ONGOING, False, "current", E.NONE),
    (S.ONGOING, True, "previous", E.PRODUCER_FENCED),
    (S.ONGOING, False, "next", E.PRODUCER_FENCED),  # a client's epoch must match exactly
    (S.EMPTY, True, "current", E.INVALID_TXN_STATE),
    (S.EMPTY, False, "current", E.INVALID_TXN_STATE),
    (S.PREPARE_COMMIT, True, "current", E.CONCURRENT_TRANSACTIONS),
    (S.PREPARE_COMMIT, False, "current", E.CONCURRENT_TRANSACTIONS),  # the pending COMPLETE_COMMIT comes first
    (S.PREPARE_ABORT, False, "current", E.CONCURRENT_TRANSACTIONS),
    (S.COMPLETE_COMMIT, True, "current", E.NONE),  # a retry of the commit
    (S.COMPLETE_COMMIT, False, "current", E.INVALID_TXN_STATE),
    (S.COMPLETE_ABORT, False, "current", E.NONE),
    (S.COMPLETE_ABORT, True, "current", E.INVALID_TXN_STATE),
    (S.COMPLETE_ABORT, True, "older", E.PRODUCER_FENCED),
]
# (state, commit?, epoch, expected (code, epoch in the answer relative to the coordinator's, or None: -1))
TV2 = [
    (S.ONGOING, True, "current", (E.NONE, 1)),  # every end bumps the epoch, EndTxn v5 returns it
    (S.ONGOING, False, "current", (E.NONE, 1)),
    (S.ONGOING, True, "previous", (E.PRODUCER_FENCED, None)),
    (S.ONGOING, True, "next", (E.PRODUCER_FENCED, None)),
    (S.EMPTY, False, "current", (E.NONE, 1)),  # abort when unsure, no partition added
    (S.EMPTY, True, "current", (E.INVALID_TXN_STATE, None)),
    (S.EMPTY, False, "previous", (E.PRODUCER_FENCED, None)),
    (S.PREPARE_COMMIT, True, "previous", (E.CONCURRENT_TRANSACTIONS, None)),  # its retry, markers in flight
    (S.PREPARE_COMMIT, True, "current", (E.PRODUCER_FENCED, None)),  # Prepare*: only a retry is valid
    (S.PREPARE_ABORT, False, "previous", (E.CONCURRENT_TRANSACTIONS, None)),
    (S.COMPLETE_COMMIT, True, "previous", (E.NONE, 0)),  # a retry: answered, no second bump
    (S.COMPLETE_COMMIT, False, "previous", (E.INVALID_TXN_STATE, None)),
    (S.COMPLETE_COMMIT, True, "current", (E.INVALID_TXN_STATE, None)),
    (S.COMPLETE_COMMIT, False, "current", (E.NONE, 1)),
    (S.COMPLETE_COMMIT, False, "older", (E.PRODUCER_FENCED, None)),
    (S.COMPLETE_ABORT, False, "previous", (E.NONE, 0)),
    (S.COMPLETE_ABORT, True, "previous", (E.INVALID_TXN_STATE, None)),
    (S.COMPLETE_ABORT, False, "current", (E.NONE, 1)),
    (S.COMPLETE_ABORT, True, "current", (E.INVALID_TXN_STATE, None)),
]


def _id(state: TransactionState, commit: bool, epoch: str) -> str:
    return f"{state.state_name}-{'commit' if commit else 'abort'}-{epoch}"


@pytest.mark.parametrize(("state", "commit", "epoch", "code"), TV1, ids=[_id(*c[:3]) for c in TV1])
def test_end_txn_tv1(coordinator: FakeCoordinator, state: TransactionState, commit: bool, epoch: str,
                     code: int) -> None:
    pid, current = in_state(coordinator, state, 0)
    assert coordinator.end("app", pid, current + EPOCHS[epoch], commit) == (code, -1, -1)
    assert coordinator.end("app", pid + 7, current, commit) == (E.INVALID_PRODUCER_ID_MAPPING, -1, -1)


@pytest.mark.parametrize(("state", "commit", "epoch", "answer"), TV2, ids=[_id(*c[:3]) for c in TV2])
def test_end_txn_tv2(coordinator: FakeCoordinator, state: TransactionState, commit: bool, epoch: str,
                     answer: tuple[int, int | None]) -> None:
    pid, current = in_state(coordinator, state, 2)
    code, bump = answer
    expected = (code, pid, current + bump) if bump is not None else (code, -1, -1)
    assert coordinator.end("app", pid, current + EPOCHS[epoch], commit, tv=2) == expected
    if code == E.NONE and bump:
        md = coordinator.metadata("app")
        target = S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT
        assert md is not None and (md.state, md.producer_epoch, md.last_producer_epoch) == (
            target, current + 1, current)


def test_end_txn_request_errors(coordinator: FakeCoordinator) -> None:
    pid, epoch = in_state(coordinator, S.ONGOING, 2)
    assert coordinator.coordinator.end_transaction("", pid, epoch, True, client_tv=2) == (E.INVALID_REQUEST, -1, -1)
    assert coordinator.end("nobody", pid, epoch, True, tv=2) == (E.INVALID_PRODUCER_ID_MAPPING, -1, -1)
    assert coordinator.end("app", pid + 1, epoch, True, tv=2) == (E.INVALID_PRODUCER_ID_MAPPING, -1, -1)
    coordinator.state.remove_partition(0)  # no longer the coordinator
    assert coordinator.end("app", pid, epoch, True, tv=2) == (E.NOT_COORDINATOR, -1, -1)


def test_tv2_retry_after_an_epoch_overflow_is_recognised(coordinator: FakeCoordinator) -> None:
    # endTransaction's retryOnOverflow: prevProducerId == producerId, the request at Short.MAX_VALUE - 1 and the
    # coordinator at epoch 0 of the next producer id.
    _, pid, _ = coordinator.init("app")
    md = coordinator.metadata("app")
    assert md is not None
    md.producer_epoch = MAX_EPOCH - 1
    assert coordinator.add("app", pid, MAX_EPOCH - 1, TP, tv=2) == E.NONE
    code, new_pid, epoch = coordinator.end("app", pid, MAX_EPOCH - 1, True, tv=2)
    assert (code, epoch) == (E.NONE, 0) and new_pid != pid
    assert coordinator.end("app", pid, MAX_EPOCH - 1, True, tv=2) == (E.NONE, new_pid, 0)  # the retry
    assert coordinator.end("app", pid, MAX_EPOCH - 1, False, tv=2)[0] == E.INVALID_TXN_STATE
    assert coordinator.end("app", pid, MAX_EPOCH - 2, True, tv=2)[0] == E.INVALID_PRODUCER_ID_MAPPING
    assert coordinator.add("app", new_pid, 0, TP, tv=2) == E.NONE  # the client goes on with the new id


def test_the_next_producer_id_is_busy_until_the_overflowed_transaction_completes(
        coordinator: FakeCoordinator) -> None:
    _, pid, _ = coordinator.init("app")
    md = coordinator.metadata("app")
    assert md is not None
    md.producer_epoch = MAX_EPOCH - 1
    assert coordinator.add("app", pid, MAX_EPOCH - 1, TP, tv=2) == E.NONE
    coordinator.markers.answer(TP, E.NOT_LEADER_OR_FOLLOWER)  # PREPARE_COMMIT stays
    _, new_pid, _ = coordinator.end("app", pid, MAX_EPOCH - 1, True, tv=2)
    assert coordinator.add("app", new_pid, 0, ("t", 1), tv=2) == E.CONCURRENT_TRANSACTIONS
    assert coordinator.add("app", new_pid + 1, 0, ("t", 1), tv=2) == E.INVALID_PRODUCER_ID_MAPPING
    coordinator.coordinator.marker_channel.drive()
    assert coordinator.add("app", new_pid, 0, ("t", 1), tv=2) == E.NONE


# ---- InitProducerId, AddPartitionsToTxn ------------------------------------------------------------------------
@pytest.mark.parametrize("state", [S.PREPARE_COMMIT, S.PREPARE_ABORT])
def test_init_and_add_while_markers_are_in_flight(coordinator: FakeCoordinator, state: TransactionState) -> None:
    pid, epoch = in_state(coordinator, state, 0)
    assert coordinator.init("app") == (E.CONCURRENT_TRANSACTIONS, -1, -1)
    assert coordinator.add("app", pid, epoch, ("t", 1)) == E.CONCURRENT_TRANSACTIONS
    assert coordinator.coordinator.verify_partitions_in_transaction("app", pid, epoch, [TP]) == {
        TP: E.CONCURRENT_TRANSACTIONS}


def test_init_producer_id_answers(coordinator: FakeCoordinator) -> None:
    c = coordinator
    assert c.coordinator.init_producer_id(None, 1000) == (E.NONE, 1000, 0)  # idempotent only: epoch 0
    assert asyncio.run(c.coordinator.handle_init_producer_id("app", 1000)) == (E.NONE, 1001, 0)
    md = c.metadata("app")
    assert md is not None and (md.txn_timeout_ms, md.producer_id, md.producer_epoch) == (1000, 1001, 0)
    assert asyncio.run(c.coordinator.handle_init_producer_id("app", 2000, 1001, 0)) == (E.NONE, 1001, 1)
    assert c.init("app", 60000, 1001, 1, ) == (E.NONE, 1001, 2)
    assert c.init("app", 60000, 5, 2) == (E.PRODUCER_FENCED, -1, -1)
    md = c.metadata("app")
    assert md is not None and md.txn_timeout_ms == 60000  # the latest request's timeout
    c.state.remove_partition(0)
    assert c.init("app") == (E.NOT_COORDINATOR, -1, -1)


def test_init_producer_id_fences_an_ongoing_transaction_even_if_the_abort_write_fails(
        coordinator: FakeCoordinator) -> None:
    # prepareFenceProducerEpoch, then the abort; a failed write leaves hasFailedEpochFence (KAFKA-9666), so the
    # retry does not bump the epoch twice.
    pid, epoch = in_state(coordinator, S.ONGOING, 0)
    coordinator.log.fail_with = OSError("disk full")
    code, _, _ = coordinator.init("app")
    assert code not in (E.NONE, E.CONCURRENT_TRANSACTIONS)
    md = coordinator.metadata("app")
    assert md is not None and md.has_failed_epoch_fence and md.pending_state is None and md.state is S.ONGOING
    coordinator.log.fail_with = None
    assert coordinator.init("app") == (E.CONCURRENT_TRANSACTIONS, -1, -1)
    md = coordinator.metadata("app")
    assert md is not None and (md.state, md.producer_epoch) == (S.COMPLETE_ABORT, epoch + 1)
    assert coordinator.init("app") == (E.NONE, pid, epoch + 2)


def test_add_partitions_answers(coordinator: FakeCoordinator) -> None:
    pid, epoch = in_state(coordinator, S.EMPTY, 0)
    assert coordinator.coordinator.add_partitions_to_transaction("", pid, epoch, [TP], client_tv=0) == E.INVALID_REQUEST
    assert coordinator.add("app", pid, epoch, TP, ("t", 1)) == E.NONE
    written = coordinator.records_written()
    assert coordinator.add("app", pid, epoch, ("t", 1)) == E.NONE  # already in: no write
    assert coordinator.records_written() == written
    assert coordinator.add("app", pid, epoch, ("t", 2)) == E.NONE  # a new one: written
    assert coordinator.records_written() == written + 1
    md = coordinator.metadata("app")
    assert md is not None and md.topic_partitions == {TP, ("t", 1), ("t", 2)}
    md.pending_state = S.PREPARE_COMMIT  # some transition in flight
    assert coordinator.add("app", pid, epoch, ("t", 2)) == E.CONCURRENT_TRANSACTIONS
    coordinator.state.remove_partition(0)
    assert coordinator.add("app", pid, epoch, ("t", 2)) == E.NOT_COORDINATOR


def test_verify_partitions_when_not_the_coordinator(coordinator: FakeCoordinator) -> None:
    pid, epoch = in_state(coordinator, S.ONGOING, 0)
    coordinator.state.remove_partition(0)
    assert coordinator.coordinator.verify_partitions_in_transaction("app", pid, epoch, [TP, ("t", 1)]) == {
        TP: E.NOT_COORDINATOR, ("t", 1): E.NOT_COORDINATOR}


# ---- DescribeTransactions, ListTransactions ----------------------------------------------------------------------
def test_describe_and_list(coordinator: FakeCoordinator) -> None:
    c = coordinator.coordinator
    pid, _ = in_state(coordinator, S.ONGOING, 0)
    assert c.describe_transaction("") == (E.INVALID_REQUEST, None)
    assert c.describe_transaction("nobody") == (E.TRANSACTIONAL_ID_NOT_FOUND, None)
    code, md = c.describe_transaction("app")
    assert code == E.NONE and md is not None and md.state is S.ONGOING
    md.state = S.DEAD  # being expired: Kafka answers as if it were gone
    assert c.describe_transaction("app") == (E.TRANSACTIONAL_ID_NOT_FOUND, None)
    md.state = S.ONGOING
    coordinator.clock.advance(5_000)
    code, unknown, listed = c.list_transactions({pid}, {"Ongoing", "Bogus"}, 4_000, None)
    assert (code, unknown, [(t.transactional_id, t.state) for t in listed]) == (E.NONE, ["Bogus"], [("app", "Ongoing")])
    assert c.list_transactions({pid + 1}, set(), -1, None)[2] == []
    assert c.list_transactions(set(), set(), 5_000, None)[2] == []  # running 5 s, not longer
    coordinator.state.remove_partition(0)
    assert c.describe_transaction("app") == (E.NOT_COORDINATOR, None)


def test_list_transactions_while_offline() -> None:
    c = FakeCoordinator()
    c.coordinator._online = lambda: False
    assert c.coordinator.list_transactions(set(), set(), -1, None) == (E.COORDINATOR_NOT_AVAILABLE, [], [])


# ---- the reaper and the periodic work -----------------------------------------------------------------------------
def test_tick_runs_the_reaper_and_the_expiration_at_their_intervals() -> None:
    c = FakeCoordinator({"transaction.abort.timed.out.transaction.cleanup.interval.ms": 1_000,
                         "transaction.remove.expired.transaction.cleanup.interval.ms": 5_000,
                         "transactional.id.expiration.ms": 4_500})
    _, pid, epoch = c.init("idle", 500)
    _, pid2, epoch2 = c.init("busy", 500)
    assert c.add("busy", pid2, epoch2, TP) == E.NONE
    c.clock.advance(999)
    c.coordinator.tick(c.clock.millis())
    assert c.metadata("busy").state is S.ONGOING  # type: ignore[union-attr]  # the reaper runs after 1 s
    c.clock.advance(1)
    c.coordinator.tick(c.clock.millis())
    assert c.metadata("busy").state is S.COMPLETE_ABORT  # type: ignore[union-attr]
    c.clock.advance(3_999)
    c.coordinator.tick(c.clock.millis())
    assert c.metadata("idle") is not None  # idle 5 s > 4.5 s, but the expiration runs every 5 s
    c.clock.advance(1)
    c.coordinator.tick(c.clock.millis())
    assert c.metadata("idle") is None and c.metadata("busy") is not None  # busy's abort: 4 s ago


def test_the_reaper_aborts_every_timed_out_transaction_and_skips_busy_ones(coordinator: FakeCoordinator) -> None:
    c = coordinator
    ids = ["a", "b", "c"]
    for txn_id in ids:
        _, pid, epoch = c.init(txn_id, 1_000)
        assert c.add(txn_id, pid, epoch, TP) == E.NONE
    md_b = c.metadata("b")
    assert md_b is not None
    md_b.pending_state = S.PREPARE_COMMIT  # its end is being written: left alone
    c.clock.advance(1_001)
    assert sorted(c.coordinator.abort_timed_out_transactions(c.clock.millis())) == ["a", "c"]
    md_b.pending_state = None
    c.log.fail_with = OSError("disk full")
    assert c.coordinator.abort_timed_out_transactions(c.clock.millis()) == []  # the write failed: not aborted
    c.log.fail_with = None
    assert c.coordinator.abort_timed_out_transactions(c.clock.millis()) == ["b"]
    for txn_id in ids:
        md = c.metadata(txn_id)
        assert md is not None and md.state is S.COMPLETE_ABORT


# ---- leadership of __transaction_state ---------------------------------------------------------------------------
def _txn_partition(leader: int, epoch: int) -> PartitionState:
    return PartitionState(TXN_TOPIC, 0, [0, 1], leader, epoch, [0, 1])


def test_election_loads_and_redrives_and_resignation_unloads(coordinator: FakeCoordinator) -> None:
    c = coordinator
    pid, epoch = in_state(c, S.PREPARE_COMMIT, 0)
    channel = c.coordinator.marker_channel
    c.coordinator.on_leadership_change([_txn_partition(1, 2), PartitionState("t", 0, [0], 0, 5, [0])])
    assert not c.state.owns(0) and not channel.pending  # resigned: cache and markers dropped
    c.markers.answer(TP, E.NOT_LEADER_OR_FOLLOWER)
    c.coordinator.on_leadership_change([_txn_partition(0, 3)])
    assert c.state.owns(0, 3) and "app" in channel.pending  # elected: loaded, PREPARE_COMMIT re-driven
    c.coordinator.on_leadership_change([_txn_partition(0, 3)])  # the same epoch again: nothing reloaded
    assert "app" in channel.pending
    channel.drive()
    md = c.metadata("app")
    assert md is not None and (md.state, md.producer_id, md.producer_epoch) == (S.COMPLETE_COMMIT, pid, epoch)
    assert c.markers.sent[-1][1:] == (TP, pid, epoch, True, 3, 0)  # written at the new coordinator epoch


def test_an_offline_node_does_not_become_coordinator() -> None:
    c = FakeCoordinator()
    c.state.remove_partition(0)
    c.coordinator._online = lambda: False
    c.coordinator.on_leadership_change([_txn_partition(0, 4)])
    assert not c.state.owns(0)


def test_each_scan_waits_its_interval_from_the_last_scan_not_from_the_start() -> None:
    # Kafka schedules both tasks at a fixed period (TransactionCoordinator.startup: abortTimedOutTransactions
    # every transaction.abort.timed.out.transaction.cleanup.interval.ms, removeExpiredTransactionalIds every
    # transaction.remove.expired.transaction.cleanup.interval.ms): the next run comes a whole period after the
    # previous one, so a transaction that times out just after a scan waits for the next.
    c = FakeCoordinator({"transaction.abort.timed.out.transaction.cleanup.interval.ms": 1_000,
                         "transaction.remove.expired.transaction.cleanup.interval.ms": 5_000,
                         "transactional.id.expiration.ms": 4_500})
    c.clock.advance(1_000)
    c.coordinator.tick(c.clock.millis())  # the first abort scan, at 1 s
    _, pid, epoch = c.init("late", 500)
    assert c.add("late", pid, epoch, TP) == E.NONE
    c.clock.advance(600)  # timed out at 1.5 s, but the next scan is due at 2 s
    c.coordinator.tick(c.clock.millis())
    assert c.metadata("late").state is S.ONGOING  # type: ignore[union-attr]
    c.clock.advance(400)
    c.coordinator.tick(c.clock.millis())
    assert c.metadata("late").state is S.COMPLETE_ABORT  # type: ignore[union-attr]
    c.init("idle", 500)  # at 2 s
    c.clock.advance(3_000)
    c.coordinator.tick(c.clock.millis())  # the first expiration scan, at 5 s: "late" ended 3 s ago, "idle" 3 s
    assert c.metadata("idle") is not None and c.metadata("late") is not None
    c.clock.advance(2_000)  # 7 s: both idle for more than 4.5 s, but the next expiration scan is due at 10 s
    c.coordinator.tick(c.clock.millis())
    assert c.metadata("idle") is not None and c.metadata("late") is not None
    c.clock.advance(3_000)  # exactly one period after the last scan
    c.coordinator.tick(c.clock.millis())
    assert c.metadata("idle") is None and c.metadata("late") is None
