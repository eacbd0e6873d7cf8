"""`kafka.version.emulate`: the broker offers exactly what a chosen Apache Kafka release offered.

Expected values are Kafka facts (KIP-664: DescribeProducers in 2.8, ListTransactions and
DescribeTransactions in 3.0; ListTransactions v1 in 3.8 (KIP-994), v2 in 4.1 (KIP-1152); KIP-890's
transaction.version feature from 4.0; WriteTxnMarkers v0 removed in 4.0 (KIP-896)), checked over the
wire. Outside the ranges Kafka closes the connection, except for ApiVersions, which it answers with
UNSUPPORTED_VERSION (KIP-511).
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator
from typing import Any

import pytest
from kafka.protocol.admin import DescribeTransactionsRequest
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse

from kafka_txn_broker.embedded import EmbeddedCluster

DESCRIBE_PRODUCERS, DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS, WRITE_TXN_MARKERS, END_TXN = 61, 65, 66, 27, 26


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(nodes=1, data_dir=tmp_path_factory.mktemp("kafka")) as c:
        yield c


def emulate(cluster: EmbeddedCluster, release: str) -> None:
    assert cluster.cluster is not None
    node = cluster.cluster.live_node(0)
    assert node is not None
    cluster.call_soon(node.config.set, "kafka.version.emulate", release)


def exchange(cluster: EmbeddedCluster, request: Any, version: int) -> bytes:
    """One request on a fresh connection; the raw response frame, or b"" if the broker closed it."""
    host, port = cluster.bootstrap_servers.split(",")[0].split(":")
    request.with_header(correlation_id=7, client_id="test")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(bytes(request.encode(version=version, header=True, framed=True)))
        head = sock.recv(4)
        if len(head) < 4:
            return b""
        size = struct.unpack(">i", head)[0]
        data = b""
        while len(data) < size:
            chunk = sock.recv(size - len(data))
            if not chunk:
                break
            data += chunk
        return data


def api_versions(cluster: EmbeddedCluster, version: int = 3) -> Any:
    return ApiVersionsResponse.decode(exchange(cluster, ApiVersionsRequest(client_software_name="t",
                                                                           client_software_version="1"), version),
                                      version=version, header=True)


def ranges(answer: Any) -> dict[int, tuple[int, int]]:
    return {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}


@pytest.mark.parametrize("release, present, absent", [
    ("2.7", [], [DESCRIBE_PRODUCERS, DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS]),
    ("2.8", [DESCRIBE_PRODUCERS], [DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS]),
    ("3.0", [DESCRIBE_PRODUCERS, DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS], []),
])
def test_apis_a_release_lacks_are_not_advertised(cluster: EmbeddedCluster, release: str, present: list[int],
                                                 absent: list[int]) -> None:
    emulate(cluster, release)
    try:
        offered = ranges(api_versions(cluster))
    finally:
        emulate(cluster, "")
    assert all(k in offered for k in present) and not any(k in offered for k in absent)


@pytest.mark.parametrize("release, list_max, markers, feature", [
    ("3.0", 0, (0, 1), False), ("3.8", 1, (0, 1), False), ("4.0", 1, (1, 1), True), ("4.1", 2, (1, 1), True),
])
def test_version_ranges_and_features_follow_the_release(cluster: EmbeddedCluster, release: str, list_max: int,
                                                        markers: tuple[int, int], feature: bool) -> None:
    emulate(cluster, release)
    try:
        answer = api_versions(cluster)
    finally:
        emulate(cluster, "")
    offered = ranges(answer)
    assert offered[LIST_TRANSACTIONS] == (0, list_max) and offered[WRITE_TXN_MARKERS] == markers
    assert offered[END_TXN][1] == (5 if feature else 3 if release == "3.0" else 4)  # EndTxn v5 is TV2 (4.0)
    names = {f.name for f in answer.finalized_features}
    assert ("transaction.version" in names) is feature
    assert ranges(api_versions(cluster))[WRITE_TXN_MARKERS] == (1, 2)  # not emulating: everything we serve


def test_requests_outside_the_release_are_refused_as_kafka_does(cluster: EmbeddedCluster) -> None:
    emulate(cluster, "2.8")
    try:
        closed = exchange(cluster, DescribeTransactionsRequest(transactional_ids=["x"]), 0)
        newer = ApiVersionsResponse.decode(exchange(cluster, ApiVersionsRequest(), 4), version=0, header=True)
    finally:
        emulate(cluster, "")
    assert closed == b""  # Kafka closes the connection on an API it does not offer
    assert newer.error_code == 35  # UNSUPPORTED_VERSION, with the release's ranges to retry with
    assert DESCRIBE_PRODUCERS in ranges(newer) and DESCRIBE_TRANSACTIONS not in ranges(newer)
