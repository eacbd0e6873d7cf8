"""DeleteGroups and OffsetDelete against one shard: tombstones first, then the in-memory state.

A deleted group or offset is written as a null-valued record under its key, so a replay (new leader,
restart) forgets it too, and log compaction can drop the older records.
"""

from __future__ import annotations

import struct

from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.errors import (
    BrokerResponseError,
    GroupIdNotFoundError,
    GroupSubscribedToTopicError,
    NonEmptyGroupError,
)
from kafka_txn_broker.formats.group_records import encode_group_key, encode_offset_key
from kafka_txn_broker.group import consumer_records
from kafka_txn_broker.group.append_errors import append_error_code
from kafka_txn_broker.group.classic_group import ClassicGroup, GroupState
from kafka_txn_broker.group.offset_store import TopicPartition
from kafka_txn_broker.group.shard import GroupShard

CONSUMER_PROTOCOL = "consumer"


def delete_consumer_group(shard: GroupShard, group_id: str) -> int:
    """Delete an empty KIP-848 consumer group with its offsets (tombstones for both in one batch)."""
    group = shard.consumer_groups[group_id]
    if not group.is_empty:
        return int(NonEmptyGroupError.errno)
    offsets = sorted(shard.offsets.of_group(group_id))
    records: list[tuple[bytes, bytes | None]] = [(encode_offset_key(group_id, t, p), None) for t, p in offsets]
    try:
        shard.append_records(records + consumer_records.deletion(group_id))
    except Exception as exc:
        return append_error_code(exc)
    for tp in offsets:
        shard.offsets.delete(group_id, tp)
    group.dead = True
    del shard.consumer_groups[group_id]
    return E.NONE


def _existing(shard: GroupShard, group_id: str) -> ClassicGroup:
    group = shard.groups.get(group_id)
    if group is None or group.is_in(GroupState.DEAD):
        raise GroupIdNotFoundError(f"group {group_id!r} does not exist")
    return group


def delete_group(shard: GroupShard, group_id: str) -> int:
    """Delete an Empty group with all its committed offsets; the error code for this group."""
    try:
        group = _existing(shard, group_id)
        if not group.is_in(GroupState.EMPTY):
            raise NonEmptyGroupError(f"group {group_id!r} still has members")
    except BrokerResponseError as exc:
        return int(exc.errno)
    offsets = sorted(shard.offsets.of_group(group_id))
    records: list[tuple[bytes, bytes | None]] = [(encode_offset_key(group_id, t, p), None) for t, p in offsets]
    records.append((encode_group_key(group_id), None))
    try:
        shard.append_records(records)
    except Exception as exc:
        return append_error_code(exc)
    for tp in offsets:
        shard.offsets.delete(group_id, tp)
    group.transition(GroupState.DEAD, shard.now())
    del shard.groups[group_id]
    return E.NONE


def subscribed_topics(group: ClassicGroup) -> set[str] | None:
    """Topics the members subscribe to, from their consumer-protocol metadata; None if unknowable."""
    if group.protocol_type != CONSUMER_PROTOCOL or group.protocol_name is None:
        return None
    topics: set[str] = set()
    try:
        for m in group.members.values():
            topics.update(_subscription_topics(m.metadata_for(group.protocol_name)))
    except (KeyError, struct.error, UnicodeDecodeError):
        return None
    return topics


def _subscription_topics(meta: bytes) -> list[str]:
    # ConsumerProtocolSubscription (every version): int16 version, then int32 count of int16-length strings.
    (count,) = struct.unpack_from(">i", meta, 2)
    pos, out = 6, []
    for _ in range(max(count, 0)):
        (n,) = struct.unpack_from(">h", meta, pos)
        out.append(meta[pos + 2:pos + 2 + n].decode())
        pos += 2 + n
    return out


def delete_offsets(shard: GroupShard, group_id: str, partitions: list[TopicPartition]
                   ) -> tuple[int, dict[TopicPartition, int]]:
    """(group error, per-partition errors). Offsets of topics an active member consumes stay."""
    consumer_group = shard.consumer_groups.get(group_id)
    try:
        group = _existing(shard, group_id) if consumer_group is None else None
    except BrokerResponseError as exc:
        return int(exc.errno), {}
    if consumer_group is not None:
        in_use: set[str] | None = consumer_group.subscribed_topic_names()
    else:
        assert group is not None
        in_use = subscribed_topics(group) if group.members else set()
    errors: dict[TopicPartition, int] = {}
    deletable: list[TopicPartition] = []
    for tp in partitions:
        if in_use is None or tp[0] in in_use:
            errors[tp] = int(GroupSubscribedToTopicError.errno)
        else:
            errors[tp] = E.NONE
            if shard.offsets.get(group_id, tp) is not None:
                deletable.append(tp)
    if deletable:
        try:
            shard.append_records([(encode_offset_key(group_id, t, p), None) for t, p in deletable])
        except Exception as exc:
            return append_error_code(exc), {}
        for tp in deletable:
            shard.offsets.delete(group_id, tp)
    return E.NONE, errors
