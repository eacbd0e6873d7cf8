"""Reconciliation of one consumer group member towards its target assignment (Kafka's
CurrentAssignmentBuilder): the rule that a partition is never owned by two members at once.

Given the member, the target (epoch and partitions) and who owns which partition now, the next state is:
- partitions the member has that are not in its target must be revoked first. While the member still
  reports any of them as owned (its heartbeat's TopicPartitions; no report counts as still owning), it
  stays at its current epoch in UNREVOKED_PARTITIONS, keeping only the partitions it may keep;
- once it owns none of them, it moves to the target epoch and is given the target partitions that are
  free. A target partition still owned by another member (at any epoch) is held back: the member is
  UNRELEASED_PARTITIONS until that owner has revoked it, and gets it at a later heartbeat;
- otherwise it is STABLE at the target epoch.

    member = reconcile(member, 5, target, partition_epochs.get, owned)

Pure: returns the member unchanged or a changed copy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from kafka_txn_broker.formats.errors import FencedMemberEpochError
from kafka_txn_broker.group.consumer_group import ConsumerGroupMember, MemberState
from kafka_txn_broker.group.modern.assignor import Assignment, TopicId

# The epoch of the member owning a partition now, or None if it is free.
PartitionEpoch = Callable[[tuple[TopicId, int]], int | None]


def reconcile(member: ConsumerGroupMember, target_epoch: int, target: Assignment, partition_epoch: PartitionEpoch,
              owned: Assignment | None) -> ConsumerGroupMember:
    """The member's next state (Kafka's CurrentAssignmentBuilder.build)."""
    state = member.state
    if state is MemberState.STABLE:
        if member.member_epoch == target_epoch:
            return member
        return _next(member, member.member_epoch, target_epoch, target, partition_epoch, owned)
    if state is MemberState.UNREVOKED_PARTITIONS:
        if _owns_any(owned, member.pending_revocation):
            return member
        return _next(member, min(member.member_epoch + 1, target_epoch), target_epoch, target, partition_epoch, owned)
    if state is MemberState.UNRELEASED_PARTITIONS:
        return _next(member, member.member_epoch, target_epoch, target, partition_epoch, owned)
    # A state this version does not know (a newer coordinator wrote it): start the member from scratch.
    if owned is None or owned:
        raise FencedMemberEpochError("The consumer group member is in a unknown state. "
                                     "The member must abandon all its partitions and rejoin.")
    return _next(member, target_epoch, target_epoch, target, partition_epoch, owned)


def _owns_any(owned: Assignment | None, partitions: Assignment) -> bool:
    if owned is None:  # the member did not say: it may still own them
        return True
    return any(owned.get(t, frozenset()) & ps for t, ps in partitions.items())


def _next(member: ConsumerGroupMember, epoch: int, target_epoch: int, target: Assignment,
          partition_epoch: PartitionEpoch, owned: Assignment | None) -> ConsumerGroupMember:
    kept: dict[TopicId, frozenset[int]] = {}
    revoke: dict[TopicId, frozenset[int]] = {}
    add: dict[TopicId, frozenset[int]] = {}
    unreleased = False
    for topic_id in set(target) | set(member.assigned):
        wanted = target.get(topic_id, frozenset())
        have = member.assigned.get(topic_id, frozenset())
        keep, gone = have & wanted, have - wanted
        new = wanted - keep
        free = frozenset(p for p in new if partition_epoch((topic_id, p)) is None)
        unreleased = unreleased or free != new
        for out, value in ((kept, keep), (revoke, gone), (add, free)):
            if value:
                out[topic_id] = value
    if revoke and _owns_any(owned, revoke):
        # Keep the old epoch until the member confirms it gave these up.
        return _moved(member, epoch, MemberState.UNREVOKED_PARTITIONS, kept, revoke)
    assigned = {t: kept.get(t, frozenset()) | add.get(t, frozenset()) for t in set(kept) | set(add)}
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return _moved(member, target_epoch, state, assigned, {})


def _moved(member: ConsumerGroupMember, epoch: int, state: MemberState, assigned: Assignment,
           pending_revocation: Assignment) -> ConsumerGroupMember:
    return replace(member, member_epoch=epoch, previous_member_epoch=member.member_epoch, state=state,
                   assigned=assigned, pending_revocation=pending_revocation)
