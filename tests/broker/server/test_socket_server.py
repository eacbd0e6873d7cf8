"""Hostile and malformed input at the wire level: error codes or a clean close, never a dead broker."""

from __future__ import annotations

import socket
import struct
from pathlib import Path

import pytest
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, MetadataResponse
from kafka.protocol.producer import ProduceRequest, ProduceResponse

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.formats.record_batch import build_batch
from tests.broker.wire import connect, recv_frame, send_request


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    with EmbeddedCluster(nodes=1, data_dir=tmp_path_factory.mktemp("srv")) as c:
        c.create_topic("t", 1, 1)
        yield c


def _connect(cluster: EmbeddedCluster) -> socket.socket:
    return connect(cluster.bootstrap_servers)


def _closed(s: socket.socket) -> bool:
    try:
        return s.recv(1) == b""
    except ConnectionError:
        return True


_request = send_request
_recv_frame = recv_frame


def _metadata_works(cluster: EmbeddedCluster) -> bool:
    with _connect(cluster) as s:
        _request(s, MetadataRequest[9](topics=None, allow_auto_topic_creation=False,
                                       include_topic_authorized_operations=False), 7)
        resp = MetadataResponse.decode(_recv_frame(s), version=9, header=True)
        return resp.header.correlation_id == 7 and len(resp.brokers) == 1


def test_unknown_api_key_closes_only_that_connection(cluster: EmbeddedCluster) -> None:
    with _connect(cluster) as s:
        body = struct.pack(">hhih", 999, 0, 1, -1)
        s.sendall(struct.pack(">i", len(body)) + body)
        assert _closed(s)
    assert _metadata_works(cluster)


def test_oversized_and_negative_frames_are_refused(cluster: EmbeddedCluster) -> None:
    for size in (2**31 - 1, -5, 3):
        with _connect(cluster) as s:
            s.sendall(struct.pack(">i", size) + b"\x00" * 8)
            assert _closed(s)
    assert _metadata_works(cluster)


def test_garbage_body_closes_cleanly(cluster: EmbeddedCluster) -> None:
    with _connect(cluster) as s:
        body = struct.pack(">hhi", 3, 9, 1) + b"\xff" * 40  # Metadata v9 header then junk
        s.sendall(struct.pack(">i", len(body)) + body)
        assert _closed(s)
    assert _metadata_works(cluster)


def test_api_versions_too_new_answers_unsupported_version_with_ranges(cluster: EmbeddedCluster) -> None:
    with _connect(cluster) as s:
        body = struct.pack(">hhih", 18, 99, 5, -1) + b"\x00"
        s.sendall(struct.pack(">i", len(body)) + body)
        resp = ApiVersionsResponse.decode(_recv_frame(s), version=0, header=True)
        assert resp.error_code == 35  # UNSUPPORTED_VERSION
        keys = {k.api_key for k in resp.api_keys}
        assert {0, 1, 2, 3, 18} <= keys


def test_api_versions_advertises_wide_ranges(cluster: EmbeddedCluster) -> None:
    with _connect(cluster) as s:
        _request(s, ApiVersionsRequest[3](client_software_name="t", client_software_version="1"))
        resp = ApiVersionsResponse.decode(_recv_frame(s), version=3, header=True)
        ranges = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
        assert ranges[3][0] == 0 and ranges[3][1] >= 12  # Metadata
        assert ranges[18] == (0, 4) and ranges[0][0] <= 3  # ApiVersions, Produce


def _produce(s: socket.socket, records: bytes) -> int:
    P = ProduceRequest
    req = P[9](transactional_id=None, acks=1, timeout_ms=5000, topic_data=[
        P.TopicProduceData(name="t", partition_data=[P.TopicProduceData.PartitionProduceData(index=0,
                                                                                             records=records)])])
    _request(s, req, 3)
    resp = ProduceResponse.decode(_recv_frame(s), version=9, header=True)
    return int(resp.responses[0].partition_responses[0].error_code)


def _stored(cluster: EmbeddedCluster) -> tuple[int, int, int]:
    """(log end offset, high watermark, bytes in the partition's segment files) of t-0 on its only node."""
    assert cluster.cluster is not None
    part = cluster.cluster.nodes[0].replica_manager.get("t", 0)
    assert part is not None
    log = part.log
    on_disk = sum(p.stat().st_size for p in (cluster.data_dir / "node-0" / "t-0").glob("*.log"))
    return log.log_end_offset, log.high_watermark, on_disk


def test_bad_crc_gets_corrupt_message_and_is_not_stored(cluster: EmbeddedCluster) -> None:
    good = bytearray(build_batch([(None, b"hello", [])], timestamp_ms=1_700_000_000_000))
    bad = bytearray(good)
    bad[-1] ^= 0xFF
    with _connect(cluster) as s:
        before = _stored(cluster)
        assert _produce(s, bytes(bad)) == 2  # CORRUPT_MESSAGE
        # Kafka validates the CRC before anything is appended (LogValidator): no offset, no byte on disk.
        assert _stored(cluster) == before
        assert _produce(s, bytes(good)) == 0  # the same connection keeps working
        end, hw, size = _stored(cluster)
        assert (end, hw, size) == (before[0] + 1, before[1] + 1, before[2] + len(good))


def test_truncated_batch_is_rejected(cluster: EmbeddedCluster) -> None:
    good = build_batch([(None, b"x" * 100, [])], timestamp_ms=1_700_000_000_000)
    with _connect(cluster) as s:
        assert _produce(s, good[:40]) in (2, 87)  # CORRUPT_MESSAGE or INVALID_RECORD


def test_data_dir_layout_is_per_node(tmp_path: Path) -> None:
    with EmbeddedCluster(nodes=3, data_dir=tmp_path) as c:
        c.create_topic("layout", 2, 2)
    assert (tmp_path / "node-0" / "meta.properties").read_text().count("node.id=0") == 1
    hosted = sorted(p.name for n in range(3) for p in (tmp_path / f"node-{n}").glob("layout-*"))
    assert hosted == ["layout-0", "layout-0", "layout-1", "layout-1"]
