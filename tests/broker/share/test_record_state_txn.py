"""KIP-1289's TX_PENDING rows of the record state machine (plain data): what staging, COMMIT and ABORT
do to a record, and what a TX_PENDING record refuses."""

from __future__ import annotations

import pytest

from kafka_txn_broker.formats.errors import InvalidRecordStateError
from kafka_txn_broker.share.record_state import Event, RecordState, transactional_commit_event, transition

S = RecordState
LIMIT = 5


def test_only_an_acquired_record_is_staged():
    assert transition(S.ACQUIRED, Event.TXN_STAGE, 2, LIMIT) == (S.TX_PENDING, 2)
    for state in (S.AVAILABLE, S.ACKNOWLEDGED, S.ARCHIVED, S.TX_PENDING):
        with pytest.raises(InvalidRecordStateError):
            transition(state, Event.TXN_STAGE, 2, LIMIT)


def test_commit_applies_the_staged_type_and_abort_returns_the_record_to_its_owner():
    # KIP-1289: COMMIT turns ACCEPT into ACKNOWLEDGED and REJECT into ARCHIVED; ABORT reverts to ACQUIRED,
    # with the delivery count unchanged (the same delivery is still in progress).
    assert transition(S.TX_PENDING, transactional_commit_event(1), 3, LIMIT) == (S.ACKNOWLEDGED, 3)
    assert transition(S.TX_PENDING, transactional_commit_event(3), 3, LIMIT) == (S.ARCHIVED, 3)
    assert transition(S.TX_PENDING, Event.TXN_ABORT, LIMIT, LIMIT) == (S.ACQUIRED, LIMIT)


@pytest.mark.parametrize("ack_type", [0, 2, 4, 7])
def test_gap_release_renew_and_unknown_types_are_invalid_record_state_in_a_transaction(ack_type):
    with pytest.raises(InvalidRecordStateError):
        transactional_commit_event(ack_type)


@pytest.mark.parametrize("event", [Event.ACCEPT, Event.RELEASE, Event.REJECT, Event.GAP, Event.RENEW,
                                   Event.LOCK_EXPIRED, Event.MEMBER_RELEASE, Event.ACQUIRE])
def test_a_pending_record_takes_no_ordinary_event(event):
    # A non-transactional acknowledgement of a staged record is refused (the KIP's pseudo code), and
    # neither its lock nor its member leaving releases it: only the marker does.
    with pytest.raises(InvalidRecordStateError):
        transition(S.TX_PENDING, event, 1, LIMIT)


def test_a_pending_record_is_not_terminal_and_a_log_start_move_archives_it():
    assert not S.TX_PENDING.terminal
    assert transition(S.TX_PENDING, Event.ARCHIVE, 2, LIMIT) == (S.ARCHIVED, 2)


def test_tx_pending_is_not_a_persisted_delivery_state():
    assert S.TX_PENDING not in (0, 2, 4)  # ShareSnapshot/ShareUpdate DeliveryState values
