"""The two clusters compared: one node of real Apache Kafka and one node of the embedded broker emulating the
same release, configured alike (internal topics' partition counts, no rebalance delay, the rest defaults).

Threading: the context managers are entered and left by one thread.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kafka_txn_broker import EmbeddedCluster
from tests.external.fidelity.runner import CaseResult, compare, run_side
from tests.support.real_kafka import DEFAULT_RELEASE, KafkaCluster, java_missing, release_libs
from tests.support.real_kafka.cluster import free_ports

RELEASE = os.environ.get("KAFKA_TXN_KAFKA_RELEASE", DEFAULT_RELEASE)
# What both sides are given (the real node's harness sets the same partition counts, RF 1 on one node).
SHARED = {
    "offsets.topic.num.partitions": "5",
    "transaction.state.log.num.partitions": "5",
    "group.initial.rebalance.delay.ms": "0",
}


# The secured pair: SASL/PLAIN, an authorizer, `admin` a super user and `alice` a principal without any ACL.
USERS = {"admin": "admin-secret", "alice": "alice-secret"}
SUPER_USER = "admin"


def emulated(release: str) -> str:
    """The embedded broker's name for a release: major.minor ("4.4.0" -> "4.4")."""
    return ".".join(release.split(".")[:2])


@contextmanager
def real_cluster(release: str, base: Path) -> Iterator[KafkaCluster]:
    problem = java_missing()
    if problem:
        raise RuntimeError(problem)
    with KafkaCluster(release_libs(release), base, nodes=1, config=SHARED, version=release) as cluster:
        yield cluster


@contextmanager
def embedded_cluster(release: str, base: Path) -> Iterator[EmbeddedCluster]:
    config = {**SHARED, "offsets.topic.replication.factor": 1, "transaction.state.log.replication.factor": 1,
              "kafka.version.emulate": emulated(release)}
    with EmbeddedCluster(nodes=1, data_dir=base, config=config) as cluster:
        yield cluster


@contextmanager
def secured_real_cluster(release: str, base: Path) -> Iterator[tuple[KafkaCluster, str]]:
    """Real Kafka with StandardAuthorizer (KRaft's) and a SASL_PLAINTEXT listener for the clients; the brokers'
    own PLAINTEXT listener (inter-broker and controller, ANONYMOUS) is a super user. Yields the SASL address."""
    problem = java_missing()
    if problem:
        raise RuntimeError(problem)
    cluster = KafkaCluster(release_libs(release), base, nodes=1, config=SHARED, version=release)
    node = next(iter(cluster.nodes.values()))
    sasl_port = free_ports(1)[0]
    jaas = " ".join(f'user_{u}="{p}"' for u, p in USERS.items())
    cluster.config.update({
        "listeners": f"PLAINTEXT://127.0.0.1:{node.port},CONTROLLER://127.0.0.1:{node.controller_port},"
                     f"SASL_PLAINTEXT://127.0.0.1:{sasl_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config":
            f"org.apache.kafka.common.security.plain.PlainLoginModule required {jaas};",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": f"User:ANONYMOUS;User:{SUPER_USER}",
    })
    with cluster:
        yield cluster, f"127.0.0.1:{sasl_port}"


@contextmanager
def secured_embedded_cluster(release: str, base: Path) -> Iterator[EmbeddedCluster]:
    config = {**SHARED, "offsets.topic.replication.factor": 1, "transaction.state.log.replication.factor": 1,
              "kafka.version.emulate": emulated(release), "security.protocol": "SASL_PLAINTEXT",
              "sasl.enabled.mechanisms": "PLAIN", "sasl.users": [f"{u}:{p}" for u, p in USERS.items()],
              "authorizer.class.name": "acl", "super.users": f"User:{SUPER_USER}"}
    with EmbeddedCluster(nodes=1, data_dir=base, config=config) as cluster:
        yield cluster


def run_secured(release: str, base: Path, versions: dict[str, int]) -> list[CaseResult]:
    """The ACL cases on the pair with an authorizer (started, compared, stopped)."""
    from tests.external.fidelity.cases import ACL_CASES

    with secured_real_cluster(release, base / "real-acl") as (_real, address), \
            secured_embedded_cluster(release, base / "embedded-acl") as ours:
        return compare(ACL_CASES, run_side(address, ACL_CASES, versions, USERS),
                       run_side(ours.bootstrap_servers, ACL_CASES, versions, USERS))


@contextmanager
def two_node_real_cluster(release: str, base: Path) -> Iterator[KafkaCluster]:
    """Two combined nodes, RF 2 (the harness's sizing), for the requests sent to a node that does not lead."""
    problem = java_missing()
    if problem:
        raise RuntimeError(problem)
    with KafkaCluster(release_libs(release), base, nodes=2, config=SHARED, version=release) as cluster:
        yield cluster


@contextmanager
def two_node_embedded_cluster(release: str, base: Path) -> Iterator[EmbeddedCluster]:
    config = {**SHARED, "offsets.topic.replication.factor": 2, "transaction.state.log.replication.factor": 2,
              "default.replication.factor": 2, "kafka.version.emulate": emulated(release)}
    with EmbeddedCluster(nodes=2, data_dir=base, config=config) as cluster:
        yield cluster


def run_two_nodes(release: str, base: Path, versions: dict[str, int]) -> list[CaseResult]:
    """The cases about leadership and coordinator placement on two-node pairs (started, compared, stopped)."""
    from tests.external.fidelity.cases import TWO_NODE_CASES

    with two_node_real_cluster(release, base / "real-2") as real, \
            two_node_embedded_cluster(release, base / "embedded-2") as ours:
        return compare(TWO_NODE_CASES, run_side(real.bootstrap_servers, TWO_NODE_CASES, versions),
                       run_side(ours.bootstrap_servers, TWO_NODE_CASES, versions))
