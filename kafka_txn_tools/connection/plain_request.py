"""Requests written and answers read as plain values (kafka_txn_broker.formats.messages.plain and plain_metadata),
sent through kafka-python's connections as its own messages are: a find-hanging first pass asks each leader for
the latest offsets of all its partitions, and every scan reads the whole cluster's Metadata; kafka-python's
classes spent more time building, encoding and decoding an object per partition than the broker took to
answer.

kafka-python's connection (kafka/net/connection.py, pinned at 3.0.12 in pyproject.toml) asks of a request:
`API_KEY`, `min_version`/`max_version` (and `_min_version`/`_max_version`, a caller's own limits) to pick the
version both sides support, which it sets as `API_VERSION`; `with_header(correlation_id, client_id)`, then
`encode(framed=True, header=True)`; `expect_response()`; and `header.get_response_class()`, whose
`parse_header(buffer)` and `decode(buffer)` read the answer's frame (after its size). It raises
KafkaProtocolError for a ValueError or struct.error from them. `PlainRequest` gives exactly that.

Not thread-safe: a request is sent once, by the connection's I/O thread.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from kafka_txn_broker.formats.bytes import Reader
from kafka_txn_broker.formats.messages.plain import (
    ListOffsetsAnswer,
    PartitionQuery,
    list_offsets_request_body,
    read_list_offsets_response,
)
from kafka_txn_broker.formats.messages.plain_metadata import (
    FLEXIBLE_FROM,
    METADATA_KEY,
    MetadataAnswer,
    metadata_request_body,
    read_metadata_response,
)

_HEAD = struct.Struct(">hhi")  # API key, API version, correlation id
_INT32 = struct.Struct(">i")
_INT16 = struct.Struct(">h")


class _ResponseHeader:
    __slots__ = ("correlation_id",)

    def __init__(self, correlation_id: int) -> None:
        self.correlation_id = correlation_id


class _Reader:
    """What kafka-python's parser calls the response class: the header, then the body, from one frame. The
    frame is read whole by `parse_header` with formats.bytes' Reader (the response header v1's tagged fields
    skipped by its codec); `decode` reads the body that follows."""

    def __init__(self, flexible: bool, read_body: Callable[[bytes], Any]) -> None:
        self._flexible = flexible
        self._read_body = read_body
        self._body = b""

    def parse_header(self, buffer: Any) -> _ResponseHeader:
        frame = Reader(buffer.read(), flexible=self._flexible)
        correlation_id = frame.int32("the response header's correlation id")
        if self._flexible:
            frame.tags()  # none is defined for the response header
        self._body = bytes(frame.data[frame.pos:])
        return _ResponseHeader(correlation_id)

    def decode(self, buffer: Any) -> Any:
        rest = buffer.read()  # empty: parse_header read the frame
        return self._read_body(self._body + rest)


class _RequestHeader:
    __slots__ = ("request_api_key", "request_api_version", "correlation_id", "client_id", "_reader")

    def __init__(self, api_key: int, version: int, correlation_id: int, client_id: str | None, reader: _Reader) -> None:
        self.request_api_key, self.request_api_version = api_key, version
        self.correlation_id, self.client_id = correlation_id, client_id
        self._reader = reader

    def get_response_class(self) -> _Reader:
        return self._reader


class PlainRequest:
    """One request of `API_KEY`, sendable by kafka-python's connection; subclasses say how to write the body
    and read the answer at a version, and from which version both are flexible (KIP-482)."""

    API_KEY: int
    min_version: int
    max_version: int
    FLEXIBLE_FROM: int
    _min_version = None  # no limit beyond the class's own
    _max_version = None

    def __init__(self) -> None:
        self.API_VERSION: int | None = None  # set by the connection
        self.header: _RequestHeader | None = None

    @property
    def name(self) -> str:
        return type(self).__name__

    def expect_response(self) -> bool:
        return True

    def body(self, version: int) -> bytes:
        raise NotImplementedError

    def read(self, body: bytes, version: int) -> Any:
        raise NotImplementedError

    def with_header(self, correlation_id: int = 0, client_id: str | None = "kafka-python") -> None:
        version = self._version()
        reader = _Reader(version >= self.FLEXIBLE_FROM, lambda data: self.read(data, version))
        self.header = _RequestHeader(self.API_KEY, version, correlation_id, client_id, reader)

    def encode(self, framed: bool = False, header: bool = False) -> bytes:
        version = self._version()
        parts = []
        if header:
            assert self.header is not None, "with_header first"
            parts.append(_HEAD.pack(self.API_KEY, version, self.header.correlation_id))
            parts.append(_client_id(self.header.client_id))
            if version >= self.FLEXIBLE_FROM:
                parts.append(b"\x00")  # request header v2: no tagged fields
        parts.append(self.body(version))
        raw = b"".join(parts)
        return _INT32.pack(len(raw)) + raw if framed else raw

    def _version(self) -> int:
        if self.API_VERSION is None:
            raise ValueError(f"{self.name}: no version chosen")
        return self.API_VERSION

    def __repr__(self) -> str:
        return f"{self.name}(v{self.API_VERSION})"


def _client_id(client_id: str | None) -> bytes:
    """The header's client id: a nullable string with an int16 length, in every header version."""
    if client_id is None:
        return _INT16.pack(-1)
    raw = client_id.encode("utf-8")
    return _INT16.pack(len(raw)) + raw


class ListOffsetsRequest(PlainRequest):
    """ListOffsets of `topics` ([(topic, [(partition, current leader epoch, timestamp)])]) under
    `isolation_level`, v2+ (the first with an isolation level); the answer is a ListOffsetsAnswer."""

    API_KEY = 2
    min_version = 2
    max_version = 11
    FLEXIBLE_FROM = 6

    def __init__(self, topics: list[tuple[str, list[PartitionQuery]]], isolation_level: int) -> None:
        super().__init__()
        self.topics = topics
        self.isolation_level = isolation_level

    def body(self, version: int) -> bytes:
        return list_offsets_request_body(version, self.topics, self.isolation_level)

    def read(self, body: bytes, version: int) -> ListOffsetsAnswer:
        return read_list_offsets_response(body, version)


class MetadataRequest(PlainRequest):
    """Metadata of `topics` (None: every topic, internal ones included), v1+, no topic created; the answer is a
    MetadataAnswer."""

    API_KEY = METADATA_KEY
    min_version = 1
    max_version = 13
    FLEXIBLE_FROM = FLEXIBLE_FROM

    def __init__(self, topics: list[str] | None) -> None:
        super().__init__()
        self.topics = topics

    def body(self, version: int) -> bytes:
        return metadata_request_body(version, self.topics)

    def read(self, body: bytes, version: int) -> MetadataAnswer:
        return read_metadata_response(body, version)
