"""Compressed batches stored as sent, segment rolling, and ListOffsets, through real clients."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.formats.record_batch import iter_batches
from tests.e2e.helpers import consume_all


@pytest.fixture
def cluster(tmp_path: Path):
    with EmbeddedCluster(nodes=3, data_dir=tmp_path, config={"log.segment.bytes": 64 * 1024}) as c:
        yield c


@pytest.mark.parametrize("codec, attr", [("gzip", 1), ("snappy", 2), ("lz4", 3), ("zstd", 4)])
def test_compressed_batches_are_stored_as_sent_and_read_back(cluster: EmbeddedCluster, codec: str,
                                                             attr: int, tmp_path: Path) -> None:
    topic = f"z-{codec}"
    cluster.create_topic(topic, 1, 3)
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "compression.type": codec,
                  "enable.idempotence": True, "linger.ms": 20})
    values = [b"compressible-%05d-" % i + b"x" * 200 for i in range(3000)]
    errors: list[object] = []
    for v in values:
        p.produce(topic, value=v, partition=0, on_delivery=lambda e, _m: errors.append(e) if e else None)
    assert p.flush(30) == 0 and not errors
    got = [v for (_o, _k, v) in consume_all(cluster.bootstrap_servers, topic, 1)[0]]
    assert got == values
    # The leader's segment holds the client's compressed batches (codec bits), not re-encoded ones.
    segments = sorted(tmp_path.glob(f"node-*/{topic}-0/*.log"))
    codecs = {h.compression for seg in segments for (_pos, h) in iter_batches(seg.read_bytes())}
    assert codecs == {attr}


def test_segments_roll_by_size_and_reads_cross_them(cluster: EmbeddedCluster, tmp_path: Path) -> None:
    cluster.create_topic("rolling", 1, 2)
    # Batches must fit a segment (Kafka answers RECORD_LIST_TOO_LARGE otherwise), so keep them small.
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 5, "batch.size": 16384})
    values = [b"%06d" % i + b"y" * 500 for i in range(2000)]  # ~1 MB over 64 KB segments
    errors: list[object] = []
    for v in values:
        p.produce("rolling", value=v, partition=0, on_delivery=lambda e, _m: errors.append(e) if e else None)
    assert p.flush(30) == 0 and not errors
    replica_dirs = list(tmp_path.glob("node-*/rolling-0"))
    assert len(replica_dirs) == 2
    for d in replica_dirs:
        assert len(list(d.glob("*.log"))) >= 10
        assert len(list(d.glob("*.index"))) >= 1
    assert [v for (_o, _k, v) in consume_all(cluster.bootstrap_servers, "rolling", 1)[0]] == values


def test_list_offsets_earliest_latest_and_by_timestamp(cluster: EmbeddedCluster) -> None:
    cluster.create_topic("times", 1, 3)
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    base = 1_700_000_000_000
    for i in range(10):
        p.produce("times", value=b"t%d" % i, partition=0, timestamp=base + i * 1000)
        p.flush(10)  # one batch per record, so the lookup must find the right batch
    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "lo"})
    low, high = c.get_watermark_offsets(TopicPartition("times", 0), timeout=10)
    assert (low, high) == (0, 10)
    found = c.offsets_for_times([TopicPartition("times", 0, base + 4500)], timeout=10)
    assert found[0].offset == 5
    beyond = c.offsets_for_times([TopicPartition("times", 0, base + 99_000)], timeout=10)
    assert beyond[0].offset == -1
    c.close()
