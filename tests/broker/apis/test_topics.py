"""CreatePartitions and CreateTopics' manual assignments over the wire, where Kafka's checks are ones
librdkafka's client-side checks never let through: a count of assignments that does not match, a topic
named twice, partition indexes that are not 0..n-1, replication factor or count given with assignments;
and ALTER on the topic under ACLs. The common answers are in tests/e2e/test_partitions_and_records.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kafka.protocol.admin import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
)

from kafka_txn_broker.embedded import EmbeddedCluster
from tests.broker.apis.admin_support import DENY_ALL, cluster_of
from tests.broker.wire import roundtrip

NONE, TOPIC_AUTHORIZATION_FAILED, INVALID_REQUEST, INVALID_REPLICA_ASSIGNMENT = 0, 29, 42, 39
C = CreatePartitionsRequest[3]
CT = C.CreatePartitionsTopic


def grow(cluster: EmbeddedCluster, *topics: Any, validate_only: bool = False) -> list[tuple[str, int, str | None]]:
    resp = roundtrip(cluster.bootstrap_servers, C(topics=list(topics), timeout_ms=5000, validate_only=validate_only),
                     CreatePartitionsResponse)
    return [(r.name, r.error_code, r.error_message) for r in resp.results]


def topic(name: str, count: int, assignments: list[list[int]] | None = None) -> Any:
    return CT(name=name, count=count, assignments=None if assignments is None else [
        CT.CreatePartitionsAssignment(broker_ids=a) for a in assignments])


def partitions(cluster: EmbeddedCluster, name: str) -> list[list[int]]:
    assert cluster.cluster is not None
    return [p.replicas for p in cluster.cluster.metadata.topics[name].partitions]


def test_create_partitions_checks(tmp_path: Path) -> None:
    with cluster_of(tmp_path) as c:
        c.create_topic("t", 1, 2)
        assert grow(c, topic("t", 3, [[0, 1]])) == [
            ("t", INVALID_REPLICA_ASSIGNMENT, "Attempted to add 2 additional partition(s), but only 1 assignment(s) "
                                              "were specified.")]
        assert grow(c, topic("t", 2), topic("t", 3)) == [("t", INVALID_REQUEST, "Duplicate topic name.")]
        assert grow(c, topic("t", 3, [[1, 2], [2, 0]]), validate_only=True) == [("t", NONE, None)]
        assert len(partitions(c, "t")) == 1
        assert grow(c, topic("t", 3, [[1, 2], [2, 0]])) == [("t", NONE, None)]
        assert partitions(c, "t")[1:] == [[1, 2], [2, 0]]
        c.restart()  # the new partitions are in the durable metadata
        assert partitions(c, "t")[1:] == [[1, 2], [2, 0]]


def test_create_partitions_needs_alter_on_the_topic(tmp_path: Path) -> None:
    with cluster_of(tmp_path, **DENY_ALL) as c:
        c.create_topic("t", 1, 1)
        assert grow(c, topic("t", 2)) == [("t", TOPIC_AUTHORIZATION_FAILED, None)]


def create(cluster: EmbeddedCluster, name: str, assignments: dict[int, list[int]], partitions: int = -1,
           rf: int = -1) -> tuple[int, str | None]:
    R = CreateTopicsRequest[7]
    T = R.CreatableTopic
    t = T(name=name, num_partitions=partitions, replication_factor=rf, configs=[], assignments=[
        T.CreatableReplicaAssignment(partition_index=i, broker_ids=b) for i, b in assignments.items()])
    (result,) = roundtrip(cluster.bootstrap_servers, R(topics=[t], timeout_ms=5000, validate_only=False),
                          CreateTopicsResponse).topics
    return result.error_code, result.error_message


def test_create_topics_with_manual_assignments(tmp_path: Path) -> None:
    with cluster_of(tmp_path) as c:
        assert create(c, "a", {0: [2, 1], 1: [0, 2]}) == (NONE, None)
        assert partitions(c, "a") == [[2, 1], [0, 2]]
        assert c.cluster is not None and c.cluster.metadata.partition("a", 0).leader == 2
        assert create(c, "b", {0: [0], 2: [1]})[0] == INVALID_REPLICA_ASSIGNMENT  # not 0..n-1
        assert create(c, "b", {0: [0], 1: [0, 1]})[0] == INVALID_REPLICA_ASSIGNMENT  # two factors
        assert create(c, "b", {0: [0, 9]})[0] == INVALID_REPLICA_ASSIGNMENT  # no node 9
        assert create(c, "b", {0: [0]}, rf=1) == (INVALID_REQUEST, "A manual partition assignment was specified, "
                                                                   "but replication factor was not set to -1.")
        assert create(c, "b", {0: [0]}, partitions=1)[0] == INVALID_REQUEST
        assert c.cluster is not None and "b" not in c.cluster.metadata.topics
