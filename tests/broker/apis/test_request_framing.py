"""The codec seam (formats/messages) reads request headers and writes response headers itself; the bytes must be exactly
what kafka-python's generated codec reads and writes (Kafka's RequestHeader v1/v2 and ResponseHeader v0/v1),
for every API and version the broker accepts."""

from __future__ import annotations

import random
import struct
from typing import Any

import pytest

from kafka_txn_broker.apis.registry import APIS
from kafka_txn_broker.formats.messages import _decode
from kafka_txn_broker.formats.messages import encode_response as _encode
from tests.broker.apis.fuzz_wire_support import (
    _struct_value,
    encode_request,
    request_versions,
    valid_request_object,
)

API_VERSIONS = 18


def _response(key: int, version: int, rng: random.Random) -> Any:
    return _struct_value(APIS[key].response._struct, version, rng)


def _generic_encode(response: Any, version: int, correlation_id: int) -> bytes:
    response.API_VERSION = version
    response.with_header(correlation_id=correlation_id)
    return bytes(response.encode(header=True, framed=True))


@pytest.mark.parametrize(("key", "version"), request_versions())
def test_requests_decode_as_the_generated_decoder_reads_them(key: int, version: int) -> None:
    rng = random.Random(key * 100 + version)
    spec = APIS[key]
    for client_id in ("kafka-txn", "", None, "é-client"):
        frame = encode_request(valid_request_object(spec, version, rng), 4242, client_id)
        body, correlation_id, seen_client = _decode(spec.request, frame, version)
        expected = spec.request.decode(frame, version=version, header=True, framed=True)
        assert (correlation_id, seen_client) == (4242, client_id)
        assert body == expected


@pytest.mark.parametrize(("key", "version"), request_versions())
def test_responses_encode_as_the_generated_encoder_writes_them(key: int, version: int) -> None:
    rng = random.Random(key * 100 + version)
    for correlation_id in (7, -1, 2**31 - 1):
        response = _response(key, version, rng)
        expected = _generic_encode(response, version, correlation_id)
        assert _encode(response, version, correlation_id) == expected
        if key == API_VERSIONS:
            continue  # a client reads an ApiVersions answer with an error as v0 (KIP-511): below
        # and a client reads it back whole
        decoded = APIS[key].response.decode(expected, version=version, header=True, framed=True)
        assert decoded.header.correlation_id == correlation_id


def test_api_versions_answers_with_header_v0_even_at_flexible_versions() -> None:
    """KIP-511: a client that does not know the broker's versions must be able to read the answer."""
    response = _response(API_VERSIONS, 3, random.Random(1))
    frame = _encode(response, 3, 99)
    size, correlation_id = struct.unpack_from(">ii", frame)
    assert (size, correlation_id) == (len(frame) - 4, 99)
    assert frame[8:] == response.encode(version=3)  # the body right after the correlation id


def test_flexible_header_with_tagged_fields_goes_to_the_generated_decoder() -> None:
    """A v2 header may carry tagged fields (none defined yet): they are read past, not taken for the body."""
    spec = next(s for k, s in sorted(APIS.items()) if s.request.flexible_version_q(s.max_version) and k != API_VERSIONS)
    version = spec.max_version
    rng = random.Random(5)
    frame = encode_request(valid_request_object(spec, version, rng), 11, "c")
    head = 4 + 8 + 2 + 1  # size, key/version/correlation, client id length, "c"
    assert frame[head] == 0  # no tagged fields as encoded
    unknown_tag = bytes([1, 9, 2, 0xAB, 0xCD])  # one field, tag 9, two bytes
    tagged = frame[4:head] + unknown_tag + frame[head + 1:]
    tagged = struct.pack(">i", len(tagged)) + tagged
    body, correlation_id, client_id = _decode(spec.request, tagged, version)
    assert (correlation_id, client_id) == (11, "c")
    assert body == spec.request.decode(frame, version=version, header=True, framed=True)


def test_a_client_id_running_past_the_frame_is_refused() -> None:
    spec = APIS[3]  # Metadata
    frame = encode_request(valid_request_object(spec, 1, random.Random(2)), 1, "abc")
    broken = frame[:12] + struct.pack(">h", 500) + frame[14:]
    with pytest.raises(Exception):  # noqa: B017 - whatever the decoder raises, the connection is closed
        _decode(spec.request, broken, 1)
