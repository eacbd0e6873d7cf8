"""The record state machine against KIP-932's rules (plain data)."""

from __future__ import annotations

import pytest

from kafka_txn_broker.formats.errors import InvalidRecordStateError
from kafka_txn_broker.share.record_state import AcknowledgeType, Event, RecordState, acknowledge_event, transition

S = RecordState
LIMIT = 5


def test_the_persisted_ids_are_kafkas():
    # ShareSnapshot/ShareUpdate DeliveryState: 0 available, 2 acknowledged, 4 archived.
    assert (S.AVAILABLE, S.ACQUIRED, S.ACKNOWLEDGED, S.ARCHIVED) == (0, 1, 2, 4)
    assert [t.value for t in AcknowledgeType] == [0, 1, 2, 3, 4]  # GAP ACCEPT RELEASE REJECT RENEW


def test_acquire_counts_a_delivery():
    assert transition(S.AVAILABLE, Event.ACQUIRE, 0, LIMIT) == (S.ACQUIRED, 1)
    assert transition(S.AVAILABLE, Event.ACQUIRE, 3, LIMIT) == (S.ACQUIRED, 4)


@pytest.mark.parametrize(("ack", "expected"), [
    (AcknowledgeType.ACCEPT, S.ACKNOWLEDGED),
    (AcknowledgeType.RELEASE, S.AVAILABLE),
    (AcknowledgeType.REJECT, S.ARCHIVED),
    (AcknowledgeType.GAP, S.ARCHIVED),
    (AcknowledgeType.RENEW, S.ACQUIRED),
])
def test_acknowledge_types(ack, expected):
    state, count = transition(S.ACQUIRED, acknowledge_event(ack), 2, LIMIT)
    assert (state, count) == (expected, 2)


def test_release_or_lock_expiry_at_the_limit_archives():
    for event in (Event.RELEASE, Event.LOCK_EXPIRED):
        assert transition(S.ACQUIRED, event, LIMIT - 1, LIMIT) == (S.AVAILABLE, LIMIT - 1)
        assert transition(S.ACQUIRED, event, LIMIT, LIMIT) == (S.ARCHIVED, LIMIT)


def test_a_member_release_gives_the_delivery_back():
    # Kafka's DeliveryCountOps.DECREASE: fetched by a member that went away, never processed.
    assert transition(S.ACQUIRED, Event.MEMBER_RELEASE, LIMIT, LIMIT) == (S.AVAILABLE, LIMIT - 1)
    assert transition(S.ACQUIRED, Event.MEMBER_RELEASE, 1, LIMIT) == (S.AVAILABLE, 0)


@pytest.mark.parametrize("state", [S.AVAILABLE, S.ACKNOWLEDGED, S.ARCHIVED])
@pytest.mark.parametrize("event", [Event.ACCEPT, Event.RELEASE, Event.REJECT, Event.GAP, Event.LOCK_EXPIRED])
def test_only_acquired_records_are_acknowledged(state, event):
    with pytest.raises(InvalidRecordStateError):
        transition(state, event, 1, LIMIT)


@pytest.mark.parametrize("state", [S.ACQUIRED, S.ACKNOWLEDGED, S.ARCHIVED])
def test_only_available_records_are_acquired(state):
    with pytest.raises(InvalidRecordStateError):
        transition(state, Event.ACQUIRE, 1, LIMIT)


def test_terminal_states():
    assert {s for s in S if s.terminal} == {S.ACKNOWLEDGED, S.ARCHIVED}
    assert transition(S.AVAILABLE, Event.ARCHIVE, 2, LIMIT) == (S.ARCHIVED, 2)


def test_an_unknown_acknowledge_type_is_refused():
    with pytest.raises(ValueError):
        acknowledge_event(9)
