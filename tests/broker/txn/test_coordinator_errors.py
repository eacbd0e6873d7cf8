"""TransactionCoordinator: the exact error of each refusal, on fakes (tests/broker/txn/fakes.py).

Each expected code is Kafka's (TransactionCoordinator.scala): handleInitProducerId (isValidProducerId, the
Prepare* and Dead answers), endTransaction for TV1 and TV2 (the PrepareCommit / PrepareAbort table, the
epoch rule while an epoch fence is pending), the failed-fence flag (KAFKA-9666), onElection, the
transaction-abort task, and the coordinator errors an append failure becomes.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re

import pytest

from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.errors import KafkaStorageError, NotEnoughReplicasError
from kafka_txn_broker.formats.partitioning import TXN_TOPIC
from kafka_txn_broker.formats.transactions import MAX_EPOCH, TWO_PC_TIMEOUT_MS, TransactionState
from kafka_txn_broker.metadata.topics import PartitionState
from kafka_txn_broker.txn.coordinator import FAULT_ENV, FAULT_EXIT_AFTER_PREPARE_COMMIT
from kafka_txn_broker.txn.transaction_metadata import IllegalTransitionError, TransactionMetadata
from tests.broker.txn.fakes import FakeCoordinator

S = TransactionState
TP = ("t", 0)
TV1 = {"transaction.version": 1}
COORDINATOR_LOG = "kafka_txn_broker.txn.coordinator"


def ongoing(c: FakeCoordinator, txn_id: str = "app", timeout_ms: int = 60_000, tv: int = 0) -> tuple[int, int]:
    code, pid, epoch = c.init(txn_id, timeout_ms)
    assert code == E.NONE and c.add(txn_id, pid, epoch, TP, tv=tv) == E.NONE
    return pid, epoch


def meta(c: FakeCoordinator, txn_id: str = "app") -> TransactionMetadata:
    md = c.metadata(txn_id)
    assert md is not None
    return md


def txn_partition(leader: int, epoch: int) -> PartitionState:
    return PartitionState(TXN_TOPIC, 0, [0, 1], leader, epoch, [0, 1])


# ---- Prepare* with nothing pending: the COMPLETE_* record could not be written ----------------------------------
def prepared_without_completion(c: FakeCoordinator, commit: bool, tv: int) -> tuple[int, int]:
    """End a transaction whose COMPLETE_* write then fails for good: it stays Prepare*, nothing pending."""
    pid, epoch = ongoing(c, tv=tv)
    c.markers.answer(TP, E.NOT_LEADER_OR_FOLLOWER)  # the marker waits: PREPARE_* is durable, no COMPLETE_* yet
    assert c.end("app", pid, epoch, commit, tv=tv)[0] == E.NONE
    c.log.fail_with = KafkaStorageError("the __transaction_state disk failed")
    c.coordinator.marker_channel.drive()  # the marker lands; the COMPLETE_* append fails (not retried)
    c.log.fail_with = None
    md = meta(c)
    assert (md.state, md.pending_state) == (S.PREPARE_COMMIT if commit else S.PREPARE_ABORT, None)
    assert not c.coordinator.marker_channel.pending
    return pid, epoch


@pytest.mark.parametrize("tv", [0, 2])
@pytest.mark.parametrize("commit", [True, False])
def test_an_end_while_prepared_is_concurrent_for_the_same_result_else_invalid(commit: bool, tv: int) -> None:
    # endTransaction (TV1 and TV2), PrepareCommit / PrepareAbort: the same result is in progress
    # (CONCURRENT_TRANSACTIONS, retry later), the other result is INVALID_TXN_STATE. A TV2 client retries with the
    # epoch it sent (the coordinator's is one more).
    c = FakeCoordinator()
    pid, epoch = prepared_without_completion(c, commit, tv)
    assert c.end("app", pid, epoch, commit, tv=tv) == (E.CONCURRENT_TRANSACTIONS, -1, -1)
    assert c.end("app", pid, epoch, not commit, tv=tv) == (E.INVALID_TXN_STATE, -1, -1)


@pytest.mark.parametrize("commit", [True, False])
def test_init_producer_id_while_prepared_is_concurrent(commit: bool) -> None:
    # handleInitProducerId, PrepareAbort | PrepareCommit: CONCURRENT_TRANSACTIONS (the producer backs off and retries).
    c = FakeCoordinator(TV1)
    prepared_without_completion(c, commit, 0)
    assert c.init("app") == (E.CONCURRENT_TRANSACTIONS, -1, -1)


# ---- states a coordinator must never be in ------------------------------------------------------------------------
def test_end_txn_on_a_dead_id_is_a_fatal_error_naming_the_state() -> None:
    # endTransaction, Dead | PrepareEpochFence: Kafka logs it as fatal and throws IllegalStateException.
    c = FakeCoordinator(TV1)
    pid, epoch = ongoing(c)
    assert c.end("app", pid, epoch, False)[0] == E.NONE
    meta(c).state = S.DEAD
    with pytest.raises(IllegalTransitionError, match="illegal state Dead"):
        c.end("app", pid, epoch, False)


def test_init_producer_id_on_a_dead_id_fails_and_logs_the_state(caplog: pytest.LogCaptureFixture) -> None:
    # handleInitProducerId, Dead | PrepareEpochFence: IllegalStateException, the request fails (UNKNOWN_SERVER_ERROR).
    c = FakeCoordinator()
    c.init("app")
    meta(c).state = S.DEAD
    with caplog.at_level(logging.ERROR, logger=COORDINATOR_LOG):
        assert c.init("app") == (E.UNKNOWN_SERVER_ERROR, -1, -1)
    assert any("app is in state Dead" in r.getMessage() for r in caplog.records)


# ---- InitProducerId -----------------------------------------------------------------------------------------------
def test_the_previous_producer_id_is_accepted_only_with_an_exhausted_epoch() -> None:
    # isValidProducerId: a request naming the previous producer id is a retry only if its epoch is exhausted; with any
    # other epoch it is a zombie, fenced even when its epoch matches the new producer id's.
    c = FakeCoordinator()
    _, pid, _ = c.init("app")
    meta(c).producer_epoch = MAX_EPOCH - 1
    code, new_pid, epoch = c.init("app", 60_000, pid, MAX_EPOCH - 1)
    assert (code, epoch) == (E.NONE, 0) and new_pid != pid
    assert c.init("app", 60_000, pid, 0) == (E.PRODUCER_FENCED, -1, -1)
    md = meta(c)
    assert (md.producer_id, md.producer_epoch) == (new_pid, 0)


def test_a_first_init_producer_id_whose_write_fails_leaves_the_id_as_created() -> None:
    # handleInitProducerId creates the metadata (Empty, epoch -1, the request's timeout, updated now) and puts it in
    # the cache before the write; the append error becomes COORDINATOR_NOT_AVAILABLE. The id then expires
    # transactional.id.expiration.ms after its creation, like any idle id.
    c = FakeCoordinator({"transactional.id.expiration.ms": 60_000})
    created = c.clock.millis()
    c.log.fail_with = NotEnoughReplicasError("the __transaction_state ISR is too small")
    assert c.init("app", 5_000) == (E.COORDINATOR_NOT_AVAILABLE, -1, -1)
    c.log.fail_with = None
    code, md = c.coordinator.describe_transaction("app")
    assert code == E.NONE and md is not None
    assert (md.state, md.producer_epoch, md.txn_timeout_ms, md.txn_last_update_timestamp) == (
        S.EMPTY, -1, 5_000, created)
    c.clock.advance(59_999)
    assert c.state.remove_expired_transactional_ids(c.clock.millis()) == []
    c.clock.advance(1)
    assert c.state.remove_expired_transactional_ids(c.clock.millis()) == ["app"]


def test_a_later_init_producer_id_whose_write_fails_answers_the_append_error() -> None:
    c = FakeCoordinator()
    _, pid, epoch = c.init("app")
    c.log.fail_with = NotEnoughReplicasError("the __transaction_state ISR is too small")
    assert c.init("app") == (E.COORDINATOR_NOT_AVAILABLE, -1, -1)
    c.log.fail_with = None
    assert c.init("app") == (E.NONE, pid, epoch + 1)


def test_the_async_handler_passes_the_two_phase_commit_flags() -> None:
    c = FakeCoordinator({"transaction.two.phase.commit.enable": True})
    handle = c.coordinator.handle_init_producer_id
    code, pid, epoch = asyncio.run(handle("xa", 1_000, enable_2pc=True))
    assert code == E.NONE and meta(c, "xa").txn_timeout_ms == TWO_PC_TIMEOUT_MS
    assert c.add("xa", pid, epoch, TP) == E.NONE
    assert asyncio.run(handle("xa", 1_000, enable_2pc=True, keep_prepared=True)) == (E.NONE, pid, epoch)
    assert meta(c, "xa").state is S.ONGOING  # kept, not fenced


# ---- EndTxn ---------------------------------------------------------------------------------------------------------
def test_tv2_epoch_rule_while_an_epoch_fence_is_pending() -> None:
    # endTransaction (TV2) with PrepareEpochFence pending: a client must send exactly the current epoch, the
    # coordinator's own abort at least the current epoch; the pending fence does not block a valid abort.
    c = FakeCoordinator()
    c.init("app")  # an epoch above 0, so that one behind it is a valid epoch
    pid, epoch = ongoing(c, tv=2)
    md = meta(c)
    c.coordinator._prepare_fence(md)  # the transaction-abort task fences first
    assert c.end("app", pid, epoch + 1, False, tv=2) == (E.PRODUCER_FENCED, -1, -1)
    assert md.pending_state is S.PREPARE_EPOCH_FENCE
    behind = c.coordinator.end_transaction("app", pid, epoch - 1, False, from_client=False, client_tv=2)
    assert behind == (E.PRODUCER_FENCED, -1, -1)
    assert md.pending_state is None  # the coordinator's refused abort drops its fence
    c.coordinator._prepare_fence(md)
    assert c.end("app", pid, epoch, False, tv=2)[0] == E.NONE
    assert meta(c).state is S.COMPLETE_ABORT


def test_a_tv1_client_abort_keeps_the_last_epoch_for_init_producer_id_retries() -> None:
    # prepareAbortOrCommit under TV1 keeps lastProducerEpoch (only a coordinator's epoch fence clears it), so a late
    # retry of the InitProducerId that bumped the epoch is still recognised and answered with the same epoch.
    c = FakeCoordinator(TV1)
    _, pid, first = c.init("app")
    assert c.init("app", 60_000, pid, first) == (E.NONE, pid, first + 1)
    assert c.add("app", pid, first + 1, TP) == E.NONE
    assert c.end("app", pid, first + 1, False) == (E.NONE, -1, -1)
    md = meta(c)
    assert (md.state, md.producer_epoch, md.last_producer_epoch) == (S.COMPLETE_ABORT, first + 1, first)
    assert c.init("app", 60_000, pid, first) == (E.NONE, pid, first + 1)


def test_a_client_abort_that_could_not_be_written_is_not_a_failed_fence() -> None:
    # Only the coordinator's own fencing abort sets hasFailedEpochFence when its write fails; after a client's failed
    # abort the next timeout fence still bumps the epoch, fencing the producer.
    c = FakeCoordinator(TV1)
    pid, epoch = ongoing(c, timeout_ms=1_000)
    c.log.fail_with = NotEnoughReplicasError("the __transaction_state ISR is too small")
    assert c.end("app", pid, epoch, False) == (E.COORDINATOR_NOT_AVAILABLE, -1, -1)
    c.log.fail_with = None
    assert not meta(c).has_failed_epoch_fence
    c.clock.advance(1_001)
    assert c.coordinator.abort_timed_out_transactions(c.clock.millis()) == ["app"]
    md = meta(c)
    assert (md.state, md.producer_epoch) == (S.COMPLETE_ABORT, epoch + 1)


def test_the_coordinators_own_abort_of_an_id_it_does_not_own_is_not_coordinator() -> None:
    c = FakeCoordinator()
    pid, epoch = ongoing(c)
    c.state.remove_partition(0)
    assert c.coordinator.end_transaction("app", pid, epoch, False, from_client=False, client_tv=2) == (
        E.NOT_COORDINATOR, -1, -1)


def test_a_fence_whose_coordinator_moved_during_the_write_marks_nothing_on_the_new_one() -> None:
    # The fencing abort's record is durable but leadership moved during the append (a new coordinator epoch): the
    # answer is NOT_COORDINATOR and the failed-fence flag is for this coordinator's metadata only; the new
    # coordinator's next fence bumps the epoch again.
    c = FakeCoordinator(TV1)
    pid, epoch = ongoing(c, timeout_ms=1_000)
    c.log.on_append.append(lambda: c.coordinator.on_leadership_change([txn_partition(0, 2)]))
    c.clock.advance(1_001)
    assert c.coordinator.abort_timed_out_transactions(c.clock.millis()) == []
    assert c.state.owns(0, 2)
    md = meta(c)
    assert (md.state, md.producer_epoch, md.has_failed_epoch_fence) == (S.COMPLETE_ABORT, epoch + 1, False)
    assert c.init("app", 1_000) == (E.NONE, pid, epoch + 2)
    assert c.add("app", pid, epoch + 2, TP) == E.NONE
    c.clock.advance(1_001)
    assert c.coordinator.abort_timed_out_transactions(c.clock.millis()) == ["app"]
    assert meta(c).producer_epoch == epoch + 3


def test_the_crash_hook_exits_137_once_prepare_commit_is_durable(monkeypatch: pytest.MonkeyPatch) -> None:
    # tests/e2e/test_transactions_crash.py waits for exit code 137 (as kill -9) right after PREPARE_COMMIT is
    # written and before any marker; an abort does not trigger it.
    class Exited(BaseException):
        pass

    codes: list[object] = []

    def exit_(code: object) -> None:
        codes.append(code)
        raise Exited

    c = FakeCoordinator()
    pid, epoch = ongoing(c, "aborted")
    monkeypatch.setattr(os, "_exit", exit_)
    monkeypatch.setenv(FAULT_ENV, FAULT_EXIT_AFTER_PREPARE_COMMIT)
    assert c.end("aborted", pid, epoch, False)[0] == E.NONE
    assert codes == []
    pid, epoch = ongoing(c, "committed")
    sent = len(c.markers.sent)
    with pytest.raises(Exited):
        c.end("committed", pid, epoch, True)
    assert codes == [137]
    written = c.log.records(0)[-1]
    assert written[0] == "committed" and written[1] is not None and written[1].state is S.PREPARE_COMMIT
    assert len(c.markers.sent) == sent


# ---- the transaction-abort task, leadership, listing ------------------------------------------------------------
def test_the_reaper_goes_on_after_a_fence_it_cannot_make(caplog: pytest.LogCaptureFixture) -> None:
    # KAFKA-20090 emulated: fencing at Short.MAX_VALUE throws; Kafka logs it and aborts the other timed-out
    # transactions. The same failure answers InitProducerId with UNKNOWN_SERVER_ERROR.
    c = FakeCoordinator({"fault.injection": "KAFKA-20090", "fault.injection.transactional.id.prefix": "stuck"})
    stuck_pid, _ = ongoing(c, "stuck", 1_000)
    meta(c, "stuck").producer_epoch = MAX_EPOCH
    ongoing(c, "other", 1_000)
    c.clock.advance(1_001)
    with caplog.at_level(logging.ERROR, logger=COORDINATOR_LOG):
        assert c.coordinator.abort_timed_out_transactions(c.clock.millis()) == ["other"]
    [record] = [r for r in caplog.records if r.name == COORDINATOR_LOG]
    assert f"KAFKA-20090: cannot fence producer {stuck_pid} at epoch Short.MAX_VALUE" in record.getMessage()
    assert c.init("stuck", 1_000) == (E.UNKNOWN_SERVER_ERROR, -1, -1)


def test_election_at_a_newer_epoch_reloads_even_while_owning_the_partition() -> None:
    # onElection always drops the partition's markers and loads it again at the new coordinator epoch; changes to
    # other topics' partitions in the same batch are skipped, not the end of it.
    c = FakeCoordinator()
    pid, epoch = ongoing(c, tv=0)
    c.markers.answer(TP, E.NOT_LEADER_OR_FOLLOWER)
    assert c.end("app", pid, epoch, True)[0] == E.NONE
    assert c.state.owns(0, 1)
    c.coordinator.on_leadership_change([PartitionState("t", 1, [0], 0, 5, [0]), txn_partition(0, 2)])
    assert c.state.owns(0, 2)
    c.coordinator.marker_channel.drive()
    assert meta(c).state is S.COMPLETE_COMMIT
    assert c.markers.sent[-1][1:6] == (TP, pid, epoch, True, 2)  # sent at the new coordinator epoch


def test_list_transactions_filters_by_the_id_pattern() -> None:
    c = FakeCoordinator()
    for txn_id in ("app-1", "app-2", "other"):
        ongoing(c, txn_id)
    code, _, listed = c.coordinator.list_transactions(set(), set(), -1, re.compile("app-.*"))
    assert code == E.NONE and sorted(t.transactional_id for t in listed) == ["app-1", "app-2"]
