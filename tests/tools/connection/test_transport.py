"""connection/transport.py over the embedded 3-node cluster: a request any broker can answer (Metadata,
FindCoordinator) still gets its answer when the broker kafka-python picks for it is down. kafka-python picks at
random among the brokers the last Metadata named, and a broker killed a moment ago is still named: without
going to the next broker, one broker of three down failed a third of the monitor's scans as "the cluster is
unreachable" (seen on real Kafka: tests/external/real_kafka/test_monitor_faults_real.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_tools.connection.client import AdminClient
from kafka_txn_tools.connection.config import ClientSettings
from kafka_txn_tools.errors import ConnectionFailed


def test_a_request_for_any_broker_goes_to_the_next_when_the_one_picked_is_down(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with EmbeddedCluster(nodes=3, data_dir=tmp_path / "kafka") as cluster, \
            AdminClient(ClientSettings(bootstrap_servers=cluster.bootstrap_servers), timeout_ms=5000) as admin:
        assert {b.node_id for b in admin.metadata().brokers} == set(cluster.node_ids)
        down = cluster.node_ids[0]
        cluster.stop_node(down, clean=False)
        # kafka-python's random pick lands on the broker that is down (still in its last Metadata).
        monkeypatch.setattr(admin._manager, "least_loaded_node", lambda: down)
        for _ in range(3):
            info = admin.metadata()
            assert {b.node_id for b in info.brokers} <= set(cluster.node_ids)
        found, failed = admin._run(admin._find_coordinators, ["some-transactional-id"])
        assert "some-transactional-id" in {**found, **failed}  # a broker answered (found, or an error code)


def test_every_broker_down_still_fails_naming_the_cluster(tmp_path: Path) -> None:
    with EmbeddedCluster(nodes=3, data_dir=tmp_path / "kafka") as cluster, \
            AdminClient(ClientSettings(bootstrap_servers=cluster.bootstrap_servers), timeout_ms=5000) as admin:
        for node in cluster.node_ids:
            cluster.stop_node(node, clean=False)
        with pytest.raises(ConnectionFailed, match="unreachable"):
            admin.metadata()
