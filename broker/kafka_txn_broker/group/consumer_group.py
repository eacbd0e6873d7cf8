"""A consumer group of the new protocol (KIP-848; Kafka's ConsumerGroup, ConsumerGroupMember, MemberState).

On top of ModernGroup (group epoch, target assignment, assignment epoch) a consumer group's members hold
partitions exclusively, so a member moves to its target in steps (current_assignment_builder.py) and
each member carries a reconciliation state:
- STABLE: its assignment is its target at the member epoch;
- UNREVOKED_PARTITIONS: it must first give up `pending_revocation` (it keeps its old epoch meanwhile);
- UNRELEASED_PARTITIONS: it has moved to the target epoch but waits for partitions another member has
  not released yet.
The group's state follows from its members, as Kafka derives it: Empty (no members), Assigning (the group
epoch is ahead of the target assignment), Reconciling (some member is not reconciled to the target),
Stable; Dead once deleted or unloaded.

Subscriptions are topic names and/or one regular expression (topic_regex.py); the topics a regex matches
are kept per group (`regex_matches`), refreshed by the membership from the live topic list.
Event-loop owned; pure data.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from enum import IntEnum
from typing import TYPE_CHECKING

from kafka_txn_broker.group.modern.assignor import Assignment, TopicId
from kafka_txn_broker.group.modern.modern_group import ModernGroup, ModernGroupMember
from kafka_txn_broker.group.modern.target_assignment import MemberSubscription

if TYPE_CHECKING:
    from kafka_txn_broker.group.consumer_membership import Requester

GROUP_TYPE = "consumer"
PROTOCOL_TYPE = "consumer"  # what ListGroups and DescribeGroups report as a consumer group's protocol type
EMPTY, ASSIGNING, RECONCILING, STABLE, DEAD = "Empty", "Assigning", "Reconciling", "Stable", "Dead"
JOIN, LEAVE, STATIC_LEAVE = 0, -1, -2


class MemberState(IntEnum):
    """Kafka's MemberState, with its record values (ConsumerGroupCurrentMemberAssignment.State)."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127

    @classmethod
    def of(cls, value: int) -> MemberState:
        try:
            return cls(value)
        except ValueError:
            return cls.UNKNOWN


@dataclass(slots=True)
class ConsumerGroupMember(ModernGroupMember):
    state: MemberState = MemberState.STABLE
    instance_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    pending_revocation: Assignment = field(default_factory=dict)

    def is_reconciled_to(self, assignment_epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == assignment_epoch


class ConsumerGroup(ModernGroup[ConsumerGroupMember]):
    def __init__(self, group_id: str, group_epoch: int = 0) -> None:
        super().__init__(group_id, group_epoch)
        self.metadata_hash = 0  # as last read from the log (the group epoch record)
        self.regex_matches: dict[str, frozenset[str]] = {}
        # Whose DESCRIBE rights filter the regex matches (consumer_membership.py); not in the log.
        self.regex_requester: Requester | None = None
        self.dead = False

    @property
    def state(self) -> str:
        if self.dead:
            return DEAD
        if not self.members:
            return EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ASSIGNING
        if any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return RECONCILING
        return STABLE

    def subscription_of(self, member: ConsumerGroupMember) -> MemberSubscription:
        names = member.subscribed_topic_names
        if member.subscribed_topic_regex:
            names = names | self.regex_matches.get(member.subscribed_topic_regex, frozenset())
        return MemberSubscription(names, member.rack_id, member.instance_id)

    def regexes(self) -> set[str]:
        return {m.subscribed_topic_regex for m in self.members.values() if m.subscribed_topic_regex}

    def static_member(self, instance_id: str) -> ConsumerGroupMember | None:
        return next((m for m in self.members.values() if m.instance_id == instance_id), None)

    def partition_epochs(self) -> dict[tuple[TopicId, int], int]:
        """The epoch of each partition's current owner (assigned or still being revoked): a partition in
        here is not free for another member yet (Kafka's currentPartitionEpoch)."""
        out: dict[tuple[TopicId, int], int] = {}
        for m in self.members.values():
            for assignment in (m.assigned, m.pending_revocation):
                for topic_id, partitions in assignment.items():
                    for p in partitions:
                        out[(topic_id, p)] = m.member_epoch
        return out

    def preferred_assignor(self, default: str) -> str:
        """The server assignor most members ask for (ties: the first name), else the broker's default."""
        counts = Counter(m.server_assignor for m in self.members.values() if m.server_assignor)
        if not counts:
            return default
        return min(counts, key=lambda name: (-counts[name], name))
