"""The coordinator's own aborts under transaction version 1, on fakes: the epoch fence.

Kafka (TransactionCoordinator.abortTimedOutTransactions / handleInitProducerId, TV1): a transaction past
its timeout, or one still Ongoing when its producer calls InitProducerId again, is fenced first
(PrepareEpochFence, never written: the producer epoch is bumped by one) and then aborted at the bumped
epoch, so the old producer is fenced (PRODUCER_FENCED) and its markers carry the new epoch; the last
producer epoch is cleared. If writing that abort fails, the fence is remembered (hasFailedEpochFence) and
the next attempt reuses the bumped epoch instead of bumping again; if the abort is refused, the pending
fence is dropped so the id is not left blocked (CONCURRENT_TRANSACTIONS forever).
"""

from __future__ import annotations

from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.errors import NotEnoughReplicasError
from kafka_txn_broker.formats.transactions import MAX_EPOCH, NO_PRODUCER_EPOCH, TransactionState
from tests.broker.txn.fakes import FakeCoordinator

S = TransactionState
TP = ("t", 0)
TV1 = {"transaction.version": 1}


def ongoing(c: FakeCoordinator, txn_id: str = "app", timeout_ms: int = 60_000) -> tuple[int, int]:
    code, pid, epoch = c.init(txn_id, timeout_ms=timeout_ms)
    assert code == E.NONE and c.add(txn_id, pid, epoch, TP) == E.NONE
    return pid, epoch


def test_a_timed_out_transaction_is_aborted_at_the_bumped_epoch_and_its_producer_fenced() -> None:
    c = FakeCoordinator(TV1)
    pid, epoch = ongoing(c)
    c.clock.advance(60_001)
    assert c.coordinator.abort_timed_out_transactions(c.clock.millis()) == ["app"]
    md = c.metadata("app")
    assert md is not None
    assert (md.state, md.producer_id, md.producer_epoch, md.last_producer_epoch) == (
        S.COMPLETE_ABORT, pid, epoch + 1, NO_PRODUCER_EPOCH)
    assert md.pending_state is None
    [(leader, tp, marker_pid, marker_epoch, commit, _coordinator_epoch, _tv)] = c.markers.sent
    assert (leader, tp, marker_pid, marker_epoch, commit) == (1, TP, pid, epoch + 1, False)
    assert c.end("app", pid, epoch, True) == (E.PRODUCER_FENCED, -1, -1)


def test_a_fence_that_could_not_be_written_is_retried_at_the_same_bumped_epoch() -> None:
    c = FakeCoordinator(TV1)
    pid, epoch = ongoing(c)
    c.clock.advance(60_001)
    c.log.fail_with = NotEnoughReplicasError("the __transaction_state ISR is too small")
    assert c.coordinator.abort_timed_out_transactions(c.clock.millis()) == []
    md = c.metadata("app")
    assert md is not None and md.state is S.ONGOING and md.has_failed_epoch_fence
    assert not md.pending_transition_in_progress  # not blocked: the next scan may try again
    c.log.fail_with = None
    assert c.coordinator.abort_timed_out_transactions(c.clock.millis()) == ["app"]
    md = c.metadata("app")
    assert md is not None and (md.state, md.producer_epoch) == (S.COMPLETE_ABORT, epoch + 1)
    assert [m[3] for m in c.markers.sent] == [epoch + 1]


def test_a_refused_fence_leaves_the_transaction_to_its_producer() -> None:
    c = FakeCoordinator(TV1)
    pid, epoch = ongoing(c)
    md = c.metadata("app")
    assert md is not None
    fence = c.coordinator._prepare_fence(md)
    assert md.pending_state is S.PREPARE_EPOCH_FENCE
    code = c.coordinator.end_transaction("app", fence.producer_id + 1, fence.producer_epoch, False,
                                         from_client=False, client_tv=1)
    assert code == (E.INVALID_PRODUCER_ID_MAPPING, -1, -1)
    assert md.pending_state is None and md.producer_epoch == epoch
    assert c.end("app", pid, epoch, True) == (E.NONE, -1, -1)  # not CONCURRENT_TRANSACTIONS
    md = c.metadata("app")
    assert md is not None and md.state is S.COMPLETE_COMMIT


