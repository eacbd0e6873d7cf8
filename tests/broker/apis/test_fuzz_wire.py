"""Hostile input at the wire, generated: every API the broker registers, mutated from valid requests.

Bounded for CI (about 350 inputs, a few seconds); tests/benchmarks/fuzz_long.py runs the same
generator and judge over a million inputs. Per input: an error/normal response that decodes, or a
clean close, within the timeout (fuzz_wire_support.WireProbe); after every example a long-lived
second connection still gets Metadata answered, and no handler raised (a contained crash is still a
bug: the client deserves an error code).
"""

from __future__ import annotations

import random
import socket
import struct
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.protocol.metadata import MetadataRequest, MetadataResponse

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.apis.registry import load_all
from tests.broker.apis import fuzz_wire_support as fz
from tests.broker.wire import connect, recv_frame, send_request

SETTINGS = settings(max_examples=10, deadline=None, database=None, derandomize=False,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(nodes=1, data_dir=tmp_path_factory.mktemp("fuzz"), config=fz.FUZZ_CONFIG) as c:
        c.create_topic(fz.FUZZ_TOPIC, 2, 1)
        yield c


@pytest.fixture(scope="module")
def probe(cluster: EmbeddedCluster) -> Iterator[fz.WireProbe]:
    p = fz.WireProbe(cluster.bootstrap_servers, timeout_s=5.0)
    yield p
    p.close()


@pytest.fixture(scope="module")
def errors() -> Iterator[fz.BrokerErrorLog]:
    with fz.broker_errors() as log:
        yield log


def _check_batch(probe: fz.WireProbe, errors: fz.BrokerErrorLog, frames: list[bytes]) -> None:
    for frame in frames:
        probe.run(frame)
    assert probe.healthy(), "a parallel connection stopped getting Metadata answers"
    crashed = errors.take()
    assert not crashed, f"the broker logged errors for inputs {[f[:48].hex() for f in frames]}: {crashed}"


def test_every_api_and_version_answers_a_valid_request(probe: fz.WireProbe, errors: fz.BrokerErrorLog) -> None:
    # The generator's valid requests really are valid: each one gets a response that decodes.
    rng = random.Random(0)
    for key, version in fz.request_versions():
        req = fz.valid_request_object(fz.APIS[key], version, rng)
        out = probe.run(fz.encode_request(req, correlation_id=key * 100 + version))
        if key == 0 and req.acks == 0:
            assert out.closed and not out.responses  # acks=0: no response by design
            continue
        assert out.responses or out.waited, f"API {key} v{version}: closed without a response"
    assert probe.healthy()
    assert errors.take() == []


@pytest.mark.parametrize("api_key", sorted(load_all()))
@SETTINGS
@given(data=st.data())
def test_mutated_requests_get_an_answer_or_a_clean_close(cluster: EmbeddedCluster, probe: fz.WireProbe,
                                                        errors: fz.BrokerErrorLog, api_key: int,
                                                        data: st.DataObject) -> None:
    spec = fz.APIS[api_key]
    rng = data.draw(st.randoms(use_true_random=False), label="rng")
    frames = []
    for i in range(data.draw(st.integers(1, 3), label="inputs")):
        version = data.draw(st.integers(spec.min_version, spec.max_version), label="version")
        frame = fz.valid_request(spec, version, rng, correlation_id=1000 + i)
        kind = data.draw(st.sampled_from([*fz.MUTATIONS, "splice"]), label="mutation")
        if kind == "splice":
            other = fz.APIS[rng.choice(sorted(fz.APIS))]
            frame = fz.splice(frame, fz.valid_request(other, other.max_version, rng, 7), rng)
        else:
            frame = fz.mutate(frame, rng, kind)
        frames.append(frame)
    _check_batch(probe, errors, frames)


@SETTINGS
@given(head=st.binary(min_size=0, max_size=16), body=st.binary(max_size=300),
       size=st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1)))
def test_arbitrary_frames(probe: fz.WireProbe, errors: fz.BrokerErrorLog, head: bytes, body: bytes,
                          size: int | None) -> None:
    payload = head + body
    frame = struct.pack(">i", len(payload) if size is None else size) + payload
    _check_batch(probe, errors, [frame])


