"""Kafka's Java clients and tools (the jars of Apache Kafka releases from Maven Central) against the embedded
broker. The default run uses the newest 4.x (the time budget of the default suite); `KAFKA_TXN_KAFKA_RELEASE=3.9.2`
runs the same tests with the newest 3.9.x's tools, as tests/external/real_kafka does. A missing JVM, Maven or jar
fails the test, never skips it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_txn_broker.embedded import EmbeddedCluster
from tests.external.java_clients.tools import JavaTools
from tests.support.real_kafka import java_missing, release_libs

# The releases this suite is written for: the newest 4.x and the newest 3.9.x.
SUPPORTED = ("4.4.0", "3.9.2")
RELEASES = [os.environ.get("KAFKA_TXN_KAFKA_RELEASE", SUPPORTED[0])]
NEWEST = RELEASES[0]

# One node, as an operator's rehearsal broker: partition verification off so that the hanging-transaction
# scenarios can be staged (KIP-890 would refuse the late write), ACLs on with allow-if-no-ACL so that every tool
# works until a test adds a DENY.
BROKER_CONFIG = {"transaction.partition.verification.enable": False, "authorizer.class.name": "acl",
                 "allow.everyone.if.no.acl.found": True}


def libs_of(release: str) -> Path:
    problem = java_missing()
    if problem:
        pytest.fail(problem)
    try:
        return release_libs(release)
    except RuntimeError as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="module", params=RELEASES)
def release(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(nodes=1, data_dir=tmp_path_factory.mktemp("java-clients"), config=BROKER_CONFIG) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def java(release: str, broker: EmbeddedCluster) -> JavaTools:
    return JavaTools(libs_of(release), release, broker.bootstrap_servers)
