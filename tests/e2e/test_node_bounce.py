"""One node of an embedded cluster stopped and started again while the others run, cleanly or as kill -9 would
stop its process (EmbeddedCluster.stop_node(clean=False)): a hard stop leaves its logs without the clean-shutdown
marker and without a producer snapshot at their end, so its next start recovers them; either way it comes back
with every acknowledged record and rejoins the ISR."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from kafka_txn_broker.embedded import EmbeddedCluster

QUIET = {"log_level": 0}


def _produce(bootstrap: str, topic: str, values: list[str]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all", **QUIET})
    for value in values:
        producer.produce(topic, value.encode(), partition=0)
    assert producer.flush(30) == 0


def _read_all(bootstrap: str, topic: str, count: int) -> list[str]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bounce-check", "enable.auto.commit": False,
                         **QUIET})
    consumer.assign([TopicPartition(topic, 0, 0)])
    values: list[str] = []
    try:
        for _ in range(200):
            for msg in consumer.consume(100, 0.5):
                value = msg.value()
                if msg.error() is None and value is not None:
                    values.append(value.decode())
            if len(values) >= count:
                break
    finally:
        consumer.close()
    return values


@pytest.mark.parametrize("clean", [True, False], ids=["clean", "hard"])
def test_a_node_stops_and_restarts_while_the_others_serve(tmp_path: Path, clean: bool) -> None:
    with EmbeddedCluster(nodes=3, data_dir=tmp_path, config={"min.insync.replicas": 2}) as cluster:
        cluster.create_topic("bounce", 1, 3, assignments=[[0, 1, 2]])
        bootstrap = cluster.bootstrap_servers
        _produce(bootstrap, "bounce", [f"a{i}" for i in range(100)])

        cluster.stop_node(0, clean=clean)
        partition_dir = tmp_path / "node-0" / "bounce-0"
        assert (partition_dir / ".kafka_cleanshutdown").exists() is clean
        assert any(p.suffix == ".snapshot" for p in partition_dir.iterdir()) is clean
        _produce(bootstrap, "bounce", [f"b{i}" for i in range(100)])  # nodes 1 and 2: still min ISR 2

        cluster.start_node(0)
        assert cluster.cluster is not None
        state = cluster.call_soon(lambda: cluster.cluster.metadata.topics["bounce"].partitions[0])
        _produce(bootstrap, "bounce", [f"c{i}" for i in range(100)])
        values = _read_all(bootstrap, "bounce", 300)
        assert values == [f"{x}{i}" for x in "abc" for i in range(100)]
        inner = cluster.cluster

        def log_end(node_id: int) -> int:
            replica = inner.nodes[node_id].replica_manager.get("bounce", 0)
            assert replica is not None
            return replica.log.log_end_offset

        assert cluster.call_soon(log_end, 0) == cluster.call_soon(log_end, state.leader) == 300  # caught up
