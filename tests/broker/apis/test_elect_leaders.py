"""ElectLeaders over the wire: v0 (always PREFERRED), an unknown election type, and a refused principal, whose
error Kafka puts at the top (v1+) and on every partition named. Elections themselves:
tests/e2e/test_leadership.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kafka.protocol.admin import ElectLeadersRequest, ElectLeadersResponse

from kafka_txn_broker.embedded import EmbeddedCluster
from tests.broker.apis.admin_support import DENY_ALL, cluster_of
from tests.broker.wire import roundtrip

NONE, CLUSTER_AUTHORIZATION_FAILED, INVALID_REQUEST, ELECTION_NOT_NEEDED = 0, 31, 42, 84


def elect(cluster: EmbeddedCluster, version: int, election_type: int = 0) -> tuple[int, list[tuple[int, int]]]:
    """(top-level error, [(partition, error)]) for t-0 and t-1."""
    R = ElectLeadersRequest[version]
    args: dict[str, Any] = {"timeout_ms": 5000, "topic_partitions": [
        ElectLeadersRequest.TopicPartitions(topic="t", partitions=[0, 1])]}
    if version >= 1:
        args["election_type"] = election_type
    resp = roundtrip(cluster.bootstrap_servers, R(**args), ElectLeadersResponse)
    results = [(p.partition_id, p.error_code) for t in resp.replica_election_results for p in t.partition_result]
    return getattr(resp, "error_code", NONE), results


def test_versions_and_types(tmp_path: Path) -> None:
    with cluster_of(tmp_path) as c:
        c.create_topic("t", 2, 3)
        assert elect(c, 0) == (NONE, [(0, ELECTION_NOT_NEEDED), (1, ELECTION_NOT_NEEDED)])
        assert elect(c, 2, election_type=1) == (NONE, [(0, ELECTION_NOT_NEEDED), (1, ELECTION_NOT_NEEDED)])
        assert elect(c, 2, election_type=7) == (INVALID_REQUEST, [(0, INVALID_REQUEST), (1, INVALID_REQUEST)])


def test_refused(tmp_path: Path) -> None:
    with cluster_of(tmp_path, nodes=1, **DENY_ALL) as c:
        c.create_topic("t", 2, 1)
        denied = [(0, CLUSTER_AUTHORIZATION_FAILED), (1, CLUSTER_AUTHORIZATION_FAILED)]
        assert elect(c, 2) == (CLUSTER_AUTHORIZATION_FAILED, denied)
        assert elect(c, 0) == (NONE, denied)  # v0 has no top-level error
