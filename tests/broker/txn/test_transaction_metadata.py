"""TransactionMetadata: Kafka's 8-state machine, prepare/complete, epochs and producer id rotation."""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
from typing import Any

import pytest

from kafka_txn_broker.formats.errors import ProducerFencedError
from kafka_txn_broker.formats.transaction_log import decode_value, encode_value
from kafka_txn_broker.formats.transactions import MAX_EPOCH, NO_PRODUCER_EPOCH, TransactionState
from kafka_txn_broker.txn.transaction_metadata import (
    VALID_PREVIOUS_STATES,
    IllegalTransitionError,
    TransactionMetadata,
    TxnTransitMetadata,
    is_epoch_exhausted,
)

S = TransactionState
NOW = 1_700_000_000_000


def md(state: TransactionState = S.EMPTY, epoch: int = 0, **kw: object) -> TransactionMetadata:
    m = TransactionMetadata("tid", 1000, producer_epoch=epoch, txn_timeout_ms=60000, state=state,
                            txn_last_update_timestamp=NOW, **kw)  # type: ignore[arg-type]
    return m


def test_state_ids_and_wire_names_are_kafkas() -> None:
    assert [(s.value, s.state_name) for s in S] == [
        (0, "Empty"), (1, "Ongoing"), (2, "PrepareCommit"), (3, "PrepareAbort"), (4, "CompleteCommit"),
        (5, "CompleteAbort"), (6, "Dead"), (7, "PrepareEpochFence")]
    assert S.from_name("PrepareEpochFence") is S.PREPARE_EPOCH_FENCE
    assert S.from_name("prepareabort") is None


