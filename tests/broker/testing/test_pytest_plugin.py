"""The pytest11 plugin's `kafka_cluster` fixture works for anyone's tests."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition


@pytest.mark.kafka_config({"num.partitions": 2, "default.replication.factor": 3})
def test_fixture_gives_a_working_cluster(kafka_cluster) -> None:
    p = Producer({"bootstrap.servers": kafka_cluster.bootstrap_servers})
    p.produce("plugin-topic", value=b"hello", partition=1)
    assert p.flush(30) == 0
    c = Consumer({"bootstrap.servers": kafka_cluster.bootstrap_servers, "group.id": "g",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.assign([TopicPartition("plugin-topic", 1, 0)])
    msg = None
    for _ in range(40):
        msg = c.poll(0.5)
        if msg is not None and msg.error() is None:
            break
    c.close()
    assert msg is not None and msg.value() == b"hello"
    topic = kafka_cluster.cluster.metadata.topics["plugin-topic"]
    assert len(topic.partitions) == 2 and len(topic.partitions[0].replicas) == 3
