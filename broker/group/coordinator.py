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
from typing import TYPE_CHECKING

from kafka.errors import CoordinatorLoadInProgressError, NotCoordinatorError

from kafka_txn_broker.formats.partitioning import GROUP_TOPIC, partition_for
from kafka_txn_broker.group.shard import GroupShard

if TYPE_CHECKING:
    from kafka_txn_broker.replica.partition import Partition
    from kafka_txn_broker.server.metadata import PartitionState
    from kafka_txn_broker.server.node import BrokerNode

log = logging.getLogger(__name__)

# Replay reads the log in chunks of this size and yields to the event loop between them.
LOAD_CHUNK_BYTES = 1024 * 1024


class PartitionWriter:
    """Appends the coordinator's batches to this node's leader replica of one partition (acks=all)."""

    def __init__(self, node: BrokerNode, partition: int) -> None:
        self.node = node
        self.partition = partition

    def append(self, batch: bytes) -> int:
        part = self.node.replica_manager.get(GROUP_TOPIC, self.partition)
        if part is None:
            raise NotCoordinatorError(f"node {self.node.node_id} has no replica of {GROUP_TOPIC}-{self.partition}")
        return int(part.append_as_leader(batch, -1, origin="coordinator").first_offset)


class GroupCoordinator:
    def __init__(self, node: BrokerNode) -> None:
        self.node = node
        self.shards: dict[int, GroupShard] = {}
        self._loads: dict[int, asyncio.Task[None]] = {}

    # ---- routing -----------------------------------------------------------------------------
    def partition_of(self, group_id: str) -> PartitionState:
        topic = self.node.cluster.metadata.topics.get(GROUP_TOPIC)
        if topic is None:
            raise NotCoordinatorError(f"{GROUP_TOPIC} does not exist yet: send FindCoordinator first")
        return topic.partitions[partition_for(group_id, len(topic.partitions))]

    def shard(self, group_id: str) -> GroupShard:
        """The loaded shard owning the group, or NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS."""
        state = self.partition_of(group_id)
        if state.leader != self.node.node_id:
            raise NotCoordinatorError(
                f"node {self.node.node_id} is not the coordinator of group {group_id!r} "
                f"({GROUP_TOPIC}-{state.partition} is led by node {state.leader})")
        shard = self.shards.get(state.partition)
        if shard is None:
            self._begin_load(state.partition)
            shard = self.shards[state.partition]
        if not shard.loaded:
            raise CoordinatorLoadInProgressError(f"loading {GROUP_TOPIC}-{state.partition} for group {group_id!r}")
        return shard

    def loaded_shards(self) -> list[GroupShard]:
        return [s for s in self.shards.values() if s.loaded]

    @property
    def loading(self) -> bool:
        return any(not s.loaded for s in self.shards.values())

    # ---- hooks -------------------------------------------------------------------------------
    def on_leadership_change(self, changed: list[PartitionState]) -> None:
        for state in changed:
            if state.topic != GROUP_TOPIC:
                continue
            if state.leader == self.node.node_id:
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

    def shutdown(self) -> None:
        for partition in list(self.shards):
            self._unload(partition)

    # ---- loading -----------------------------------------------------------------------------
    def _begin_load(self, partition: int) -> None:
        shard = GroupShard(partition, self.node.config, self.node.clock, PartitionWriter(self.node, partition))
        self.shards[partition] = shard
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # called outside the broker's loop (tests driving a node by hand)
            self._load_now(shard)
            return
        self._loads[partition] = loop.create_task(self._load(shard), name=f"load-{GROUP_TOPIC}-{partition}")

    def _replica(self, partition: int) -> Partition | None:
        return self.node.replica_manager.get(GROUP_TOPIC, partition)

    def _load_now(self, shard: GroupShard) -> None:
        part = self._replica(shard.partition)
        position = part.log.log_start_offset if part is not None else 0
        while part is not None and position < part.log.log_end_offset:
            position = self._replay_chunk(shard, part, position)
        shard.finish_load()

    async def _load(self, shard: GroupShard) -> None:
        # The topic may be created in this very step: its replica is added right after the hook runs.
        await asyncio.sleep(0)
        try:
            part = self._replica(shard.partition)
            position = part.log.log_start_offset if part is not None else 0
            # No await between the last end-offset check and finish_load, so a transaction marker
            # appended meanwhile is either replayed here or delivered by on_transaction_marker.
            while part is not None and position < part.log.log_end_offset:
                position = self._replay_chunk(shard, part, position)
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
            log.info("node %s loaded %s-%s: %d groups", self.node.node_id, GROUP_TOPIC, shard.partition,
                     len(shard.groups))

    @staticmethod
    def _replay_chunk(shard: GroupShard, part: Partition, position: int) -> int:
        chunk = part.log.read_for_replication(position, LOAD_CHUNK_BYTES)
        next_position = shard.replay(bytes(chunk), position) if chunk else position
        if next_position <= position:
            raise RuntimeError(f"no progress replaying {GROUP_TOPIC}-{shard.partition} at offset {position}")
        return next_position

    def _unload(self, partition: int) -> None:
        task = self._loads.pop(partition, None)
        if task is not None:
            task.cancel()
        shard = self.shards.pop(partition, None)
        if shard is not None:
            with contextlib.suppress(Exception):
                shard.unload()
