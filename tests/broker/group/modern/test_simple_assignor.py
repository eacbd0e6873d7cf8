"""The share groups' "simple" assignor against KIP-932's rules: balance first, then stickiness; a
partition may be shared when there are more members than partitions."""

from __future__ import annotations

import uuid

from kafka_txn_broker.group.modern.assignor import MemberSpec, TopicMetadata
from kafka_txn_broker.group.modern.simple_assignor import SimpleAssignor

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)
TOPICS = {T1: TopicMetadata(T1, "a", 3), T2: TopicMetadata(T2, "b", 1)}


def spec(*topics: uuid.UUID, current: dict | None = None) -> MemberSpec:
    return MemberSpec(frozenset(topics), None, current or {})


def sizes(result: dict, topic: uuid.UUID) -> list[int]:
    return sorted(len(a.get(topic, ())) for a in result.values())


def test_one_member_gets_every_partition():
    assert SimpleAssignor().assign({"m1": spec(T1)}, TOPICS) == {"m1": {T1: frozenset({0, 1, 2})}}


def test_partitions_are_spread_evenly_without_sharing():
    result = SimpleAssignor().assign({"m1": spec(T1), "m2": spec(T1)}, TOPICS)
    assert sizes(result, T1) == [1, 2]
    assert result["m1"][T1] | result["m2"][T1] == {0, 1, 2}
    assert not result["m1"][T1] & result["m2"][T1]


def test_more_members_than_partitions_share_them():
    result = SimpleAssignor().assign({f"m{i}": spec(T2) for i in range(3)}, TOPICS)
    assert all(a == {T2: frozenset({0})} for a in result.values())
    five = SimpleAssignor().assign({f"m{i}": spec(T1) for i in range(5)}, TOPICS)
    # ceil(5/3) = 2 members per partition, 6 slots over 5 members: counts 2,1,1,1,1, each partition twice.
    assert sizes(five, T1) == [1, 1, 1, 1, 2]
    holders = [sum(p in a[T1] for a in five.values()) for p in range(3)]
    assert holders == [2, 2, 2]


def test_members_keep_what_they_have_while_balance_allows():
    first = SimpleAssignor().assign({"m1": spec(T1, current={T1: frozenset({2})}),
                                     "m2": spec(T1, current={T1: frozenset({0, 1})})}, TOPICS)
    assert first == {"m1": {T1: frozenset({2})}, "m2": {T1: frozenset({0, 1})}}
    # A third member joins: m2 gives one up, nobody else moves.
    third = SimpleAssignor().assign({"m1": spec(T1, current=first["m1"]), "m2": spec(T1, current=first["m2"]),
                                     "m3": spec(T1)}, TOPICS)
    assert third["m1"] == {T1: frozenset({2})}
    assert len(third["m2"][T1]) == 1 and third["m2"][T1] <= {0, 1}
    assert third["m3"][T1] == {0, 1} - third["m2"][T1]


def test_each_topic_is_spread_over_its_own_subscribers():
    result = SimpleAssignor().assign({"m1": spec(T1, T2), "m2": spec(T1)}, TOPICS)
    assert result["m1"][T2] == {0} and T2 not in result["m2"]
    assert result["m1"][T1] | result["m2"][T1] == {0, 1, 2}


def test_unknown_topics_and_no_subscriptions_give_nothing():
    assert SimpleAssignor().assign({"m1": spec(uuid.UUID(int=9)), "m2": spec()}, TOPICS) == {"m1": {}, "m2": {}}
