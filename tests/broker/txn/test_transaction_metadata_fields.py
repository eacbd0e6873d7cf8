"""TransactionMetadata: the fields each prepare_* sets whatever the metadata held before, and the checks
completeTransitionTo makes, from Kafka's TransactionMetadata (prepareIncrementProducerEpoch,
prepareProducerIdRotation, prepareComplete, prepareDead, prepareFenceProducerEpoch, completeTransitionTo and
validProducerEpoch)."""

from __future__ import annotations

import dataclasses
import logging

import pytest

from kafka_txn_broker.formats.transaction_log import TransactionLogValue
from kafka_txn_broker.formats.transactions import MAX_EPOCH, NO_PRODUCER_ID, TransactionState
from kafka_txn_broker.txn.transaction_metadata import IllegalTransitionError, TransactionMetadata

S = TransactionState
NOW = 1_700_000_000_000
TP = ("t", 0)


def loaded(state: TransactionState, epoch: int = 3, parts: tuple[tuple[str, int], ...] = ()) -> TransactionMetadata:
    """An id as a load from __transaction_state leaves it (TV0 record, producer id 1000)."""
    return TransactionMetadata.from_log("tid", TransactionLogValue(1000, epoch, 60_000, state, parts, NOW, NOW))


def test_init_producer_id_starts_empty_with_no_partitions_whatever_the_record_held() -> None:
    # prepareIncrementProducerEpoch and prepareProducerIdRotation move to Empty with Set.empty: a Complete* record
    # that still lists partitions (Kafka's own never does, but its loader accepts one) does not leak them into the
    # next transaction, and the transition completes (Empty must hold no partitions).
    for prepare in (lambda m: m.prepare_increment_producer_epoch(60_000, None, NOW + 1),
                    lambda m: m.prepare_producer_id_rotation(2000, 60_000, NOW + 1, False)):
        m = loaded(S.COMPLETE_ABORT, parts=(TP,))
        transit = prepare(m)
        assert (transit.state, transit.topic_partitions) == (S.EMPTY, frozenset())
        m.complete_transition_to(transit)
        assert (m.state, m.topic_partitions) == (S.EMPTY, set())


def test_prepare_dead_holds_no_partitions() -> None:
    # prepareDead: Dead, same producer id and epoch, Set.empty.
    m = loaded(S.COMPLETE_COMMIT, epoch=7, parts=(TP,))
    transit = m.prepare_dead()
    assert (transit.state, transit.producer_id, transit.producer_epoch, transit.topic_partitions) == (
        S.DEAD, 1000, 7, frozenset())


def test_complete_after_an_epoch_overflow_clears_the_next_producer_id() -> None:
    # prepareComplete under TV2 with a pre-allocated next producer id: the id becomes the producer id at epoch 0 and
    # the next producer id is reset to -1 (NO_PRODUCER_ID), in the record and in memory.
    m = TransactionMetadata("tid", 1000, producer_epoch=MAX_EPOCH, last_producer_epoch=MAX_EPOCH - 1,
                            next_producer_id=2000, state=S.PREPARE_COMMIT, txn_start_timestamp=NOW,
                            txn_last_update_timestamp=NOW, client_transaction_version=2)
    transit = m.prepare_complete(NOW + 5)
    assert (transit.producer_id, transit.producer_epoch, transit.next_producer_id) == (2000, 0, NO_PRODUCER_ID)
    assert transit.to_log_value().next_producer_id == NO_PRODUCER_ID
    m.complete_transition_to(transit)
    assert (m.state, m.producer_id, m.prev_producer_id, m.next_producer_id) == (S.COMPLETE_COMMIT, 2000, 1000, -1)


def test_adding_partitions_already_in_the_transaction_completes() -> None:
    # completeTransitionTo(Ongoing) requires the current partitions to be a subset of the new ones (subsetOf):
    # the same set is allowed.
    m = TransactionMetadata("tid", 1000, producer_epoch=2, state=S.ONGOING, topic_partitions={TP},
                            txn_start_timestamp=NOW, txn_last_update_timestamp=NOW)
    transit = m.prepare_add_partitions({TP}, NOW + 1, 0)
    m.complete_transition_to(transit)
    assert (m.state, m.topic_partitions, m.txn_last_update_timestamp) == (S.ONGOING, {TP}, NOW + 1)


def test_a_tv1_completion_that_changes_the_producer_id_is_refused_even_at_epoch_0() -> None:
    # validProducerEpoch: only a TV2 Complete* at epoch 0 (an overflow onto the next producer id) may move the
    # producer id; every other transition must keep the producer id and epoch.
    m = TransactionMetadata("tid", 1000, producer_epoch=0, state=S.PREPARE_COMMIT, txn_start_timestamp=NOW,
                            txn_last_update_timestamp=NOW, client_transaction_version=0)
    transit = m.prepare_complete(NOW + 1)
    assert transit.producer_epoch == 0 and transit.prev_producer_id == 1000
    with pytest.raises(IllegalTransitionError, match=r"failed transition to CompleteCommit: .*unexpected metadata"):
        m.complete_transition_to(dataclasses.replace(transit, producer_id=2000))
    assert m.state is S.PREPARE_COMMIT and m.producer_id == 1000


def test_a_refused_completion_names_its_target_state() -> None:
    m = TransactionMetadata("tid", 1000, producer_epoch=2, state=S.EMPTY, txn_last_update_timestamp=NOW)
    transit = m.prepare_add_partitions({TP}, NOW, 0)
    m.pending_state = S.PREPARE_ABORT
    with pytest.raises(IllegalTransitionError, match=r"^tid failed transition to Ongoing: .*no matching pending"):
        m.complete_transition_to(transit)


def test_only_a_fence_at_short_max_value_is_logged_as_an_error(caplog: pytest.LogCaptureFixture) -> None:
    # Kafka (KAFKA-20090) logs an error when it must fence at Short.MAX_VALUE: it should never happen.
    with caplog.at_level(logging.ERROR, logger="kafka_txn_broker.txn.transaction_metadata"):
        TransactionMetadata("tid", 1000, producer_epoch=MAX_EPOCH - 1, state=S.ONGOING).prepare_fence_producer_epoch()
        assert caplog.records == []
        TransactionMetadata("tid", 1000, producer_epoch=MAX_EPOCH, state=S.ONGOING).prepare_fence_producer_epoch()
    [record] = caplog.records
    assert "Short.MAX_VALUE" in record.getMessage() and "1000" in record.getMessage()
