"""Messages written and read as plain values, without kafka-python's classes: those with thousands of entries,
where building an object per entry and walking the schema to encode or decode it cost more than the message.

The broker's side: `encode_response` writes a `PlainResponse` as it writes any response (the same header);
`body(version)` gives its bytes at that version. A client's side: `list_offsets_request_body` and
`read_list_offsets_response` (kafka_txn_tools/connection/plain_request.py sends and reads them through
kafka-python's connections). Each one's bytes equal kafka-python's for the same content at every version
(tests/broker/formats/test_plain_responses.py), and tests/benchmarks/bench_codec.py times the two.

## ListOffsetsRequest (v1-v11; from Kafka's published field list)

    ReplicaId int32, IsolationLevel int8 (v2+)
    Topics[]: Name string; Partitions[]: PartitionIndex int32, CurrentLeaderEpoch int32 (v4+), Timestamp int64
    TimeoutMs int32 (v10+)

## ListOffsetsResponse (v1-v11)

    ThrottleTimeMs  int32  v2+
    Topics[]:
      Name        string
      Partitions[]:
        PartitionIndex int32, ErrorCode int16, Timestamp int64, Offset int64 (v1+), LeaderEpoch int32 (v4+)

Flexible from v6 (compact arrays and strings: unsigned varint of length + 1; an empty tagged-field section
after each struct and at the end). A find-hanging first pass asks every leader for the latest offset of all its
partitions: a leader's answer for 6,700 of them took 11.6 ms to build and encode through kafka-python's
classes, 1.1 ms from plain values.

Not thread-safe by design: an answer is built and written by one request's handling.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from kafka_txn_broker.formats.bytes import decode_uvarint, encode_uvarint

LIST_OFFSETS_KEY = 2
_FLEXIBLE_FROM = 6
_EPOCH_FROM = 4
_THROTTLE_FROM = 2

_INT32 = struct.Struct(">i")
_INT16 = struct.Struct(">h")
_INT8 = struct.Struct(">b")
_QUERY_V1 = struct.Struct(">iq")  # partition index, timestamp
_QUERY_V4 = struct.Struct(">iiq")  # partition index, current leader epoch, timestamp
_QUERY_FLEXIBLE = struct.Struct(">iiqB")  # ... and an empty tagged-field section
_ROW_V1 = struct.Struct(">ihqq")  # partition index, error code, timestamp, offset
_ROW_V4 = struct.Struct(">ihqqi")  # ... and the leader epoch
_ROW_FLEXIBLE = struct.Struct(">ihqqiB")  # ... and an empty tagged-field section

# One partition's answer: (partition index, error code, timestamp, offset, leader epoch).
PartitionOffset = tuple[int, int, int, int, int]


class PlainResponse:
    """A response `encode_response` writes through `body` instead of kafka-python's encoder."""

    API_KEY: int

    def flexible(self, version: int) -> bool:
        raise NotImplementedError

    def body(self, version: int) -> bytes:
        raise NotImplementedError


@dataclass
class ListOffsetsAnswer(PlainResponse):
    """A ListOffsetsResponse: per topic (in the request's order), its partitions' answers."""

    topics: list[tuple[str, list[PartitionOffset]]] = field(default_factory=list)
    throttle_time_ms: int = 0
    API_KEY = LIST_OFFSETS_KEY

    def flexible(self, version: int) -> bool:
        return version >= _FLEXIBLE_FROM

    def body(self, version: int) -> bytes:
        flexible = self.flexible(version)
        out = bytearray()
        if version >= _THROTTLE_FROM:
            out += _INT32.pack(self.throttle_time_ms)
        _length(out, len(self.topics), flexible)
        for name, partitions in self.topics:
            _string(out, name, flexible)
            _length(out, len(partitions), flexible)
            if flexible:
                pack = _ROW_FLEXIBLE.pack
                out += b"".join([pack(*p, 0) for p in partitions])
                out.append(0)  # the topic's tagged fields
            elif version >= _EPOCH_FROM:
                pack = _ROW_V4.pack
                out += b"".join([pack(*p) for p in partitions])
            else:
                pack = _ROW_V1.pack
                out += b"".join([pack(index, error, ts, offset) for index, error, ts, offset, _ in partitions])
        if flexible:
            out.append(0)  # the response's tagged fields
        return bytes(out)


def _length(out: bytearray, n: int, flexible: bool) -> None:
    if flexible:
        out += encode_uvarint(n + 1)
    else:
        out += _INT32.pack(n)


