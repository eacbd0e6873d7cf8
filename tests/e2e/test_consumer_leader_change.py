"""KIP-320 with a real client: a librdkafka consumer validates its position with OffsetForLeaderEpoch after
each leader change and carries on from exactly where it was, skipping and repeating nothing."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.apis.registry import APIS, load_all

TOPIC = "epochs"
OFFSET_FOR_LEADER_EPOCH = 23
PHASE = 300


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(nodes=3, data_dir=tmp_path, config={"offsets.topic.num.partitions": 3}) as c:
        c.create_topic(TOPIC, 1, 3)
        yield c


@pytest.fixture
def epoch_answers(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int, int]]:
    """(error code, epoch, end offset) of every OffsetForLeaderEpoch answer the broker gives."""
    answers: list[tuple[int, int, int]] = []
    spec = load_all()[OFFSET_FOR_LEADER_EPOCH]

    async def spy(ctx: Any, req: Any) -> Any:
        resp = await spec.handler(ctx, req)
        answers.extend((p.error_code, p.leader_epoch, p.end_offset) for t in resp.topics for p in t.partitions)
        return resp

    monkeypatch.setitem(APIS, OFFSET_FOR_LEADER_EPOCH, dataclasses.replace(spec, handler=spy))
    return answers


def _leader(cluster: EmbeddedCluster) -> tuple[int, int]:
    assert cluster.cluster is not None
    state = cluster.cluster.metadata.partition(TOPIC, 0)
    return state.leader, state.leader_epoch


def _produce(producer: Producer, start: int) -> None:
    for i in range(start, start + PHASE):
        producer.produce(TOPIC, value=b"%06d" % i, partition=0)
    assert producer.flush(60) == 0


def _consume(consumer: Consumer, seen: list[bytes], until: int, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while len(seen) < until and time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is None:
            continue
        assert msg.error() is None, msg.error()
        seen.append(msg.value())
    assert len(seen) >= until, f"consumed {len(seen)} of {until} records"


def test_consumer_keeps_its_place_across_leader_changes(cluster: EmbeddedCluster,
                                                        epoch_answers: list[tuple[int, int, int]]) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 5})
    # Small fetches, so the consumer is still mid-log (epoch 0 records ahead of it) when the leader goes.
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "epochs",
                         "enable.auto.commit": False, "message.max.bytes": 2048, "fetch.max.bytes": 2048,
                         "max.partition.fetch.bytes": 2048, "queued.max.messages.kbytes": 1,
                         "queued.min.messages": 10, "topic.metadata.refresh.interval.ms": 1000})
    seen: list[bytes] = []
    try:
        # assign(), not subscribe(): no group rebalance can move the position; only the fetch path is tested.
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        first, e0 = _leader(cluster)
        _produce(producer, 0)
        _consume(consumer, seen, PHASE // 3)

        cluster.stop_node(first)  # leadership moves to an in-sync replica with epoch e0 + 1
        second, e1 = _leader(cluster)
        assert second != first and e1 == e0 + 1
        _produce(producer, PHASE)
        _consume(consumer, seen, PHASE + PHASE // 3)

        cluster.start_node(first)  # the preferred leader returns, one epoch later
        assert _leader(cluster) == (first, e1 + 1)
        _produce(producer, 2 * PHASE)
        _consume(consumer, seen, 3 * PHASE)
        assert consumer.poll(1.0) is None
    finally:
        consumer.close()

    assert seen == [b"%06d" % i for i in range(3 * PHASE)], "records skipped, repeated or out of order"
    # librdkafka really validated its position after each change: epoch e0 ended where the second leader
    # started (offset PHASE), e1 where the first leader took over again (2 * PHASE).
    placed = {(epoch, end) for code, epoch, end in epoch_answers if code == 0}
    assert {(e0, PHASE), (e1, 2 * PHASE)} <= placed, epoch_answers