def test_pipelined_garbage_after_a_valid_request(cluster: EmbeddedCluster) -> None:
    # The valid request is answered in order; the garbage behind it closes the connection.
    with connect(cluster.bootstrap_servers) as s:
        send_request(s, MetadataRequest[1](topics=None), 5)
        s.sendall(struct.pack(">i", 12) + struct.pack(">hhi", 3, 1, 6) + b"\xff\xff\x00\x00")
        resp = MetadataResponse.decode(recv_frame(s), version=1, header=True)
        assert resp.header.correlation_id == 5
        s.settimeout(5)
        assert s.recv(1) == b""


def test_a_stalled_half_frame_does_not_block_others(cluster: EmbeddedCluster, probe: fz.WireProbe) -> None:
    stalled = []
    for _ in range(20):
        s = socket.create_connection(probe.addr)
        s.sendall(struct.pack(">i", 1000) + b"\x00\x03")  # promises 1000 bytes, sends 2
        stalled.append(s)
    try:
        assert probe.healthy()
    finally:
        for s in stalled:
            s.close()


def test_null_in_a_non_nullable_field_closes_cleanly(cluster: EmbeddedCluster, probe: fz.WireProbe,
                                                      errors: fz.BrokerErrorLog) -> None:
    # OffsetFetch v8 (flexible) with groups = [{group_id, topics=null}] is allowed (all topics), but a
    # compact-null group_id is not: Kafka's reader refuses it and so must we, instead of a handler crash.
    from kafka.protocol.consumer import OffsetFetchRequest

    ok = OffsetFetchRequest[8](groups=[OffsetFetchRequest.OffsetFetchRequestGroup(group_id="g", topics=None)],
                               require_stable=False)
    ok.with_header(correlation_id=3, client_id="t")
    frame = bytes(ok.encode(header=True, framed=True))
    assert probe.run(frame).responses
    # The group id "g" is encoded as compact length 2 followed by b"g"; length 0 means null.
    marker = frame.index(b"\x02g")
    bad = frame[:marker] + b"\x00" + frame[marker + 2:]
    out = probe.run(struct.pack(">i", len(bad) - 4) + bad[4:])
    assert out.closed and not out.responses
    assert probe.healthy()
    assert errors.take() == []


def test_metadata_v12_without_name_or_id_is_unknown_topic_id(cluster: EmbeddedCluster) -> None:
    from tests.broker.wire import roundtrip

    req = MetadataRequest[12](topics=[MetadataRequest.MetadataRequestTopic(name=None, topic_id=None)],
                              allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    resp = roundtrip(cluster.bootstrap_servers, req, MetadataResponse)
    assert [t.error_code for t in resp.topics] == [100]  # UNKNOWN_TOPIC_ID


def test_create_topics_refuses_excessive_partition_counts(cluster: EmbeddedCluster) -> None:
    # Found by the atheris run: num_partitions=16776961 (validate_only) had the node build 16M partition
    # assignments, stalling every connection. Kafka's bound: 10000 new partitions per request.
    from kafka.protocol.admin import CreateTopicsRequest, CreateTopicsResponse

    from tests.broker.wire import roundtrip

    def create(*counts: int) -> list[int]:
        topics = [CreateTopicsRequest.CreatableTopic(name=f"big-{i}", num_partitions=n, replication_factor=1,
                                                     assignments=[], configs=[]) for i, n in enumerate(counts)]
        req = CreateTopicsRequest[3](topics=topics, timeout_ms=1000, validate_only=True)
        return [t.error_code for t in roundtrip(cluster.bootstrap_servers, req, CreateTopicsResponse).topics]

    assert create(16776961) == [44]  # POLICY_VIOLATION
    assert create(6000, 6000) == [44, 44]
    assert create(2**31 - 1, -5) == [44, 44]
    assert create(10000) == [0]
    assert create(3, -1) == [0, 0]


def test_zz_logs_written_under_fuzzing_reopen_intact(cluster: EmbeddedCluster, probe: fz.WireProbe) -> None:
    # Last in this module (file order): whatever the fuzzed Produce/WriteTxnMarkers requests appended,
    # the logs reopen after a clean restart with every batch intact and offsets contiguous.
    from kafka_txn_broker.formats.record_batch import batch_crc_ok

    cluster.restart()
    probe.close()  # the restart closed its long-lived connection; a later healthy() opens a new one
    assert cluster.cluster is not None
    checked = 0
    for node in cluster.cluster.nodes.values():
        for part in node.replica_manager.partitions.values():
            expected = part.log.log_start_offset
            for _segment, header, raw in part.log.log.iter_batches(expected):
                assert header.base_offset == expected
                assert batch_crc_ok(raw, 0, header)
                expected = header.next_offset
                checked += 1
            assert expected == part.log.log_end_offset
    assert checked > 0
