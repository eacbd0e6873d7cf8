"""formats.messages.plain_metadata: a MetadataRequest written from plain values has the bytes kafka-python's
encoder writes for the same request at every version 1-13, and a MetadataResponse kafka-python wrote reads back
as kafka-python's own decoder reads it (fields the plain reader keeps), at every version; bytes that are not one
are a ValueError."""

from __future__ import annotations

import struct
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_txn_broker.formats.messages import MetadataRequest, MetadataResponse
from kafka_txn_broker.formats.messages.plain_metadata import metadata_request_body, read_metadata_response

INT32 = st.integers(-(2**31), 2**31 - 1)
NODES = st.lists(st.integers(0, 2**31 - 1), max_size=4)
NAMES = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=140)
PARTITIONS = st.lists(st.tuples(st.integers(-(2**15), 2**15 - 1), INT32, INT32, INT32, NODES, NODES, NODES),
                      max_size=5)
TOPICS = st.lists(st.tuples(st.integers(0, 120), NAMES, st.booleans(), PARTITIONS), max_size=4)
BROKERS = st.lists(st.tuples(INT32, NAMES, INT32, st.none() | NAMES), max_size=3)


def kafka_python_response(version: int, brokers: list, cluster_id: str | None, controller: int, topics: list) -> bytes:
    B, T = MetadataResponse.MetadataResponseBroker, MetadataResponse.MetadataResponseTopic
    P = T.MetadataResponsePartition
    fields = {
        "throttle_time_ms": 5,
        "brokers": [B(node_id=n, host=h, port=p, rack=r) for n, h, p, r in brokers],
        "cluster_id": cluster_id, "controller_id": controller,
        "topics": [T(error_code=e, name=name, topic_id=uuid.UUID(int=7), is_internal=internal,
                     partitions=[P(error_code=pe, partition_index=i, leader_id=leader, leader_epoch=epoch,
                                   replica_nodes=replicas, isr_nodes=isr, offline_replicas=offline)
                                 for pe, i, leader, epoch, replicas, isr, offline in parts],
                     authorized_operations=None)
                   for e, name, internal, parts in topics],
        "authorized_operations": None,  # kafka-python's ClusterAuthorizedOperations (v8-v10): None is "not asked"
    }
    if version >= 13:
        fields["error_code"] = 0
    return bytes(MetadataResponse[version](**fields).encode(version=version))


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 13), BROKERS, st.none() | NAMES, INT32, TOPICS)
def test_a_response_kafka_python_wrote_reads_as_kafka_python_reads_it(version: int, brokers: list,
                                                                       cluster_id: str | None, controller: int,
                                                                       topics: list) -> None:
    data = kafka_python_response(version, brokers, cluster_id, controller, topics)
    theirs = MetadataResponse[version].decode(data)
    mine = read_metadata_response(data, version)
    assert mine.brokers == [(b.node_id, b.host, b.port, b.rack) for b in theirs.brokers]
    assert mine.cluster_id == (theirs.cluster_id if version >= 2 else None)
    assert mine.controller_id == theirs.controller_id
    assert mine.topics == [
        (t.error_code, t.name, bool(t.is_internal),
         [(p.error_code, p.partition_index, p.leader_id, p.leader_epoch if version >= 7 else -1,
           tuple(p.replica_nodes), tuple(p.isr_nodes)) for p in t.partitions])
        for t in theirs.topics]


@pytest.mark.parametrize("version", range(1, 14))
@pytest.mark.parametrize("topics", [None, [], ["orders", "pay-ments", "x" * 130]])
def test_a_request_has_kafka_pythons_bytes(version: int, topics: list[str] | None) -> None:
    if topics is None:
        request = MetadataRequest[version](topics=None, allow_auto_topic_creation=False)
    else:
        Topic = MetadataRequest.MetadataRequestTopic
        request = MetadataRequest[version](topics=[Topic(name=t) for t in topics], allow_auto_topic_creation=False)
    assert metadata_request_body(version, topics) == bytes(request.encode(version=version))


@pytest.mark.parametrize("version", [1, 8, 9, 12, 13])
def test_bytes_that_are_not_a_response_are_a_value_error(version: int) -> None:
    data = kafka_python_response(version, [(1, "h", 9092, None)], "c", 1,
                                 [(0, "t", False, [(0, 0, 1, 0, [1], [1], [])])])
    for cut in (len(data) - 1, len(data) // 2, 3):
        with pytest.raises((ValueError, struct.error)):
            read_metadata_response(data[:cut], version)
    with pytest.raises(ValueError):
        read_metadata_response(data + b"\x00", version)
