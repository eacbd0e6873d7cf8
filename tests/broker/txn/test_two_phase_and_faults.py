"""Two-phase commit (KIP-939), the epoch at Short.MAX_VALUE, and the test-only emulation of the upstream bugs
KAFKA-19999 and KAFKA-20090 (kafka_txn_broker/txn/faults.py), on the coordinator's fakes."""

from __future__ import annotations

import pytest

from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.transactions import MAX_EPOCH, TWO_PC_TIMEOUT_MS, TransactionState
from kafka_txn_broker.txn.transaction_metadata import IllegalTransitionError
from tests.broker.txn.fakes import FakeCoordinator

S = TransactionState
TWO_PC = {"transaction.two.phase.commit.enable": True}


def ongoing(c: FakeCoordinator, txn_id: str = "a", timeout_ms: int = 1000, tv: int = 0,
            **init: bool) -> tuple[int, int]:
    code, pid, epoch = c.init(txn_id, timeout_ms, **init)
    assert code == E.NONE
    assert c.add(txn_id, pid, epoch, ("t", 0), tv=tv) == E.NONE
    return pid, epoch


def reap(c: FakeCoordinator, after_ms: int = 60_000) -> None:
    c.clock.advance(after_ms)
    c.coordinator.abort_timed_out_transactions(c.clock.millis())


# ---- KIP-939 ---------------------------------------------------------------------------------------------
def test_enable_2pc_needs_the_broker_config() -> None:
    assert FakeCoordinator().init("xa", 1000, enable_2pc=True) == (E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1, -1)
    assert FakeCoordinator(TWO_PC).init("xa", 1000, keep_prepared=True)[0] == E.INVALID_REQUEST  # needs Enable2Pc


def test_a_2pc_transaction_has_no_timeout_and_the_reaper_never_aborts_it() -> None:
    c = FakeCoordinator(TWO_PC)
    ongoing(c, "xa", enable_2pc=True)
    ongoing(c, "plain")
    md = c.metadata("xa")
    assert md is not None and md.txn_timeout_ms == TWO_PC_TIMEOUT_MS and md.is_distributed_two_phase_commit
    reap(c, 30 * 86_400_000)  # a month
    assert c.metadata("xa").state is S.ONGOING  # type: ignore[union-attr]
    assert c.metadata("plain").state is S.COMPLETE_ABORT  # type: ignore[union-attr]


def test_keep_prepared_txn_keeps_the_transaction_and_answers_its_producer_id_and_epoch() -> None:
    c = FakeCoordinator(TWO_PC)
    pid, epoch = ongoing(c, "xa", enable_2pc=True)
    assert c.init("xa", 1000, enable_2pc=True, keep_prepared=True) == (E.NONE, pid, epoch)
    md = c.metadata("xa")
    assert md is not None and (md.state, md.topic_partitions) == (S.ONGOING, {("t", 0)})
    assert c.end("xa", pid, epoch, True) == (E.NONE, -1, -1)  # the external manager commits it
    # Without KeepPreparedTxn a new InitProducerId fences and aborts it, as for any transaction.
    pid, epoch = ongoing(c, "xa", enable_2pc=True)
    assert c.init("xa", 1000, enable_2pc=True)[0] == E.CONCURRENT_TRANSACTIONS
    assert c.metadata("xa").state is S.COMPLETE_ABORT  # type: ignore[union-attr]


# ---- the epoch at Short.MAX_VALUE (Kafka after KAFKA-20090) -------------------------------------------
def at_last_epoch(c: FakeCoordinator) -> int:
    pid, _ = ongoing(c)
    md = c.metadata("a")
    assert md is not None
    md.producer_epoch = MAX_EPOCH  # Ongoing at Short.MAX_VALUE (how it gets there: the KAFKA-20090 race below)
    return pid


def test_an_ongoing_transaction_at_short_max_value_is_aborted_on_timeout_and_the_id_rotated() -> None:
    c = FakeCoordinator()
    pid = at_last_epoch(c)
    reap(c)
    md = c.metadata("a")
    assert md is not None and md.state is S.COMPLETE_ABORT
    assert md.producer_id != pid and md.producer_epoch == 0  # TV2 abort at exhaustion: the next producer id


def test_fencing_an_ongoing_transaction_at_short_max_value_aborts_it_and_moves_to_the_next_producer_id() -> None:
    # force-terminate's InitProducerId: Kafka since KAFKA-20090 fences at the same epoch (no overflow), aborts
    # the transaction with the next producer id, and answers CONCURRENT_TRANSACTIONS until the abort is complete;
    # the retry then gets the next producer id.
    c = FakeCoordinator()
    pid = at_last_epoch(c)
    assert c.init("a", 1000) == (E.CONCURRENT_TRANSACTIONS, -1, -1)
    md = c.metadata("a")
    assert md is not None and md.state is S.COMPLETE_ABORT and md.producer_id != pid
    code, new_pid, epoch = c.init("a", 1000)
    assert (code, new_pid) == (E.NONE, md.producer_id) and epoch >= 0


def test_kafka_20090_emulated_fencing_at_short_max_value_fails_and_changes_nothing() -> None:
    c = FakeCoordinator({"fault.injection": "KAFKA-20090", "fault.injection.transactional.id.prefix": "a"})
    pid = at_last_epoch(c)
    assert c.init("a", 1000) == (E.UNKNOWN_SERVER_ERROR, -1, -1)  # prepareFenceProducerEpoch threw
    md = c.metadata("a")
    assert md is not None and (md.state, md.producer_id, md.producer_epoch, md.pending_state) == (
        S.ONGOING, pid, MAX_EPOCH, None)