def _string(out: bytearray, text: str, flexible: bool) -> None:
    raw = text.encode("utf-8")
    if flexible:
        out += encode_uvarint(len(raw) + 1)
    else:
        out += _INT16.pack(len(raw))
    out += raw


# One partition asked about: (partition index, current leader epoch, timestamp).
PartitionQuery = tuple[int, int, int]


def list_offsets_request_body(version: int, topics: list[tuple[str, list[PartitionQuery]]], isolation_level: int,
                              replica_id: int = -1, timeout_ms: int = 0) -> bytes:
    """A ListOffsetsRequest's body (after its header) at `version`, as a consumer asks (replica id -1)."""
    flexible = version >= _FLEXIBLE_FROM
    out = bytearray(_INT32.pack(replica_id))
    if version >= _THROTTLE_FROM:  # the isolation level came with v2 as well
        out += _INT8.pack(isolation_level)
    _length(out, len(topics), flexible)
    for name, partitions in topics:
        _string(out, name, flexible)
        _length(out, len(partitions), flexible)
        if flexible:
            pack = _QUERY_FLEXIBLE.pack
            out += b"".join([pack(index, epoch, ts, 0) for index, epoch, ts in partitions])
            out.append(0)
        elif version >= _EPOCH_FROM:
            pack = _QUERY_V4.pack
            out += b"".join([pack(*p) for p in partitions])
        else:
            pack = _QUERY_V1.pack
            out += b"".join([pack(index, ts) for index, _, ts in partitions])
    if version >= 10:
        out += _INT32.pack(timeout_ms)
    if flexible:
        out.append(0)
    return bytes(out)


def read_list_offsets_response(data: bytes, version: int) -> ListOffsetsAnswer:
    """A ListOffsetsResponse's body (after its header) at `version`; the leader epoch is -1 before v4. Tagged
    fields are skipped (none is defined). ValueError (or struct.error) on bytes that do not read as one."""
    try:
        return _read_list_offsets(data, version)
    except IndexError:  # a read past the end (a cut-off varint raises CorruptRecordError, a ValueError)
        raise ValueError("ListOffsets response ends too soon") from None


def _read_list_offsets(data: bytes, version: int) -> ListOffsetsAnswer:
    flexible = version >= _FLEXIBLE_FROM
    view = memoryview(data)
    pos = 0
    answer = ListOffsetsAnswer()
    if version >= _THROTTLE_FROM:
        (answer.throttle_time_ms,) = _INT32.unpack_from(view, pos)
        pos += 4
    count, pos = _read_length(view, pos, flexible)
    for _ in range(count):
        name, pos = _read_string(view, pos, flexible)
        n, pos = _read_length(view, pos, flexible)
        if flexible:
            rows = []
            row = _ROW_V4.unpack_from
            for _ in range(n):
                rows.append(row(view, pos))
                pos = _skip_tags(view, pos + _ROW_V4.size)
        elif version >= _EPOCH_FROM:
            rows = list(_ROW_V4.iter_unpack(view[pos:pos + n * _ROW_V4.size]))
            pos += n * _ROW_V4.size
        else:
            rows = [(*r, -1) for r in _ROW_V1.iter_unpack(view[pos:pos + n * _ROW_V1.size])]
            pos += n * _ROW_V1.size
        if len(rows) != n:
            raise ValueError("ListOffsets response ends inside a partition")
        answer.topics.append((name, rows))
        if flexible:
            pos = _skip_tags(view, pos)
    if flexible:
        _skip_tags(view, pos)  # the response's own
    return answer


def _read_length(view: memoryview, pos: int, flexible: bool) -> tuple[int, int]:
    if flexible:
        n, pos = decode_uvarint(view, pos)
        n -= 1
    else:
        (n,) = _INT32.unpack_from(view, pos)
        pos += 4
    if n < 0:
        raise ValueError("a null array where the schema allows none")
    return n, pos


def _read_string(view: memoryview, pos: int, flexible: bool) -> tuple[str, int]:
    n, pos = _read_length(view, pos, flexible) if flexible else (_INT16.unpack_from(view, pos)[0], pos + 2)
    if n < 0 or pos + n > len(view):
        raise ValueError("a string past the end, or null where the schema allows none")
    return str(view[pos:pos + n], "utf-8"), pos + n


def _skip_tags(view: memoryview, pos: int) -> int:
    count, pos = decode_uvarint(view, pos)
    for _ in range(count):
        _tag, pos = decode_uvarint(view, pos)
        size, pos = decode_uvarint(view, pos)
        pos += size
    if pos > len(view):
        raise ValueError("tagged fields past the end")
    return pos
