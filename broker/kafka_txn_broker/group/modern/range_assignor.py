"""The consumer groups' range assignor (Kafka's server-side RangeAssignor, name "range").

For each topic, its subscribers in a fixed order (static members first, by group.instance.id, then the
others by member id) receive contiguous ranges of partitions: with P partitions and N subscribers, each
gets P // N and the first P % N get one more. Members subscribed to the same topics with the same
partition counts therefore get the same partition numbers of every topic (co-partitioning, for joins).

    RangeAssignor().assign({"a": spec(T), "b": spec(T)}, {T: 3 partitions}) -> a: {0, 1}, b: {2}

Not sticky by design: a member id that sorts differently after a restart gets another range (static
members keep theirs). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping

from kafka_txn_broker.group.modern.assignor import Assignment, MemberSpec, TopicId, TopicMetadata


class RangeAssignor:
    name = "range"

    def assign(self, members: Mapping[str, MemberSpec],
               topics: Mapping[TopicId, TopicMetadata]) -> dict[str, Assignment]:
        result: dict[str, Assignment] = {m: {} for m in members}
        order = sorted(members, key=lambda m: _order_key(m, members[m]))
        for topic_id in sorted({t for spec in members.values() for t in spec.subscribed_topic_ids}):
            topic = topics.get(topic_id)
            if topic is None or topic.partitions <= 0:
                continue
            subscribers = [m for m in order if topic_id in members[m].subscribed_topic_ids]
            quota, extra = divmod(topic.partitions, len(subscribers))
            start = 0
            for i, member in enumerate(subscribers):
                end = start + quota + (1 if i < extra else 0)
                if end > start:
                    result[member][topic_id] = frozenset(range(start, end))
                start = end
        return result


def _order_key(member_id: str, spec: MemberSpec) -> tuple[int, str]:
    # Static members first, ordered by instance id, so a restarted static member keeps its range.
    return (0, spec.instance_id) if spec.instance_id is not None else (1, member_id)
