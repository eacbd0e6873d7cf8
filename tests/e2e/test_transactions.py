"""Transactions with real clients (confluent-kafka / librdkafka, kafka-python admin)."""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, IsolationLevel, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec
from kafka import KafkaAdminClient
from kafka.admin._transactions import AbortTransactionSpec
from kafka.structs import TopicPartition as KTP

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.clock import ManualClock
from kafka_txn_broker.formats.partitioning import TXN_TOPIC, partition_for
from kafka_txn_broker.testing.scenarios import HANGING_PARTITION, ScenarioOptions, run_scenario
from tests.e2e.helpers import consume_all

QUIET = {"log_level": 3}


def create(bootstrap: str, *topics: str, partitions: int = 3) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(t, num_partitions=partitions, replication_factor=3) for t in topics])
    for f in futures.values():
        f.result(30)


def txn_producer(bootstrap: str, txn_id: str, **extra: Any) -> Producer:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, "linger.ms": 5, **QUIET, **extra})
    p.init_transactions(30)
    return p


def committed_lso(bootstrap: str, topic: str, partition: int) -> tuple[int, int]:
    """(read_committed end offset, high watermark) as ListOffsets reports them."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    tp = TopicPartition(topic, partition)
    lso = admin.list_offsets({tp: OffsetSpec.latest()}, isolation_level=IsolationLevel.READ_COMMITTED)[tp].result(30)
    hw = admin.list_offsets({tp: OffsetSpec.latest()}, isolation_level=IsolationLevel.READ_UNCOMMITTED)[tp].result(30)
    return lso.offset, hw.offset


REAPER_EVERY_500_MS = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": 500}


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(nodes=3, data_dir=tmp_path, config=REAPER_EVERY_500_MS) as c:
        yield c


# ---- consume-transform-produce -------------------------------------------------------------------
def _fill_input(bootstrap: str, n: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 20, **QUIET})
    for i in range(n):
        p.produce("ctp-in", key=str(i).encode(), value=str(i).encode())
        if i % 2000 == 0:
            p.poll(0)
    assert p.flush(60) == 0


def _rewind(consumer: Consumer) -> None:
    """After an abort, continue from the last committed offsets (the aborted batch is redone)."""
    assignment = consumer.assignment()
    for tp in consumer.committed(assignment, 30):
        consumer.seek(TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else 0))


def _process(bootstrap: str, total: int, rng: random.Random) -> tuple[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "ctp", "isolation.level": "read_committed",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False, **QUIET})
    consumer.subscribe(["ctp-in"])
    producer = txn_producer(bootstrap, "ctp-app")
    done = aborts = 0
    deadline = time.monotonic() + 50
    try:
        while done < total and time.monotonic() < deadline:
            msgs = [m for m in consumer.consume(500, 0.5) if m.error() is None]
            if not msgs:
                continue
            producer.begin_transaction()
            for m in msgs:
                producer.produce("ctp-out-a", key=m.key(), value=m.value())
                producer.produce("ctp-out-b", key=m.key(), value=b"len=%d" % len(m.value()))
            producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                                 consumer.consumer_group_metadata(), 30)
            if rng.random() < 0.15:
                # Flush first: librdkafka would otherwise purge unsent records on abort, and the test
                # wants aborted data in the log that read_committed consumers must skip.
                producer.flush(30)
                producer.abort_transaction(30)
                aborts += 1
                _rewind(consumer)
            else:
                producer.commit_transaction(30)
                done += len(msgs)
    finally:
        consumer.close()
    return done, aborts


def test_consume_transform_produce_exactly_once(cluster: EmbeddedCluster) -> None:
    bootstrap, total = cluster.bootstrap_servers, 10_000
    create(bootstrap, "ctp-in", "ctp-out-a", "ctp-out-b")
    _fill_input(bootstrap, total)
    done, aborts = _process(bootstrap, total, random.Random(7))
    assert done == total and aborts > 0
    out_a = [v for recs in consume_all(bootstrap, "ctp-out-a", 3, read_committed=True).values()
             for _, _, v in recs]
    out_b = [v for recs in consume_all(bootstrap, "ctp-out-b", 3, read_committed=True).values()
             for _, _, v in recs]
    assert Counter(out_a) == Counter(str(i).encode() for i in range(total))  # each committed input once
    assert len(out_b) == total
    uncommitted = sum(len(r) for r in consume_all(bootstrap, "ctp-out-a", 3).values())
    assert uncommitted > total  # the aborted attempts are in the log, filtered for read_committed
    admin = AdminClient({"bootstrap.servers": bootstrap})
    ends = {tp.partition: tp for tp in _committed_offsets(admin)}
    lso = [committed_lso(bootstrap, "ctp-in", p)[0] for p in range(3)]
    assert [ends[p].offset for p in range(3)] == lso


def _committed_offsets(admin: AdminClient) -> list[TopicPartition]:
    from confluent_kafka import ConsumerGroupTopicPartitions

    req = [ConsumerGroupTopicPartitions("ctp", [TopicPartition("ctp-in", p) for p in range(3)])]
    return list(admin.list_consumer_group_offsets(req)["ctp"].result(30).topic_partitions)


# ---- fencing and timeouts --------------------------------------------------------------------------
def test_zombie_is_fenced_by_a_second_producer_with_the_same_id(cluster: EmbeddedCluster) -> None:
    bootstrap = cluster.bootstrap_servers
    create(bootstrap, "fence")
    zombie = txn_producer(bootstrap, "shared-id")
    zombie.begin_transaction()
    zombie.produce("fence", partition=0, value=b"zombie")
    zombie.flush(10)
    successor = txn_producer(bootstrap, "shared-id")  # InitProducerId fences and aborts the zombie's txn
    successor.begin_transaction()
    successor.produce("fence", partition=0, value=b"successor")
    successor.commit_transaction(30)
    with pytest.raises(KafkaException) as err:
        zombie.commit_transaction(10)
    assert err.value.args[0].fatal() or "fenced" in str(err.value).lower()
    values = [v for _, _, v in consume_all(bootstrap, "fence", 3, read_committed=True)[0]]
    assert values == [b"successor"]


@pytest.fixture
def clocked(tmp_path: Path) -> Iterator[tuple[EmbeddedCluster, ManualClock]]:
    """A cluster on a clock the test moves: its transaction timeouts fire when the test says, not when a
    loaded machine happens to be slow (librdkafka keeps its own real-time timers)."""
    clock = ManualClock(start_ms=int(time.time() * 1000))
    with EmbeddedCluster(nodes=3, data_dir=tmp_path, clock=clock, config=REAPER_EVERY_500_MS) as c:
        yield c, clock


def test_timeout_aborts_a_silent_producer_and_consumers_continue(
        clocked: tuple[EmbeddedCluster, ManualClock]) -> None:
    cluster, clock = clocked
    bootstrap = cluster.bootstrap_servers
    create(bootstrap, "silent")
    silent = txn_producer(bootstrap, "silent-app", **{"transaction.timeout.ms": 2000})
    silent.begin_transaction()
    silent.produce("silent", partition=0, value=b"never")
    silent.flush(10)
    other = txn_producer(bootstrap, "busy-app")
    other.begin_transaction()
    other.produce("silent", partition=0, value=b"after")
    other.commit_transaction(30)
    # However long the above took in real time, no time passed on the broker's clock: still open.
    assert committed_lso(bootstrap, "silent", 0)[0] == 0  # held back by the silent transaction
    clock.advance(2_001)  # past the silent transaction's 2 s timeout (and the 500 ms reaper interval)
    cluster.tick()
    deadline = time.monotonic() + 30
    while committed_lso(bootstrap, "silent", 0)[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.2)
    values = [v for _, _, v in consume_all(bootstrap, "silent", 3, read_committed=True)[0]]
    assert values == [b"after"]
    with pytest.raises(KafkaException):
        silent.commit_transaction(10)


def test_commit_succeeds_through_the_new_coordinator_when_its_node_stops(cluster: EmbeddedCluster) -> None:
    bootstrap = cluster.bootstrap_servers
    create(bootstrap, "failover")
    p = txn_producer(bootstrap, "failover-app")
    p.begin_transaction()
    for i in range(50):
        p.produce("failover", value=b"%d" % i)
    p.flush(10)
    assert cluster.cluster is not None
    state = cluster.cluster.metadata.topics[TXN_TOPIC].partitions[partition_for("failover-app", 50)]
    old = state.leader
    cluster.stop_node(old)
    p.commit_transaction(60)
    assert state.leader != old and state.leader_epoch >= 1
    records = consume_all(cluster.bootstrap_servers, "failover", 3, read_committed=True)
    assert sorted(int(v) for recs in records.values() for _, _, v in recs) == list(range(50))


# ---- hanging transactions and the KIP-664 tooling --------------------------------------------------
@pytest.fixture
def legacy_cluster(tmp_path: Path) -> Iterator[EmbeddedCluster]:
    """A broker without transaction verification, where hanging transactions can happen."""
    with EmbeddedCluster(nodes=3, data_dir=tmp_path, config={
            "transaction.partition.verification.enable": False,
            "transaction.abort.timed.out.transaction.cleanup.interval.ms": 500}) as c:
        yield c


def test_hanging_transaction_stalls_read_committed_until_an_admin_abort(legacy_cluster: EmbeddedCluster) -> None:
    bootstrap = legacy_cluster.bootstrap_servers
    (result,) = run_scenario("late-write-after-abort", bootstrap, ScenarioOptions())
    (hanging,) = result.hanging
    topic, start = hanging.topic, hanging.start_offset
    later = txn_producer(bootstrap, "healthy-writer")
    later.begin_transaction()
    later.produce(topic, partition=HANGING_PARTITION, value=b"committed-after")
    later.commit_transaction(30)
    lso, hw = committed_lso(bootstrap, topic, HANGING_PARTITION)
    assert lso == start and hw > start + 2  # stuck at the hanging transaction's first offset
    seen = consume_all(bootstrap, topic, 4, read_committed=True)[HANGING_PARTITION]
    assert [v for _, _, v in seen] == []  # the consumer stalls before the committed record

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        (producer,) = [p for p in admin.describe_producers([KTP(topic, HANGING_PARTITION)])[
            KTP(topic, HANGING_PARTITION)].active_producers if p.current_transaction_start_offset >= 0]
        assert (producer.producer_id, producer.current_transaction_start_offset) == (hanging.producer_id, start)
        admin.abort_transaction(AbortTransactionSpec(KTP(topic, HANGING_PARTITION), producer.producer_id,
                                                     producer.producer_epoch, max(producer.coordinator_epoch, 0)))
    finally:
        admin.close()
    assert committed_lso(bootstrap, topic, HANGING_PARTITION)[0] == hw + 1  # past the ABORT marker
    seen = consume_all(bootstrap, topic, 4, read_committed=True)[HANGING_PARTITION]
    assert [v for _, _, v in seen] == [b"committed-after"]  # never the aborted late write


def test_kafka_python_admin_client_reports_what_the_broker_holds(legacy_cluster: EmbeddedCluster) -> None:
    bootstrap = legacy_cluster.bootstrap_servers
    (result,) = run_scenario("unregistered-partition-commit", bootstrap, ScenarioOptions())
    (hanging,) = result.hanging
    open_txn = next(h for h in result.healthy if h.state == "Ongoing")
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        listed = {t.transactional_id: t for ts in admin.list_transactions().values() for t in ts}
        assert {h.transactional_id for h in result.healthy} | {hanging.transactional_id} <= set(listed)
        assert listed[open_txn.transactional_id].state.value == "Ongoing"
        assert listed[hanging.transactional_id].state.value == "CompleteCommit"
        ongoing = admin.list_transactions(state_filters=["Ongoing"], transactional_id_pattern=".*-open")
        assert [t.transactional_id for ts in ongoing.values() for t in ts] == [open_txn.transactional_id]
        desc = admin.describe_transactions([open_txn.transactional_id, hanging.transactional_id])
        assert desc[open_txn.transactional_id].topic_partitions == {KTP(open_txn.topic, open_txn.partition)}
        assert desc[hanging.transactional_id].topic_partitions == set()  # the coordinator never had p1
        tp = KTP(hanging.topic, hanging.partition)
        replicas = [admin.describe_producers([tp], broker_id=b)[tp].active_producers for b in legacy_cluster.node_ids]
        for producers in replicas:  # the leader and both followers hold the same open transaction
            assert [(p.producer_id, p.current_transaction_start_offset) for p in producers] == [
                (hanging.producer_id, hanging.start_offset)]
        admin.abort_transaction(AbortTransactionSpec(tp, hanging.producer_id, hanging.producer_epoch, 0))
        after = admin.describe_producers([tp])[tp].active_producers
        assert [p.current_transaction_start_offset for p in after] == [-1]
    finally:
        admin.close()


def test_kafka_python_transactional_producer(cluster: EmbeddedCluster) -> None:
    """A second real client: kafka-python's own transactional producer commits and aborts."""
    from kafka import KafkaProducer

    bootstrap = cluster.bootstrap_servers
    create(bootstrap, "kp")
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id="kp-app")
    try:
        producer.init_transactions()
        for i in range(3):
            producer.begin_transaction()
            for j in range(5):
                producer.send("kp", value=b"%d-%d" % (i, j))
            if i == 1:
                producer.abort_transaction()
            else:
                producer.commit_transaction()
    finally:
        producer.close()
    values = sorted(v for recs in consume_all(bootstrap, "kp", 3, read_committed=True).values()
                    for _, _, v in recs)
    assert values == sorted(b"%d-%d" % (i, j) for i in (0, 2) for j in range(5))
