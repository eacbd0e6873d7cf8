"""The group coordinator of one node: the `__consumer_offsets` partitions it leads, loaded into shards.

A group lives in partition partitionFor(group id). When this node becomes that partition's leader
(at startup or after a leader move) it replays the partition log into a GroupShard; until the replay
reached the log end, requests for its groups get COORDINATOR_LOAD_IN_PROGRESS. When leadership moves
away the shard is dropped and parked JoinGroup/SyncGroup requests are answered NOT_COORDINATOR.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING

from kafka.errors import CoordinatorLoadInProgressError, NotCoordinatorError

from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.partitioning import GROUP_TOPIC, partition_for
from kafka_txn_broker.group.group_type import SHARE, GroupType, ListedGroup
from kafka_txn_broker.group.shard import GroupShard

if TYPE_CHECKING:
    from kafka_txn_broker.clock import Clock
    from kafka_txn_broker.configs.broker_config import BrokerConfig
    from kafka_txn_broker.group.classic_group import ClassicGroup
    from kafka_txn_broker.group.consumer_group import ConsumerGroup
    from kafka_txn_broker.group.consumer_membership import ConsumerGroupContext
    from kafka_txn_broker.group.share_group import ShareGroup
    from kafka_txn_broker.group.share_membership import ShareGroupContext
    from kafka_txn_broker.metadata.topics import PartitionState
    from kafka_txn_broker.metadata.view import MetadataView
    from kafka_txn_broker.replica.coordinator_log import CoordinatorLog

log = logging.getLogger(__name__)

# Replay reads the log in chunks of this size and yields to the event loop between them.
LOAD_CHUNK_BYTES = 1024 * 1024


class PartitionWriter:
    """Appends the coordinator's batches to this node's leader replica of one partition (acks=all)."""

    def __init__(self, log: CoordinatorLog, partition: int) -> None:
        self.log = log
        self.partition = partition

    def append(self, batch: bytes) -> int:
        return self.log.append(self.partition, batch)


class GroupCoordinator:
    """Collaborators come through the constructor: the node's replicas of __consumer_offsets as a
    CoordinatorLog, the metadata view (who leads a partition), the config and the clock, and what share
    groups need (topics, group configs, the share-partition leaders to tell about leaving members) and
    consumer groups (topics, group configs).
    Like all broker state, it lives on the cluster's event loop."""

    def __init__(self, node_id: int, config: BrokerConfig, clock: Clock, log: CoordinatorLog,
                 metadata: MetadataView, share: ShareGroupContext | None = None,
                 consumer: ConsumerGroupContext | None = None) -> None:
        self.node_id = node_id
        self.config = config
        self.clock = clock
        self.log = log
        self.metadata = metadata
        self.share = share
        self.consumer = consumer
        self.shards: dict[int, GroupShard] = {}
        self._loads: dict[int, asyncio.Task[None]] = {}

    # ---- routing -----------------------------------------------------------------------------
    def partition_of(self, group_id: str) -> tuple[int, int]:
        """(partition of __consumer_offsets, its leader) for a group id."""
        count = self.metadata.partition_count(GROUP_TOPIC)
        if count is None:
            raise NotCoordinatorError(f"{GROUP_TOPIC} does not exist yet: send FindCoordinator first")
        partition = partition_for(group_id, count)
        leader = self.metadata.leader(GROUP_TOPIC, partition)
        return partition, -1 if leader is None else leader

    def shard(self, group_id: str) -> GroupShard:
        """The loaded shard owning the group, or NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS."""
        partition, leader = self.partition_of(group_id)
        if leader != self.node_id:
            raise NotCoordinatorError(
                f"node {self.node_id} is not the coordinator of group {group_id!r} "
                f"({GROUP_TOPIC}-{partition} is led by node {leader})")
        shard = self.shards.get(partition)
        if shard is None:
            self._begin_load(partition)
            shard = self.shards[partition]
        if not shard.loaded:
            raise CoordinatorLoadInProgressError(f"loading {GROUP_TOPIC}-{partition} for group {group_id!r}")
        return shard

    def loaded_shards(self) -> list[GroupShard]:
        return [s for s in self.shards.values() if s.loaded]

    @property
    def loading(self) -> bool:
        return any(not s.loaded for s in self.shards.values())

    # ---- the groups, as the request handlers read them ---------------------------------------
    def group_type(self, group_id: str) -> GroupType | None:
        """The type of the group (None: there is none); NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS as shard()."""
        return self.shard(group_id).group_type(group_id)

    def classic_group(self, group_id: str) -> ClassicGroup:
        """The classic group, or GROUP_ID_NOT_FOUND (none, or another type's id); routing errors as shard()."""
        return self.shard(group_id).classic_group(group_id)

    def consumer_group(self, group_id: str) -> ConsumerGroup:
        return self.shard(group_id).consumer_group(group_id)

    def share_group(self, group_id: str) -> ShareGroup:
        return self.shard(group_id).share_group(group_id)

    def listed_groups(self) -> list[ListedGroup]:
        """Every group of the loaded partitions (ListGroups; `loading` says whether some are missing)."""
        return [g for shard in self.loaded_shards() for g in shard.listed_groups()]

    def share_member_error(self, group_id: str, member_id: str, member_epoch: int) -> int:
        """A share group member's standing (TxnShareAcknowledge): NONE, UNKNOWN_MEMBER_ID (no such member or
        group) or STALE_MEMBER_EPOCH; routing errors are raised as shard() raises them."""
        shard = self.shard(group_id)
        member = shard.share_groups[group_id].members.get(member_id) if shard.group_type(group_id) == SHARE else None
        if member is None:
            return E.UNKNOWN_MEMBER_ID
        return E.STALE_MEMBER_EPOCH if member.member_epoch != member_epoch else E.NONE

    # ---- hooks -------------------------------------------------------------------------------
    def on_leadership_change(self, changed: list[PartitionState]) -> None:
        for state in changed:
            if state.topic != GROUP_TOPIC:
                continue
            if state.leader == self.node_id:
                if state.partition not in self.shards:
                    self._begin_load(state.partition)
            else:
                self._unload(state.partition)

    def on_transaction_marker(self, partition: int, producer_id: int, commit: bool) -> None:
        shard = self.shards.get(partition)
        # A shard still loading will read the marker from the log itself.
        if shard is not None and shard.loaded:
            shard.on_marker(producer_id, commit)

    def tick(self, now_ms: int) -> None:
        for shard in self.loaded_shards():
            shard.membership.tick(now_ms)
            if shard.share_membership is not None:
                shard.share_membership.tick()
            if shard.consumer_membership is not None:
                shard.consumer_membership.tick()

    def shutdown(self) -> None:
        for partition in list(self.shards):
            self._unload(partition)

    # ---- loading -----------------------------------------------------------------------------
    def _begin_load(self, partition: int) -> None:
        shard = GroupShard(partition, self.config, self.clock, PartitionWriter(self.log, partition), self.share,
                           self.consumer)
        self.shards[partition] = shard
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # called outside the broker's loop (tests driving a node by hand)
            self._load_now(shard)
            return
        self._loads[partition] = loop.create_task(self._load(shard), name=f"load-{GROUP_TOPIC}-{partition}")

    def _load_now(self, shard: GroupShard) -> None:
        for chunk in self.log.read(shard.partition):
            shard.replay(chunk, 0)
        shard.finish_load()

    async def _load(self, shard: GroupShard) -> None:
        # The topic may be created in this very step: its replica is added right after the hook runs.
        await asyncio.sleep(0)
        try:
            # The log's end is re-read before each chunk and there is no await between the last check
            # and finish_load, so a transaction marker appended meanwhile is either replayed here or
            # delivered by on_transaction_marker.
            chunks: Iterator[bytes] = self.log.read(shard.partition)
            for chunk in chunks:
                shard.replay(chunk, 0)
                await asyncio.sleep(0)
        except Exception:
            log.exception("loading %s-%s failed", GROUP_TOPIC, shard.partition)
            if self.shards.get(shard.partition) is shard:
                del self.shards[shard.partition]  # the next request starts another load
            return
        finally:
            self._loads.pop(shard.partition, None)
        if self.shards.get(shard.partition) is shard:
            shard.finish_load()
            log.info("node %s loaded %s-%s: %d groups", self.node_id, GROUP_TOPIC, shard.partition,
                     len(shard.groups))

    def _unload(self, partition: int) -> None:
        task = self._loads.pop(partition, None)
        if task is not None:
            task.cancel()
        shard = self.shards.pop(partition, None)
        if shard is not None:
            with contextlib.suppress(Exception):
                shard.unload()
