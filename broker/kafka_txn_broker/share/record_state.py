"""The delivery state of a share-partition record and every transition it may take (Kafka's RecordState
and InFlightState.tryUpdateState), in one table.

    new_state, new_count = transition(RecordState.ACQUIRED, Event.RELEASE, delivery_count=5, limit=5)
    # -> (ARCHIVED, 5): a release at the delivery-count limit archives the record

A transition is looked up by (state, event); an event a state does not accept raises
InvalidRecordStateError (Kafka's INVALID_RECORD_STATE). The table is the only place that knows the
states; KIP-1289's TX_PENDING (acknowledgements staged in a producer's transaction) is rows here too:

    ACQUIRED --TXN_STAGE--> TX_PENDING --TXN_COMMIT_ACCEPT--> ACKNOWLEDGED
                                       --TXN_COMMIT_REJECT--> ARCHIVED
                                       --TXN_ABORT--> ACQUIRED (same owner, same lock: the KIP's abort)

Pure: no clock, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, IntEnum

from kafka_txn_broker.formats.errors import InvalidRecordStateError


class RecordState(IntEnum):
    """Kafka's ids, as persisted in ShareSnapshot / ShareUpdate state batches (ACQUIRED never is)."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4
    # KIP-1289: acknowledged inside an open transaction, waiting for its marker. Never in a state batch
    # (staging is written as the states its COMMIT gives); the id is ours, outside Kafka's range.
    TX_PENDING = 5

    @property
    def terminal(self) -> bool:
        """Delivery is complete: the share-partition start offset may move past the record."""
        return self in TERMINAL


TERMINAL = frozenset({RecordState.ACKNOWLEDGED, RecordState.ARCHIVED})


class AcknowledgeType(IntEnum):
    """The AcknowledgeTypes of ShareFetch / ShareAcknowledge (RENEW from v2, KIP-1222)."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


class Event(Enum):
    ACQUIRE = "acquire"                # a ShareFetch hands the record to a member
    ACCEPT = "accept"                  # AcknowledgeType ACCEPT
    RELEASE = "release"                # AcknowledgeType RELEASE
    REJECT = "reject"                  # AcknowledgeType REJECT
    GAP = "gap"                        # AcknowledgeType GAP: the offset holds no record
    RENEW = "renew"                    # AcknowledgeType RENEW: keep it, restart the lock
    LOCK_EXPIRED = "lock-expired"      # the acquisition lock ran out
    MEMBER_RELEASE = "member-release"  # its share session closed or its member left: it was not processed
    ARCHIVE = "archive"                # the start offset moved past it (log start, read_committed abort)
    TXN_STAGE = "txn-stage"            # TxnShareAcknowledge staged it in a producer's transaction
    TXN_COMMIT_ACCEPT = "txn-commit-accept"  # the COMMIT marker of a transaction that staged ACCEPT
    TXN_COMMIT_REJECT = "txn-commit-reject"  # the COMMIT marker of a transaction that staged REJECT
    TXN_ABORT = "txn-abort"            # the ABORT marker: back to its owner, as before staging


class DeliveryCount(Enum):
    INCREASE = 1
    KEEP = 0
    # Kafka's DeliveryCountOps.DECREASE: records released because their member went away were fetched
    # but not processed, so that delivery does not count against the limit.
    DECREASE = -1


@dataclass(frozen=True, slots=True)
class Transition:
    target: RecordState
    count: DeliveryCount = DeliveryCount.KEEP


S = RecordState
E = Event
D = DeliveryCount

TRANSITIONS: dict[tuple[RecordState, Event], Transition] = {
    (S.AVAILABLE, E.ACQUIRE): Transition(S.ACQUIRED, D.INCREASE),
    (S.AVAILABLE, E.ARCHIVE): Transition(S.ARCHIVED),
    (S.ACQUIRED, E.ACCEPT): Transition(S.ACKNOWLEDGED),
    (S.ACQUIRED, E.RELEASE): Transition(S.AVAILABLE),
    (S.ACQUIRED, E.REJECT): Transition(S.ARCHIVED),
    (S.ACQUIRED, E.GAP): Transition(S.ARCHIVED),
    (S.ACQUIRED, E.RENEW): Transition(S.ACQUIRED),
    (S.ACQUIRED, E.LOCK_EXPIRED): Transition(S.AVAILABLE),
    (S.ACQUIRED, E.MEMBER_RELEASE): Transition(S.AVAILABLE, D.DECREASE),
    (S.ACQUIRED, E.ARCHIVE): Transition(S.ARCHIVED),
    (S.ACQUIRED, E.TXN_STAGE): Transition(S.TX_PENDING),
    (S.TX_PENDING, E.TXN_COMMIT_ACCEPT): Transition(S.ACKNOWLEDGED),
    (S.TX_PENDING, E.TXN_COMMIT_REJECT): Transition(S.ARCHIVED),
    (S.TX_PENDING, E.TXN_ABORT): Transition(S.ACQUIRED),
    # The log start moved past it: the record is gone whatever the transaction does.
    (S.TX_PENDING, E.ARCHIVE): Transition(S.ARCHIVED),
}

ACKNOWLEDGE_EVENTS: dict[AcknowledgeType, Event] = {
    AcknowledgeType.GAP: E.GAP,
    AcknowledgeType.ACCEPT: E.ACCEPT,
    AcknowledgeType.RELEASE: E.RELEASE,
    AcknowledgeType.REJECT: E.REJECT,
    AcknowledgeType.RENEW: E.RENEW,
}


# Inside a transaction only ACCEPT and REJECT mean something (KIP-1289): the event its COMMIT applies.
TRANSACTIONAL_COMMIT_EVENTS: dict[AcknowledgeType, Event] = {
    AcknowledgeType.ACCEPT: E.TXN_COMMIT_ACCEPT,
    AcknowledgeType.REJECT: E.TXN_COMMIT_REJECT,
}


def transition(state: RecordState, event: Event, delivery_count: int, limit: int) -> tuple[RecordState, int]:
    """The (state, delivery count) after `event`; InvalidRecordStateError if `state` does not accept it.

    A record going back to AVAILABLE that already reached the delivery-count limit is archived instead,
    except when its member's release gives the delivery back (Kafka keeps such records deliverable)."""
    rule = TRANSITIONS.get((state, event))
    if rule is None:
        raise InvalidRecordStateError(f"a record in state {state.name} does not accept {event.value}")
    target = rule.target
    if target is S.AVAILABLE and rule.count is not D.DECREASE and delivery_count >= limit:
        return S.ARCHIVED, delivery_count
    if target is S.ARCHIVED:
        return target, delivery_count
    return target, max(0, delivery_count + rule.count.value)


def acknowledge_event(ack_type: int) -> Event:
    """The event of a wire AcknowledgeType; InvalidRequestError-worthy values raise ValueError."""
    return ACKNOWLEDGE_EVENTS[AcknowledgeType(ack_type)]


def transactional_commit_event(ack_type: int) -> Event:
    """The event the COMMIT marker applies to a record staged with `ack_type`; InvalidRecordStateError
    for any type but ACCEPT and REJECT (the KIP's INVALID_RECORD_STATE)."""
    try:
        return TRANSACTIONAL_COMMIT_EVENTS[AcknowledgeType(ack_type)]
    except (ValueError, KeyError):
        raise InvalidRecordStateError(
            f"acknowledge type {ack_type} is not allowed in a transaction: only ACCEPT (1) and REJECT (3)") from None
