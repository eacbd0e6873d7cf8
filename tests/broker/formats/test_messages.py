"""The wire codec's one door (formats/messages): the message classes it gives by name, and the framing of
requests and responses, checked against kafka-python's own classes and encoder.

The JSON-built message classes, as a process that only sends requests (a client) uses them: kafka-python
decodes a response with the class registered under its API key when that class was created, so a process
that built only the request class could not read the answer: its connection raised inside the parser and the
request timed out (seen with describe-share-group and the share clients run in their own process; in the
tests the embedded broker had already built every response class). Checked in a fresh interpreter."""

from __future__ import annotations

import importlib
import struct
import subprocess
import sys
from typing import Any

import pytest
from kafka.protocol.consumer import FetchResponse
from kafka.protocol.metadata import FindCoordinatorRequest, MetadataRequest
from kafka.protocol.producer import ProduceRequest

from kafka_txn_broker.formats import messages
from kafka_txn_broker.formats.messages import (
    KAFKA_PYTHON,
    MESSAGES,
    MalformedRequest,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)

# Each request is looked up before any other message class of its API key exists (one key per API).
CHECK = """
import sys
from kafka.protocol.api_header import ResponseClassRegistry
from kafka_txn_broker.formats import messages
for name in sys.argv[1:]:
    request = getattr(messages, name)
    found = ResponseClassRegistry._response_class_registry.get(request.API_KEY)
    print(found.name if found is not None else None)
"""


