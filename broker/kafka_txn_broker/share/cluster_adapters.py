"""The cluster as share groups see it: small adapters between the embedded cluster and the share
collaborators' protocols (topics view, share coordinator routing, member-removal fan-out).

Kafka's brokers reach each other with RPCs here (the share coordinator with the share-state APIs
83-87; a member leaving is noticed by each share-partition leader through its share session). All
nodes of the embedded cluster run in one process on one event loop, so these calls are direct.
Event-loop owned, like the cluster they read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_txn_broker.formats.partitioning import SHARE_STATE_TOPIC
from kafka_txn_broker.metadata.view import MetadataTopics
from kafka_txn_broker.share.share_coordinator import ShareCoordinator

if TYPE_CHECKING:
    from kafka_txn_broker.replica.replica_manager import ReplicaManager
    from kafka_txn_broker.server.cluster import Cluster
    from kafka_txn_broker.share.share_partition import SharePartitionKey
    from kafka_txn_broker.share.share_partition_manager import SharePartitionManager


class ClusterShareNodes:
    """Where the share coordinator of a `__share_group_state` partition runs."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster

    def ensure_share_state_topic(self) -> int:
        cfg = self.cluster.config
        configs = {"cleanup.policy": "delete", "segment.bytes": str(cfg["share.coordinator.state.topic.segment.bytes"])}
        topic = self.cluster.ensure_internal_topic(
            SHARE_STATE_TOPIC, cfg["share.coordinator.state.topic.num.partitions"],
            cfg["share.coordinator.state.topic.replication.factor"], configs)
        return len(topic.partitions)

    def leader_of(self, topic: str, partition: int) -> int:
        return MetadataTopics(self.cluster.metadata).leader_of(topic, partition)[0]

    def live_share_coordinator(self, node_id: int) -> ShareCoordinator | None:
        node = self.cluster.live_node(node_id)
        return node.share_coordinator if node is not None else None


class ReplicaStatePruner:
    """DeleteRecords on this node's leader replica of a `__share_group_state` partition, as the share
    coordinator prunes it (the same log start offset advance as the DeleteRecords API, which refuses
    internal topics to clients)."""

    def __init__(self, replicas: ReplicaManager) -> None:
        self.replicas = replicas

    def prune(self, partition: int, offset: int) -> int | None:
        part = self.replicas.get(SHARE_STATE_TOPIC, partition)
        if part is None:
            return None
        # Records of open transactions stay, and so does anything not yet replicated.
        bound = min(offset, part.log.last_stable_offset, part.log.high_watermark)
        if bound <= part.log.log_start_offset:
            return None
        self.replicas.delete_records(SHARE_STATE_TOPIC, partition, bound)
        return int(part.log.log_start_offset)


class PartitionEnds:
    """A partition's end as its leader sees it: the high watermark, or the last stable offset."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster

    def end_offset(self, topic: str, partition: int, read_committed: bool) -> int | None:
        leader = MetadataTopics(self.cluster.metadata).leader_of(topic, partition)[0]
        node = self.cluster.live_node(leader)
        part = node.replica_manager.get(topic, partition) if node is not None else None
        if part is None:
            return None
        return int(part.log.last_stable_offset if read_committed else part.log.high_watermark)


class SharePartitionLeaders:
    """Tells every share-partition leader about a share group's changes: a member left (or timed out),
    or the persisted state of some share-partitions was reset or deleted by an admin."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster

    def _managers(self) -> list[SharePartitionManager]:
        return [n.share_partition_manager for n in list(self.cluster.nodes.values()) if n.online]

    def on_member_removed(self, group_id: str, member_id: str) -> None:
        for manager in self._managers():
            manager.on_member_removed(group_id, member_id)

    def on_state_reset(self, group_id: str, keys: list[SharePartitionKey]) -> None:
        for manager in self._managers():
            manager.forget(keys)