def test_a_client_end_does_not_clear_a_pending_fence() -> None:
    # Only the coordinator's own abort consumes or drops its fence; a client's refused end leaves it.
    c = FakeCoordinator(TV1)
    pid, epoch = ongoing(c)
    md = c.metadata("app")
    assert md is not None
    c.coordinator._prepare_fence(md)
    assert c.end("app", pid + 1, epoch, True) == (E.INVALID_PRODUCER_ID_MAPPING, -1, -1)
    assert md.pending_state is S.PREPARE_EPOCH_FENCE


def test_init_producer_id_while_ongoing_fences_aborts_and_asks_the_producer_to_retry() -> None:
    c = FakeCoordinator(TV1)
    pid, epoch = ongoing(c)
    assert c.init("app") == (E.CONCURRENT_TRANSACTIONS, -1, -1)
    md = c.metadata("app")
    assert md is not None and (md.state, md.producer_epoch) == (S.COMPLETE_ABORT, epoch + 1)
    assert [(m[2], m[3], m[4]) for m in c.markers.sent] == [(pid, epoch + 1, False)]
    assert c.init("app") == (E.NONE, pid, epoch + 2)  # the retry gets the next epoch
    assert c.end("app", pid, epoch, True) == (E.PRODUCER_FENCED, -1, -1)


def test_the_periodic_scan_runs_at_its_interval() -> None:
    c = FakeCoordinator({**TV1, "transaction.abort.timed.out.transaction.cleanup.interval.ms": 10_000})
    c.coordinator.tick(c.clock.millis())  # the first scan
    ongoing(c, timeout_ms=1_000)
    c.clock.advance(9_999)
    c.coordinator.tick(c.clock.millis())
    md = c.metadata("app")
    assert md is not None and md.state is S.ONGOING  # timed out, but the next scan is 1 ms away
    c.clock.advance(1)
    c.coordinator.tick(c.clock.millis())
    md = c.metadata("app")
    assert md is not None and md.state is S.COMPLETE_ABORT


def test_init_producer_id_without_an_epoch_at_exhaustion_moves_to_a_new_producer_id() -> None:
    # A producer starting afresh (no producer id / epoch given) on an id whose epoch is exhausted gets a
    # new producer id at epoch 0, as Kafka's prepareProducerIdRotation.
    c = FakeCoordinator()
    _, pid, _ = c.init("a")
    md = c.metadata("a")
    assert md is not None
    md.producer_epoch = MAX_EPOCH - 1
    code, new_pid, epoch = c.init("a")
    assert code == E.NONE and new_pid != pid and epoch == 0


def test_a_tv2_end_at_epoch_overflow_answers_the_new_producer_id_while_markers_are_in_flight() -> None:
    # EndTxn v5: the client continues on the next producer id at epoch 0, answered as soon as the
    # PREPARE is durable, before the markers land.
    c = FakeCoordinator()
    _, pid, _ = c.init("a")
    md = c.metadata("a")
    assert md is not None
    md.producer_epoch = MAX_EPOCH - 1
    assert c.add("a", pid, MAX_EPOCH - 1, TP, tv=2) == E.NONE
    c.markers.answer(TP, E.NOT_LEADER_OR_FOLLOWER)  # the marker waits
    code, new_pid, epoch = c.end("a", pid, MAX_EPOCH - 1, True, tv=2)
    assert (code, epoch) == (E.NONE, 0) and new_pid not in (pid, -1)
    md = c.metadata("a")
    assert md is not None and md.state is S.PREPARE_COMMIT and md.next_producer_id == new_pid


def test_init_producer_id_answers_the_failed_fences_error_so_the_producer_retries() -> None:
    # Kafka maps a __transaction_state append that lacks its in-sync replicas to COORDINATOR_NOT_AVAILABLE,
    # which a producer retries; the retry then fences at the same bumped epoch.
    c = FakeCoordinator(TV1)
    pid, epoch = ongoing(c)
    c.log.fail_with = NotEnoughReplicasError("the __transaction_state ISR is too small")
    assert c.init("app") == (E.COORDINATOR_NOT_AVAILABLE, -1, -1)
    c.log.fail_with = None
    assert c.init("app") == (E.CONCURRENT_TRANSACTIONS, -1, -1)  # fenced and aborted now; retry once more
    md = c.metadata("app")
    assert md is not None and (md.state, md.producer_epoch) == (S.COMPLETE_ABORT, epoch + 1)
    assert c.init("app") == (E.NONE, pid, epoch + 2)