def test_building_a_request_class_registers_its_response_class() -> None:
    requests = sorted(n for n in MESSAGES if n.endswith("Request"))
    done = subprocess.run([sys.executable, "-c", CHECK, *requests], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [name[: -len("Request")] + "Response" for name in requests]


# ---- the door --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("api", sorted(KAFKA_PYTHON))
def test_each_api_is_kafka_pythons_own_classes(api: str) -> None:
    # The same class objects, so the bytes on the wire are kafka-python's.
    module = importlib.import_module(KAFKA_PYTHON[api])
    for kind in ("Request", "Response"):
        ours = getattr(messages, api + kind)
        assert ours is getattr(module, api + kind)
        assert ours.API_KEY == getattr(module, api + kind).API_KEY


def test_a_name_the_codec_does_not_have_is_an_import_error() -> None:
    with pytest.raises(AttributeError, match="NoSuchRequest"):
        messages.NoSuchRequest  # noqa: B018
    with pytest.raises(ImportError):
        from kafka_txn_broker.formats.messages import NoSuchRequest  # noqa: F401


def _frame(request: Any, version: int, correlation_id: int, client_id: str) -> bytes:
    # Encoded by kafka-python directly, as any kafka-python client sends it.
    request.with_header(correlation_id=correlation_id, client_id=client_id)
    return bytes(request.encode(version=version, header=True, framed=True))


def test_decode_request_gives_the_request_and_its_header() -> None:
    records = b"\x00" * 70
    P = ProduceRequest[9]
    sent = P(transactional_id="tx", acks=-1, timeout_ms=30000, topic_data=[P.TopicProduceData(
        name="t", partition_data=[P.TopicProduceData.PartitionProduceData(index=2, records=records)])])
    request, correlation_id, client_id = decode_request(ProduceRequest, _frame(sent, 9, 42, "app"), 9)
    assert (correlation_id, client_id) == (42, "app")
    assert (request.transactional_id, request.acks, request.timeout_ms) == ("tx", -1, 30000)
    (topic,) = request.topic_data
    assert topic.name == "t" and [(p.index, bytes(p.records)) for p in topic.partition_data] == [(2, records)]


def test_a_frame_kafkas_reader_refuses_is_malformed() -> None:
    good = _frame(MetadataRequest[4](topics=None, allow_auto_topic_creation=False), 4, 1, "c")
    with pytest.raises(MalformedRequest, match="cannot decode API 3 v4"):
        decode_request(MetadataRequest, good[:-1], 4)
    # FindCoordinator v0's key is a string that is never null: Kafka's reader refuses a null there (length -1).
    header = struct.pack(">hhih", 10, 0, 1, 1) + b"c"
    null_key = header + struct.pack(">h", -1)
    with pytest.raises(MalformedRequest, match="API 10 v0: non-nullable field key is null"):
        decode_request(FindCoordinatorRequest, struct.pack(">i", len(null_key)) + null_key, 0)
    key_g = header + b"\x00\x01g"
    assert decode_request(FindCoordinatorRequest, struct.pack(">i", len(key_g)) + key_g, 0)[0].key == "g"


def test_encode_response_is_kafka_pythons_frame_at_the_asked_version() -> None:
    R = FetchResponse
    P = R.FetchableTopicResponse.PartitionData

    def build() -> Any:
        return R[12](throttle_time_ms=0, error_code=0, session_id=0, responses=[R.FetchableTopicResponse(
            topic="t", partitions=[P(partition_index=0, error_code=0, high_watermark=5, last_stable_offset=5,
                                     log_start_offset=0, aborted_transactions=None, records=b"\x01" * 40)])])
    direct = build()
    direct.with_header(correlation_id=9)
    assert encode_response(build(), 12, 9) == bytes(direct.encode(header=True, framed=True))
    # Built at v12, asked at v11 (a handler builds one object for several versions): encoded at v11.
    at_11 = encode_response(build(), 11, 9)
    assert decode_response(R, at_11, 11).responses[0].partitions[0].high_watermark == 5
    assert at_11 != encode_response(build(), 12, 9)


def test_a_client_frame_round_trips() -> None:
    frame = encode_request(FindCoordinatorRequest[0](key="g"), 0, 7, "c")
    assert frame == _frame(FindCoordinatorRequest[0](key="g"), 0, 7, "c")
    assert decode_request(FindCoordinatorRequest, frame, 0)[1:] == (7, "c")


# ---- building responses ----------------------------------------------------------------------------------------
def _slots(obj: Any) -> dict[str, Any]:
    """Every slot an object holds (a field not set reads as its schema default through __getattr__)."""
    names = {name for klass in type(obj).__mro__ for name in getattr(klass, "__slots__", ())}
    return {name: getattr(obj, name) for name in names if hasattr(type(obj), name) and _is_set(obj, name)}


def _is_set(obj: Any, name: str) -> bool:
    try:
        object.__getattribute__(obj, name)
    except AttributeError:
        return False
    return True


def _produce_response(make_struct: Any, leader: bool) -> list[Any]:
    R = messages.ProduceResponse
    PR = R.TopicProduceResponse.PartitionProduceResponse
    extra = {"current_leader": make_struct(PR.LeaderIdAndEpoch, leader_id=2, leader_epoch=7)} if leader else {}
    part = make_struct(PR, index=1, error_code=6 if leader else 0, base_offset=123, log_append_time_ms=-1,
                       log_start_offset=0, record_errors=[], error_message=None, **extra)
    return [make_struct(R.TopicProduceResponse, name="t", partition_responses=[part])]


def _txn_responses(make_struct: Any) -> dict[str, dict[str, Any]]:
    APR = messages.AddPartitionsToTxnResponse
    T = APR.AddPartitionsToTxnTopicResult
    results = [make_struct(T, name="t", results_by_partition=[
        make_struct(T.AddPartitionsToTxnPartitionResult, partition_index=p, partition_error_code=0) for p in range(3)])]
    return {"AddPartitionsToTxnResponse": {"throttle_time_ms": 0, "results_by_topic_v3_and_below": results},
            "EndTxnResponse": {"throttle_time_ms": 0, "error_code": 51}}


def _constructor(cls: Any, /, **fields: Any) -> Any:
    return cls(**fields)


@pytest.mark.parametrize("leader", [False, True])
def test_new_message_and_new_struct_build_what_the_constructors_build(leader: bool) -> None:
    # Every version of the responses the handlers build with them: the same class, the same slots (fields,
    # version, tags), the same bytes at every version.
    R = messages.ProduceResponse
    built: list[tuple[Any, Any]] = []
    for version in range(3, R.max_version + 1):
        kwargs = {"throttle_time_ms": 0, "node_endpoints": [] if version >= 10 else None}
        built.append((R[version](responses=_produce_response(_constructor, leader), **kwargs),
                      messages.new_message(R, version, responses=_produce_response(messages.new_struct, leader),
                                           **kwargs)))
    ours, theirs = _txn_responses(messages.new_struct), _txn_responses(_constructor)
    for name in ("AddPartitionsToTxnResponse", "EndTxnResponse"):
        cls = getattr(messages, name)
        for version in range(0, cls.max_version + 1):
            if name == "AddPartitionsToTxnResponse" and version >= 4:
                continue  # the brokers' batched form: other fields
            built.append((cls[version](**theirs[name]), messages.new_message(cls, version, **ours[name])))
    for expected, got in built:
        assert type(got) is type(expected) and _slots(got) == _slots(expected)
        assert repr(got) == repr(expected)
        version = expected.version
        assert encode_response(got, version, 3) == encode_response(expected, version, 3)
    assert built[0][1].responses[0].partition_responses[0].tags == ({"current_leader"} if leader else None)


def test_new_message_refuses_a_version_the_message_lacks_as_its_constructor_does() -> None:
    R = messages.EndTxnResponse
    with pytest.raises(ValueError, match="Invalid version"):
        R[R.max_version + 1]
    with pytest.raises(ValueError, match="Invalid version"):
        messages.new_message(R, R.max_version + 1, throttle_time_ms=0, error_code=0)


def test_decode_request_reads_what_kafka_pythons_decoder_reads_at_every_version() -> None:
    # The body goes straight to the generated decoder the class's decode() uses: the same object, for every
    # request and version (built with the schema's defaults; a topic and a partition where there are arrays).
    checked = 0
    for name in sorted(n for n in (*MESSAGES, *(a + "Request" for a in KAFKA_PYTHON)) if n.endswith("Request")):
        cls = getattr(messages, name)
        for version in range(0, cls.max_version + 1):
            frame = encode_request(cls[version](), version, 11, "client-a")
            theirs = cls.decode(frame, version=version, header=True, framed=True)
            ours, correlation_id, client_id = decode_request(cls, frame, version)
            assert (correlation_id, client_id) == (11, "client-a")
            assert type(ours) is type(theirs) and repr(ours) == repr(theirs), (name, version)
            checked += 1
    assert checked > 250  # every version of every request
