"""One broker node: its log dir, replicas, coordinators and listener, and how they are wired.

The node builds each subsystem with the collaborators it uses (Kafka's BrokerServer does the same):
the replica manager gets the cluster metadata and a way to reach the other nodes' replicas; each
coordinator gets its internal topic as a CoordinatorLog (which its coordinator runtime loads and writes),
the metadata view, the config and the clock;
the marker channel gets a MarkerWriter that writes on the leader node's replica; the transaction
verifiers (Produce, TxnOffsetCommit) get the config, the replicas and txn_coordinator_of. Only this module and
cluster.py know the node and the cluster themselves. On the cluster's event loop, like all broker state.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_txn_broker.configs.config_def import ResourceType
from kafka_txn_broker.configs.dynamic_broker_config import DynamicBrokerConfig
from kafka_txn_broker.coordinator.coordinator_log import ReplicaCoordinatorLog
from kafka_txn_broker.coordinator.loader import CoordinatorLoader
from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.partitioning import GROUP_TOPIC, TXN_TOPIC, partition_for
from kafka_txn_broker.group.consumer_membership import ConsumerGroupContext, TopicDescribeCheck
from kafka_txn_broker.group.coordinator import GroupCoordinator
from kafka_txn_broker.group.share_membership import ShareGroupContext
from kafka_txn_broker.group.txn_verification import TxnOffsetCommitVerifier
from kafka_txn_broker.replica.replica_manager import ReplicaManager
from kafka_txn_broker.security.acls import Op
from kafka_txn_broker.security.acls import ResourceType as AclResource
from kafka_txn_broker.server.producer_id_manager import ProducerIdManager
from kafka_txn_broker.server.socket_server import Listener
from kafka_txn_broker.share.cluster_adapters import (
    ClusterShareNodes,
    MetadataTopics,
    PartitionEnds,
    ReplicaStatePruner,
    SharePartitionLeaders,
)
from kafka_txn_broker.share.persister import ShareStatePersister
from kafka_txn_broker.share.share_coordinator import SHARE_STATE_TOPIC, ShareCoordinator, ShareCoordinatorRouter
from kafka_txn_broker.share.share_group_offsets import ShareGroupOffsets
from kafka_txn_broker.share.share_partition_manager import SharePartitionManager
from kafka_txn_broker.txn.coordinator import TransactionCoordinator
from kafka_txn_broker.txn.faults import FaultyMarkerWriter, UpstreamBugs
from kafka_txn_broker.txn.marker_channel import TransactionMarkerChannelManager
from kafka_txn_broker.txn.state_manager import TransactionStateManager
from kafka_txn_broker.txn.verification import ProduceVerifier

if TYPE_CHECKING:
    from kafka_txn_broker.clock import Clock
    from kafka_txn_broker.security.authorizer import AclAuthorizer
    from kafka_txn_broker.server.cluster import Cluster
    from kafka_txn_broker.server.metadata import ClusterMetadata, PartitionState, TopicState
    from kafka_txn_broker.txn.transaction_metadata import TopicPartition

log = logging.getLogger(__name__)

# The size and replication factor settings of each internal topic (created on first use).
_INTERNAL_TOPIC_SETTINGS = {
    GROUP_TOPIC: ("offsets.topic.num.partitions", "offsets.topic.replication.factor"),
    TXN_TOPIC: ("transaction.state.log.num.partitions", "transaction.state.log.replication.factor"),
}


class BrokerNode:
    def __init__(self, cluster: Cluster, node_id: int, port: int) -> None:
        self.cluster = cluster
        self.node_id = node_id
        # Its view of the broker config: dynamic per-broker and cluster-default values over the static ones.
        self.config = DynamicBrokerConfig(cluster.config, node_id, cluster.metadata)
        self.clock: Clock = cluster.clock
        self.metadata: ClusterMetadata = cluster.metadata
        self.host: str = self.config["host"]
        self.port = port
        self.log_dir: Path = cluster.data_dir / f"node-{node_id}"
        self.replica_manager = ReplicaManager(node_id, self.log_dir, self.config, self.clock, self.metadata,
                                              self._peer_replicas, self._on_marker)
        self.producer_ids = ProducerIdManager(self.metadata, self.config["producer.id.block.size"])
        self.listener = Listener(self, self.host, port)
        # Online from the moment its logs are open (replication needs it) until stop() begins.
        self.online = False
        self._start_share_groups(cluster)
        offsets_log = ReplicaCoordinatorLog(self.replica_manager, GROUP_TOPIC)
        share_context = ShareGroupContext(self.share_topics, cluster.group_configs, SharePartitionLeaders(cluster))
        consumer_context = ConsumerGroupContext(self.share_topics, cluster.group_configs,
                                                _describe_topic(cluster.security.authorizer))
        self.group_coordinator = GroupCoordinator(node_id, self.config, self.clock, offsets_log, self.metadata,
                                                  share_context, consumer_context)
        self.txn_coordinator = self._transaction_coordinator()
        # KIP-890: the leader's and the group coordinator's question to an id's transaction coordinator.
        self.produce_verifier = ProduceVerifier(self.config, self.replica_manager, self.txn_coordinator_of)
        self.txn_offset_commit_verifier = TxnOffsetCommitVerifier(self.config, self.replica_manager,
                                                                  self.txn_coordinator_of)

    def _start_share_groups(self, cluster: Cluster) -> None:
        """The share coordinator (this node's `__share_group_state` partitions), the share-partition manager
        (share sessions, ShareFetch, ShareAcknowledge for the partitions it leads) and the admin flows."""
        state_log = ReplicaCoordinatorLog(self.replica_manager, SHARE_STATE_TOPIC)
        self.share_coordinator = ShareCoordinator(
            self.node_id, state_log, self.metadata, self.clock,
            self.config["share.coordinator.snapshot.update.records.per.snapshot"],
            ReplicaStatePruner(self.replica_manager), self.config["share.coordinator.state.topic.prune.interval.ms"],
            self.config["share.coordinator.cold.partition.snapshot.interval.ms"],
            CoordinatorLoader(state_log, self.config["share.coordinator.load.buffer.size"], self.clock))
        router = self.share_router = ShareCoordinatorRouter(ClusterShareNodes(cluster))
        self.share_persister = ShareStatePersister(router)
        self.share_topics = MetadataTopics(self.metadata)
        self.share_partition_manager = SharePartitionManager(
            self.node_id, self.replica_manager, self.share_topics, self.share_persister, cluster.group_configs,
            self.clock, self.config["group.share.max.share.sessions"])
        self.share_group_offsets = ShareGroupOffsets(
            self.share_persister, router, self.share_topics, PartitionEnds(cluster), SharePartitionLeaders(cluster),
            lambda group_id: cluster.group_configs.share_isolation_level(group_id) == "read_committed")

    def _transaction_coordinator(self) -> TransactionCoordinator:
        txn_log = ReplicaCoordinatorLog(self.replica_manager, TXN_TOPIC)
        state_manager = TransactionStateManager(self.node_id, self.config, self.clock, txn_log, self.metadata)
        bugs = UpstreamBugs(self.config)  # test-only fault injection, off unless fault.injection is set
        channel = TransactionMarkerChannelManager(state_manager, self.metadata, FaultyMarkerWriter(self, bugs),
                                                  self._is_online)
        return TransactionCoordinator(self.node_id, self.config, self.clock, state_manager, channel,
                                      self.producer_ids, self._is_online, bugs)

    # ---- what the subsystems are given -------------------------------------------------------------
    def _is_online(self) -> bool:
        return self.online

    def _peer_replicas(self, node_id: int) -> ReplicaManager | None:
        node = self.cluster.live_node(node_id)
        return node.replica_manager if node is not None else None

    def _on_marker(self, topic: str, partition: int, producer_id: int, commit: bool) -> None:
        if topic == GROUP_TOPIC:
            # Transactional offset commits become visible (or are dropped) with the marker.
            self.group_coordinator.on_transaction_marker(partition, producer_id, commit)
        elif topic == SHARE_STATE_TOPIC:
            # KIP-1289: TxnShareAcknowledge registered this `__share_group_state` partition in the
            # transaction, but the staged records live on the share-partitions' leaders, generally other
            # nodes. The KIP broadcasts the marker to every share-partition of the broker that receives
            # it; in one process every live node can be told, so each share-partition leader sees it
            # wherever the state partition's leader is (the per-record producer id filters the rest).
            # The staged acknowledgements written in this partition (durable, for a restart) take effect
            # or are dropped here first, as transactional offset commits do.
            self.share_coordinator.on_transaction_marker(partition, producer_id, commit)
            for node in self.cluster.nodes.values():
                if node.online:
                    node.share_partition_manager.on_txn_marker(producer_id, commit)

    def write_marker(self, leader: int, tp: TopicPartition, producer_id: int, producer_epoch: int, commit: bool,
                     coordinator_epoch: int, transaction_version: int, transactional_id: str = "") -> int:
        """The marker channel's MarkerWriter: WriteTxnMarkers for one partition, sent to node `leader`."""
        replicas = self._peer_replicas(leader)
        part = replicas.get(*tp) if replicas is not None else None
        if part is None:
            return E.NOT_LEADER_OR_FOLLOWER
        return part.write_marker(producer_id, producer_epoch, commit, coordinator_epoch, transaction_version)

    def producer_epoch_on(self, leader: int, tp: TopicPartition, producer_id: int) -> tuple[int, bool] | None:
        """(epoch, open transaction?) of a producer on node `leader`'s replica (kafka_txn_broker/txn/faults.py)."""
        replicas = self._peer_replicas(leader)
        part = replicas.get(*tp) if replicas is not None else None
        entry = part.log.producer_state.last_entry(producer_id) if part is not None else None
        if entry is None:
            return None
        return entry.producer_epoch, entry.current_txn_first_offset is not None

    # ---- lookups for the request handlers -----------------------------------------------------------
    def internal_topic(self, name: str) -> TopicState:
        """__consumer_offsets, __transaction_state or __share_group_state, created with its configured size
        (and, for the last, Kafka's topic configs for it) on first use."""
        if name == SHARE_STATE_TOPIC:
            ClusterShareNodes(self.cluster).ensure_share_state_topic()
            return self.metadata.topics[name]
        partitions, replication = _INTERNAL_TOPIC_SETTINGS[name]
        return self.cluster.ensure_internal_topic(name, self.config[partitions], self.config[replication])

    def txn_coordinator_of(self, transactional_id: str) -> TransactionCoordinator | None:
        """The transaction coordinator of an id (on this node or another), None when it is unavailable."""
        count = self.metadata.partition_count(TXN_TOPIC)
        if count is None:
            return None
        leader = self.metadata.leader(TXN_TOPIC, partition_for(transactional_id, count))
        node = self.cluster.live_node(leader) if leader is not None else None
        return node.txn_coordinator if node is not None else None

    def _write_meta_properties(self) -> None:
        # The same file a KRaft broker keeps in each log dir; the sweep reads node.id from it.
        self.log_dir.mkdir(parents=True, exist_ok=True)
        meta = self.log_dir / "meta.properties"
        if not meta.exists():
            meta.write_text(f"version=1\nnode.id={self.node_id}\ncluster.id={self.config['cluster.id']}\n")

    def open_logs(self) -> None:
        self._write_meta_properties()
        self.replica_manager.open_replicas()
        self.online = True

    async def start_listener(self) -> None:
        self.port = await self.listener.start()

    async def stop(self) -> None:
        self.online = False
        await self.listener.stop()
        self.group_coordinator.shutdown()
        self.txn_coordinator.shutdown()
        self.share_coordinator.shutdown()
        self.replica_manager.shutdown()

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    # ---- hooks the cluster calls ---------------------------------------------------------------
    def on_started(self) -> None:
        partitions = list(self.metadata.all_partitions())
        self.group_coordinator.on_leadership_change(partitions)
        self.txn_coordinator.on_leadership_change(partitions)
        self.share_coordinator.on_leadership_change(partitions)

    def on_leadership_change(self, changed: list[PartitionState]) -> None:
        self.replica_manager.on_leadership_change(changed)
        self.group_coordinator.on_leadership_change(changed)
        self.txn_coordinator.on_leadership_change(changed)
        self.share_coordinator.on_leadership_change(changed)
        self.share_partition_manager.on_leadership_change(changed)
        self.replica_manager.notify_data()

    def on_config_change(self, resource_type: int, name: str) -> None:
        if resource_type == ResourceType.BROKER:
            self.config.reload()
        self.replica_manager.on_config_change(resource_type, name)

    def tick(self) -> None:
        now = self.clock.millis()
        self.replica_manager.tick(now)
        self.group_coordinator.tick(now)
        self.txn_coordinator.tick(now)
        self.share_coordinator.tick(now)
        self.share_partition_manager.tick()


def _describe_topic(authorizer: AclAuthorizer | None) -> TopicDescribeCheck | None:
    """The group coordinator's question to the authorizer when it resolves a regex subscription."""
    if authorizer is None:
        return None

    def check(principal: str, host: str, topic: str) -> bool:
        return authorizer.authorize(principal, host, Op.DESCRIBE, AclResource.TOPIC, topic)
    return check