def test_a_producers_abort_at_short_max_value_keeps_the_epoch_and_moves_to_the_next_producer_id() -> None:
    # TV2's EndTxn bumps the epoch; at Short.MAX_VALUE an abort keeps it instead (Kafka since KAFKA-20090), and
    # the exhausted epoch moves the producer to the next id. A commit there would overflow: the request fails.
    c = FakeCoordinator()
    pid, _ = ongoing(c, tv=2)
    c.metadata("a").producer_epoch = MAX_EPOCH  # type: ignore[union-attr]
    code, new_pid, epoch = c.end("a", pid, MAX_EPOCH, False, tv=2)
    assert (code, epoch) == (E.NONE, 0) and new_pid != pid
    assert c.metadata("a").state is S.COMPLETE_ABORT  # type: ignore[union-attr]
    c = FakeCoordinator()
    pid, _ = ongoing(c, tv=2)
    c.metadata("a").producer_epoch = MAX_EPOCH  # type: ignore[union-attr]
    with pytest.raises(IllegalTransitionError, match="illegal producer epoch 32768"):
        c.end("a", pid, MAX_EPOCH, True, tv=2)
    md = c.metadata("a")
    assert md is not None and (md.state, md.producer_epoch, md.pending_state) == (S.ONGOING, MAX_EPOCH, None)
    # Before the fix the abort overflowed the same way.
    c = FakeCoordinator({"fault.injection": "KAFKA-20090", "fault.injection.transactional.id.prefix": "a"})
    pid, _ = ongoing(c, tv=2)
    c.metadata("a").producer_epoch = MAX_EPOCH  # type: ignore[union-attr]
    with pytest.raises(IllegalTransitionError, match="illegal producer epoch 32768"):
        c.end("a", pid, MAX_EPOCH, False, tv=2)


def test_kafka_20090_emulated_it_stays_ongoing_forever() -> None:
    c = FakeCoordinator({"fault.injection": "KAFKA-20090", "fault.injection.transactional.id.prefix": "a"})
    pid = at_last_epoch(c)
    reap(c)
    reap(c)
    md = c.metadata("a")
    assert md is not None and (md.state, md.producer_id, md.producer_epoch) == (S.ONGOING, pid, MAX_EPOCH)
    assert c.init("a", 1000)[0] != E.NONE  # the producer cannot start over either
    # Switched off (an upgrade to the fix): the next timeout abort ends it.
    c.config.set("fault.injection", "")
    reap(c)
    assert c.metadata("a").state is S.COMPLETE_ABORT  # type: ignore[union-attr]


def test_kafka_20090_emulated_the_race_hands_the_client_epoch_short_max_value() -> None:
    """A timeout abort at Short.MAX_VALUE - 1 fences to Short.MAX_VALUE without the next producer id; the
    client's delayed EndTxn(ABORT) is taken as a retry and answered with that epoch."""
    c = FakeCoordinator({"fault.injection": "KAFKA-20090"})
    pid, _ = ongoing(c, tv=2)
    md = c.metadata("a")
    assert md is not None
    md.producer_epoch = MAX_EPOCH - 1
    reap(c)
    md = c.metadata("a")
    assert md is not None and (md.state, md.producer_id, md.producer_epoch) == (S.COMPLETE_ABORT, pid, MAX_EPOCH)
    assert c.end("a", pid, MAX_EPOCH - 1, False, tv=2) == (E.NONE, pid, MAX_EPOCH)
    assert c.add("a", pid, MAX_EPOCH, ("t", 1), tv=2) == E.NONE
    assert c.metadata("a").state is S.ONGOING  # type: ignore[union-attr]


def test_without_the_fault_the_same_timeout_abort_rotates_the_producer_id() -> None:
    c = FakeCoordinator()
    pid, _ = ongoing(c, tv=2)
    md = c.metadata("a")
    assert md is not None
    md.producer_epoch = MAX_EPOCH - 1
    reap(c)
    md = c.metadata("a")
    assert md is not None and md.state is S.COMPLETE_ABORT and md.producer_id != pid


# ---- KAFKA-19999 ------------------------------------------------------------------------------------------
def test_kafka_19999_emulated_a_lost_marker_response_leaves_the_transaction_in_prepare_commit() -> None:
    c = FakeCoordinator({"fault.injection": "KAFKA-19999", "fault.injection.transactional.id.prefix": "stuck-"})
    for txn_id in ("stuck-1", "healthy"):
        pid, epoch = ongoing(c, txn_id, tv=2)
        assert c.end(txn_id, pid, epoch, True, tv=2)[0] == E.NONE
    for _ in range(3):
        c.coordinator.marker_channel.drive()  # the retries
    assert c.metadata("healthy").state is S.COMPLETE_COMMIT  # type: ignore[union-attr]
    md = c.metadata("stuck-1")
    assert md is not None and (md.state, md.topic_partitions) == (S.PREPARE_COMMIT, {("t", 0)})
    # The marker did land (the leader holds the bumped epoch, nothing open); only the retry was refused.
    assert c.markers.producer_epoch_on(1, ("t", 0), md.producer_id) == (md.producer_epoch, False)
    assert c.init("stuck-1", 1000)[0] == E.CONCURRENT_TRANSACTIONS  # what its producer sees, forever


def test_kafka_19999_does_not_touch_tv1_markers() -> None:
    c = FakeCoordinator({"fault.injection": "KAFKA-19999"})
    pid, epoch = ongoing(c, tv=0)
    assert c.end("a", pid, epoch, True, tv=0)[0] == E.NONE
    c.coordinator.marker_channel.drive()
    assert c.metadata("a").state is S.COMPLETE_COMMIT  # type: ignore[union-attr]
