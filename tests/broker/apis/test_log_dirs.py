"""DescribeLogDirs over the wire: every replica of the node (topics null), only the ones asked for, and
DESCRIBE on the cluster under ACLs.
kafka-python's admin client: tests/e2e/test_leadership.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kafka.protocol.admin import DescribeLogDirsRequest, DescribeLogDirsResponse

from kafka_txn_broker.embedded import EmbeddedCluster
from tests.broker.apis.admin_support import DENY_ALL, cluster_of
from tests.broker.wire import roundtrip

NONE, CLUSTER_AUTHORIZATION_FAILED = 0, 31


def describe(cluster: EmbeddedCluster, topics: dict[str, list[int]] | None, version: int = 5) -> Any:
    R = DescribeLogDirsRequest[version]
    T = DescribeLogDirsRequest.DescribableLogDirTopic
    req = R(topics=None if topics is None else [T(topic=t, partitions=p) for t, p in topics.items()])
    return roundtrip(cluster.bootstrap_servers, req, DescribeLogDirsResponse)


def partitions(resp: Any) -> list[tuple[str, int]]:
    (result,) = resp.results
    return sorted((t.name, p.partition_index) for t in result.topics for p in t.partitions)


def test_describe(tmp_path: Path) -> None:
    with cluster_of(tmp_path, nodes=1) as c:
        c.create_topic("a", 2, 1)
        c.create_topic("b", 1, 1)
        assert partitions(describe(c, None)) == [("a", 0), ("a", 1), ("b", 0)]
        assert partitions(describe(c, {"a": [1], "b": [3]})) == [("a", 1)]
        (result,) = describe(c, {"b": [0]}, version=1).results
        assert (result.error_code, result.log_dir) == (NONE, str((c.data_dir / "node-0").resolve()))


def test_refused(tmp_path: Path) -> None:
    with cluster_of(tmp_path, nodes=1, **DENY_ALL) as c:
        resp = describe(c, None)
        assert (resp.error_code, resp.results) == (CLUSTER_AUTHORIZATION_FAILED, [])
