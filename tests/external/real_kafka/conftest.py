"""Real Apache Kafka clusters for the tests under tests/external/real_kafka: the release is the default one
(`KAFKA_TXN_KAFKA_RELEASE` picks another, as `dev.sh test-kafka-matrix` does). A missing JVM, Maven or jar
fails the test, never skips it. Each cluster's logs stay under pytest's basetemp (the last three runs are
kept), and a failing test's report names them."""

from __future__ import annotations

import os
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.real_kafka import DEFAULT_RELEASE, KafkaCluster, UpstreamTool, java_missing, release_libs
from tests.support.real_kafka.proxy import HoldingProxy

RELEASE = os.environ.get("KAFKA_TXN_KAFKA_RELEASE", DEFAULT_RELEASE)
# The coordinator's reaper looks for timed-out transactions every second instead of every 10 s, so that a
# staged zombie is fenced soon after its own transaction.timeout.ms (a static config: set at start).
SESSION_CONFIG = {"transaction.partition.verification.enable": "false",
                  "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000"}
# The proxied cluster's ids expire 4 s after their last transaction ended: long enough for find-hanging to list a
# freshly staged hang first, on a loaded machine; it would change the other clusters' reasons while they run.
EXPIRING = {**SESSION_CONFIG, "transactional.id.expiration.ms": "4000",
            "transaction.remove.expired.transaction.cleanup.interval.ms": "500"}


@pytest.fixture(scope="session")
def kafka_libs() -> Path:
    """The jars of the release under test (fetched from Maven Central on first use)."""
    problem = java_missing()
    if problem:
        pytest.fail(problem)
    try:
        return release_libs(RELEASE)
    except RuntimeError as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="session")
def upstream(kafka_libs: Path) -> UpstreamTool:
    """Upstream's kafka-transactions.sh of the same release."""
    return UpstreamTool(kafka_libs)


def _cluster(libs: Path, base: Path, nodes: int, config: dict[str, str]) -> Iterator[KafkaCluster]:
    cluster = KafkaCluster(libs, base, nodes=nodes, config=config, version=RELEASE)
    with cluster:
        yield cluster


@pytest.fixture(scope="package")
def real_kafka(kafka_libs: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    """One single-node cluster for the tests of this folder (stopped after its last one, not idling through the
    rest of the run); partition verification off, so that an unverified late write (Produce v3-v11 without
    AddPartitionsToTxn) hangs a partition as before KIP-890."""
    yield from _cluster(kafka_libs, tmp_path_factory.mktemp("real-kafka-1"), 1,
                        SESSION_CONFIG)


@pytest.fixture(scope="package")
def network() -> Iterator[HoldingProxy]:
    """The proxy every client of `proxied_kafka` passes through: a network whose faults a test chooses."""
    with HoldingProxy() as proxy:
        yield proxy


@pytest.fixture(scope="package")
def proxied_kafka(kafka_libs: Path, tmp_path_factory: pytest.TempPathFactory,
                  network: HoldingProxy) -> Iterator[KafkaCluster]:
    """A single-node cluster advertised at `network`'s address (so every client, the broker's own inter-broker
    requests included, goes through it), its transactional ids expiring 4 s after their last transaction, and
    `__transaction_state` at Kafka's default of 50 partitions (the others have 5): a read of every partition, for
    an expired id's last owner, is as many requests to one broker as production's."""
    config = {**EXPIRING, "advertised.listeners": f"PLAINTEXT://{network.address}",
              "transaction.state.log.num.partitions": "50"}
    cluster = KafkaCluster(kafka_libs, tmp_path_factory.mktemp("real-kafka-proxied"), nodes=1, config=config,
                           version=RELEASE)
    network.upstream_port = cluster.nodes[1].port
    with cluster:
        yield cluster


@pytest.fixture(scope="package")
def _real_kafka3_cluster(kafka_libs: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    yield from _cluster(kafka_libs, tmp_path_factory.mktemp("real-kafka-3"), 3, SESSION_CONFIG)


@pytest.fixture
def real_kafka3(_real_kafka3_cluster: KafkaCluster) -> KafkaCluster:
    """A three-node cluster (RF 3, min ISR 2) for the tests that kill and restart nodes: one for this folder's
    tests (a start of three JVMs costs 8-30 s), handed to each test with every node running (a node an earlier
    test left down, say by failing before its restart, is started again first)."""
    cluster = _real_kafka3_cluster
    for node_id, node in cluster.nodes.items():
        if not node.running:
            cluster.restart(node_id)
    return cluster


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    """A failing test's report carries the last lines of each real cluster's logs it used."""
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        for name in ("real_kafka", "real_kafka3", "secured", "proxied_kafka"):
            cluster = getattr(item, "funcargs", {}).get(name)
            cluster = getattr(cluster, "cluster", cluster)  # test_secured_real.py's fixture holds its cluster
            if isinstance(cluster, KafkaCluster):
                report.sections.append((f"Apache Kafka {cluster.version} logs", cluster.logs()))
