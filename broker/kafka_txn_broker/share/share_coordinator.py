"""The share coordinator of one node (Kafka's ShareCoordinatorService): the `__share_group_state`
partitions it leads, each a ShareCoordinatorShard on the coordinator runtime (kafka_txn_broker/coordinator/):
loaded in chunks when this node becomes the partition's leader, answering COORDINATOR_LOAD_IN_PROGRESS
until the replay reached the log end, unloaded when leadership moves away.

The state of share-partition (group, topic id, partition) lives in partition
partitionFor("group:topicId:partition") (Java hashCode, topic id as Kafka prints it) of
`__share_group_state`: 50 partitions, replication factor 3, cleanup.policy=delete as Kafka creates it
(KIP-932: a ShareUpdate only holds what one write changed, so compaction, which keeps one record per
key, would lose acknowledgements; Kafka drops records older than each key's last snapshot instead).

Every `share.coordinator.state.topic.prune.interval.ms` (tick(), on the clock) it prunes each partition it
leads as Kafka's coordinator does: the log start moves up to the shard's prunable_offset() (DeleteRecords on
the leader replica), so the topic stays as large as the records replay still needs. Every
`share.coordinator.cold.partition.snapshot.interval.ms` it first writes a fresh snapshot of each share-partition
whose latest snapshot is that old (the shard's snapshot_cold_partitions()), so a share-partition nobody writes
any more does not hold its partition's prune bound back for ever.

`ShareCoordinatorRouter` finds the node leading a key's partition and calls its coordinator in process;
Kafka's brokers send ReadShareGroupState / WriteShareGroupState (API 84, 85) to it instead.
Event-loop owned, like all broker state.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Protocol

from kafka_txn_broker.coordinator.loader import DEFAULT_LOAD_BUFFER_BYTES, CoordinatorLoader
from kafka_txn_broker.coordinator.partition_writer import PartitionWriter
from kafka_txn_broker.coordinator.runtime import CoordinatorRuntime
from kafka_txn_broker.formats.errors import CoordinatorNotAvailableError, NotCoordinatorError
from kafka_txn_broker.formats.partitioning import SHARE_STATE_TOPIC, partition_for
from kafka_txn_broker.share.share_coordinator_shard import ShareCoordinatorShard

if TYPE_CHECKING:
    from kafka_txn_broker.clock import Clock
    from kafka_txn_broker.coordinator.coordinator_log import CoordinatorLog
    from kafka_txn_broker.metadata.topics import PartitionState
    from kafka_txn_broker.metadata.view import MetadataView

log = logging.getLogger(__name__)



class StateLogPruner(Protocol):
    def prune(self, partition: int, offset: int) -> int | None:
        """Move the log start offset of this node's leader replica of `__share_group_state`-partition up to
        `offset`, never past its last stable offset or high watermark (DeleteRecords); the new log start
        offset, None when it did not move. Raises the Kafka error."""
        ...


class ShareCoordinator:
    """Collaborators come through the constructor: the node's replicas of `__share_group_state` as a
    CoordinatorLog, the metadata view (who leads a partition), the clock, the snapshot interval, the
    pruner with its interval, the cold-partition snapshot interval, and optionally the loader (default:
    Kafka's default share.coordinator.load.buffer.size over that log)."""

    def __init__(self, node_id: int, log: CoordinatorLog, metadata: MetadataView, clock: Clock,
                 updates_per_snapshot: int, pruner: StateLogPruner, prune_interval_ms: int,
                 cold_snapshot_interval_ms: int, loader: CoordinatorLoader | None = None) -> None:
        self.node_id = node_id
        self.log = log
        self.metadata = metadata
        self.clock = clock
        self.updates_per_snapshot = updates_per_snapshot
        self.pruner = pruner
        self.prune_interval_ms = prune_interval_ms
        self.last_prune_ms = clock.millis()
        self.cold_snapshot_interval_ms = cold_snapshot_interval_ms
        self.last_cold_snapshot_ms = clock.millis()
        if loader is None:
            loader = CoordinatorLoader(log, DEFAULT_LOAD_BUFFER_BYTES, clock)
        self.runtime: CoordinatorRuntime[ShareCoordinatorShard] = CoordinatorRuntime(
            SHARE_STATE_TOPIC, node_id, loader, self._new_shard)

    def _new_shard(self, partition: int, _epoch: int) -> ShareCoordinatorShard:
        return ShareCoordinatorShard(partition, PartitionWriter(self.log, partition), self.clock,
                                     self.updates_per_snapshot)

    def shard(self, partition: int) -> ShareCoordinatorShard:
        """The loaded shard of a partition this node leads, else NOT_COORDINATOR (COORDINATOR_LOAD_IN_PROGRESS
        while it loads)."""
        count = self.metadata.partition_count(SHARE_STATE_TOPIC)
        if count is None or not 0 <= partition < count:
            raise CoordinatorNotAvailableError(f"{SHARE_STATE_TOPIC}-{partition} does not exist")
        if self.metadata.leader(SHARE_STATE_TOPIC, partition) != self.node_id:
            raise NotCoordinatorError(f"node {self.node_id} does not lead {SHARE_STATE_TOPIC}-{partition}")
        self.runtime.ensure_loading(partition)
        return self.runtime.active(partition)

    def loaded_shards(self) -> list[ShareCoordinatorShard]:
        return self.runtime.active_shards()

    def on_transaction_marker(self, partition: int, producer_id: int, commit: bool) -> None:
        """A marker was written to a partition: what the producer staged there takes effect or is dropped.
        A shard still loading reads the marker from the log (loader.py)."""
        shard = self.runtime.active_or_none(partition)
        if shard is not None:
            shard.complete_transaction(producer_id, commit)

    def tick(self, now_ms: int) -> None:
        """Kafka's two timers: every cold-partition snapshot interval, snapshot the share-partitions of each
        loaded partition whose latest snapshot is that old (first, so a prune on the same tick can use them);
        every prune interval, prune each loaded partition (performRecordPruning)."""
        if now_ms - self.last_cold_snapshot_ms >= self.cold_snapshot_interval_ms:
            self.last_cold_snapshot_ms = now_ms
            for shard in self.loaded_shards():
                self.snapshot_cold_partitions(shard)
        if now_ms - self.last_prune_ms >= self.prune_interval_ms:
            self.last_prune_ms = now_ms
            for shard in self.loaded_shards():
                self.prune(shard)

    def snapshot_cold_partitions(self, shard: ShareCoordinatorShard) -> None:
        try:
            written = shard.snapshot_cold_partitions(self.cold_snapshot_interval_ms)
        except Exception as exc:  # e.g. the append failed: the next interval tries again
            log.warning("cold-partition snapshots on %s-%s failed: %s", SHARE_STATE_TOPIC, shard.partition, exc)
            return
        if written:
            log.debug("%d cold-partition snapshots on %s-%s", written, SHARE_STATE_TOPIC, shard.partition)

    def prune(self, shard: ShareCoordinatorShard) -> int | None:
        """Delete the records of the shard's partition that replay no longer needs; the new log start
        offset, None when it did not move (nothing to prune, or the prune failed: the next one retries)."""
        offset = shard.prunable_offset()
        if offset is None:
            return None
        try:
            moved = self.pruner.prune(shard.partition, offset)
        except Exception as exc:  # e.g. leadership just moved: the new leader prunes
            log.warning("pruning %s-%s below %s failed: %s", SHARE_STATE_TOPIC, shard.partition, offset, exc)
            return None
        if moved is not None:
            log.debug("pruned %s-%s below %s", SHARE_STATE_TOPIC, shard.partition, moved)
        return moved

    def on_leadership_change(self, changed: list[PartitionState]) -> None:
        self.runtime.on_leadership_change(changed)

    def shutdown(self) -> None:
        self.runtime.close()


class Nodes(Protocol):
    def live_share_coordinator(self, node_id: int) -> ShareCoordinator | None: ...

    def ensure_share_state_topic(self) -> int:
        """Create `__share_group_state` if needed; its partition count."""
        ...

    def leader_of(self, topic: str, partition: int) -> int: ...


class ShareCoordinatorRouter:
    """Finds the shard holding a share-partition's state (Kafka's persister finds the coordinator with
    FindCoordinator key type 2, SHARE, and sends it the state RPCs)."""

    def __init__(self, nodes: Nodes) -> None:
        self.nodes = nodes

    def partition_of(self, coordinator_key: str) -> int:
        return partition_for(coordinator_key, self.nodes.ensure_share_state_topic())

    def shard_for(self, coordinator_key: str) -> ShareCoordinatorShard:
        return self._shard(self.partition_of(coordinator_key))

    def _shard(self, partition: int) -> ShareCoordinatorShard:
        coordinator = self.nodes.live_share_coordinator(self.nodes.leader_of(SHARE_STATE_TOPIC, partition))
        if coordinator is None:
            raise CoordinatorNotAvailableError(f"{SHARE_STATE_TOPIC}-{partition} has no live leader")
        return coordinator.shard(partition)

    def keys_of_group(self, group_id: str) -> list[tuple[str, Any, int]]:
        """Every share-partition of the group with a persisted state, from all `__share_group_state`
        partitions (Kafka keeps the initialized partitions of a share group in __consumer_offsets)."""
        keys: list[tuple[str, Any, int]] = []
        for partition in range(self.nodes.ensure_share_state_topic()):
            keys.extend(self._shard(partition).keys_of_group(group_id))
        return keys
