"""Responses written from plain values, without kafka-python's classes: the ones a broker sends with thousands of
entries, where building an object per entry and walking the schema to encode it cost more than the answer itself.

`encode_response` writes a `PlainResponse` as it writes any response (the same header); `body(version)` gives
its bytes at that version. Each one's bytes equal kafka-python's for the same content at every version the broker
serves (tests/broker/formats/test_plain_responses.py), and tests/benchmarks/bench_codec.py times the two.

## ListOffsetsResponse (v1-v11; written from Kafka's published field list)

    ThrottleTimeMs  int32  v2+
    Topics[]:
      Name        string
      Partitions[]:
        PartitionIndex int32, ErrorCode int16, Timestamp int64, Offset int64 (v1+), LeaderEpoch int32 (v4+)

Flexible from v6 (compact arrays and strings: unsigned varint of length + 1; an empty tagged-field section
after each struct and at the end). A find-hanging first pass asks every leader for the latest offset of all its
partitions: 20,000 of them took the broker about 3 us each through kafka-python's classes, a third of it to
encode.

Not thread-safe by design: an answer is built and written by one request's handling.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

LIST_OFFSETS_KEY = 2
_FLEXIBLE_FROM = 6
_EPOCH_FROM = 4
_THROTTLE_FROM = 2

_INT32 = struct.Struct(">i")
_INT16 = struct.Struct(">h")
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
        _varint(out, n + 1)
    else:
        out += _INT32.pack(n)


def _string(out: bytearray, text: str, flexible: bool) -> None:
    raw = text.encode("utf-8")
    if flexible:
        _varint(out, len(raw) + 1)
    else:
        out += _INT16.pack(len(raw))
    out += raw


def _varint(out: bytearray, value: int) -> None:
    """Kafka's unsigned varint: 7 bits a byte, low first, the high bit set on all but the last."""
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
