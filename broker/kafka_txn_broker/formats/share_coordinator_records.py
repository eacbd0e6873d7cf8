"""The `__share_group_state` record formats: ShareSnapshot and ShareUpdate (Kafka's share coordinator).

Key: int16 record type (0 ShareSnapshot, 1 ShareUpdate), then GroupId (int16-length string), TopicId
(16 bytes) and Partition (int32): one key per share-partition and type.
Value: int16 version 0, then the flexible encoding (compact arrays, tagged-field sections):
- ShareSnapshotValue: SnapshotEpoch int32, StateEpoch int32, LeaderEpoch int32, StartOffset int64,
  CreateTimestamp int64, WriteTimestamp int64, StateBatches[FirstOffset int64, LastOffset int64,
  DeliveryState int8 (0 available, 2 acknowledged, 4 archived), DeliveryCount int16];
- ShareUpdateValue: SnapshotEpoch int32, LeaderEpoch int32, StartOffset int64 (-1: unchanged),
  StateBatches.
Both carry DeliveryCompleteCount (KIP-1226) as tagged field 0 when it is known; unknown tags are skipped.
A snapshot is the whole state of the share-partition; an update holds only the batches one write changed,
applied on top of the snapshot with the same SnapshotEpoch. Pure: no I/O.
"""

from __future__ import annotations

import base64
import struct
import uuid
from dataclasses import dataclass, field
from typing import NamedTuple

SHARE_SNAPSHOT = 0
SHARE_UPDATE = 1
VALUE_VERSION = 0
DELIVERY_COMPLETE_COUNT_TAG = 0

_BATCH = struct.Struct(">qqbh")


class RecordFormatError(ValueError):
    """A `__share_group_state` record this code cannot parse."""


class StateBatch(NamedTuple):
    """Offsets first..last (inclusive) in one delivery state with one delivery count."""

    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class ShareStateKey:
    record_type: int
    group_id: str
    topic_id: uuid.UUID
    partition: int


@dataclass(frozen=True, slots=True)
class ShareSnapshotValue:
    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    create_timestamp: int
    write_timestamp: int
    state_batches: list[StateBatch] = field(default_factory=list)
    delivery_complete_count: int = -1


@dataclass(frozen=True, slots=True)
class ShareUpdateValue:
    snapshot_epoch: int
    leader_epoch: int
    start_offset: int
    state_batches: list[StateBatch] = field(default_factory=list)
    delivery_complete_count: int = -1


# ---- keys -------------------------------------------------------------------------------------------
def coordinator_key(group_id: str, topic_id: uuid.UUID, partition: int) -> str:
    """Kafka's SharePartitionKey.asCoordinatorKey(), whose partitionFor picks the `__share_group_state`
    partition: "group:topicId:partition", the topic id as Kafka's Uuid.toString() prints it (URL-safe
    base64 of the 16 bytes, without padding)."""
    topic = base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip("=")
    return f"{group_id}:{topic}:{partition}"


def encode_key(record_type: int, group_id: str, topic_id: uuid.UUID, partition: int) -> bytes:
    group = group_id.encode()
    return struct.pack(">hh", record_type, len(group)) + group + topic_id.bytes + struct.pack(">i", partition)


def decode_key(data: bytes) -> ShareStateKey:
    r = _Reader(data)
    record_type = r.unpack(">h")
    if record_type not in (SHARE_SNAPSHOT, SHARE_UPDATE):
        raise RecordFormatError(f"unknown __share_group_state key type {record_type}")
    n = r.unpack(">h")
    if n < 0:
        raise RecordFormatError("null group id in a share state key")
    group = r.take(n).decode()
    topic_id = uuid.UUID(bytes=r.take(16))
    return ShareStateKey(record_type, group, topic_id, r.unpack(">i"))


# ---- values -----------------------------------------------------------------------------------------
def encode_snapshot_value(v: ShareSnapshotValue) -> bytes:
    head = struct.pack(">hiiiqqq", VALUE_VERSION, v.snapshot_epoch, v.state_epoch, v.leader_epoch, v.start_offset,
                       v.create_timestamp, v.write_timestamp)
    return head + _encode_batches(v.state_batches) + _encode_tags(v.delivery_complete_count)


def encode_update_value(v: ShareUpdateValue) -> bytes:
    head = struct.pack(">hiiq", VALUE_VERSION, v.snapshot_epoch, v.leader_epoch, v.start_offset)
    return head + _encode_batches(v.state_batches) + _encode_tags(v.delivery_complete_count)


def decode_snapshot_value(data: bytes) -> ShareSnapshotValue:
    r = _value_reader(data)
    snapshot_epoch, state_epoch, leader_epoch = r.unpack(">i"), r.unpack(">i"), r.unpack(">i")
    start, created, written = r.unpack(">q"), r.unpack(">q"), r.unpack(">q")
    batches = _decode_batches(r)
    return ShareSnapshotValue(snapshot_epoch, state_epoch, leader_epoch, start, created, written, batches,
                              _decode_tags(r))


def decode_update_value(data: bytes) -> ShareUpdateValue:
    r = _value_reader(data)
    snapshot_epoch, leader_epoch, start = r.unpack(">i"), r.unpack(">i"), r.unpack(">q")
    batches = _decode_batches(r)
    return ShareUpdateValue(snapshot_epoch, leader_epoch, start, batches, _decode_tags(r))


def _encode_batches(batches: list[StateBatch]) -> bytes:
    out = bytearray(_uvarint(len(batches) + 1))
    for b in batches:
        out += _BATCH.pack(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
        out.append(0)  # the batch's empty tagged-field section
    return bytes(out)


def _decode_batches(r: _Reader) -> list[StateBatch]:
    n = r.uvarint() - 1
    if n < 0:
        raise RecordFormatError("null state batches")
    batches = []
    for _ in range(n):
        batches.append(StateBatch(*_BATCH.unpack(r.take(_BATCH.size))))
        r.skip_tags()
    return batches


def _encode_tags(delivery_complete_count: int) -> bytes:
    if delivery_complete_count < 0:
        return b"\x00"
    return b"\x01" + _uvarint(DELIVERY_COMPLETE_COUNT_TAG) + _uvarint(4) + struct.pack(">i", delivery_complete_count)


def _decode_tags(r: _Reader) -> int:
    count = -1
    for _ in range(r.uvarint()):
        tag, size = r.uvarint(), r.uvarint()
        raw = r.take(size)
        if tag == DELIVERY_COMPLETE_COUNT_TAG and size == 4:
            (count,) = struct.unpack(">i", raw)
    return count


def _value_reader(data: bytes) -> _Reader:
    r = _Reader(data)
    version = r.unpack(">h")
    if version != VALUE_VERSION:
        raise RecordFormatError(f"unsupported share state value version {version}")
    return r


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise RecordFormatError(f"share state record ends early (need {n} bytes at {self.pos})")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: str) -> int:
        s = struct.Struct(fmt)
        (value,) = s.unpack(self.take(s.size))
        return int(value)

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            b = self.take(1)[0]
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 63:
                raise RecordFormatError("varint too long")

    def skip_tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())
