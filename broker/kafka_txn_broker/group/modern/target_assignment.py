"""Computing a group's target assignment (Kafka's TargetAssignmentBuilder): resolve each member's
subscribed topic names to topic ids, hand the assignor every member with what it is assigned now, and
return the new target of every member. Share groups and consumer groups both build theirs here.

    target = compute_target_assignment(UniformAssignor(), {"m1": MemberSubscription(frozenset({"t"}))},
                                       current={}, topics=view)

Pure: the topics view and the assignor are passed in.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kafka_txn_broker.group.modern.assignor import (
    Assignment,
    MemberSpec,
    PartitionAssignor,
    TopicId,
    TopicMetadata,
    TopicsView,
)

# (name, id, partitions) of each subscribed topic that exists, sorted by name: when it changes, the group
# epoch moves (Kafka keeps a hash of it, the MetadataHash of the group's epoch record).
SubscriptionMetadata = tuple[tuple[str, TopicId, int], ...]


@dataclass(frozen=True, slots=True)
class MemberSubscription:
    """What one member asks the assignor for: its topics by name (regexes already resolved)."""

    topic_names: frozenset[str]
    rack_id: str | None = None
    instance_id: str | None = None


def metadata_hash(metadata: SubscriptionMetadata) -> int:
    """A stable hash of the subscribed topics (Kafka writes one with the group epoch, so that a new
    coordinator can tell whether the topics changed while nobody watched)."""
    return zlib.crc32(";".join(f"{name}:{topic_id}:{n}" for name, topic_id, n in metadata).encode())


def subscription_metadata(names: Iterable[str], topics: TopicsView) -> SubscriptionMetadata:
    found = (topics.topic_by_name(n) for n in sorted(set(names)))
    return tuple((t.name, t.topic_id, t.partitions) for t in found if t is not None)


def compute_target_assignment(assignor: PartitionAssignor, members: Mapping[str, MemberSubscription],
                              current: Mapping[str, Assignment], topics: TopicsView) -> dict[str, Assignment]:
    """The new target of every member (members without partitions map to {})."""
    resolved: dict[TopicId, TopicMetadata] = {}
    specs: dict[str, MemberSpec] = {}
    for member_id, sub in members.items():
        ids = set()
        for name in sub.topic_names:
            topic = topics.topic_by_name(name)
            if topic is not None:
                resolved[topic.topic_id] = topic
                ids.add(topic.topic_id)
        specs[member_id] = MemberSpec(frozenset(ids), sub.rack_id, current.get(member_id, {}), sub.instance_id)
    result = assignor.assign(specs, resolved)
    return {member_id: result.get(member_id, {}) for member_id in members}
