"""ListOffsets over the wire, v1-v11: Kafka's special timestamps (-1 latest, -2 earliest, -3 max timestamp,
-4 earliest local, -5 latest tiered, -6 earliest pending upload), the epochs of the answers, CurrentLeaderEpoch
fencing, a partition named twice, and lookups past the last fetchable offset. librdkafka's calls are in
tests/e2e/test_partitions_and_records.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka.protocol.consumer import ListOffsetsRequest, ListOffsetsResponse
from kafka.protocol.producer import ProduceRequest, ProduceResponse

from kafka_txn_broker.embedded import EmbeddedCluster
from kafka_txn_broker.formats.record_batch import build_batch
from tests.broker.wire import roundtrip

TS = 1_700_000_000_000
NONE, INVALID_REQUEST, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH = 0, 42, 74, 75


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(nodes=1, data_dir=tmp_path_factory.mktemp("kafka"),
                         config={"offsets.topic.num.partitions": 1}) as c:
        c.create_topic("t", 1, 1)
        for ts in (TS, TS + 30, TS + 10):  # offsets 0, 1, 2: the largest timestamp is at offset 1
            P = ProduceRequest[8]
            req = P(transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[P.TopicProduceData(
                name="t", partition_data=[P.TopicProduceData.PartitionProduceData(
                    index=0, records=build_batch([(None, b"v")], timestamp_ms=ts))])])
            assert roundtrip(c.bootstrap_servers, req, ProduceResponse).responses[0].partition_responses[0] \
                .error_code == NONE
        yield c


def ask(cluster: EmbeddedCluster, timestamp: int, version: int = 11, current_epoch: int = -1,
        twice: bool = False) -> tuple[int, int, int, int]:
    """(error, timestamp, offset, leader epoch) for t-0."""
    Req = ListOffsetsRequest[version]
    T = ListOffsetsRequest.ListOffsetsTopic
    args: dict[str, Any] = {"partition_index": 0, "timestamp": timestamp}
    if version >= 4:
        args["current_leader_epoch"] = current_epoch
    parts = [T.ListOffsetsPartition(**args)] * (2 if twice else 1)
    req_args: dict[str, Any] = {"replica_id": -1, "topics": [T(name="t", partitions=parts)]}
    if version >= 2:
        req_args["isolation_level"] = 0
    resp = roundtrip(cluster.bootstrap_servers, Req(**req_args), ListOffsetsResponse)
    p = resp.topics[0].partitions[0]
    return p.error_code, p.timestamp, p.offset, getattr(p, "leader_epoch", -1)


@pytest.mark.parametrize("version", [1, 4, 7, 11])
def test_earliest_and_latest(cluster: EmbeddedCluster, version: int) -> None:
    assert ask(cluster, -2, version)[:3] == (NONE, -1, 0)
    assert ask(cluster, -1, version)[:3] == (NONE, -1, 3)


def test_special_timestamps(cluster: EmbeddedCluster) -> None:
    assert ask(cluster, -3) == (NONE, TS + 30, 1, 0)  # max timestamp (v7+)
    assert ask(cluster, -4) == (NONE, -1, 0, 0)  # earliest local: the log start without tiered storage
    assert ask(cluster, -5) == (NONE, -1, -1, -1)  # latest tiered: nothing is tiered
    assert ask(cluster, -6) == (NONE, -1, -1, -1)  # earliest pending upload: nothing to upload
    assert ask(cluster, TS + 5) == (NONE, TS + 30, 1, 0)  # the first record at or after it
    assert ask(cluster, TS + 31) == (NONE, -1, -1, -1)


def test_fencing_and_duplicates(cluster: EmbeddedCluster) -> None:
    assert ask(cluster, -1, current_epoch=0)[0] == NONE
    assert ask(cluster, -1, current_epoch=1)[0] == UNKNOWN_LEADER_EPOCH
    cluster.stop_node(0)
    cluster.start_node(0)  # the only replica comes back: a new leader epoch
    assert ask(cluster, -1, current_epoch=0)[0] == FENCED_LEADER_EPOCH
    assert ask(cluster, -1, twice=True)[0] == INVALID_REQUEST


def test_timestamp_lookup_stops_at_the_high_watermark(tmp_path: Path) -> None:
    """A record past the last fetchable offset is not an answer (Kafka's lastFetchableOffset)."""
    with EmbeddedCluster(nodes=1, data_dir=tmp_path, config={"offsets.topic.num.partitions": 1}) as c:
        c.create_topic("t", 1, 1)
        assert c.cluster is not None
        part = c.cluster.nodes[0].replica_manager.get("t", 0)
        assert part is not None

        def append_above_high_watermark() -> None:
            part.log.append_as_leader(build_batch([(None, b"v")], timestamp_ms=TS), 0)  # not replicated

        c.call_soon(append_above_high_watermark)
        assert c.call_soon(lambda: (part.log.log_end_offset, part.log.high_watermark)) == (1, 0)
        assert ask(c, -3) == (NONE, -1, -1, -1)
        assert ask(c, TS) == (NONE, -1, -1, -1)
