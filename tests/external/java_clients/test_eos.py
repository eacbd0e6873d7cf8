"""Kafka's exactly-once system test workload at CI size: 2,000 integers, one node bounced as kill -9 would,
one copier killed with SIGKILL (the soak: tests/benchmarks/java_eos_soak.py, in docs/broker.md)."""

from __future__ import annotations

from pathlib import Path

from kafka_txn_broker.embedded import EmbeddedCluster
from tests.external.java_clients.conftest import NEWEST, libs_of
from tests.external.java_clients.eos import CLUSTER_CONFIG, EosConfig, run_eos
from tests.external.java_clients.tools import JavaTools


def test_exactly_once_copy_survives_a_hard_node_bounce_and_a_killed_copier(tmp_path: Path) -> None:
    with EmbeddedCluster(nodes=3, data_dir=tmp_path / "cluster", config=CLUSTER_CONFIG) as cluster:
        java = JavaTools(libs_of(NEWEST), NEWEST, cluster.bootstrap_servers)
        report = run_eos(cluster, java, EosConfig(), tmp_path)
    print(report.summary())
    assert [b.split()[-1] for b in report.bounces] == ["kill", "hard"], report.summary()
    assert report.passed, report.summary()
    assert report.copied_read_after == report.seeded == 2000
