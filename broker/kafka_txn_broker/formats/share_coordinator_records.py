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

from kafka_txn_broker.formats.bytes import Reader, Writer

SHARE_SNAPSHOT = 0
SHARE_UPDATE = 1
VALUE_VERSION = 0
DELIVERY_COMPLETE_COUNT_TAG = 0

_BATCH = ">qqbh"


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
    return Writer().int16(record_type).string(group_id).raw(topic_id.bytes).int32(partition).to_bytes()


def decode_key(data: bytes) -> ShareStateKey:
    r = Reader(data, error=RecordFormatError)
    record_type = r.int16("record type")
    if record_type not in (SHARE_SNAPSHOT, SHARE_UPDATE):
        raise RecordFormatError(f"unknown __share_group_state key type {record_type}")
    group = r.string("GroupId")
    if group is None:
        raise RecordFormatError("null group id in a share state key")
    topic_id = uuid.UUID(bytes=r.raw(16, "TopicId"))
    return ShareStateKey(record_type, group, topic_id, r.int32("Partition"))


# ---- values -----------------------------------------------------------------------------------------
def encode_snapshot_value(v: ShareSnapshotValue) -> bytes:
    w = Writer(flexible=True).int16(VALUE_VERSION).int32(v.snapshot_epoch).int32(v.state_epoch)
    w.int32(v.leader_epoch).int64(v.start_offset).int64(v.create_timestamp).int64(v.write_timestamp)
    return _write_batches_and_tags(w, v.state_batches, v.delivery_complete_count)


def encode_update_value(v: ShareUpdateValue) -> bytes:
    w = Writer(flexible=True).int16(VALUE_VERSION).int32(v.snapshot_epoch).int32(v.leader_epoch)
    w.int64(v.start_offset)
    return _write_batches_and_tags(w, v.state_batches, v.delivery_complete_count)


def decode_snapshot_value(data: bytes) -> ShareSnapshotValue:
    r = _value_reader(data)
    snapshot_epoch, state_epoch = r.int32("SnapshotEpoch"), r.int32("StateEpoch")
    leader_epoch, start = r.int32("LeaderEpoch"), r.int64("StartOffset")
    created, written = r.int64("CreateTimestamp"), r.int64("WriteTimestamp")
    batches = _read_batches(r)
    return ShareSnapshotValue(snapshot_epoch, state_epoch, leader_epoch, start, created, written, batches,
                              _delivery_complete_count(r))


def decode_update_value(data: bytes) -> ShareUpdateValue:
    r = _value_reader(data)
    snapshot_epoch, leader_epoch, start = r.int32("SnapshotEpoch"), r.int32("LeaderEpoch"), r.int64("StartOffset")
    batches = _read_batches(r)
    return ShareUpdateValue(snapshot_epoch, leader_epoch, start, batches, _delivery_complete_count(r))


def _write_batches_and_tags(w: Writer, batches: list[StateBatch], delivery_complete_count: int) -> bytes:
    w.array_length(len(batches))
    for b in batches:
        w.pack(_BATCH, b.first_offset, b.last_offset, b.delivery_state, b.delivery_count).tags()
    known = delivery_complete_count >= 0
    return w.tags([(DELIVERY_COMPLETE_COUNT_TAG, struct.pack(">i", delivery_complete_count))] if known else []
                  ).to_bytes()


def _read_batches(r: Reader) -> list[StateBatch]:
    n = r.array_length("StateBatches")
    if n < 0:
        raise RecordFormatError("null state batches")
    batches = []
    for _ in range(n):
        batches.append(StateBatch(r.int64("FirstOffset"), r.int64("LastOffset"), r.take(">b", "DeliveryState"),
                                  r.int16("DeliveryCount")))
        r.tags()  # a batch's tagged fields: none known
    return batches


def _delivery_complete_count(r: Reader) -> int:
    raw = r.tags().get(DELIVERY_COMPLETE_COUNT_TAG)
    return struct.unpack(">i", raw)[0] if raw is not None and len(raw) == 4 else -1


def _value_reader(data: bytes) -> Reader:
    r = Reader(data, flexible=True, error=RecordFormatError)
    version = r.int16("version")
    if version != VALUE_VERSION:
        raise RecordFormatError(f"unsupported share state value version {version}")
    return r
