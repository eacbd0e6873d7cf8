"""TransactionMetadata: Kafka's 8-state machine, prepare/complete, epochs and producer id rotation."""

from __future__ import annotations

import contextlib
import itertools

import pytest
from kafka.errors import ProducerFencedError

from kafka_txn_broker.formats.transactions import MAX_EPOCH, NO_PRODUCER_EPOCH, TransactionState
from kafka_txn_broker.txn.transaction_metadata import (
    VALID_PREVIOUS_STATES,
    IllegalTransitionError,
    TransactionMetadata,
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
