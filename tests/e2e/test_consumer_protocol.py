"""KIP-848 consumer groups with librdkafka's `group.protocol=consumer` (confluent-kafka 2.16.1) on a 3-node
cluster: server-side assignment, a rebalance without duplicates, read_committed consumption of
transactions, exactly-once consume-transform-produce, admin listing and description, a group that
carries on when its coordinator moves (the new one replays the group's records), and a static member
(group.instance.id) restarting without a rebalance."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, ConsumerGroupType, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from kafka_txn_broker import EmbeddedCluster

TOPIC = "events"
PARTITIONS = 4
# A short heartbeat interval keeps joins and reconciliations fast (the broker bounds allow it).
FAST = {"group.consumer.heartbeat.interval.ms": 300, "group.consumer.min.heartbeat.interval.ms": 300}


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(nodes=3, data_dir=tmp_path, config=FAST) as c:
        c.create_topic(TOPIC, PARTITIONS, 3)
        yield c


def consumer(bootstrap: str, group: str, **extra: Any) -> Consumer:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False, "log_level": 3, **extra})
    c.subscribe([TOPIC])
    return c


def produce(bootstrap: str, count: int, prefix: str = "v", topic: str = TOPIC) -> list[bytes]:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 2})
    values = [f"{prefix}{i}".encode() for i in range(count)]
    for i, v in enumerate(values):
        p.produce(topic, value=v, partition=i % PARTITIONS)
    assert p.flush(30) == 0
    return values


def assigned(c: Consumer) -> set[int]:
    return {tp.partition for tp in c.assignment()}


def poll_until(consumers: list[Consumer], done: Any, timeout_s: float = 20.0, commit: bool = False
               ) -> list[tuple[int, Any]]:
    """Poll in turn until done(records); with commit, each record's offset is committed before the next
    poll (what a consumer does to hand over exactly where it stopped)."""
    got: list[tuple[int, Any]] = []
    deadline = time.monotonic() + timeout_s
    while not done(got) and time.monotonic() < deadline:
        for i, c in enumerate(consumers):
            m = c.poll(0.05)
            if m is None or m.error() is not None:
                continue
            got.append((i, m))
            if commit:
                c.commit(m, asynchronous=False)
    return got


def test_two_members_read_every_record_once_across_a_rebalance(cluster: EmbeddedCluster) -> None:
    bs = cluster.bootstrap_servers
    sent = produce(bs, 200)
    a = consumer(bs, "pair")
    b: Consumer | None = None
    try:
        first = poll_until([a], lambda r: len(r) >= 60, commit=True)
        assert assigned(a) == set(range(PARTITIONS))  # alone: every partition (server-side assignment)
        b = consumer(bs, "pair")
        rest = poll_until([a, b], lambda r: len(first) + len(r) >= 200 and len(assigned(a)) == len(assigned(b)) == 2,
                          commit=True)
        late = poll_until([a, b], lambda r: False, timeout_s=1.0)  # a duplicate would show up now
    finally:
        a.close()
        if b is not None:
            b.close()
    got = [m.value() for _, m in first + rest + late]
    assert sorted(got) == sorted(sent)  # every record exactly once between the two members
    assert {i for i, _ in rest} == {0, 1}  # both consumed after the rebalance


def test_read_committed_member_sees_only_committed_transactions(cluster: EmbeddedCluster) -> None:
    bs = cluster.bootstrap_servers
    p = Producer({"bootstrap.servers": bs, "transactional.id": "tx-848", "linger.ms": 2, "log_level": 3})
    p.init_transactions(30)
    for prefix, commit in (("c1-", True), ("ab-", False), ("c2-", True)):
        p.begin_transaction()
        for i in range(8):
            p.produce(TOPIC, value=f"{prefix}{i}".encode(), partition=i % PARTITIONS)
        if commit:
            p.commit_transaction(30)
        else:
            p.abort_transaction(30)
    c = consumer(bs, "rc", **{"isolation.level": "read_committed"})
    try:
        got = poll_until([c], lambda r: len(r) >= 16)
        got += poll_until([c], lambda r: False, timeout_s=1.0)
    finally:
        c.close()
    assert sorted(m.value() for _, m in got) == sorted(f"{x}{i}".encode() for x in ("c1-", "c2-") for i in range(8))


def test_consume_transform_produce_with_send_offsets_is_exactly_once(cluster: EmbeddedCluster) -> None:
    bs = cluster.bootstrap_servers
    cluster.create_topic("out", 1, 3)
    sent = produce(bs, 40)
    c = consumer(bs, "eos", **{"isolation.level": "read_committed"})
    p = Producer({"bootstrap.servers": bs, "transactional.id": "eos-848", "linger.ms": 2, "log_level": 3})
    p.init_transactions(30)
    done = 0
    try:
        deadline = time.monotonic() + 30
        while done < len(sent) and time.monotonic() < deadline:
            batch = [m for m in c.consume(20, 0.3) if m.error() is None]
            if not batch:
                continue
            p.begin_transaction()
            for m in batch:
                p.produce("out", value=m.value().upper())
            p.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata(), 30)
            p.commit_transaction(30)
            done += len(batch)
        committed = c.committed([TopicPartition(TOPIC, i) for i in range(PARTITIONS)], 10)
    finally:
        c.close()
    assert done == len(sent)
    assert sum(tp.offset for tp in committed) == len(sent)  # the group's offsets moved with the transactions
    reader = Consumer({"bootstrap.servers": bs, "group.id": "check", "isolation.level": "read_committed",
                       "auto.offset.reset": "earliest", "log_level": 3})
    reader.assign([TopicPartition("out", 0, 0)])
    try:
        out = [m.value() for _, m in poll_until([reader], lambda r: len(r) >= len(sent))]
        out += [m.value() for _, m in poll_until([reader], lambda r: False, timeout_s=1.0)]
    finally:
        reader.close()
    assert sorted(out) == sorted(v.upper() for v in sent)


def test_admin_lists_and_describes_a_consumer_group(cluster: EmbeddedCluster) -> None:
    bs = cluster.bootstrap_servers
    a = consumer(bs, "shown", **{"group.remote.assignor": "range"})
    b = consumer(bs, "shown", **{"group.remote.assignor": "range"})
    try:
        poll_until([a, b], lambda r: len(assigned(a)) == len(assigned(b)) == 2)
        admin = AdminClient({"bootstrap.servers": bs})
        listed = admin.list_consumer_groups(types={ConsumerGroupType.CONSUMER}).result(10)
        assert [(g.group_id, g.type.name, g.state.name) for g in listed.valid] == [("shown", "CONSUMER", "STABLE")]
        assert admin.list_consumer_groups(types={ConsumerGroupType.CLASSIC}).result(10).valid == []
        d = admin.describe_consumer_groups(["shown"])["shown"].result(10)
        assert (d.type.name, d.state.name, d.partition_assignor, len(d.members)) == ("CONSUMER", "STABLE", "range", 2)
        ranges = sorted(sorted(tp.partition for tp in m.assignment.topic_partitions) for m in d.members)
        assert ranges == [[0, 1], [2, 3]]  # range: contiguous partitions per member
    finally:
        a.close()
        b.close()


def test_unknown_remote_assignor_is_refused(cluster: EmbeddedCluster) -> None:
    c = consumer(cluster.bootstrap_servers, "bad", **{"group.remote.assignor": "nope"})
    try:
        deadline = time.monotonic() + 10
        error = None
        while error is None and time.monotonic() < deadline:
            try:
                m = c.poll(0.1)
            except KafkaException as exc:
                error = exc.args[0]
                break
            if m is not None and m.error() is not None:
                error = m.error()
        # librdkafka treats UNSUPPORTED_ASSIGNOR (112) as fatal for the consumer, naming the broker's error.
        assert error is not None and error.code() == KafkaError._FATAL
        assert "assignor or its version range is not supported" in error.str()
    finally:
        c.close()


def test_a_group_carries_on_when_its_coordinator_moves(cluster: EmbeddedCluster) -> None:
    bs = cluster.bootstrap_servers
    produce(bs, 40)
    a, b = consumer(bs, "movers"), consumer(bs, "movers")
    inner = cluster.cluster
    assert inner is not None
    try:
        poll_until([a, b], lambda r: len(r) >= 40 and len(assigned(a)) == len(assigned(b)) == 2, commit=True)
        old = inner.nodes[0].group_coordinator.partition_of("movers")[1]
        epoch = inner.nodes[old].group_coordinator.shard("movers").consumer_groups["movers"].group_epoch
        cluster.stop_node(old)
        sent = produce(bs, 40, prefix="after")
        records = poll_until([a, b], lambda r: len(r) >= 40, commit=True)
        new = inner.nodes[(old + 1) % 3].group_coordinator.partition_of("movers")[1]
        group = inner.nodes[new].group_coordinator.shard("movers").consumer_groups["movers"]
        after = (group.group_epoch, len(group.members))
    finally:
        a.close()
        b.close()
    assert sorted(m.value() for _, m in records) == sorted(sent)
    # The new coordinator replayed the group's records: same epoch and members, nobody had to rejoin.
    assert new != old and after == (epoch, 2)


def test_a_static_member_restarting_keeps_its_partitions_and_nobody_else_is_revoked(cluster: EmbeddedCluster) -> None:
    """librdkafka leaves with epoch -2 when group.instance.id is set: the broker keeps the member's
    assignment, and a new consumer with the same instance id takes it over at once, at the same group epoch,
    while the other member keeps its partitions (no revocation reaches it)."""
    bs = cluster.bootstrap_servers
    inner = cluster.cluster
    assert inner is not None
    revoked: list[set[int]] = []
    b = Consumer({"bootstrap.servers": bs, "group.id": "static", "group.protocol": "consumer",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False, "log_level": 3})
    b.subscribe([TOPIC], on_revoke=lambda _c, tps: revoked.append({tp.partition for tp in tps}) if tps else None)
    a = consumer(bs, "static", **{"group.instance.id": "i-a"})
    a2: Consumer | None = None
    try:
        poll_until([a, b], lambda r: len(assigned(a)) == len(assigned(b)) == 2, timeout_s=15)
        kept_a, kept_b = assigned(a), assigned(b)
        assert kept_a | kept_b == set(range(PARTITIONS))
        coordinator = inner.nodes[0].group_coordinator.partition_of("static")[1]
        group = inner.nodes[coordinator].group_coordinator.shard("static").consumer_groups["static"]
        epoch, old_id = group.group_epoch, next(m for m in group.members.values() if m.instance_id == "i-a").member_id
        revoked.clear()  # the two-member rebalance is over: from now on, nothing may be taken from b
        a.close()
        deadline = time.monotonic() + 5  # the leave heartbeat may still be on its way
        while getattr(group.members.get(old_id), "member_epoch", None) != -2 and time.monotonic() < deadline:
            time.sleep(0.02)
        left = group.members.get(old_id)
        assert left is not None and (left.member_epoch, left.assigned) == (-2, group.target[old_id])
        assert group.group_epoch == epoch  # still in the group with its partitions: no rebalance
        a2 = consumer(bs, "static", **{"group.instance.id": "i-a"})
        poll_until([a2, b], lambda r: assigned(a2) == kept_a, timeout_s=10)
        poll_until([a2, b], lambda r: False, timeout_s=1.0)  # time for any rebalance to show up
        mine, theirs = assigned(a2), assigned(b)
        members = {m.member_id: m.instance_id for m in group.members.values()}
        after_epoch, revoked_from_b = group.group_epoch, list(revoked)  # b's own close revokes all, later
    finally:
        for c in (a2, b):
            if c is not None:
                c.close()
    assert (mine, theirs, revoked_from_b) == (kept_a, kept_b, [])
    assert after_epoch == epoch and old_id not in members and set(members.values()) == {"i-a", None}
