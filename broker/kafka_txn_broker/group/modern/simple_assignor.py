"""The share groups' assignor (Kafka's SimpleAssignor, name "simple").

Share groups may give one partition to several members, because records, not partitions, are what a
member holds. For each topic, among the members subscribed to it:
- every partition goes to ceil(members / partitions) members (one each while there are enough);
- the partition-slots are spread so any two members' counts differ by at most one, and every member
  gets at least one partition when there are more members than partitions;
- balance first, then stickiness: a member keeps what it has as long as balance allows.

    SimpleAssignor().assign(two members, topic with 1 partition) -> both members get partition 0
"""

from __future__ import annotations

from collections.abc import Mapping

from kafka_txn_broker.group.modern.assignor import Assignment, MemberSpec, TopicId, TopicMetadata


class SimpleAssignor:
    name = "simple"

    def assign(self, members: Mapping[str, MemberSpec],
               topics: Mapping[TopicId, TopicMetadata]) -> dict[str, Assignment]:
        result: dict[str, Assignment] = {m: {} for m in members}
        for topic_id in sorted({t for spec in members.values() for t in spec.subscribed_topic_ids}):
            topic = topics.get(topic_id)
            if topic is None or topic.partitions <= 0:
                continue
            subscribers = sorted(m for m, spec in members.items() if topic_id in spec.subscribed_topic_ids)
            current = {m: members[m].current.get(topic_id, frozenset()) for m in subscribers}
            for member, partitions in assign_partitions(topic.partitions, subscribers, current).items():
                if partitions:
                    result[member][topic_id] = frozenset(partitions)
        return result


def assign_partitions(partitions: int, members: list[str],
                      current: Mapping[str, frozenset[int]]) -> dict[str, set[int]]:
    """Spread `partitions` partitions of one topic over `members` (sorted ids), keeping current ones."""
    if not members:
        return {}
    sharing = -(-len(members) // partitions)  # members per partition
    base, extra = divmod(sharing * partitions, len(members))
    # The members holding the most now get the extra slots, so fewer partitions move.
    by_holding = sorted(members, key=lambda m: -len(current.get(m, frozenset())))
    desired = {m: base + (1 if i < extra else 0) for i, m in enumerate(by_holding)}
    holders: dict[int, int] = dict.fromkeys(range(partitions), 0)
    result: dict[str, set[int]] = {m: set() for m in members}
    for m in members:  # stickiness, within the balance
        for p in sorted(current.get(m, frozenset())):
            if p < partitions and len(result[m]) < desired[m] and holders[p] < sharing:
                result[m].add(p)
                holders[p] += 1
    order = {m: i for i, m in enumerate(members)}
    for p in range(partitions):
        while holders[p] < sharing:
            free = [m for m in members if len(result[m]) < desired[m] and p not in result[m]]
            if not free:
                break  # the members with room already have it: accept less sharing
            m = min(free, key=lambda x: (len(result[x]) - desired[x], order[x]))
            result[m].add(p)
            holders[p] += 1
    return result
