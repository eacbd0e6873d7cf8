"""AlterPartitionReassignments and ListPartitionReassignments over the wire: v1's AllowReplicationFactorChange
(KIP-860), a cancel that would need an unclean election, and ALTER / DESCRIBE on the cluster under ACLs. The
reassignments themselves (catch-up, switch, cancel) are in tests/e2e/test_leadership.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kafka.protocol.admin import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
)

from kafka_txn_broker.embedded import EmbeddedCluster
from tests.broker.apis.admin_support import DENY_ALL, cluster_of
from tests.broker.wire import roundtrip

NONE, CLUSTER_AUTHORIZATION_FAILED, INVALID_REPLICATION_FACTOR, INVALID_REPLICA_ASSIGNMENT = 0, 31, 38, 39
A = AlterPartitionReassignmentsRequest
AT = A.ReassignableTopic


def alter(cluster: EmbeddedCluster, replicas: list[int] | None, version: int = 1, allow: bool = True,
          node: int = 0) -> Any:
    assert cluster.cluster is not None
    args: dict[str, Any] = {"timeout_ms": 5000, "topics": [AT(name="t", partitions=[
        AT.ReassignablePartition(partition_index=0, replicas=replicas)])]}
    if version >= 1:
        args["allow_replication_factor_change"] = allow
    return roundtrip(cluster.cluster.nodes[node].address, A[version](**args), AlterPartitionReassignmentsResponse)


def outcome(resp: Any) -> tuple[int, int]:
    """(top-level error, the partition's error)."""
    return resp.error_code, resp.responses[0].partitions[0].error_code


def listed(cluster: EmbeddedCluster) -> Any:
    req = ListPartitionReassignmentsRequest[0](timeout_ms=5000, topics=None)  # null: every partition
    return roundtrip(cluster.bootstrap_servers, req, ListPartitionReassignmentsResponse)


def test_replication_factor_change(tmp_path: Path) -> None:
    with cluster_of(tmp_path) as c:
        c.create_topic("t", 1, 2, assignments=[[0, 1]])
        resp = alter(c, [0, 1, 2], allow=False)
        assert outcome(resp) == (NONE, INVALID_REPLICATION_FACTOR)
        assert resp.responses[0].partitions[0].error_message == (
            "The replication factor is changed from 2 to 3 but allowReplicationFactorChange is false")
        assert outcome(alter(c, [1, 2], allow=False)) == (NONE, NONE)  # a move at the same factor
        assert outcome(alter(c, [0, 1, 2], version=0)) == (NONE, NONE)  # v0 always allows it
        assert c.cluster is not None and c.cluster.metadata.partition("t", 0).replicas == [0, 1, 2]


def test_cancel_that_would_need_an_unclean_election(tmp_path: Path) -> None:
    """Kafka's PartitionReassignmentRevert: the only in-sync replica is one being added, so going back to the
    original replicas would elect an out-of-sync one: refused unless the topic allows unclean elections."""
    with cluster_of(tmp_path) as c:
        c.create_topic("t", 1, 2, assignments=[[0, 1]])
        c.stop_node(1)
        assert outcome(alter(c, [2, 1])) == (NONE, NONE)  # node 2 catches up; node 1 cannot: ongoing
        c.stop_node(0)  # leadership moves to node 2, the only one in sync
        assert c.cluster is not None
        p = c.cluster.metadata.partition("t", 0)
        assert (p.replicas, p.adding_replicas, p.removing_replicas, p.leader, p.isr) == ([2, 1, 0], [2], [0], 2, [2])
        resp = alter(c, None, node=2)
        assert outcome(resp) == (NONE, INVALID_REPLICA_ASSIGNMENT)
        assert resp.responses[0].partitions[0].error_message == (
            "Unable to revert partition assignment for t:0 because it would require an unclean leader election.")
        assert p.replicas == [2, 1, 0]


def test_needs_alter_and_describe_on_the_cluster(tmp_path: Path) -> None:
    with cluster_of(tmp_path, nodes=1, **DENY_ALL) as c:
        c.create_topic("t", 1, 1)
        assert outcome(alter(c, [0])) == (CLUSTER_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED)
        resp = listed(c)
        assert (resp.error_code, resp.topics) == (CLUSTER_AUTHORIZATION_FAILED, [])
