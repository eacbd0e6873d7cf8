"""The consumer groups' server-side assignors, with the outcomes Kafka's UniformAssignor and RangeAssignor
documentation gives: every subscribed partition to exactly one subscriber, balanced within one,
stickiness for uniform, contiguous per-topic ranges (co-partitioning) for range."""

from __future__ import annotations

import uuid

from kafka_txn_broker.group.modern.assignor import MemberSpec, TopicMetadata
from kafka_txn_broker.group.modern.range_assignor import RangeAssignor
from kafka_txn_broker.group.modern.uniform_assignor import UniformAssignor

A, B = uuid.UUID(int=1), uuid.UUID(int=2)
TOPICS = {A: TopicMetadata(A, "a", 3), B: TopicMetadata(B, "b", 3)}


def spec(*topics: uuid.UUID, current: dict[uuid.UUID, set[int]] | None = None, instance: str | None = None):
    return MemberSpec(frozenset(topics), None, {t: frozenset(p) for t, p in (current or {}).items()}, instance)


def flat(assignment) -> set[tuple[uuid.UUID, int]]:
    return {(t, p) for t, ps in assignment.items() for p in ps}


def test_range_gives_each_member_the_same_partition_numbers_of_every_topic() -> None:
    out = RangeAssignor().assign({"m1": spec(A, B), "m2": spec(A, B)}, TOPICS)
    assert out == {"m1": {A: frozenset({0, 1}), B: frozenset({0, 1})}, "m2": {A: frozenset({2}), B: frozenset({2})}}


def test_range_orders_static_members_by_instance_id() -> None:
    out = RangeAssignor().assign({"a": spec(A, instance="z"), "b": spec(A, instance="y")}, TOPICS)
    assert out == {"b": {A: frozenset({0, 1})}, "a": {A: frozenset({2})}}


def test_uniform_balances_and_keeps_what_it_can() -> None:
    six = {A: TopicMetadata(A, "a", 6)}
    out = UniformAssignor().assign({"old": spec(A, current={A: {0, 1, 2, 3, 4, 5}}), "new": spec(A)}, six)
    assert len(out["old"][A]) == len(out["new"][A]) == 3
    assert out["old"][A] < frozenset(range(6)) and not out["old"][A] & out["new"][A]
    # A third member joins: each keeps two of what it had, nothing moves between the first two.
    again = UniformAssignor().assign({"old": spec(A, current={A: set(out["old"][A])}),
                                      "new": spec(A, current={A: set(out["new"][A])}), "third": spec(A)}, six)
    assert again["old"][A] <= out["old"][A] and again["new"][A] <= out["new"][A]
    assert [len(again[m][A]) for m in ("old", "new", "third")] == [2, 2, 2]


def test_uniform_with_different_subscriptions_assigns_every_partition_once() -> None:
    out = UniformAssignor().assign({"m1": spec(A), "m2": spec(A, B), "m3": spec(B)}, TOPICS)
    owned = [tp for a in out.values() for tp in flat(a)]
    assert sorted(owned) == sorted({(t, p) for t in (A, B) for p in range(3)})
    assert all(t == A for t, _ in flat(out["m1"])) and all(t == B for t, _ in flat(out["m3"]))
    assert max(len(flat(a)) for a in out.values()) - min(len(flat(a)) for a in out.values()) <= 1
