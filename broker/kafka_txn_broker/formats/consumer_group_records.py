"""The consumer groups' (KIP-848) records in `__consumer_offsets`, as Kafka 4.x writes them.

Keys: int16 record type, then the key's fields in the classic (non-flexible) encoding:
- 3 ConsumerGroupMetadata: GroupId
- 5 ConsumerGroupMemberMetadata: GroupId, MemberId
- 6 ConsumerGroupTargetAssignmentMetadata: GroupId
- 7 ConsumerGroupTargetAssignmentMember: GroupId, MemberId
- 8 ConsumerGroupCurrentMemberAssignment: GroupId, MemberId
Values: int16 version 0, then the flexible encoding (compact strings and arrays, a tagged-field section
after every structure):
- 3: Epoch int32; tagged 0 MetadataHash int64 (Kafka 4.1+)
- 5: InstanceId (nullable), RackId (nullable), ClientId, ClientHost, SubscribedTopicNames []string,
  SubscribedTopicRegex (nullable), RebalanceTimeoutMs int32, ServerAssignor (nullable); tagged 0
  ClassicMemberMetadata (members using the classic protocol; skipped here)
- 6: AssignmentEpoch int32
- 7: TopicPartitions []{TopicId uuid, Partitions []int32}
- 8: MemberEpoch int32, PreviousMemberEpoch int32, State int8, AssignedPartitions and
  PartitionsPendingRevocation, both []{TopicId, Partitions}
A null value (tombstone) deletes what the key names. Type 4 (ConsumerGroupPartitionMetadata, not written
since Kafka 4.1) and 16 (ConsumerGroupRegularExpression, a resolved regex) are read as "known, not kept":
the embedded coordinator resolves subscriptions from the live topic metadata. Pure: no I/O.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass, field

from kafka_txn_broker.formats.bytes import Reader, Writer

GROUP_METADATA = 3
PARTITION_METADATA = 4
MEMBER_METADATA = 5
TARGET_ASSIGNMENT_METADATA = 6
TARGET_ASSIGNMENT_MEMBER = 7
CURRENT_MEMBER_ASSIGNMENT = 8
REGULAR_EXPRESSION = 16
RECORD_TYPES = frozenset({GROUP_METADATA, PARTITION_METADATA, MEMBER_METADATA, TARGET_ASSIGNMENT_METADATA,
                          TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT, REGULAR_EXPRESSION})
_MEMBER_KEYED = frozenset({MEMBER_METADATA, TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT})
VALUE_VERSION = 0
METADATA_HASH_TAG = 0

Assignment = dict[uuid.UUID, frozenset[int]]


class RecordFormatError(ValueError):
    """A consumer group record this code cannot parse."""


@dataclass(frozen=True, slots=True)
class ConsumerGroupKey:
    record_type: int
    group_id: str
    member_id: str | None = None  # set for the member-keyed types (5, 7, 8)


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    epoch: int
    metadata_hash: int = 0


@dataclass(frozen=True, slots=True)
class MemberMetadataValue:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: int
    server_assignor: str | None


@dataclass(frozen=True, slots=True)
class CurrentAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)


# ---- keys ---------------------------------------------------------------------------------------------
def encode_key(record_type: int, group_id: str, member_id: str | None = None) -> bytes:
    if record_type not in RECORD_TYPES:
        raise RecordFormatError(f"{record_type} is not a consumer group record type")
    w = Writer().int16(record_type).string(group_id)
    if record_type in _MEMBER_KEYED:
        if member_id is None:
            raise RecordFormatError(f"record type {record_type} is keyed by a member id")
        w.string(member_id)
    return w.to_bytes()


def decode_key(data: bytes) -> ConsumerGroupKey | None:
    """The key of a consumer group record; None for the other record types of `__consumer_offsets`."""
    r = Reader(data, error=RecordFormatError)
    record_type = r.int16("key type")
    if record_type not in RECORD_TYPES:
        return None
    group_id = r.string("group id") or ""
    member_id = (r.string("member id") or "") if record_type in _MEMBER_KEYED else None
    return ConsumerGroupKey(record_type, group_id, member_id)


# ---- values -------------------------------------------------------------------------------------------
def _writer() -> Writer:
    return Writer(flexible=True).int16(VALUE_VERSION)


def _reader(data: bytes, what: str) -> Reader:
    if len(data) < 2:
        raise RecordFormatError(f"{what} value too short")
    (version,) = struct.unpack_from(">h", data)
    if version != VALUE_VERSION:
        raise RecordFormatError(f"unsupported {what} value version {version}")
    r = Reader(data, flexible=True, error=RecordFormatError)
    r.pos = 2
    return r


def encode_group_metadata(v: GroupMetadataValue) -> bytes:
    tags = [(METADATA_HASH_TAG, struct.pack(">q", v.metadata_hash))] if v.metadata_hash else []
    return _writer().int32(v.epoch).tags(tags).to_bytes()


def decode_group_metadata(data: bytes) -> GroupMetadataValue:
    r = _reader(data, "ConsumerGroupMetadata")
    epoch = r.int32("epoch")
    raw = r.tags().get(METADATA_HASH_TAG)
    return GroupMetadataValue(epoch, struct.unpack(">q", raw)[0] if raw is not None and len(raw) == 8 else 0)


def encode_member_metadata(v: MemberMetadataValue) -> bytes:
    w = _writer().string(v.instance_id).string(v.rack_id).string(v.client_id).string(v.client_host)
    w.array_length(len(v.subscribed_topic_names))
    for name in v.subscribed_topic_names:
        w.string(name)
    return w.string(v.subscribed_topic_regex).int32(v.rebalance_timeout_ms).string(v.server_assignor).tags().to_bytes()


def decode_member_metadata(data: bytes) -> MemberMetadataValue:
    r = _reader(data, "ConsumerGroupMemberMetadata")
    instance_id, rack_id = r.string("instance id"), r.string("rack id")
    client_id, client_host = r.string("client id") or "", r.string("client host") or ""
    names = tuple(r.string("subscribed topic") or "" for _ in range(max(r.array_length("subscribed topics"), 0)))
    regex = r.string("subscribed topic regex")
    rebalance_timeout = r.int32("rebalance timeout")
    assignor = r.string("server assignor")
    r.tags()  # ClassicMemberMetadata (tag 0) belongs to members using the classic protocol: not served here
    return MemberMetadataValue(instance_id, rack_id, client_id, client_host, names, regex, rebalance_timeout,
                               assignor)


def encode_assignment_epoch(epoch: int) -> bytes:
    return _writer().int32(epoch).tags().to_bytes()


def decode_assignment_epoch(data: bytes) -> int:
    r = _reader(data, "ConsumerGroupTargetAssignmentMetadata")
    epoch = r.int32("assignment epoch")
    r.tags()
    return epoch


def encode_target_assignment(assignment: Assignment) -> bytes:
    return _write_partitions(_writer(), assignment).tags().to_bytes()


def decode_target_assignment(data: bytes) -> Assignment:
    r = _reader(data, "ConsumerGroupTargetAssignmentMember")
    assignment = _read_partitions(r)
    r.tags()
    return assignment


def encode_current_assignment(v: CurrentAssignmentValue) -> bytes:
    w = _writer().int32(v.member_epoch).int32(v.previous_member_epoch).pack(">b", v.state)
    return _write_partitions(_write_partitions(w, v.assigned), v.pending_revocation).tags().to_bytes()


def decode_current_assignment(data: bytes) -> CurrentAssignmentValue:
    r = _reader(data, "ConsumerGroupCurrentMemberAssignment")
    epoch, previous = r.int32("member epoch"), r.int32("previous member epoch")
    state = r.take(">b", "state")
    assigned, pending = _read_partitions(r), _read_partitions(r)
    r.tags()
    return CurrentAssignmentValue(epoch, previous, state, assigned, pending)


# ---- []TopicPartitions --------------------------------------------------------------------------------
def _write_partitions(w: Writer, assignment: Assignment) -> Writer:
    w.array_length(len(assignment))
    for topic_id, partitions in sorted(assignment.items()):
        w.raw(topic_id.bytes).array_length(len(partitions))
        for p in sorted(partitions):
            w.int32(p)
        w.tags()
    return w


def _read_partitions(r: Reader) -> Assignment:
    out: Assignment = {}
    for _ in range(max(r.array_length("topic partitions"), 0)):
        topic_id = uuid.UUID(bytes=r.raw(16, "topic id"))
        partitions = frozenset(r.int32("partition") for _ in range(max(r.array_length("partitions"), 0)))
        r.tags()
        if partitions:
            out[topic_id] = partitions
    return out
