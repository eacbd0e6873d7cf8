"""The `__consumer_offsets` record formats: offset commits and classic group metadata.

Keys start with an int16 record type (0/1 offset commit, 2 group metadata; newer coordinator record
types are skipped on load). Values carry their own int16 version. We write OffsetCommitValue v3 and
GroupMetadataValue v3 (the last non-flexible versions, readable by every Kafka since 2.x and by
`kafka-dump-log.sh --offsets-decoder`), and read v0-v4. A null value is a tombstone.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

OFFSET_COMMIT_KEY_LEGACY = 0
OFFSET_COMMIT_KEY = 1
GROUP_METADATA_KEY = 2

OFFSET_VALUE_VERSION = 3
GROUP_VALUE_VERSION = 3
FIRST_FLEXIBLE_VERSION = 4


class RecordFormatError(ValueError):
    """A `__consumer_offsets` record this code cannot parse."""


# ---- primitive writer / reader ----------------------------------------------------------------


class _Writer:
    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def int16(self, v: int) -> _Writer:
        self._parts.append(struct.pack(">h", v))
        return self

    def int32(self, v: int) -> _Writer:
        self._parts.append(struct.pack(">i", v))
        return self

    def int64(self, v: int) -> _Writer:
        self._parts.append(struct.pack(">q", v))
        return self

    def string(self, v: str | None) -> _Writer:
        if v is None:
            return self.int16(-1)
        raw = v.encode()
        self.int16(len(raw))
        self._parts.append(raw)
        return self

    def blob(self, v: bytes) -> _Writer:
        self.int32(len(v))
        self._parts.append(bytes(v))
        return self

    def bytes(self) -> bytes:
        return b"".join(self._parts)


class _Reader:
    """Reads classic (int16/int32 lengths) or flexible (unsigned varint, n+1) encodings."""

    def __init__(self, data: bytes, flexible: bool = False) -> None:
        self.data = data
        self.pos = 0
        self.flexible = flexible

    def _take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise RecordFormatError(f"record truncated at byte {self.pos}")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def _unpack(self, fmt: str, size: int) -> int:
        value: int = struct.unpack(fmt, self._take(size))[0]
        return value

    def int16(self) -> int:
        return self._unpack(">h", 2)

    def int32(self) -> int:
        return self._unpack(">i", 4)

    def int64(self) -> int:
        return self._unpack(">q", 8)

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            b = self._take(1)[0]
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 63:
                raise RecordFormatError("varint too long")

    def _length(self, classic: int) -> int:
        return self.uvarint() - 1 if self.flexible else classic

    def string(self) -> str | None:
        n = self._length(self.int16() if not self.flexible else 0)
        return None if n < 0 else self._take(n).decode("utf-8", "replace")

    def blob(self) -> bytes:
        n = self._length(self.int32() if not self.flexible else 0)
        return b"" if n < 0 else self._take(n)

    def array_len(self) -> int:
        return self._length(self.int32() if not self.flexible else 0)

    def skip_tags(self) -> None:
        if not self.flexible:
            return
        for _ in range(self.uvarint()):
            self.uvarint()
            self._take(self.uvarint())


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
    return _Writer().int16(OFFSET_COMMIT_KEY).string(group).string(topic).int32(partition).bytes()


def encode_group_key(group: str) -> bytes:
    return _Writer().int16(GROUP_METADATA_KEY).string(group).bytes()


def decode_key(data: bytes) -> OffsetKey | GroupKey | None:
    """The key of a record, or None for record types a classic coordinator does not use."""
    r = _Reader(data)
    kind = r.int16()
    if kind in (OFFSET_COMMIT_KEY_LEGACY, OFFSET_COMMIT_KEY):
        group, topic = r.string() or "", r.string() or ""
        return OffsetKey(group, topic, r.int32())
    if kind == GROUP_METADATA_KEY:
        return GroupKey(r.string() or "")
    return None


# ---- offset commit value ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OffsetValue:
    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = -1
    expire_timestamp: int = -1


def encode_offset_value(v: OffsetValue) -> bytes:
    w = _Writer().int16(OFFSET_VALUE_VERSION).int64(v.offset).int32(v.leader_epoch)
    return w.string(v.metadata).int64(v.commit_timestamp).bytes()


def decode_offset_value(data: bytes) -> OffsetValue:
    version = struct.unpack_from(">h", data)[0] if len(data) >= 2 else -1
    if not 0 <= version <= FIRST_FLEXIBLE_VERSION:
        raise RecordFormatError(f"unknown OffsetCommitValue version {version}")
    r = _Reader(data, flexible=version >= FIRST_FLEXIBLE_VERSION)
    r.int16()
    offset = r.int64()
    epoch = r.int32() if version >= 3 else -1
    metadata = r.string() or ""
    commit_ts = r.int64()
    expire_ts = r.int64() if version == 1 else -1
    r.skip_tags()
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
    w = _Writer().int16(GROUP_VALUE_VERSION).string(v.protocol_type).int32(v.generation)
    w.string(v.protocol).string(v.leader).int64(v.current_state_timestamp).int32(len(v.members))
    for m in v.members:
        w.string(m.member_id).string(m.group_instance_id).string(m.client_id).string(m.client_host)
        w.int32(m.rebalance_timeout).int32(m.session_timeout).blob(m.subscription).blob(m.assignment)
    return w.bytes()


def _decode_member(r: _Reader, version: int) -> MemberValue:
    member_id = r.string() or ""
    instance = r.string() if version >= 3 else None
    client_id, client_host = r.string() or "", r.string() or ""
    rebalance = r.int32() if version >= 1 else -1
    session = r.int32()
    subscription, assignment = r.blob(), r.blob()
    r.skip_tags()
    if rebalance < 0:
        rebalance = session  # v0 had a single timeout for both
    return MemberValue(member_id, instance, client_id, client_host, rebalance, session, subscription, assignment)


def decode_group_value(data: bytes) -> GroupValue:
    version = struct.unpack_from(">h", data)[0] if len(data) >= 2 else -1
    if not 0 <= version <= FIRST_FLEXIBLE_VERSION:
        raise RecordFormatError(f"unknown GroupMetadataValue version {version}")
    r = _Reader(data, flexible=version >= FIRST_FLEXIBLE_VERSION)
    r.int16()
    protocol_type = r.string() or ""
    generation = r.int32()
    protocol, leader = r.string(), r.string()
    state_ts = r.int64() if version >= 2 else -1
    members = [_decode_member(r, version) for _ in range(max(r.array_len(), 0))]
    r.skip_tags()
    return GroupValue(protocol_type, generation, protocol, leader, state_ts, members)
