"""The group coordinator of one node: the `__consumer_offsets` partitions it leads, each a GroupShard on the
coordinator runtime (kafka_txn_broker/coordinator/).

A group lives in partition partitionFor(group id). When this node becomes that partition's leader (at
startup or after a leader move) the runtime replays the partition log into a fresh GroupShard, in chunks;
until the replay reached the log end, requests for its groups get COORDINATOR_LOAD_IN_PROGRESS. When
leadership moves away the shard is unloaded and parked JoinGroup/SyncGroup requests are answered
NOT_COORDINATOR.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_txn_broker.coordinator.loader import CoordinatorLoader
from kafka_txn_broker.coordinator.partition_writer import PartitionWriter
from kafka_txn_broker.coordinator.runtime import CoordinatorRuntime
from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.errors import NotCoordinatorError
from kafka_txn_broker.formats.partitioning import GROUP_TOPIC, partition_for
from kafka_txn_broker.group.group_type import SHARE, GroupType, ListedGroup
from kafka_txn_broker.group.shard import GroupShard

if TYPE_CHECKING:
    from kafka_txn_broker.clock import Clock
    from kafka_txn_broker.configs.broker_config import BrokerConfig
    from kafka_txn_broker.coordinator.coordinator_log import CoordinatorLog
    from kafka_txn_broker.group.classic_group import ClassicGroup
    from kafka_txn_broker.group.consumer_group import ConsumerGroup
    from kafka_txn_broker.group.consumer_membership import ConsumerGroupContext
    from kafka_txn_broker.group.share_group import ShareGroup
    from kafka_txn_broker.group.share_membership import ShareGroupContext
    from kafka_txn_broker.metadata.topics import PartitionState
    from kafka_txn_broker.metadata.view import MetadataView


class GroupCoordinator:
    """Collaborators come through the constructor: the node's replicas of __consumer_offsets as a
    CoordinatorLog, the metadata view (who leads a partition), the config and the clock, and what share
    groups need (topics, group configs, the share-partition leaders to tell about leaving members) and
    consumer groups (topics, group configs); optionally the loader (default: chunks of
    offsets.load.buffer.size over that log).
    Like all broker state, it lives on the cluster's event loop."""

    def __init__(self, node_id: int, config: BrokerConfig, clock: Clock, log: CoordinatorLog,
                 metadata: MetadataView, share: ShareGroupContext | None = None,
                 consumer: ConsumerGroupContext | None = None, loader: CoordinatorLoader | None = None) -> None:
        self.node_id = node_id
        self.config = config
        self.clock = clock
        self.log = log
        self.metadata = metadata
        self.share = share
        self.consumer = consumer
        if loader is None:
            loader = CoordinatorLoader(log, int(config["offsets.load.buffer.size"]), clock)
        self.runtime: CoordinatorRuntime[GroupShard] = CoordinatorRuntime(GROUP_TOPIC, node_id, loader,
                                                                          self._new_shard)

    def _new_shard(self, partition: int, _epoch: int) -> GroupShard:
        return GroupShard(partition, self.config, self.clock, PartitionWriter(self.log, partition), self.share,
                          self.consumer)

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
        self.runtime.ensure_loading(partition)
        return self.runtime.active(partition)

    def loaded_shards(self) -> list[GroupShard]:
        return self.runtime.active_shards()

    @property
    def loading(self) -> bool:
        return self.runtime.loading

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
        self.runtime.on_leadership_change(changed)

    def on_transaction_marker(self, partition: int, producer_id: int, commit: bool) -> None:
        # A shard still loading reads the marker from the log itself (loader.py).
        shard = self.runtime.active_or_none(partition)
        if shard is not None:
            shard.on_marker(producer_id, commit)

    def tick(self, now_ms: int) -> None:
        for shard in self.loaded_shards():
            shard.membership.tick(now_ms)
            if shard.share_membership is not None:
                shard.share_membership.tick()
            if shard.consumer_membership is not None:
                shard.consumer_membership.tick()

    def shutdown(self) -> None:
        self.runtime.close()
