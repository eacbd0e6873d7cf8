"""OffsetCommit, TxnOffsetCommit and OffsetFetch against one shard: who may commit, what is visible."""

from __future__ import annotations

from dataclasses import dataclass

from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.errors import (
    BrokerResponseError,
    CoordinatorNotAvailableError,
    FencedMemberEpochError,
    GroupIdNotFoundError,
    IllegalGenerationError,
    OffsetMetadataTooLargeError,
    RebalanceInProgressError,
    StaleMemberEpochError,
    UnknownMemberIdError,
    UnstableOffsetCommitError,
    UnsupportedVersionError,
)
from kafka_txn_broker.formats.group_records import OffsetValue
from kafka_txn_broker.group.append_errors import append_error_code
from kafka_txn_broker.group.classic_group import ClassicGroup, GroupState
from kafka_txn_broker.group.consumer_group import ConsumerGroup
from kafka_txn_broker.group.offset_store import TopicPartition
from kafka_txn_broker.group.shard import GroupShard

# Kafka's offset.metadata.max.bytes default.
OFFSET_METADATA_MAX_BYTES = 4096


@dataclass(frozen=True, slots=True)
class CommitRequest:
    group_id: str
    generation: int
    member_id: str
    group_instance_id: str | None
    offsets: dict[TopicPartition, OffsetValue]
    api_version: int = 0
    # TxnOffsetCommit: (producer id, producer epoch)
    producer: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class FetchedOffset:
    offset: int = -1
    leader_epoch: int = -1
    metadata: str = ""
    error: int = E.NONE


def _group_for_commit(shard: GroupShard, req: CommitRequest) -> ClassicGroup:
    group = shard.groups.get(req.group_id)
    if group is not None:
        return group
    if req.generation < 0:
        # No group management: a "simple" group exists only to own these offsets.
        return shard.get_or_create(req.group_id)
    if req.producer is None and req.api_version >= 9:
        raise GroupIdNotFoundError(f"group {req.group_id!r} does not exist")
    raise IllegalGenerationError(f"group {req.group_id!r} does not exist (generation {req.generation})")


def validate_consumer_group_commit(group: ConsumerGroup, req: CommitRequest) -> None:
    """Kafka's ConsumerGroup.validateOffsetCommit: the generation field carries the member epoch."""
    if req.generation < 0 and group.is_empty:
        return  # the admin client, or a consumer without group management
    transactional = req.producer is not None
    if transactional and req.generation < 0 and not req.member_id and req.group_instance_id is None:
        return  # TxnOffsetCommit before v3 names no member
    member = group.members.get(req.member_id)
    if member is None:
        raise UnknownMemberIdError(f"Member {req.member_id} is not a member of group {group.group_id}.")
    if not transactional and req.api_version < 9:
        raise UnsupportedVersionError("OffsetCommit version 9 or above must be used by members using the "
                                      "consumer group protocol")
    validate_member_epoch(req.generation, member.member_epoch)


def validate_member_epoch(received: int, expected: int) -> None:
    if received > expected:
        raise FencedMemberEpochError(f"The member epoch {received} is greater than the member's {expected}.")
    if received < expected:
        raise StaleMemberEpochError(f"The member epoch {received} is smaller than the member's {expected}.")


def validate_commit(shard: GroupShard, req: CommitRequest) -> ClassicGroup | ConsumerGroup:
    """The group if this member may commit now, else the Kafka error (same rules for every partition)."""
    consumer_group = shard.consumer_groups.get(req.group_id)
    if consumer_group is not None:
        validate_consumer_group_commit(consumer_group, req)
        return consumer_group
    group = _group_for_commit(shard, req)
    transactional = req.producer is not None
    if group.is_in(GroupState.DEAD):
        raise CoordinatorNotAvailableError(f"group {req.group_id!r} is being unloaded")
    if req.generation >= 0 or req.member_id or req.group_instance_id is not None:
        member = shard.membership.validate_member(group, req.member_id, req.group_instance_id)
        if req.generation != group.generation:
            raise IllegalGenerationError(f"generation {req.generation} is not the group's {group.generation}")
        member.last_heartbeat_ms = shard.now()  # a commit proves the member is alive
    elif not transactional and not group.is_in(GroupState.EMPTY):
        raise UnknownMemberIdError(f"group {req.group_id!r} has members: a commit needs a member id")
    if not transactional and group.is_in(GroupState.COMPLETING_REBALANCE):
        raise RebalanceInProgressError(f"group {req.group_id!r} is waiting for its leader's assignment")
    return group


def commit(shard: GroupShard, req: CommitRequest) -> dict[TopicPartition, int]:
    """Validate, write and apply a commit; the error code of every partition in the request."""
    try:
        validate_commit(shard, req)
    except BrokerResponseError as exc:
        return dict.fromkeys(req.offsets, int(exc.errno))
    now = shard.now()
    errors: dict[TopicPartition, int] = {}
    good: dict[TopicPartition, OffsetValue] = {}
    for tp, v in req.offsets.items():
        if len(v.metadata.encode()) > OFFSET_METADATA_MAX_BYTES:
            errors[tp] = int(OffsetMetadataTooLargeError.errno)
        else:
            good[tp] = OffsetValue(v.offset, v.leader_epoch, v.metadata, now)
    if good:
        errors.update(dict.fromkeys(good, _write(shard, req, good)))
    return errors


def _write(shard: GroupShard, req: CommitRequest, offsets: dict[TopicPartition, OffsetValue]) -> int:
    try:
        if req.producer is None:
            shard.store_offsets(req.group_id, offsets)
        else:
            shard.store_txn_offsets(req.group_id, req.producer[0], req.producer[1], offsets)
    except Exception as exc:
        return append_error_code(exc)
    return E.NONE


def fetch(shard: GroupShard, group_id: str, partitions: list[TopicPartition] | None,
          require_stable: bool) -> dict[TopicPartition, FetchedOffset]:
    """Committed offsets (all of the group's when partitions is None); -1 where nothing is committed.
    With require_stable, a partition with a transactional commit awaiting its marker is UNSTABLE."""
    store = shard.offsets
    wanted = partitions if partitions is not None else sorted(store.of_group(group_id))
    out: dict[TopicPartition, FetchedOffset] = {}
    for tp in wanted:
        if require_stable and store.has_pending(group_id, tp):
            out[tp] = FetchedOffset(error=int(UnstableOffsetCommitError.errno))
            continue
        c = store.get(group_id, tp)
        out[tp] = FetchedOffset(c.offset, c.leader_epoch, c.metadata) if c is not None else FetchedOffset()
    return out


def validate_fetch(shard: GroupShard, group_id: str, member_id: str | None, member_epoch: int) -> None:
    """OffsetFetch v9+ from a consumer group member: the member must exist at that epoch (Kafka's
    ConsumerGroup.validateOffsetFetch); without member id and epoch (admin clients) anything goes."""
    group = shard.consumer_groups.get(group_id)
    if group is None or (member_id is None and member_epoch < 0):
        return
    member = group.members.get(member_id or "")
    if member is None:
        raise UnknownMemberIdError(f"Member {member_id} is not a member of group {group_id}.")
    validate_member_epoch(member_epoch, member.member_epoch)
