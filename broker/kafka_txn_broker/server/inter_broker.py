"""The inter-broker channel: everything one node of the embedded cluster asks of another, in one place.

Kafka's brokers reach each other over the network: followers fetch from leaders, transaction coordinators
send WriteTxnMarkers and answer AddPartitionsToTxn verification, share-partition leaders call the share
coordinator's state RPCs (83-87), a broker forwards CreateTopics and friends to the controller. All nodes
of an embedded cluster run in one process on one event loop, so here those calls are direct: each method
below finds the live node that would receive the request and asks it, answering within the call. This
object is the seam a multi-process cluster would replace with RPCs; nothing else in the broker reaches
another node's objects.

Calls and their Kafka counterparts:
- brokers: live_brokers, endpoint, controller_id (Metadata, DescribeCluster, FindCoordinator, KIP-951 hints)
- controller: `controller` (forwarded admin requests, server/controller.py)
- replication: replica_manager (a follower's Fetch from its leader, DeleteRecords' log start offsets)
- transactions: write_marker (WriteTxnMarkers), producer_epoch_on (a marker's view of the leader, for
  fault injection), txn_coordinator_of (AddPartitionsToTxn to an id's coordinator, KIP-890)
- share groups: broadcast_share_marker (KIP-1289's marker broadcast to every share-partition leader),
  live_share_coordinator / leader_of / ensure_share_state_topic (the share coordinator's state RPCs),
  end_offset (ListOffsets on a partition's leader), on_member_removed / on_state_reset (share-partition
  leaders told of a group change), share_member_error (TxnShareAcknowledge's member check at the group's
  coordinator)

Event-loop owned, like everything it reaches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.errors import BrokerResponseError
from kafka_txn_broker.formats.partitioning import GROUP_TOPIC, SHARE_STATE_TOPIC, TXN_TOPIC, partition_for
from kafka_txn_broker.metadata.view import MetadataTopics
from kafka_txn_broker.server.controller import Controller

if TYPE_CHECKING:
    from kafka_txn_broker.replica.replica_manager import ReplicaManager
    from kafka_txn_broker.server.cluster import Cluster
    from kafka_txn_broker.server.node import BrokerNode
    from kafka_txn_broker.share.share_coordinator import ShareCoordinator
    from kafka_txn_broker.share.share_partition import SharePartitionKey
    from kafka_txn_broker.txn.coordinator import TransactionCoordinator
    from kafka_txn_broker.txn.transaction_metadata import TopicPartition


@dataclass(frozen=True, slots=True)
class BrokerEndpoint:
    """Where a live broker listens, as Metadata and the KIP-951 NodeEndpoints name it."""

    node_id: int
    host: str
    port: int


class InterBrokerChannel:
    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster
        self.controller = Controller(cluster)

    def _live(self, node_id: int) -> BrokerNode | None:
        return self._cluster.live_node(node_id)

    def _online(self) -> list[BrokerNode]:
        return [node for node in list(self._cluster.nodes.values()) if node.online]

    # ---- brokers ---------------------------------------------------------------------------------------
    def live_brokers(self) -> list[BrokerEndpoint]:
        """The brokers accepting requests, in node id order."""
        return [BrokerEndpoint(n.node_id, n.host, n.port) for n in self._online()]

    def endpoint(self, node_id: int) -> BrokerEndpoint | None:
        node = self._live(node_id)
        return BrokerEndpoint(node.node_id, node.host, node.port) if node is not None else None

    def controller_id(self) -> int:
        return self._cluster.controller_id()

    # ---- replication -----------------------------------------------------------------------------------
    def replica_manager(self, node_id: int) -> ReplicaManager | None:
        """The replicas of a live node (followers replicate from its leaders), None when it is down."""
        node = self._live(node_id)
        return node.replica_manager if node is not None else None

    # ---- transactions ----------------------------------------------------------------------------------
    def write_marker(self, leader: int, tp: TopicPartition, producer_id: int, producer_epoch: int, commit: bool,
                     coordinator_epoch: int, transaction_version: int, transactional_id: str = "") -> int:
        """The marker channel's MarkerWriter: WriteTxnMarkers for one partition, sent to node `leader`."""
        replicas = self.replica_manager(leader)
        part = replicas.get(*tp) if replicas is not None else None
        if part is None:
            return E.NOT_LEADER_OR_FOLLOWER
        return part.write_marker(producer_id, producer_epoch, commit, coordinator_epoch, transaction_version)

    def producer_epoch_on(self, leader: int, tp: TopicPartition, producer_id: int) -> tuple[int, bool] | None:
        """(epoch, open transaction?) of a producer on node `leader`'s replica (kafka_txn_broker/txn/faults.py)."""
        replicas = self.replica_manager(leader)
        part = replicas.get(*tp) if replicas is not None else None
        entry = part.log.producer_state.last_entry(producer_id) if part is not None else None
        if entry is None:
            return None
        return entry.producer_epoch, entry.current_txn_first_offset is not None

    def txn_coordinator_of(self, transactional_id: str) -> TransactionCoordinator | None:
        """The transaction coordinator of an id (whichever node leads its partition), None when unavailable."""
        metadata = self._cluster.metadata
        count = metadata.partition_count(TXN_TOPIC)
        if count is None:
            return None
        leader = metadata.leader(TXN_TOPIC, partition_for(transactional_id, count))
        node = self._live(leader) if leader is not None else None
        return node.txn_coordinator if node is not None else None

    # ---- share groups ----------------------------------------------------------------------------------
    def broadcast_share_marker(self, producer_id: int, commit: bool) -> None:
        """KIP-1289: a transaction's marker on a `__share_group_state` partition reaches every share-partition
        leader; the KIP broadcasts it to every share-partition of the broker that receives it, and here every
        live node can be told (the per-record producer id filters the rest)."""
        for node in self._online():
            node.share_partition_manager.on_txn_marker(producer_id, commit)

    def live_share_coordinator(self, node_id: int) -> ShareCoordinator | None:
        node = self._live(node_id)
        return node.share_coordinator if node is not None else None

    def leader_of(self, topic: str, partition: int) -> int:
        return MetadataTopics(self._cluster.metadata).leader_of(topic, partition)[0]

    def ensure_share_state_topic(self) -> int:
        """Create `__share_group_state` if needed (the controller's config sizes it); its partition count."""
        return len(self.controller.internal_topic(SHARE_STATE_TOPIC, self._cluster.config).partitions)

    def end_offset(self, topic: str, partition: int, read_committed: bool) -> int | None:
        """A partition's end as its leader sees it: the high watermark, or the last stable offset."""
        replicas = self.replica_manager(self.leader_of(topic, partition))
        part = replicas.get(topic, partition) if replicas is not None else None
        if part is None:
            return None
        return int(part.log.last_stable_offset if read_committed else part.log.high_watermark)

    def on_member_removed(self, group_id: str, member_id: str) -> None:
        """A share group member left or timed out: every share-partition leader releases its records."""
        for node in self._online():
            node.share_partition_manager.on_member_removed(group_id, member_id)

    def on_state_reset(self, group_id: str, keys: list[SharePartitionKey]) -> None:
        """An admin reset or deleted these share-partitions' state: their leaders load it again on next use."""
        for node in self._online():
            node.share_partition_manager.forget(keys)

    def share_member_error(self, group_id: str, member_id: str, member_epoch: int) -> int:
        """The member's standing at its share group's coordinator (whichever node leads the group's
        `__consumer_offsets` partition): NONE, UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH or the routing error."""
        metadata = self._cluster.metadata
        count = metadata.partition_count(GROUP_TOPIC)
        leader = metadata.leader(GROUP_TOPIC, partition_for(group_id, count)) if count is not None else None
        owner = self._live(leader) if leader is not None and leader >= 0 else None
        if owner is None:
            return E.NOT_COORDINATOR if count is None else E.COORDINATOR_NOT_AVAILABLE
        try:
            return owner.group_coordinator.share_member_error(group_id, member_id, member_epoch)
        except BrokerResponseError as exc:
            return E.error_code(exc)
