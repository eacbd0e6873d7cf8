"""DeleteRecords over the wire: Kafka's refusals a client sends and librdkafka does not (an internal topic, a
partition the metadata lacks), -1 for the high watermark, the low watermark of the live replicas, and DELETE
on the topic under ACLs. Consumers, followers and restarts: tests/e2e/test_partitions_and_records.py."""

from __future__ import annotations

from pathlib import Path

from kafka.protocol.admin import DeleteRecordsRequest, DeleteRecordsResponse

from kafka_txn_broker.embedded import EmbeddedCluster
from kafka_txn_broker.formats.partitioning import TXN_TOPIC
from kafka_txn_broker.formats.record_batch import build_batch
from tests.broker.apis.admin_support import DENY_ALL, cluster_of
from tests.broker.wire import roundtrip

NONE, UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER = 0, 3, 6
INVALID_TOPIC_EXCEPTION, TOPIC_AUTHORIZATION_FAILED = 17, 29
D = DeleteRecordsRequest[2]
DT = D.DeleteRecordsTopic


def delete(cluster: EmbeddedCluster, topic: str, partition: int, offset: int, node: int = 0) -> tuple[int, int]:
    """(error, low watermark), asked of `node`."""
    assert cluster.cluster is not None
    req = D(topics=[DT(name=topic, partitions=[DT.DeleteRecordsPartition(partition_index=partition, offset=offset)])],
            timeout_ms=5000)
    (p,) = roundtrip(cluster.cluster.nodes[node].address, req, DeleteRecordsResponse).topics[0].partitions
    return p.error_code, p.low_watermark


def test_delete_records(tmp_path: Path) -> None:
    with cluster_of(tmp_path) as c:
        c.create_topic("t", 1, 3, assignments=[[0, 1, 2]])
        assert c.cluster is not None
        part = c.cluster.nodes[0].replica_manager.get("t", 0)
        assert part is not None
        for _ in range(3):
            c.call_soon(part.append_as_leader, build_batch([(None, b"v")], timestamp_ms=1), -1)
        assert delete(c, "t", 0, 1) == (NONE, 1)
        assert delete(c, "t", 0, -1) == (NONE, 3)  # -1: the high watermark
        assert [c.cluster.nodes[n].replica_manager.get("t", 0).log.log_start_offset  # type: ignore[union-attr]
                for n in range(3)] == [3, 3, 3]
        assert delete(c, "t", 0, 2) == (NONE, 3)  # never backwards
        assert delete(c, "t", 0, 1, node=1) == (NOT_LEADER_OR_FOLLOWER, -1)
        assert delete(c, "t", 4, 1) == (UNKNOWN_TOPIC_OR_PARTITION, -1)
        c.call_soon(c.cluster.ensure_internal_topic, TXN_TOPIC, 1, 1)
        assert delete(c, TXN_TOPIC, 0, 0)[0] == INVALID_TOPIC_EXCEPTION


def test_delete_records_needs_delete_on_the_topic(tmp_path: Path) -> None:
    with cluster_of(tmp_path, nodes=1, **DENY_ALL) as c:
        c.create_topic("t", 1, 1)
        assert delete(c, "t", 0, 0) == (TOPIC_AUTHORIZATION_FAILED, -1)
