"""Produce v13 and Fetch v13-v18 name topics by id (KIP-516), as Kafka 4.x clients prefer; an unknown id is
UNKNOWN_TOPIC_ID; a stale leader is answered with the current one and its endpoint (KIP-951, Produce v10+ and
Fetch v16+); a fetch below the log start offset (DeleteRecords) is OFFSET_OUT_OF_RANGE. Older versions by
name are unchanged (librdkafka 2.16 uses Produce v10 and Fetch v16, kafka-python Produce v9 and Fetch v12)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kafka.protocol.admin import DeleteRecordsRequest, DeleteRecordsResponse
from kafka.protocol.consumer import FetchRequest, FetchResponse
from kafka.protocol.producer import ProduceRequest, ProduceResponse

from kafka_txn_broker.embedded import EmbeddedCluster
from kafka_txn_broker.formats.record_batch import build_batch, iter_batches
from tests.broker.wire import roundtrip

NONE, OFFSET_OUT_OF_RANGE, NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_ID = 0, 1, 6, 100


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(nodes=2, data_dir=tmp_path_factory.mktemp("kafka"),
                         config={"offsets.topic.num.partitions": 1}) as c:
        c.create_topic("t", 1, 1, assignments=[[0]])
        yield c


def address(cluster: EmbeddedCluster, node: int) -> str:
    assert cluster.cluster is not None
    return cluster.cluster.nodes[node].address


def topic_id(cluster: EmbeddedCluster) -> uuid.UUID:
    assert cluster.cluster is not None
    return cluster.cluster.metadata.topics["t"].topic_id


def produce(cluster: EmbeddedCluster, node: int, version: int, tid: uuid.UUID | None = None) -> Any:
    P = ProduceRequest[version]
    data = P.TopicProduceData.PartitionProduceData(index=0, records=build_batch([(None, b"v")], timestamp_ms=1))
    topic = P.TopicProduceData(topic_id=tid, partition_data=[data]) if version >= 13 else \
        P.TopicProduceData(name="t", partition_data=[data])
    return roundtrip(address(cluster, node), P(transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[topic]),
                     ProduceResponse)


def fetch(cluster: EmbeddedCluster, node: int, version: int, offset: int = 0, tid: uuid.UUID | None = None) -> Any:
    F = FetchRequest[version]
    T = FetchRequest.FetchTopic
    part = T.FetchPartition(partition=0, current_leader_epoch=-1, fetch_offset=offset, last_fetched_epoch=-1,
                            log_start_offset=-1, partition_max_bytes=1 << 20)
    topic = T(topic_id=tid, partitions=[part]) if version >= 13 else T(topic="t", partitions=[part])
    req = F(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0, session_id=0,
            session_epoch=-1, topics=[topic], forgotten_topics_data=[], rack_id="")
    return roundtrip(address(cluster, node), req, FetchResponse)


def test_produce_v13_and_fetch_v18_by_topic_id(cluster: EmbeddedCluster) -> None:
    tid = topic_id(cluster)
    resp = produce(cluster, 0, 13, tid)
    (t,) = resp.responses
    assert (t.topic_id, t.partition_responses[0].error_code) == (tid, NONE)
    for version in (13, 16, 17, 18):
        (ft,) = fetch(cluster, 0, version, tid=tid).responses
        p = ft.partitions[0]
        assert (ft.topic_id, p.error_code, p.high_watermark) == (tid, NONE, 1)
        assert [h.base_offset for _pos, h in iter_batches(p.records)] == [0]
    assert produce(cluster, 0, 9).responses[0].partition_responses[0].error_code == NONE  # by name, as before
    assert fetch(cluster, 0, 12).responses[0].partitions[0].high_watermark == 2


def test_unknown_topic_id(cluster: EmbeddedCluster) -> None:
    unknown = uuid.uuid4()
    assert produce(cluster, 0, 13, unknown).responses[0].partition_responses[0].error_code == UNKNOWN_TOPIC_ID
    assert fetch(cluster, 0, 16, tid=unknown).responses[0].partitions[0].error_code == UNKNOWN_TOPIC_ID


def test_stale_leader_gets_the_new_one(cluster: EmbeddedCluster) -> None:
    """Node 1 has no replica of t-0: the answer names node 0 (leader, epoch) and where it listens."""
    assert cluster.cluster is not None
    node0 = cluster.cluster.nodes[0]
    resp = produce(cluster, 1, 13, topic_id(cluster))
    p = resp.responses[0].partition_responses[0]
    assert (p.error_code, p.current_leader.leader_id, p.current_leader.leader_epoch) == (NOT_LEADER_OR_FOLLOWER, 0, 0)
    assert [(e.node_id, e.host, e.port) for e in resp.node_endpoints] == [(0, node0.host, node0.port)]
    resp = fetch(cluster, 1, 16, tid=topic_id(cluster))
    p = resp.responses[0].partitions[0]
    assert (p.error_code, p.current_leader.leader_id) == (NOT_LEADER_OR_FOLLOWER, 0)
    assert [e.node_id for e in resp.node_endpoints] == [0]
    assert produce(cluster, 1, 9).responses[0].partition_responses[0].error_code == NOT_LEADER_OR_FOLLOWER


def test_fetch_below_the_log_start_offset(cluster: EmbeddedCluster) -> None:
    produce(cluster, 0, 9)
    D = DeleteRecordsRequest[2]
    req = D(topics=[D.DeleteRecordsTopic(name="t", partitions=[D.DeleteRecordsTopic.DeleteRecordsPartition(
        partition_index=0, offset=1)])], timeout_ms=5000)
    (p,) = roundtrip(address(cluster, 0), req, DeleteRecordsResponse).topics[0].partitions
    assert (p.error_code, p.low_watermark) == (NONE, 1)
    assert fetch(cluster, 0, 16, 0, topic_id(cluster)).responses[0].partitions[0].error_code == OFFSET_OUT_OF_RANGE
    p = fetch(cluster, 0, 16, 1, topic_id(cluster)).responses[0].partitions[0]
    assert (p.error_code, p.log_start_offset) == (NONE, 1)
