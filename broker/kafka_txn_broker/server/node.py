"""One broker node: its log dir, replicas, coordinators and listener, and how they are wired.

The node builds each subsystem with the collaborators it uses (Kafka's BrokerServer does the same): the
replica manager gets the metadata view, the controller (for its AlterPartition requests) and the other nodes'
replicas through the inter-broker channel; each coordinator gets its internal topic as a CoordinatorLog (which
its coordinator runtime loads and writes), the metadata view, the config and the clock; the marker channel
gets the inter-broker channel as its MarkerWriter; the transaction verifiers (Produce, TxnOffsetCommit) get
the config, the replicas and the channel's txn_coordinator_of. The request handler comes from the layer above
(apis) as a factory and gets this node's BrokerServices. Whatever crosses to another node goes through the
InterBrokerChannel: only cluster.py, inter_broker.py and controller.py know the nodes of the cluster. On the
cluster's event loop, like all broker state.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_txn_broker.configs.config_def import ResourceType
from kafka_txn_broker.configs.dynamic_broker_config import DynamicBrokerConfig
from kafka_txn_broker.coordinator.coordinator_log import ReplicaCoordinatorLog
from kafka_txn_broker.coordinator.loader import CoordinatorLoader
from kafka_txn_broker.formats.partitioning import GROUP_TOPIC, SHARE_STATE_TOPIC, TXN_TOPIC
from kafka_txn_broker.group.consumer_membership import ConsumerGroupContext, TopicDescribeCheck
from kafka_txn_broker.group.coordinator import GroupCoordinator
from kafka_txn_broker.group.share_membership import ShareGroupContext
from kafka_txn_broker.metadata.view import MetadataTopics
from kafka_txn_broker.replica.replica_manager import ReplicaManager
from kafka_txn_broker.security.acls import Op
from kafka_txn_broker.security.acls import ResourceType as AclResource
from kafka_txn_broker.server.broker_services import BrokerServices
from kafka_txn_broker.server.producer_id_manager import ProducerIdManager
from kafka_txn_broker.server.socket_server import Listener, RequestHandler
from kafka_txn_broker.share.persister import ShareStatePersister
from kafka_txn_broker.share.replica_state_pruner import ReplicaStatePruner
from kafka_txn_broker.share.share_coordinator import ShareCoordinator, ShareCoordinatorRouter
from kafka_txn_broker.share.share_group_offsets import ShareGroupOffsets
from kafka_txn_broker.share.share_partition_manager import SharePartitionManager
from kafka_txn_broker.txn.coordinator import TransactionCoordinator
from kafka_txn_broker.txn.faults import FaultyMarkerWriter, UpstreamBugs
from kafka_txn_broker.txn.marker_channel import TransactionMarkerChannelManager, skips_leaderless_partitions
from kafka_txn_broker.txn.offset_commit_verification import TxnOffsetCommitVerifier
from kafka_txn_broker.txn.state_manager import TransactionStateManager
from kafka_txn_broker.txn.verification import ProduceVerifier

if TYPE_CHECKING:
    from kafka_txn_broker.clock import Clock
    from kafka_txn_broker.metadata.topics import PartitionState
    from kafka_txn_broker.security.authorizer import AclAuthorizer
    from kafka_txn_broker.server.cluster import Cluster
    from kafka_txn_broker.server.cluster_metadata import ClusterMetadata
    from kafka_txn_broker.server.inter_broker import InterBrokerChannel

log = logging.getLogger(__name__)

# The request side of a node, made from its services (apis/request_handler.py's KafkaApis).
RequestHandlerFactory = Callable[[BrokerServices], RequestHandler]


class BrokerNode:
    def __init__(self, cluster: Cluster, node_id: int, port: int, channel: InterBrokerChannel,
                 request_handler: RequestHandlerFactory) -> None:
        self.node_id = node_id
        # Its view of the broker config: dynamic per-broker and cluster-default values over the static ones.
        self.config = DynamicBrokerConfig(cluster.config, node_id, cluster.metadata)
        self.clock: Clock = cluster.clock
        self.metadata: ClusterMetadata = cluster.metadata
        self.channel = channel
        self.host: str = self.config["host"]
        self.port = port
        self.log_dir: Path = cluster.data_dir / f"node-{node_id}"
        self.replica_manager = ReplicaManager(node_id, self.log_dir, self.config, self.clock, self.metadata,
                                              self.metadata, channel.replica_manager, self._on_marker)
        self.producer_ids = ProducerIdManager(self.metadata, self.config["producer.id.block.size"])
        # Online from the moment its logs are open (replication needs it) until stop() begins.
        self.online = False
        self._start_share_groups(cluster)
        offsets_log = ReplicaCoordinatorLog(self.replica_manager, GROUP_TOPIC)
        share_context = ShareGroupContext(self.share_topics, cluster.group_configs, channel)
        consumer_context = ConsumerGroupContext(self.share_topics, cluster.group_configs,
                                                _describe_topic(cluster.security.authorizer))
        self.group_coordinator = GroupCoordinator(node_id, self.config, self.clock, offsets_log, self.metadata,
                                                  share_context, consumer_context)
        self.txn_coordinator = self._transaction_coordinator()
        # KIP-890: the leader's and the group coordinator's question to an id's transaction coordinator.
        self.produce_verifier = ProduceVerifier(self.config, self.replica_manager, channel.txn_coordinator_of)
        self.txn_offset_commit_verifier = TxnOffsetCommitVerifier(self.config, self.replica_manager,
                                                                  channel.txn_coordinator_of)
        self.services = BrokerServices(
            node_id, self.config, self.log_dir, self.metadata, self.replica_manager, self.group_coordinator,
            self.txn_coordinator, self.share_router, self.share_partition_manager, self.share_group_offsets,
            self.producer_ids, self.produce_verifier, self.txn_offset_commit_verifier, channel, self._is_online)
        self.listener = Listener(self.host, port, self.config, cluster.security, request_handler(self.services))

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
        router = self.share_router = ShareCoordinatorRouter(self.channel)
        self.share_persister = ShareStatePersister(router)
        self.share_topics = MetadataTopics(self.metadata)
        self.share_partition_manager = SharePartitionManager(
            self.node_id, self.replica_manager, self.share_topics, self.share_persister, cluster.group_configs,
            self.clock, self.config["group.share.max.share.sessions"])
        self.share_group_offsets = ShareGroupOffsets(
            self.share_persister, router, self.share_topics, self.channel, self.channel,
            lambda group_id: cluster.group_configs.share_isolation_level(group_id) == "read_committed")

    def _transaction_coordinator(self) -> TransactionCoordinator:
        txn_log = ReplicaCoordinatorLog(self.replica_manager, TXN_TOPIC)
        state_manager = TransactionStateManager(self.node_id, self.config, self.clock, txn_log, self.metadata)
        bugs = UpstreamBugs(self.config)  # test-only fault injection, off unless fault.injection is set
        channel = TransactionMarkerChannelManager(state_manager, self.metadata, FaultyMarkerWriter(self.channel, bugs),
                                                  self._is_online, skips_leaderless_partitions(self.config))
        return TransactionCoordinator(self.node_id, self.config, self.clock, state_manager, channel,
                                      self.producer_ids, self._is_online, bugs)

    # ---- what the subsystems are given -------------------------------------------------------------
    def _is_online(self) -> bool:
        return self.online

    def _on_marker(self, topic: str, partition: int, producer_id: int, commit: bool) -> None:
        if topic == GROUP_TOPIC:
            # Transactional offset commits become visible (or are dropped) with the marker.
            self.group_coordinator.on_transaction_marker(partition, producer_id, commit)
        elif topic == SHARE_STATE_TOPIC:
            # KIP-1289: TxnShareAcknowledge registered this `__share_group_state` partition in the
            # transaction, but the staged records live on the share-partitions' leaders, generally other
            # nodes: the channel broadcasts the marker to them. The staged acknowledgements written in this
            # partition (durable, for a restart) take effect or are dropped here first, as transactional
            # offset commits do.
            self.share_coordinator.on_transaction_marker(partition, producer_id, commit)
            self.channel.broadcast_share_marker(producer_id, commit)

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

    async def stop(self, *, clean: bool = True) -> None:
        """Stop serving; `clean=False` stops it as kill -9 would: its logs keep what was appended but get
        no snapshot and no clean-shutdown marker, so its next start recovers them."""
        self.online = False
        await self.listener.stop()
        self.group_coordinator.shutdown()
        self.txn_coordinator.shutdown()
        self.share_coordinator.shutdown()
        self.replica_manager.shutdown(clean=clean)

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
