"""One `__consumer_offsets` partition as the coordinator sees it: its groups, its offsets, its log.

Every change that must survive a restart (group metadata after a rebalance, offset commits) is written
to the partition log first and applied in memory only once the append succeeded (acks=all, so the
record is on every in-sync replica). A new leader rebuilds the same state by replaying the log: the
coordinator runtime (kafka_txn_broker/coordinator/) hands a fresh shard the log's batches (replay_batch),
then calls finish_load, and unload when leadership moves away. On the cluster's event loop, like all
broker state.
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from kafka_txn_broker.formats import consumer_group_records, share_group_records
from kafka_txn_broker.formats.group_records import (
    GroupKey,
    GroupValue,
    MemberValue,
    OffsetKey,
    OffsetValue,
    RecordFormatError,
    decode_group_value,
    decode_key,
    decode_offset_value,
    encode_group_key,
    encode_group_value,
    encode_offset_key,
    encode_offset_value,
)
from kafka_txn_broker.formats.record_batch import (
    BatchHeader,
    build_batch,
    iter_records,
    parse_control_record,
)
from kafka_txn_broker.group import consumer_records
from kafka_txn_broker.group.classic_group import ClassicGroup, GroupState, Member
from kafka_txn_broker.group.consumer_group import ConsumerGroup
from kafka_txn_broker.group.consumer_membership import ConsumerGroupContext, ConsumerMembership
from kafka_txn_broker.group.group_type import CLASSIC, CONSUMER, SHARE, GroupType, ListedGroup, not_found, wrong_type
from kafka_txn_broker.group.membership import GroupMembership
from kafka_txn_broker.group.offset_store import CommittedOffset, OffsetStore, TopicPartition
from kafka_txn_broker.group.share_group import ShareGroup
from kafka_txn_broker.group.share_membership import ShareGroupContext, ShareMembership

if TYPE_CHECKING:
    from kafka_txn_broker.clock import Clock

log = logging.getLogger(__name__)

Record = tuple[bytes, bytes | None]
G = TypeVar("G")


class LogWriter(Protocol):
    def append(self, batch: bytes) -> int:
        """Append one batch to the partition (acks=all) and return its first offset, or raise."""
        ...


class GroupShard:
    def __init__(self, partition: int, config: Any, clock: Clock, writer: LogWriter,
                 share: ShareGroupContext | None = None, consumer: ConsumerGroupContext | None = None) -> None:
        self.partition = partition
        self.config = config
        self.clock = clock
        self.writer = writer
        self.groups: dict[str, ClassicGroup] = {}
        self.offsets = OffsetStore()
        self.membership = GroupMembership(self)
        # Share groups (KIP-932) beside the classic ones: one group id is one or the other.
        self.share_groups: dict[str, ShareGroup] = {}
        self.share_membership = ShareMembership(
            self.share_groups, share, clock, max_size=int(config["group.share.max.size"]),
            store_epoch=self.store_share_group, other_group_exists=self._classic_or_consumer) if share else None
        # Consumer groups of the new protocol (KIP-848); one group id is classic, consumer or share.
        self.consumer_groups: dict[str, ConsumerGroup] = {}
        self.consumer_membership = ConsumerMembership(
            self.consumer_groups, consumer, clock, write=self.append_records, other_group=self._other_group_type,
            drop_empty_classic=self._drop_empty_classic,
            max_size=int(config["group.consumer.max.size"])) if consumer else None

    def _classic_or_consumer(self, group_id: str) -> bool:
        return group_id in self.groups or group_id in self.consumer_groups

    def _other_group_type(self, group_id: str) -> str | None:
        """The type of the non-consumer group with this id, if any."""
        if group_id in self.share_groups:
            return "share"
        return "classic" if group_id in self.groups else None

    def _drop_empty_classic(self, group_id: str) -> bool:
        """An empty classic group becomes a consumer group (Kafka converts it): its record goes, its
        offsets stay. False if it has members."""
        group = self.groups[group_id]
        if not group.is_in(GroupState.EMPTY):
            return False
        self.append_records([(encode_group_key(group_id), None)])
        group.transition(GroupState.DEAD, self.now())
        del self.groups[group_id]
        return True

    def now(self) -> int:
        return self.clock.millis()

    # ---- the groups, by type (handlers read them through GroupCoordinator) ------------------------
    def group_type(self, group_id: str) -> GroupType | None:
        """The type of the group with this id, None when there is none."""
        if group_id in self.groups:
            return CLASSIC
        if group_id in self.consumer_groups:
            return CONSUMER
        return SHARE if group_id in self.share_groups else None

    def classic_group(self, group_id: str) -> ClassicGroup:
        """The classic group; GROUP_ID_NOT_FOUND when there is none or the id is another type's."""
        return self._of_type(self.groups, group_id, CLASSIC)

    def consumer_group(self, group_id: str) -> ConsumerGroup:
        return self._of_type(self.consumer_groups, group_id, CONSUMER)

    def share_group(self, group_id: str) -> ShareGroup:
        return self._of_type(self.share_groups, group_id, SHARE)

    def _of_type(self, groups: Mapping[str, G], group_id: str, kind: GroupType) -> G:
        group = groups.get(group_id)
        if group is not None:
            return group
        raise not_found(group_id) if self.group_type(group_id) is None else wrong_type(group_id, kind)

    def listed_groups(self) -> list[ListedGroup]:
        """Every group of the partition as ListGroups shows it."""
        return ([ListedGroup(g.group_id, CLASSIC, g.protocol_type or "", g.state.value) for g in self.groups.values()]
                + [ListedGroup(g.group_id, SHARE, SHARE, g.state) for g in self.share_groups.values()]
                + [ListedGroup(g.group_id, CONSUMER, CONSUMER, g.state) for g in self.consumer_groups.values()])

    def get_or_create(self, group_id: str) -> ClassicGroup:
        if group_id in self.share_groups:
            raise wrong_type(group_id, CLASSIC)
        consumer_group = self.consumer_groups.get(group_id)
        if consumer_group is not None:
            if not consumer_group.is_empty:
                raise wrong_type(group_id, CLASSIC)
            self.delete_consumer_group(group_id)  # an empty consumer group becomes classic, as in Kafka
        group = self.groups.get(group_id)
        if group is None:
            group = self.groups[group_id] = ClassicGroup(group_id, state_timestamp_ms=self.now())
        return group

    # ---- writing -----------------------------------------------------------------------------
    def append_records(self, records: list[Record], producer: tuple[int, int] | None = None) -> int:
        pid, epoch = producer if producer is not None else (-1, -1)
        batch = build_batch([(k, v) for k, v in records], timestamp_ms=self.now(), producer_id=pid,
                            producer_epoch=epoch, transactional=producer is not None)
        return self.writer.append(batch)

    def store_group(self, group: ClassicGroup, assignments: Mapping[str, bytes]) -> None:
        """Write the group's current generation (with these assignments) to the log."""
        value = GroupValue(group.protocol_type or "", group.generation, group.protocol_name, group.leader_id,
                           self.now(), [_member_value(group, m, assignments) for m in group.members.values()])
        self.append_records([(encode_group_key(group.group_id), encode_group_value(value))])

    def store_share_group(self, group: ShareGroup) -> None:
        """Write a share group's epoch (a ShareGroupMetadata record)."""
        metadata_hash = zlib.crc32(repr(group.subscription_metadata).encode())
        value = share_group_records.encode_value(group.group_epoch, metadata_hash)
        self.append_records([(share_group_records.encode_key(group.group_id), value)])

    def delete_share_group(self, group_id: str) -> None:
        self.append_records([(share_group_records.encode_key(group_id), None)])
        group = self.share_groups.pop(group_id, None)
        if group is not None:
            group.dead = True

    def delete_consumer_group(self, group_id: str) -> None:
        """Write the tombstones of an empty consumer group's records, then forget it."""
        self.append_records(consumer_records.deletion(group_id))
        group = self.consumer_groups.pop(group_id, None)
        if group is not None:
            group.dead = True

    def store_offsets(self, group_id: str, offsets: Mapping[TopicPartition, OffsetValue]) -> None:
        first = self.append_records(_offset_records(group_id, offsets))
        for i, (tp, v) in enumerate(offsets.items()):
            self.offsets.put(group_id, tp, _committed(v, first + i))

    def store_txn_offsets(self, group_id: str, producer_id: int, producer_epoch: int,
                          offsets: Mapping[TopicPartition, OffsetValue]) -> None:
        first = self.append_records(_offset_records(group_id, offsets), (producer_id, producer_epoch))
        for i, (tp, v) in enumerate(offsets.items()):
            self.offsets.put_pending(producer_id, group_id, tp, _committed(v, first + i))

    def on_marker(self, producer_id: int, commit: bool) -> None:
        self.offsets.complete(producer_id, commit)

    # ---- loading (the coordinator runtime replays the partition log into a fresh shard) ---------
    def replay_batch(self, batch: bytes, header: BatchHeader) -> None:
        if header.is_control:
            commit, _ = parse_control_record(batch)
            self.offsets.complete(header.producer_id, commit)
            return
        txn_pid = header.producer_id if header.is_transactional else None
        for rec in iter_records(batch):
            if rec.key is None:
                continue
            try:
                self._replay_record(rec.key, rec.value, rec.offset, txn_pid)
            except (RecordFormatError, share_group_records.RecordFormatError, consumer_group_records.RecordFormatError,
                    UnicodeDecodeError) as exc:
                log.warning("skipping unreadable __consumer_offsets-%s record at %s: %s",
                            self.partition, rec.offset, exc)

    def _replay_record(self, key: bytes, value: bytes | None, offset: int, txn_pid: int | None) -> None:
        k = decode_key(key)
        if k is None:
            consumer_key = consumer_group_records.decode_key(key)
            if consumer_key is not None:
                consumer_records.replay(self.consumer_groups, consumer_key, value)
            else:
                self._replay_share_group(key, value)
        elif isinstance(k, OffsetKey):
            tp = (k.topic, k.partition)
            if value is None:
                self.offsets.delete(k.group, tp)
            elif txn_pid is not None:
                self.offsets.put_pending(txn_pid, k.group, tp, _committed(decode_offset_value(value), offset))
            else:
                self.offsets.put(k.group, tp, _committed(decode_offset_value(value), offset))
        elif isinstance(k, GroupKey):
            if value is None:
                self.groups.pop(k.group, None)
            else:
                self.groups[k.group] = self._restore_group(k.group, decode_group_value(value))

    def _replay_share_group(self, key: bytes, value: bytes | None) -> None:
        group_id = share_group_records.decode_key(key)
        if group_id is None:
            return  # another record type of the KIP-848 generation: not kept here
        if value is None:
            self.share_groups.pop(group_id, None)
            return
        epoch, _hash = share_group_records.decode_value(value)
        # Members are not kept: they rejoin this coordinator (UNKNOWN_MEMBER_ID, then epoch 0).
        self.share_groups[group_id] = ShareGroup(group_id, epoch)

    def _restore_group(self, group_id: str, v: GroupValue) -> ClassicGroup:
        # A loaded group with members is Stable: its members keep their generation and assignment and
        # carry on heartbeating; the ones that are gone expire after their session timeout.
        now = self.now()
        group = ClassicGroup(group_id, generation=v.generation, protocol_type=v.protocol_type or None,
                             protocol_name=v.protocol, state_timestamp_ms=now)
        for m in v.members:
            group.add(Member(m.member_id, m.group_instance_id, m.client_id, m.client_host, m.session_timeout,
                             m.rebalance_timeout, v.protocol_type, [(v.protocol or "", m.subscription)],
                             m.assignment, now, is_new=False))
        group.leader_id = v.leader if v.leader in group.members else next(iter(group.members), None)
        group.state = GroupState.STABLE if group.members else GroupState.EMPTY
        return group

    def finish_load(self) -> None:
        # Groups known only from their offsets (simple consumers) exist as Empty groups, as in Kafka.
        for group_id in self.offsets.groups():
            if group_id not in self.consumer_groups:
                self.get_or_create(group_id)
        if self.consumer_membership is not None:
            self.consumer_membership.on_loaded()

    def unload(self) -> None:
        self.membership.fail_all_waiters()
        for group in self.groups.values():
            group.state = GroupState.DEAD
        self.groups.clear()
        for share_group in self.share_groups.values():
            share_group.dead = True
        self.share_groups.clear()
        for consumer_group in self.consumer_groups.values():
            consumer_group.dead = True
        self.consumer_groups.clear()


def _member_value(group: ClassicGroup, m: Member, assignments: Mapping[str, bytes]) -> MemberValue:
    subscription = m.metadata_for(group.protocol_name) if group.protocol_name else b""
    return MemberValue(m.member_id, m.group_instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                       m.session_timeout_ms, subscription, assignments.get(m.member_id, b""))


def _offset_records(group_id: str, offsets: Mapping[TopicPartition, OffsetValue]) -> list[Record]:
    return [(encode_offset_key(group_id, t, p), encode_offset_value(v)) for (t, p), v in offsets.items()]


def _committed(v: OffsetValue, record_offset: int) -> CommittedOffset:
    return CommittedOffset(v.offset, v.leader_epoch, v.metadata, v.commit_timestamp, record_offset)
