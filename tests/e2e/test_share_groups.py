"""Share groups (KIP-932) with librdkafka's ShareConsumer (confluent-kafka 2.16.1) on a 3-node cluster.

What KIP-932 promises, checked from the consumer's side: a record goes to one member at a time; ACCEPT
and REJECT are final, RELEASE redelivers; what a closing member holds goes to another member; a record
delivered up to the delivery-count limit is archived; acknowledgements survive a restart and a leader
move. Acquisition locks run on the cluster's manual clock (no sleeping for lock expiry)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import AcknowledgeType

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.clock import ManualClock
from kafka_txn_broker.testing.scenarios import HANGING_PARTITION, ScenarioOptions, run_scenario
from tests.e2e.cli_support import kafka_txn
from tests.e2e.share_support import (
    FAST_GROUPS,
    join,
    poll_until,
    produce,
    set_group_configs,
    share_consumer,
    share_partitions,
    txn_producer,
    values,
)

TOPIC = "work"
PARTITIONS = 3


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def cluster(tmp_path: Path, clock: ManualClock) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(nodes=3, data_dir=tmp_path, config=FAST_GROUPS, clock=clock) as c:
        c.create_topic(TOPIC, PARTITIONS, 3)
        yield c


def earliest(bs: str, group: str, **more: str) -> None:
    set_group_configs(bs, group, share_auto_offset_reset="earliest", **more)


def test_two_members_receive_every_record_exactly_once_between_them(cluster: EmbeddedCluster) -> None:
    bs = cluster.bootstrap_servers
    earliest(bs, "g")
    members = [share_consumer(bs, "g", [TOPIC]) for _ in range(2)]
    join(cluster, members, "g")  # both hold an assignment before any record exists
    sent = produce(bs, TOPIC, 300, PARTITIONS)
    got = poll_until(members, lambda r: len(r) >= len(sent))
    for m in members:
        m.commit_sync(10)
    extra = poll_until(members, lambda r: False, timeout_s=1.0)  # anything delivered twice would show now
    for m in members:
        m.close()
    assert not extra
    assert Counter(values(got)) == Counter(sent)  # all of them, none twice
    assert {i for i, _ in got} == {0, 1}  # both members took part
    assert all(s["start"] == 100 for s in share_partitions(cluster, "g").values())


def test_explicit_acknowledgements(cluster: EmbeddedCluster) -> None:
    bs = cluster.bootstrap_servers
    earliest(bs, "g")
    produce(bs, TOPIC, 30, PARTITIONS)
    c = share_consumer(bs, "g", [TOPIC], explicit=True)
    decisions = {b"v%d" % i: [AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT][i % 3]
                 for i in range(30)}
    seen: list[tuple[bytes, int]] = []

    def acknowledge(_i: int, consumer, batch) -> None:
        for m in batch:
            seen.append((m.value(), m.delivery_count()))
            # A released record comes back (delivery count 2); accept it then.
            consumer.acknowledge(m, decisions[m.value()] if m.delivery_count() == 1 else AcknowledgeType.ACCEPT)
        consumer.commit_sync(10)

    poll_until([c], lambda r: len(r) >= 40, on_batch=acknowledge)
    poll_until([c], lambda r: False, timeout_s=1.0, on_batch=acknowledge)
    c.close()
    deliveries = Counter(v for v, _ in seen)
    for value, decision in decisions.items():
        expected = 2 if decision == AcknowledgeType.RELEASE else 1  # ACCEPT and REJECT: never again
        assert deliveries[value] == expected, value
    assert sorted(n for v, n in seen if deliveries[v] == 2) == [1] * 10 + [2] * 10
    assert all(s["start"] == 10 and s["ACQUIRED"] == 0 for s in share_partitions(cluster, "g").values())


def test_records_of_a_member_that_closes_without_acknowledging_go_to_another(cluster: EmbeddedCluster) -> None:
    bs = cluster.bootstrap_servers
    earliest(bs, "g")
    sent = produce(bs, TOPIC, 60, PARTITIONS)
    first = share_consumer(bs, "g", [TOPIC], explicit=True)
    held = poll_until([first], lambda r: len(r) > 0)  # explicit mode: one poll until they are acknowledged
    assert sum(s["ACQUIRED"] for s in share_partitions(cluster, "g").values()) == len(held) > 0
    first.close()  # no acknowledgement: its share sessions close and release what it held
    second = share_consumer(bs, "g", [TOPIC])
    got = poll_until([second], lambda r: len(r) >= 60)
    second.commit_sync(10)
    second.close()
    assert Counter(values(got)) == Counter(sent)
    # A record its member never processed does not use up a delivery (Kafka's DeliveryCountOps.DECREASE).
    assert {m.delivery_count() for _, m in got} == {1}


def test_a_record_whose_locks_keep_expiring_is_archived_at_the_delivery_limit(
        cluster: EmbeddedCluster, clock: ManualClock) -> None:
    bs = cluster.bootstrap_servers
    earliest(bs, "g", share_delivery_count_limit="2")
    cluster.create_topic("one", 1, 3)
    produce(bs, "one", 3, 1)
    counts = []
    for _ in range(2):
        stuck = share_consumer(bs, "g", ["one"], explicit=True)
        got = poll_until([stuck], lambda r: len(r) >= 3)
        counts.append(sorted(m.delivery_count() for _, m in got))
        clock.advance(30_001)  # share.record.lock.duration.ms (30 s) runs out; nothing acknowledged
        cluster.tick()
        assert share_partitions(cluster, "g")[("one", 0)]["ACQUIRED"] == 0
        stuck.close()
    assert counts == [[1, 1, 1], [2, 2, 2]]
    state = share_partitions(cluster, "g")[("one", 0)]
    assert state["start"] == 3 and state["AVAILABLE"] == 0  # archived, the start offset moved past them
    late = share_consumer(bs, "g", ["one"])
    assert poll_until([late], lambda r: False, timeout_s=1.5) == []
    late.close()


def test_released_records_are_archived_at_the_limit_too(cluster: EmbeddedCluster) -> None:
    bs = cluster.bootstrap_servers
    earliest(bs, "g", share_delivery_count_limit="3")
    cluster.create_topic("one", 1, 3)
    produce(bs, "one", 1, 1)
    c = share_consumer(bs, "g", ["one"], explicit=True)
    counts = []

    def release(_i: int, consumer, batch) -> None:
        for m in batch:
            counts.append(m.delivery_count())
            consumer.acknowledge(m, AcknowledgeType.RELEASE)
        consumer.commit_sync(10)

    poll_until([c], lambda r: len(r) >= 3, on_batch=release)
    assert poll_until([c], lambda r: False, timeout_s=1.0, on_batch=release) == []
    c.close()
    assert counts == [1, 2, 3]
    assert share_partitions(cluster, "g")[("one", 0)]["start"] == 1


def test_auto_offset_reset_set_on_the_group(cluster: EmbeddedCluster) -> None:
    bs = cluster.bootstrap_servers
    produce(bs, TOPIC, 30, PARTITIONS, prefix="old")
    latest = share_consumer(bs, "latest-group", [TOPIC])  # share.auto.offset.reset defaults to latest
    assert poll_until([latest], lambda r: False, timeout_s=1.5) == []
    produce(bs, TOPIC, 3, PARTITIONS, prefix="new")
    assert sorted(values(poll_until([latest], lambda r: len(r) >= 3))) == [b"new0", b"new1", b"new2"]
    latest.close()
    set_group_configs(bs, "earliest-group", share_auto_offset_reset="earliest")
    early = share_consumer(bs, "earliest-group", [TOPIC])
    got = values(poll_until([early], lambda r: len(r) >= 33))
    early.close()
    assert len(got) == 33 and b"old0" in got


def test_acknowledgements_survive_a_restart_and_a_leader_move(cluster: EmbeddedCluster) -> None:
    bs = cluster.bootstrap_servers
    earliest(bs, "g")
    sent = produce(bs, TOPIC, 90, PARTITIONS)
    c = share_consumer(bs, "g", [TOPIC], explicit=True)
    accepted: set[bytes] = set()
    seen: set[bytes] = set()

    def accept_evens(_i: int, consumer, batch) -> None:
        for m in batch:
            seen.add(m.value())
            keep = int(m.value()[1:]) % 2 == 0
            if keep:
                accepted.add(m.value())
            consumer.acknowledge(m, AcknowledgeType.ACCEPT if keep else AcknowledgeType.RELEASE)
        consumer.commit_sync(10)

    poll_until([c], lambda r: len(seen) == 90, on_batch=accept_evens)
    c.close()
    assert len(accepted) == 45

    cluster.restart()
    again = share_consumer(bs, "g", [TOPIC], explicit=True)
    once_more: set[bytes] = set()

    def accept_some(_i: int, consumer, batch) -> None:
        for m in batch:
            assert m.value() not in accepted
            done = m.value() in {b"v1", b"v3", b"v5"}
            if done:
                once_more.add(m.value())
            consumer.acknowledge(m, AcknowledgeType.ACCEPT if done else AcknowledgeType.RELEASE)
        consumer.commit_sync(10)

    poll_until([again], lambda r: len(once_more) == 3, on_batch=accept_some)
    again.close()
    assert once_more == {b"v1", b"v3", b"v5"}
    accepted |= once_more

    # The leaders of the topic's partitions (and so the share-partitions) move: stop each leader in turn.
    leaders = {s["leader"] for s in share_partitions(cluster, "g").values()}
    for node in sorted(leaders):
        cluster.stop_node(node)
        cluster.start_node(node)
    last = share_consumer(bs, "g", [TOPIC])
    rest = poll_until([last], lambda r: len(r) >= 42)
    last.commit_sync(10)
    last.close()
    assert sorted(values(rest)) == sorted(set(sent) - accepted)


def test_read_committed_stalls_at_a_hanging_transaction_until_kafka_txn_abort(tmp_path: Path) -> None:
    config = {**FAST_GROUPS, "transaction.partition.verification.enable": False}
    with EmbeddedCluster(nodes=3, data_dir=tmp_path, config=config) as cluster:
        bs = cluster.bootstrap_servers
        (result,) = run_scenario("late-write-after-abort", bs, ScenarioOptions(healthy=False))
        (hanging,) = result.hanging
        topic, start = hanging.topic, hanging.start_offset
        writer = txn_producer(bs, "healthy-writer")
        writer.begin_transaction()
        writer.produce(topic, partition=HANGING_PARTITION, value=b"committed-after")
        writer.commit_transaction(30)
        earliest(bs, "rc", share_isolation_level="read_committed")
        member = share_consumer(bs, "rc", [topic])
        try:
            assert poll_until([member], lambda r: False, timeout_s=1.5) == []  # stalled at the LSO
            state = share_partitions(cluster, "rc")[(topic, HANGING_PARTITION)]
            assert state["start"] == start  # the share-partition start offset is held at the hanging transaction
            r = kafka_txn(bs, "abort", "--topic", topic, "--partition", str(HANGING_PARTITION), "--start-offset",
                          str(start), "--yes", "-o", "json")
            assert r.code == 0, r.err
            got = poll_until([member], lambda r: len(r) >= 1)
            assert values(got) == [b"committed-after"]  # never the aborted late write
            member.commit_sync(10)
            assert poll_until([member], lambda r: False, timeout_s=1.0) == []
        finally:
            member.close()
        state = share_partitions(cluster, "rc")[(topic, HANGING_PARTITION)]
        assert state["start"] == start + 5 and state["ARCHIVED"] == state["ACQUIRED"] == 0
