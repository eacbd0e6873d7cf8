"""ModernGroup: the state every KIP-848-generation group keeps (Kafka's ModernGroup / ModernGroupMember).

- The group epoch goes up whenever the inputs of the assignment change: a member joins or leaves, a
  subscription changes, a subscribed topic gains partitions (or appears, or is deleted).
- The target assignment is computed by the group's assignor when the group epoch is ahead of the
  assignment epoch, and then carries the group epoch as its assignment epoch.
- Each member has a member epoch: the assignment epoch it was last reconciled to. How a member moves
  to its target (at once for share groups; after revoking for consumer groups) is the subclass's rule.

Event-loop owned; pure data (the topics view and the assignor are passed in).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeVar

from kafka_txn_broker.group.modern.assignor import Assignment, PartitionAssignor, TopicsView
from kafka_txn_broker.group.modern.target_assignment import (
    MemberSubscription,
    SubscriptionMetadata,
    compute_target_assignment,
    subscription_metadata,
)


@dataclass(slots=True)
class ModernGroupMember:
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = -1
    client_id: str = ""
    client_host: str = ""
    rack_id: str | None = None
    subscribed_topic_names: frozenset[str] = frozenset()
    assigned: Assignment = field(default_factory=dict)


M = TypeVar("M", bound=ModernGroupMember)


class ModernGroup(Generic[M]):
    def __init__(self, group_id: str, group_epoch: int = 0) -> None:
        self.group_id = group_id
        self.group_epoch = group_epoch
        self.assignment_epoch = group_epoch
        self.members: dict[str, M] = {}
        self.target: dict[str, Assignment] = {}
        # The subscribed topics when the epoch last moved (Kafka keeps a hash of it).
        self.subscription_metadata: SubscriptionMetadata = ()

    @property
    def is_empty(self) -> bool:
        return not self.members

    def subscription_of(self, member: M) -> MemberSubscription:
        """What the member asks the assignor for (consumer groups add the topics their regex matches)."""
        return MemberSubscription(member.subscribed_topic_names, member.rack_id)

    def subscribed_topic_names(self) -> set[str]:
        return {name for m in self.members.values() for name in self.subscription_of(m).topic_names}

    def bump_epoch(self) -> None:
        self.group_epoch += 1

    def refresh_subscription_metadata(self, topics: TopicsView) -> bool:
        """Recompute the subscribed topics' metadata; True if it changed (the caller bumps the epoch once
        for all the changes of one request, as Kafka does)."""
        metadata = subscription_metadata(self.subscribed_topic_names(), topics)
        if metadata == self.subscription_metadata:
            return False
        self.subscription_metadata = metadata
        return True

    def update_target_assignment(self, assignor: PartitionAssignor, topics: TopicsView) -> bool:
        """Compute the target assignment if the group epoch moved past it; True if it was computed."""
        if self.assignment_epoch >= self.group_epoch and set(self.target) == set(self.members):
            return False
        subscriptions = {member_id: self.subscription_of(m) for member_id, m in self.members.items()}
        self.target = compute_target_assignment(assignor, subscriptions, self.target, topics)
        self.assignment_epoch = self.group_epoch
        return True

    def remove_member(self, member_id: str) -> M | None:
        self.target.pop(member_id, None)
        return self.members.pop(member_id, None)
