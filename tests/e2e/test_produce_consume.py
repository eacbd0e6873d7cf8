"""Real clients produce and consume through a 3-node embedded cluster."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_txn_broker import EmbeddedCluster
from tests.e2e.helpers import BrokerProcess, consume_all, free_port_block
from tests.support.tiers import require


def _create(bootstrap: str, topic: str, partitions: int, rf: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=rf)])[topic].result(30)


@pytest.fixture
def cluster(tmp_path: Path):
    with EmbeddedCluster(nodes=3, data_dir=tmp_path) as c:
        yield c


def test_idempotent_100k_records_read_back_by_consumer_group(cluster: EmbeddedCluster) -> None:
    bootstrap = cluster.bootstrap_servers
    _create(bootstrap, "orders", 6, 3)
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                         "linger.ms": 10, "batch.num.messages": 2000})
    acked: dict[int, list[bytes]] = {p: [] for p in range(6)}
    errors: list[object] = []

    def on_delivery(err: object, msg: object) -> None:
        if err is not None:
            errors.append(err)
        else:
            acked[msg.partition()].append(msg.value())  # type: ignore[attr-defined]

    total = 100_000
    for i in range(total):
        while True:
            try:
                producer.produce("orders", key=str(i % 97).encode(), value=b"v%d" % i, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.05)
        if i % 1000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0
    assert not errors
    assert sum(len(v) for v in acked.values()) == total

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "readers", "auto.offset.reset": "earliest"})
    consumer.subscribe(["orders"])
    seen: dict[int, list[bytes]] = {p: [] for p in range(6)}
    deadline = time.monotonic() + 120
    count = 0
    while count < total and time.monotonic() < deadline:
        for m in consumer.consume(10000, 0.5):
            if m.error() is None:
                seen[m.partition()].append(m.value())
                count += 1
    consumer.close()
    # Exactly the acknowledged records, in the acknowledged order within each partition.
    assert seen == acked


def test_kcat_lists_metadata(cluster: EmbeddedCluster) -> None:
    require("kcat")
    kcat = str(shutil.which("kcat"))
    _create(cluster.bootstrap_servers, "listed", 3, 2)
    out = subprocess.run([kcat, "-L", "-b", cluster.bootstrap_servers], capture_output=True, text=True,
                         timeout=30, check=True).stdout
    assert " 3 brokers:" in out
    assert 'topic "listed" with 3 partitions:' in out
    assert out.count("replicas:") >= 3


def test_kafka_python_round_trip(cluster: EmbeddedCluster) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    _create(cluster.bootstrap_servers, "kp", 2, 3)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all", enable_idempotence=True)
    for i in range(500):
        producer.send("kp", key=b"k", value=b"m%d" % i, partition=i % 2)
    producer.flush(30)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, auto_offset_reset="earliest",
                             consumer_timeout_ms=3000)
    consumer.assign([TopicPartition("kp", 0), TopicPartition("kp", 1)])
    values = sorted(int(m.value[1:]) for m in consumer)
    consumer.close()
    assert values == list(range(500))


def test_aiokafka_round_trip(cluster: EmbeddedCluster) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    _create(cluster.bootstrap_servers, "aio", 1, 3)

    async def run() -> list[bytes]:
        producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all")
        await producer.start()
        try:
            for i in range(200):
                await producer.send_and_wait("aio", b"a%d" % i, partition=0)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, auto_offset_reset="earliest")
        await consumer.start()
        try:
            consumer.assign([TopicPartition("aio", 0)])
            await consumer.seek_to_beginning()
            got: list[bytes] = []
            while len(got) < 200:
                batch = await consumer.getmany(timeout_ms=2000)
                if not batch:
                    break
                for msgs in batch.values():
                    got.extend(m.value for m in msgs)
            return got
        finally:
            await consumer.stop()

    assert asyncio.run(run()) == [b"a%d" % i for i in range(200)]


def _produce_in_background(bootstrap: str, topic: str, total: int, acked: list[bytes],
                           errors: list[object], stop: threading.Event) -> threading.Thread:
    def run() -> None:
        producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                             "linger.ms": 5, "message.timeout.ms": 120000, "retry.backoff.ms": 100,
                             "reconnect.backoff.max.ms": 500})

        def on_delivery(err: object, msg: object) -> None:
            if err is not None:
                errors.append(err)
            else:
                acked.append(msg.value())  # type: ignore[attr-defined]

        for i in range(total):
            while True:
                try:
                    producer.produce(topic, value=b"r%06d" % i, on_delivery=on_delivery)
                    break
                except BufferError:
                    producer.poll(0.05)
            producer.poll(0)
            if i % 200 == 0:
                time.sleep(0.01)  # spread production over the fault window
        producer.flush(150)
        stop.set()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def test_stopping_a_leader_mid_production_loses_and_duplicates_nothing(cluster: EmbeddedCluster) -> None:
    _create(cluster.bootstrap_servers, "failover", 3, 3)
    acked: list[bytes] = []
    errors: list[object] = []
    done = threading.Event()
    total = 20_000
    t = _produce_in_background(cluster.bootstrap_servers, "failover", total, acked, errors, done)
    time.sleep(1.0)
    cluster.stop_node(0)  # leads some partitions of "failover": leadership moves to an in-sync replica
    time.sleep(1.5)
    cluster.start_node(0)
    t.join(180)
    assert done.is_set() and not errors
    records = consume_all(cluster.bootstrap_servers, "failover", 3)
    values = [v for part in records.values() for (_o, _k, v) in part]
    assert len(values) == len(set(values)), "duplicates after leader failover"
    assert sorted(values) == sorted(acked) and len(acked) == total


def test_kill_9_mid_production_keeps_every_acked_record_exactly_once(tmp_path: Path) -> None:
    port = free_port_block(3)
    broker = BrokerProcess(tmp_path, 3, port, ["num.partitions=3", "default.replication.factor=3"])
    bootstrap = broker.start()
    _create(bootstrap, "crash", 3, 3)
    acked: list[bytes] = []
    errors: list[object] = []
    done = threading.Event()
    total = 20_000
    t = _produce_in_background(bootstrap, "crash", total, acked, errors, done)
    try:
        time.sleep(1.5)
        broker.kill9()
        time.sleep(0.5)
        assert broker.start() == bootstrap
        t.join(180)
        assert done.is_set() and not errors
        records = consume_all(bootstrap, "crash", 3)
    finally:
        if broker.proc and broker.proc.poll() is None:
            broker.terminate()
    values = [v for part in records.values() for (_o, _k, v) in part]
    assert len(values) == len(set(values)), "a retried batch was appended twice after the crash"
    assert set(acked) <= set(values), "an acknowledged record was lost"
    assert len(acked) == total
