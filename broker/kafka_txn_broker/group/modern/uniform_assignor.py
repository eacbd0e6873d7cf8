"""The consumer groups' default assignor (Kafka's server-side UniformAssignor, name "uniform").

Its rules, in order of priority:
1. every partition of a subscribed topic goes to exactly one of its subscribers;
2. balance: any two members' partition counts differ by at most one (when all members subscribe to the
   same topics; with different subscriptions, as close to that as the subscriptions allow);
3. stickiness: a member keeps the partitions it has as long as balance allows, so few partitions move
   (each move costs a revocation round-trip in the consumer protocol).

Two strategies, as in Kafka: when every member subscribes to the same topics (homogeneous), each member
gets a quota (total // members, the members holding the most now get the remainder), keeps what fits in
it and fills up from the free partitions. Otherwise (heterogeneous), members keep what they are still
subscribed to, free partitions go to the least loaded subscriber topic by topic (the topics with the
most partitions per subscriber first), and then partitions move from the most to the least loaded
subscriber of each topic until no move improves the balance (bounded rounds).

    UniformAssignor().assign({"a": spec(T), "b": spec(T, current={T: {0, 1, 2}})}, {T: 3 partitions})
    # -> b keeps two of its partitions, a gets the third

Pure.
"""

from __future__ import annotations

from collections.abc import Mapping

from kafka_txn_broker.group.modern.assignor import Assignment, MemberSpec, TopicId, TopicMetadata

# Kafka bounds the heterogeneous balancing the same way: overlapping subscriptions converge slowly.
MAX_BALANCING_ROUNDS = 16

Owners = dict[tuple[TopicId, int], str]


class UniformAssignor:
    name = "uniform"

    def assign(self, members: Mapping[str, MemberSpec],
               topics: Mapping[TopicId, TopicMetadata]) -> dict[str, Assignment]:
        partitions = {t: topics[t].partitions for spec in members.values() for t in spec.subscribed_topic_ids
                      if t in topics and topics[t].partitions > 0}
        if not members or not partitions:
            return {m: {} for m in members}
        subscriptions = {frozenset(t for t in spec.subscribed_topic_ids if t in partitions)
                         for spec in members.values()}
        homogeneous = len(subscriptions) == 1
        owners = _homogeneous(members, partitions) if homogeneous else _heterogeneous(members, partitions)
        return _by_member(members, owners)


def _kept(members: Mapping[str, MemberSpec], partitions: Mapping[TopicId, int]) -> dict[str, list[tuple[TopicId, int]]]:
    """What each member has now that it may keep: subscribed, existing, and not claimed twice."""
    claimed: set[tuple[TopicId, int]] = set()
    kept: dict[str, list[tuple[TopicId, int]]] = {}
    for member_id in sorted(members):
        spec = members[member_id]
        mine = []
        for topic_id in sorted(spec.current):
            if topic_id not in spec.subscribed_topic_ids or topic_id not in partitions:
                continue
            for p in sorted(spec.current[topic_id]):
                if p < partitions[topic_id] and (topic_id, p) not in claimed:
                    claimed.add((topic_id, p))
                    mine.append((topic_id, p))
        kept[member_id] = mine
    return kept


def _all_partitions(partitions: Mapping[TopicId, int]) -> list[tuple[TopicId, int]]:
    return [(t, p) for t in sorted(partitions) for p in range(partitions[t])]


def _homogeneous(members: Mapping[str, MemberSpec], partitions: Mapping[TopicId, int]) -> Owners:
    kept = _kept(members, partitions)
    total = sum(partitions.values())
    base, extra = divmod(total, len(members))
    # The members holding the most now get the extra slots, so fewer partitions move.
    by_holding = sorted(members, key=lambda m: (-len(kept[m]), m))
    quota = {m: base + (1 if i < extra else 0) for i, m in enumerate(by_holding)}
    owners: Owners = {}
    for member_id in sorted(members):
        for tp in kept[member_id][:quota[member_id]]:
            owners[tp] = member_id
    free = [tp for tp in _all_partitions(partitions) if tp not in owners]
    load = {m: sum(1 for owner in owners.values() if owner == m) for m in members}
    for member_id in sorted(members):
        while load[member_id] < quota[member_id] and free:
            owners[free.pop(0)] = member_id
            load[member_id] += 1
    return owners


def _heterogeneous(members: Mapping[str, MemberSpec], partitions: Mapping[TopicId, int]) -> Owners:
    subscribers = {t: sorted(m for m, spec in members.items() if t in spec.subscribed_topic_ids)
                   for t in partitions}
    owners: Owners = {tp: m for m, tps in _kept(members, partitions).items() for tp in tps}
    load = {m: 0 for m in members}
    for owner in owners.values():
        load[owner] += 1
    # Topics with the most partitions per subscriber first, then the fewest subscribers, then by id.
    order = sorted(partitions, key=lambda t: (-partitions[t] / len(subscribers[t]), len(subscribers[t]), t))
    for topic_id in order:
        for p in range(partitions[topic_id]):
            if (topic_id, p) not in owners:
                target = min(subscribers[topic_id], key=lambda m: (load[m], m))
                owners[(topic_id, p)] = target
                load[target] += 1
    _balance(order, partitions, subscribers, owners, load)
    return owners


def _balance(order: list[TopicId], partitions: Mapping[TopicId, int], subscribers: Mapping[TopicId, list[str]],
             owners: Owners, load: dict[str, int]) -> None:
    """Move partitions from the most to the least loaded subscriber of each topic while that narrows the
    gap (a move between loads that differ by one or less would not)."""
    for _ in range(MAX_BALANCING_ROUNDS):
        moved = False
        for topic_id in order:
            if len(subscribers[topic_id]) < 2:
                continue
            while True:
                holding = {m: [p for p in range(partitions[topic_id]) if owners[(topic_id, p)] == m]
                           for m in subscribers[topic_id]}
                donor = max((m for m in holding if holding[m]), key=lambda m: (load[m], m), default=None)
                taker = min(subscribers[topic_id], key=lambda m: (load[m], m))
                if donor is None or load[donor] - load[taker] <= 1:
                    break
                owners[(topic_id, holding[donor][-1])] = taker
                load[donor] -= 1
                load[taker] += 1
                moved = True
        if not moved:
            return


def _by_member(members: Mapping[str, MemberSpec], owners: Owners) -> dict[str, Assignment]:
    grouped: dict[str, dict[TopicId, set[int]]] = {m: {} for m in members}
    for (topic_id, p), member_id in owners.items():
        grouped[member_id].setdefault(topic_id, set()).add(p)
    return {m: {t: frozenset(ps) for t, ps in by_topic.items()} for m, by_topic in grouped.items()}