# Kafka's TransactionState.java (transaction-coordinator), its static block of validPreviousStates, written out
# here by hand, state by state: the states each state may be entered from. Not read from the implementation.
KAFKA_VALID_PREVIOUS_STATES = {
    S.EMPTY: {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.ONGOING: {S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.PREPARE_COMMIT: {S.ONGOING},
    S.PREPARE_ABORT: {S.ONGOING, S.PREPARE_EPOCH_FENCE, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.COMPLETE_COMMIT: {S.PREPARE_COMMIT},
    S.COMPLETE_ABORT: {S.PREPARE_ABORT},
    S.DEAD: {S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT},
    S.PREPARE_EPOCH_FENCE: {S.ONGOING},
}
# TransactionState's expirationAllowed flag (its constructor's third argument).
KAFKA_EXPIRATION_ALLOWED = {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}


def test_valid_previous_states_table_is_kafkas() -> None:
    assert {dst: set(srcs) for dst, srcs in VALID_PREVIOUS_STATES.items()} == KAFKA_VALID_PREVIOUS_STATES
    assert {s for s in S if s.expiration_allowed} == KAFKA_EXPIRATION_ALLOWED


@pytest.mark.parametrize(("src", "dst"), list(itertools.product(S, S)))
def test_every_pair_of_states_follows_kafkas_table(src: TransactionState, dst: TransactionState) -> None:
    m = md(src, epoch=3, topic_partitions={("t", 0)} if src is not S.EMPTY else set(), txn_start_timestamp=NOW)
    transit = None
    with contextlib.suppress(IllegalTransitionError):
        transit = m._transit(dst)
    assert (transit is not None) == (src in KAFKA_VALID_PREVIOUS_STATES[dst])
    assert m.pending_state is (dst if transit is not None else None)  # a refused move leaves nothing pending


def test_full_commit_cycle() -> None:
    m = md(S.EMPTY, epoch=NO_PRODUCER_EPOCH)
    m.complete_transition_to(m.prepare_increment_producer_epoch(60000, None, NOW))
    assert (m.state, m.producer_epoch) == (S.EMPTY, 0)
    m.complete_transition_to(m.prepare_add_partitions({("t", 0)}, NOW + 1, 0))
    assert (m.state, m.txn_start_timestamp) == (S.ONGOING, NOW + 1)
    m.complete_transition_to(m.prepare_add_partitions({("t", 1)}, NOW + 2, 0))
    assert m.txn_start_timestamp == NOW + 1 and m.topic_partitions == {("t", 0), ("t", 1)}
    m.complete_transition_to(m.prepare_abort_or_commit(S.PREPARE_COMMIT, 0, -1, NOW + 3, False))
    complete = m.prepare_complete(NOW + 4)
    assert m.pending_state is S.COMPLETE_COMMIT and m.pending_transition_in_progress
    m.remove_partition(("t", 0))
    m.remove_partition(("t", 1))
    m.complete_transition_to(complete)
    assert (m.state, m.topic_partitions, m.producer_epoch) == (S.COMPLETE_COMMIT, set(), 0)


def test_pending_state_blocks_a_second_transition() -> None:
    m = md(S.EMPTY)
    m.prepare_add_partitions({("t", 0)}, NOW, 0)
    with pytest.raises(IllegalTransitionError):
        m.prepare_add_partitions({("t", 1)}, NOW, 0)


def test_complete_without_matching_pending_state_is_fatal() -> None:
    m = md(S.EMPTY)
    transit = m.prepare_add_partitions({("t", 0)}, NOW, 0)
    m.pending_state = None
    with pytest.raises(IllegalTransitionError):
        m.complete_transition_to(transit)


def test_init_producer_id_epoch_rules() -> None:
    m = md(S.COMPLETE_COMMIT, epoch=5, last_producer_epoch=4)
    assert m.prepare_increment_producer_epoch(1, None, NOW).producer_epoch == 6
    m.pending_state = None
    retry = m.prepare_increment_producer_epoch(1, 4, NOW)  # a retry of the call that produced epoch 5
    assert (retry.producer_epoch, retry.last_producer_epoch) == (5, 4)
    m.pending_state = None
    bump = m.prepare_increment_producer_epoch(1, 5, NOW)  # continuing after an error: bump, remember 5
    assert (bump.producer_epoch, bump.last_producer_epoch) == (6, 5)
    m.pending_state = None
    with pytest.raises(ProducerFencedError):
        m.prepare_increment_producer_epoch(1, 2, NOW)


def test_epoch_exhaustion_and_rotation() -> None:
    assert not is_epoch_exhausted(MAX_EPOCH - 2) and is_epoch_exhausted(MAX_EPOCH - 1)
    m = md(S.COMPLETE_ABORT, epoch=MAX_EPOCH - 1)
    with pytest.raises(IllegalTransitionError):
        m.prepare_increment_producer_epoch(1, None, NOW)
    rotated = m.prepare_producer_id_rotation(2000, 1, NOW, record_last_epoch=True)
    m.complete_transition_to(rotated)
    assert (m.producer_id, m.producer_epoch, m.last_producer_epoch, m.prev_producer_id) == (
        2000, 0, MAX_EPOCH - 1, 1000)


def test_fence_bumps_once_even_after_a_failed_fence() -> None:
    m = md(S.ONGOING, epoch=7, topic_partitions={("t", 0)}, txn_start_timestamp=NOW)
    assert m.prepare_fence_producer_epoch().producer_epoch == 8
    m.pending_state = None
    m.has_failed_epoch_fence = True
    assert m.prepare_fence_producer_epoch().producer_epoch == 7


def test_tv2_commit_bumps_the_epoch_and_overflow_moves_to_the_next_producer_id() -> None:
    m = md(S.ONGOING, epoch=MAX_EPOCH - 1, topic_partitions={("t", 0)}, txn_start_timestamp=NOW)
    prepare = m.prepare_abort_or_commit(S.PREPARE_COMMIT, 2, 3000, NOW + 1, False)
    assert (prepare.producer_epoch, prepare.last_producer_epoch, prepare.next_producer_id) == (
        MAX_EPOCH, MAX_EPOCH - 1, 3000)
    m.complete_transition_to(prepare)
    complete = m.prepare_complete(NOW + 2)
    m.remove_partition(("t", 0))
    m.complete_transition_to(complete)
    assert (m.producer_id, m.producer_epoch, m.prev_producer_id, m.last_producer_epoch) == (
        3000, 0, 1000, MAX_EPOCH - 1)


def test_tv2_abort_from_empty_uses_now_as_start() -> None:
    m = md(S.EMPTY, epoch=2)
    t = m.prepare_abort_or_commit(S.PREPARE_ABORT, 2, -1, NOW + 5, True)
    m.complete_transition_to(t)
    assert (m.state, m.txn_start_timestamp, m.producer_epoch) == (S.PREPARE_ABORT, NOW + 5, 3)


def test_tv2_fence_does_not_bump_twice() -> None:
    m = md(S.ONGOING, epoch=MAX_EPOCH - 1, topic_partitions={("t", 0)}, txn_start_timestamp=NOW)
    fence = m.prepare_fence_producer_epoch()
    m.pending_state, m.producer_epoch = None, fence.producer_epoch
    t = m.prepare_abort_or_commit(S.PREPARE_ABORT, 2, 4000, NOW, False, is_epoch_fence=True)
    assert t.producer_epoch == MAX_EPOCH  # no overflow past Short.MAX_VALUE (KAFKA-19367)
    m.complete_transition_to(t)


def test_remove_partition_only_while_preparing() -> None:
    m = md(S.ONGOING, topic_partitions={("t", 0)}, txn_start_timestamp=NOW)
    with pytest.raises(IllegalTransitionError):
        m.remove_partition(("t", 0))


def test_dead_is_never_completed() -> None:
    m = md(S.COMPLETE_COMMIT, txn_start_timestamp=NOW)
    t = m.prepare_dead()
    with pytest.raises(IllegalTransitionError):
        m.complete_transition_to(t)


# ---- Kafka's TransactionMetadata.completeTransitionTo: what a durable transition must agree with ----------------
def _prepared(state: TransactionState, target: str, tv: int = 0) -> tuple[TransactionMetadata, TxnTransitMetadata]:
    """Metadata in `state` (epoch 3, last epoch 2, partition t-0 unless Empty/Complete*) and the transit that
    `target` prepares from it."""
    holds = state in (S.ONGOING, S.PREPARE_COMMIT, S.PREPARE_ABORT)
    m = md(state, epoch=3, last_producer_epoch=2, topic_partitions={("t", 0)} if holds else set(),
           txn_start_timestamp=NOW if state is not S.EMPTY else -1, client_transaction_version=tv)
    prepare = {
        "init": lambda: m.prepare_increment_producer_epoch(60000, None, NOW + 1),
        "add": lambda: m.prepare_add_partitions({("t", 1)}, NOW + 1, tv),
        "commit": lambda: m.prepare_abort_or_commit(S.PREPARE_COMMIT, tv, -1, NOW + 1, False),
        "abort-empty": lambda: m.prepare_abort_or_commit(S.PREPARE_ABORT, tv, -1, NOW + 1, True),
        "complete": lambda: m.prepare_complete(NOW + 1),
    }[target]
    return m, prepare()


TAMPERED = [
    # (state, prepared by, TV, fields changed, accepted?) - the checks of completeTransitionTo, case by case
    (S.COMPLETE_COMMIT, "init", 0, {}, True),
    (S.COMPLETE_COMMIT, "init", 0, {"producer_epoch": 3}, True),  # a retry keeps the epoch
    (S.COMPLETE_COMMIT, "init", 0, {"producer_epoch": 5}, False),  # neither kept nor bumped by one
    (S.COMPLETE_COMMIT, "init", 0, {"producer_epoch": 0, "producer_id": 2000}, True),  # rotated
    (S.COMPLETE_COMMIT, "init", 0, {"producer_epoch": 0}, False),  # epoch 0 without a new producer id
    (S.COMPLETE_COMMIT, "init", 0, {"producer_id": 2000}, True),  # validProducerEpochBump: epoch + 1 suffices
    (S.COMPLETE_COMMIT, "init", 0, {"topic_partitions": frozenset({("t", 0)})}, False),
    (S.COMPLETE_COMMIT, "init", 0, {"txn_start_timestamp": NOW}, False),
    (S.ONGOING, "add", 0, {}, True),
    (S.ONGOING, "add", 0, {"producer_epoch": 4}, False),
    (S.ONGOING, "add", 0, {"producer_id": 2000}, False),
    (S.ONGOING, "add", 0, {"topic_partitions": frozenset({("t", 1)})}, False),  # lost t-0
    (S.ONGOING, "add", 0, {"txn_timeout_ms": 1000}, False),
    (S.ONGOING, "commit", 0, {}, True),
    (S.ONGOING, "commit", 0, {"topic_partitions": frozenset({("t", 0), ("t", 1)})}, False),
    (S.ONGOING, "commit", 0, {"txn_timeout_ms": 1000}, False),
    (S.ONGOING, "commit", 0, {"txn_start_timestamp": NOW + 1}, False),
    (S.ONGOING, "commit", 0, {"producer_epoch": 4}, False),
    (S.ONGOING, "commit", 0, {"producer_id": 2000}, False),
    (S.ONGOING, "commit", 2, {}, True),  # TV2: bumped to 4, last epoch 3
    (S.ONGOING, "commit", 2, {"last_producer_epoch": 2}, False),
    (S.ONGOING, "commit", 2, {"producer_id": 2000}, False),
    (S.COMPLETE_ABORT, "abort-empty", 2, {}, True),  # TV2 abort from CompleteAbort: a new start is fine
    (S.COMPLETE_ABORT, "abort-empty", 2, {"client_transaction_version": 1, "producer_epoch": 3}, False),
    (S.PREPARE_COMMIT, "complete", 0, {}, True),
    (S.PREPARE_COMMIT, "complete", 0, {"txn_start_timestamp": -1}, False),
    (S.PREPARE_COMMIT, "complete", 0, {"txn_timeout_ms": 1000}, False),
    (S.PREPARE_COMMIT, "complete", 0, {"producer_epoch": 4}, False),
    (S.PREPARE_COMMIT, "complete", 0, {"producer_id": 2000}, False),
    (S.PREPARE_ABORT, "complete", 2, {"producer_epoch": 0, "producer_id": 2000, "prev_producer_id": 1000}, True),
    (S.PREPARE_ABORT, "complete", 2, {"producer_epoch": 0, "producer_id": 2000, "prev_producer_id": 999}, False),
    (S.PREPARE_ABORT, "complete", 2, {"producer_epoch": 0, "producer_id": 2000, "prev_producer_id": 1000,
                                      "last_producer_epoch": 7}, False),
]


@pytest.mark.parametrize(("state", "by", "tv", "change", "accepted"), TAMPERED,
                         ids=[f"{s.state_name}-{b}-tv{v}-{'-'.join(c) or 'as-prepared'}" for s, b, v, c, _ in TAMPERED])
def test_complete_transition_checks_what_kafka_checks(state: TransactionState, by: str, tv: int,
                                                     change: dict[str, object], accepted: bool) -> None:
    m, transit = _prepared(state, by, tv)
    if by == "complete":
        m.topic_partitions.clear()  # every marker landed
    tampered = dataclasses.replace(transit, **change)  # type: ignore[arg-type]
    if accepted:
        m.complete_transition_to(tampered)
        assert (m.state, m.producer_id, m.producer_epoch, m.pending_state) == (
            tampered.state, tampered.producer_id, tampered.producer_epoch, None)
    else:
        with pytest.raises(IllegalTransitionError, match=r"^tid failed transition to .* \(unexpected metadata\)"):
            m.complete_transition_to(tampered)
        assert (m.state, m.producer_epoch) == (state, 3)  # nothing applied


def test_every_field_of_a_transition_is_applied_and_logged() -> None:
    # completeTransitionTo copies every field; the __transaction_state value carries each of them, and a
    # coordinator that loads it (TransactionLog.readTxnRecordValue) gets them all back (lastProducerEpoch aside:
    # Kafka does not persist it).
    m = md(S.ONGOING, epoch=9, last_producer_epoch=8, topic_partitions={("t", 0)}, txn_start_timestamp=NOW,
           client_transaction_version=2, prev_producer_id=900)
    t = m.prepare_abort_or_commit(S.PREPARE_ABORT, 2, 4321, NOW + 7, False)
    m.complete_transition_to(t)
    assert (m.producer_id, m.prev_producer_id, m.next_producer_id, m.producer_epoch, m.last_producer_epoch,
            m.txn_timeout_ms, m.topic_partitions, m.txn_start_timestamp, m.txn_last_update_timestamp,
            m.client_transaction_version) == (1000, 1000, 4321, 10, 9, 60000, {("t", 0)}, NOW, NOW + 7, 2)
    loaded = TransactionMetadata.from_log("tid", decode_value(encode_value(t.to_log_value(), 1)))
    assert (loaded.producer_id, loaded.prev_producer_id, loaded.next_producer_id, loaded.producer_epoch,
            loaded.last_producer_epoch, loaded.txn_timeout_ms, loaded.state, loaded.topic_partitions,
            loaded.txn_start_timestamp, loaded.txn_last_update_timestamp, loaded.client_transaction_version) == (
        1000, 1000, 4321, 10, NO_PRODUCER_EPOCH, 60000, S.PREPARE_ABORT, {("t", 0)}, NOW, NOW + 7, 2)


@pytest.mark.parametrize(("state", "prepare", "expected"), [
    # Each prepare_* stamps the update time and the fields Kafka's prepareXxx sets (TransactionMetadata.java).
    (S.EMPTY, lambda m: m.prepare_add_partitions({("t", 0)}, NOW + 5, 2),
     {"txn_last_update_timestamp": NOW + 5, "txn_start_timestamp": NOW + 5, "client_transaction_version": 2}),
    (S.COMPLETE_ABORT, lambda m: m.prepare_increment_producer_epoch(30000, None, NOW + 5),
     {"txn_last_update_timestamp": NOW + 5, "txn_start_timestamp": -1, "topic_partitions": frozenset(),
      "txn_timeout_ms": 30000, "producer_epoch": 4}),
    (S.COMPLETE_ABORT, lambda m: m.prepare_producer_id_rotation(2000, 30000, NOW + 5, record_last_epoch=False),
     {"txn_last_update_timestamp": NOW + 5, "txn_start_timestamp": -1, "topic_partitions": frozenset(),
      "txn_timeout_ms": 30000, "producer_id": 2000, "producer_epoch": 0, "last_producer_epoch": NO_PRODUCER_EPOCH}),
    (S.COMPLETE_ABORT, lambda m: m.prepare_producer_id_rotation(2000, 30000, NOW + 5, record_last_epoch=True),
     {"producer_id": 2000, "producer_epoch": 0, "last_producer_epoch": 3}),
    (S.ONGOING, lambda m: m.prepare_abort_or_commit(S.PREPARE_COMMIT, 2, -1, NOW + 5, False),
     {"txn_last_update_timestamp": NOW + 5, "txn_start_timestamp": NOW, "client_transaction_version": 2,
      "producer_epoch": 4, "last_producer_epoch": 3}),
    (S.PREPARE_COMMIT, lambda m: m.prepare_complete(NOW + 5),
     {"txn_last_update_timestamp": NOW + 5, "topic_partitions": frozenset(), "state": S.COMPLETE_COMMIT,
      "next_producer_id": -1}),
    (S.PREPARE_ABORT, lambda m: m.prepare_complete(NOW + 5), {"state": S.COMPLETE_ABORT}),
    (S.COMPLETE_COMMIT, lambda m: m.prepare_dead(), {"state": S.DEAD, "topic_partitions": frozenset()}),
])
def test_each_prepare_sets_kafkas_fields(state: TransactionState, prepare: Any, expected: dict[str, object]) -> None:
    holds = state in (S.ONGOING, S.PREPARE_COMMIT, S.PREPARE_ABORT)
    m = md(state, epoch=3, topic_partitions={("t", 0)} if holds else set(), txn_start_timestamp=NOW)
    transit = prepare(m)
    assert {k: getattr(transit, k) for k in expected} == expected


def test_prepare_complete_clears_a_failed_fence() -> None:
    # Kafka's prepareComplete resets hasFailedEpochFence: the next fence bumps the epoch again.
    m = md(S.PREPARE_ABORT, epoch=4, topic_partitions={("t", 0)}, txn_start_timestamp=NOW)
    m.has_failed_epoch_fence = True
    m.prepare_complete(NOW)
    assert m.has_failed_epoch_fence is False


@pytest.mark.parametrize(("setup", "action", "message"), [
    # The fatal errors name the transactional id and what was wrong (Kafka logs them as FATAL).
    (lambda m: setattr(m, "pending_state", S.ONGOING), lambda m: m.prepare_dead(),
     r"^tid: preparing Dead while Ongoing is pending$"),
    (lambda m: None, lambda m: m._transit(S.ONGOING, producer_id=-1), r"^tid: illegal producer id -1$"),
    (lambda m: None, lambda m: m._transit(S.ONGOING, producer_epoch=-1), r"^tid: illegal producer epoch -1$"),
    (lambda m: None, lambda m: m._transit(S.COMPLETE_COMMIT),
     r"^tid: CompleteCommit -> CompleteCommit is not a valid transition$"),
    (lambda m: setattr(m, "producer_epoch", MAX_EPOCH - 1), lambda m: m.prepare_increment_producer_epoch(1, None, NOW),
     r"^no more epochs for producer id 1000$"),
    (lambda m: setattr(m, "state", S.ONGOING), lambda m: m.prepare_producer_id_rotation(2, 1, NOW, False),
     r"^cannot rotate the producer id while a transaction is pending$"),
    (lambda m: None, lambda m: m.remove_partition(("t", 0)),
     r"^tid: removing marked partition \('t', 0\) in state CompleteCommit$"),
])
def test_fatal_transition_errors_say_what_was_wrong(setup: Any, action: Any, message: str) -> None:
    m = md(S.COMPLETE_COMMIT, epoch=3, txn_start_timestamp=NOW)
    setup(m)
    with pytest.raises(IllegalTransitionError, match=message):
        action(m)


def test_a_fence_at_short_max_value_keeps_the_epoch() -> None:
    # Kafka since KAFKA-20090 (TransactionMetadata.prepareFenceProducerEpoch): at Short.MAX_VALUE there is no
    # epoch left to bump to, so the fence keeps it (the abort that follows rotates the producer id); below it
    # the fence bumps the epoch by one.
    m = md(S.ONGOING, epoch=MAX_EPOCH, topic_partitions={("t", 0)}, txn_start_timestamp=NOW)
    assert m.prepare_fence_producer_epoch().producer_epoch == MAX_EPOCH
    m = md(S.ONGOING, epoch=MAX_EPOCH - 1, topic_partitions={("t", 0)}, txn_start_timestamp=NOW)
    assert m.prepare_fence_producer_epoch().producer_epoch == MAX_EPOCH


def test_dead_keeps_a_negative_epoch_and_complete_needs_a_matching_pending_state() -> None:
    # prepareTransitionTo only checks the epoch for states other than Dead (an expiring id may hold -1).
    m = md(S.EMPTY, epoch=NO_PRODUCER_EPOCH)
    assert m.prepare_dead().state is S.DEAD
    m = md(S.EMPTY, epoch=3)
    transit = m.prepare_add_partitions({("t", 0)}, NOW, 0)
    m.pending_state = S.PREPARE_ABORT  # some other transition is pending
    with pytest.raises(IllegalTransitionError, match=r"\(no matching pending state\); state "):
        m.complete_transition_to(transit)
    with pytest.raises(ProducerFencedError, match="expected epoch 1 is neither the current 3 nor the last -1"):
        md(S.EMPTY, epoch=3).prepare_increment_producer_epoch(1, 1, NOW)
