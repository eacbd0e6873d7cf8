"""The `__consumer_offsets` record formats: offset commits and classic group metadata.

Keys start with an int16 record type (0/1 offset commit, 2 group metadata; newer coordinator record
types are skipped on load). Values carry their own int16 version. We write OffsetCommitValue v3 and
GroupMetadataValue v3 (the last non-flexible versions, readable by every Kafka since 2.x and by
`kafka-dump-log.sh --offsets-decoder`), and read v0-v4. A null value is a tombstone.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from kafka_txn_broker.formats.bytes import Reader, Writer

OFFSET_COMMIT_KEY_LEGACY = 0
OFFSET_COMMIT_KEY = 1
GROUP_METADATA_KEY = 2

OFFSET_VALUE_VERSION = 3
GROUP_VALUE_VERSION = 3
FIRST_FLEXIBLE_VERSION = 4


class RecordFormatError(ValueError):
    """A `__consumer_offsets` record this code cannot parse."""


# ---- keys -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OffsetKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupKey:
    group: str


def encode_offset_key(group: str, topic: str, partition: int) -> bytes:
    return Writer().int16(OFFSET_COMMIT_KEY).string(group).string(topic).int32(partition).to_bytes()


def encode_group_key(group: str) -> bytes:
    return Writer().int16(GROUP_METADATA_KEY).string(group).to_bytes()


def decode_key(data: bytes) -> OffsetKey | GroupKey | None:
    """The key of a record, or None for record types a classic coordinator does not use."""
    r = Reader(data, error=RecordFormatError)
    kind = r.int16("key type")
    if kind in (OFFSET_COMMIT_KEY_LEGACY, OFFSET_COMMIT_KEY):
        group, topic = r.string("group") or "", r.string("topic") or ""
        return OffsetKey(group, topic, r.int32("partition"))
    if kind == GROUP_METADATA_KEY:
        return GroupKey(r.string("group") or "")
    return None


def _value_reader(data: bytes, version: int) -> Reader:
    """A reader positioned after the value's version field."""
    r = Reader(data, flexible=version >= FIRST_FLEXIBLE_VERSION, error=RecordFormatError)
    r.pos = 2
    return r


# ---- offset commit value ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OffsetValue:
    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = -1
    expire_timestamp: int = -1


def encode_offset_value(v: OffsetValue) -> bytes:
    w = Writer().int16(OFFSET_VALUE_VERSION).int64(v.offset).int32(v.leader_epoch)
    return w.string(v.metadata).int64(v.commit_timestamp).to_bytes()


def decode_offset_value(data: bytes) -> OffsetValue:
    version = struct.unpack_from(">h", data)[0] if len(data) >= 2 else -1
    if not 0 <= version <= FIRST_FLEXIBLE_VERSION:
        raise RecordFormatError(f"unknown OffsetCommitValue version {version}")
    r = _value_reader(data, version)
    offset = r.int64("offset")
    epoch = r.int32("leader epoch") if version >= 3 else -1
    metadata = r.string("metadata") or ""
    commit_ts = r.int64("commit timestamp")
    expire_ts = r.int64("expire timestamp") if version == 1 else -1
    r.tags()
    return OffsetValue(offset, epoch, metadata, commit_ts, expire_ts)


# ---- group metadata value ---------------------------------------------------------------------


@dataclass(slots=True)
class MemberValue:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


@dataclass(slots=True)
class GroupValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int = -1
    members: list[MemberValue] = field(default_factory=list)


def encode_group_value(v: GroupValue) -> bytes:
    w = Writer().int16(GROUP_VALUE_VERSION).string(v.protocol_type).int32(v.generation)
    w.string(v.protocol).string(v.leader).int64(v.current_state_timestamp).array_length(len(v.members))
    for m in v.members:
        w.string(m.member_id).string(m.group_instance_id).string(m.client_id).string(m.client_host)
        w.int32(m.rebalance_timeout).int32(m.session_timeout).blob(m.subscription).blob(m.assignment)
    return w.to_bytes()


def _decode_member(r: Reader, version: int) -> MemberValue:
    member_id = r.string("member id") or ""
    instance = r.string("group instance id") if version >= 3 else None
    client_id, client_host = r.string("client id") or "", r.string("client host") or ""
    rebalance = r.int32("rebalance timeout") if version >= 1 else -1
    session = r.int32("session timeout")
    subscription, assignment = r.blob("subscription") or b"", r.blob("assignment") or b""
    r.tags()
    if rebalance < 0:
        rebalance = session  # v0 had a single timeout for both
    return MemberValue(member_id, instance, client_id, client_host, rebalance, session, subscription, assignment)


def decode_group_value(data: bytes) -> GroupValue:
    version = struct.unpack_from(">h", data)[0] if len(data) >= 2 else -1
    if not 0 <= version <= FIRST_FLEXIBLE_VERSION:
        raise RecordFormatError(f"unknown GroupMetadataValue version {version}")
    r = _value_reader(data, version)
    protocol_type = r.string("protocol type") or ""
    generation = r.int32("generation")
    protocol, leader = r.string("protocol"), r.string("leader")
    state_ts = r.int64("state timestamp") if version >= 2 else -1
    members = [_decode_member(r, version) for _ in range(max(r.array_length("members"), 0))]
    r.tags()
    return GroupValue(protocol_type, generation, protocol, leader, state_ts, members)
