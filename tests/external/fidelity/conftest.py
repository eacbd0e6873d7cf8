"""One real Apache Kafka node and one embedded node emulating the same release, for the whole session; every
case runs once on each (in order: cases see the internal topics earlier cases created) and the tests read the
comparison. The release is KAFKA_TXN_KAFKA_RELEASE's (default: the newest tested). A missing JVM, Maven or jar
fails the tests, never skips them."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from kafka_txn_broker import EmbeddedCluster
from tests.external.fidelity.cases import CASES
from tests.external.fidelity.runner import CaseResult, compare, negotiate, run_side
from tests.external.fidelity.sides import RELEASE, embedded_cluster, real_cluster, run_secured, run_two_nodes
from tests.support.real_kafka import KafkaCluster, java_missing


@dataclass
class Pair:
    real: KafkaCluster
    ours: EmbeddedCluster
    release: str


@pytest.fixture(scope="session")
def fidelity_pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    problem = java_missing()
    if problem:
        pytest.fail(problem)
    base = tmp_path_factory.mktemp("fidelity")
    try:
        with real_cluster(RELEASE, base / "real") as real, embedded_cluster(RELEASE, base / "embedded") as ours:
            yield Pair(real, ours, RELEASE)
    except RuntimeError as exc:  # no jars for the release, a node that would not start
        pytest.fail(f"Apache Kafka {RELEASE} for the fidelity suite: {exc}")


@pytest.fixture(scope="session")
def fidelity_versions(fidelity_pair: Pair) -> dict[str, int]:
    return negotiate(fidelity_pair.real.bootstrap_servers, fidelity_pair.ours.bootstrap_servers)


@pytest.fixture(scope="session")
def fidelity_results(fidelity_pair: Pair, fidelity_versions: dict[str, int]) -> dict[str, CaseResult]:
    real, ours = fidelity_pair.real.bootstrap_servers, fidelity_pair.ours.bootstrap_servers
    results = compare(CASES, run_side(real, CASES, fidelity_versions), run_side(ours, CASES, fidelity_versions))
    return {r.case.name: r for r in results}


@pytest.fixture(scope="session")
def fidelity_acl_results(fidelity_versions: dict[str, int], tmp_path_factory: pytest.TempPathFactory
                         ) -> dict[str, CaseResult]:
    """The pair with an authorizer (started, compared, stopped): the ACL cases' results."""
    base = tmp_path_factory.mktemp("fidelity-acl")
    try:
        return {r.case.name: r for r in run_secured(RELEASE, base, fidelity_versions)}
    except RuntimeError as exc:
        pytest.fail(f"Apache Kafka {RELEASE} with an authorizer for the fidelity suite: {exc}")


@pytest.fixture(scope="session")
def fidelity_two_node_results(fidelity_versions: dict[str, int], tmp_path_factory: pytest.TempPathFactory
                              ) -> dict[str, CaseResult]:
    """Two-node pairs (started, compared, stopped): the not-leader and not-coordinator cases' results."""
    base = tmp_path_factory.mktemp("fidelity-2")
    try:
        return {r.case.name: r for r in run_two_nodes(RELEASE, base, fidelity_versions)}
    except RuntimeError as exc:
        pytest.fail(f"two-node Apache Kafka {RELEASE} for the fidelity suite: {exc}")
