"""What a node's request handlers may use: this node's own subsystems and the inter-broker channel (the
collaborators Kafka's KafkaApis is built with).

A handler sees its own node only: this node's config, its read-only view of the cluster metadata, its
replicas, its coordinators and share-partition manager, its verifiers. Whatever lives on another node
(a coordinator elsewhere, the controller, another broker's address) goes through `channel`.
Built once by the node; event-loop owned like everything it holds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kafka_txn_broker.configs.dynamic_broker_config import DynamicBrokerConfig
    from kafka_txn_broker.group.coordinator import GroupCoordinator
    from kafka_txn_broker.metadata.topics import TopicState
    from kafka_txn_broker.metadata.view import MetadataCache
    from kafka_txn_broker.replica.replica_manager import ReplicaManager
    from kafka_txn_broker.server.inter_broker import InterBrokerChannel
    from kafka_txn_broker.server.producer_id_manager import ProducerIdManager
    from kafka_txn_broker.share.share_coordinator import ShareCoordinatorRouter
    from kafka_txn_broker.share.share_group_offsets import ShareGroupOffsets
    from kafka_txn_broker.share.share_partition_manager import SharePartitionManager
    from kafka_txn_broker.txn.coordinator import TransactionCoordinator
    from kafka_txn_broker.txn.offset_commit_verification import TxnOffsetCommitVerifier
    from kafka_txn_broker.txn.verification import ProduceVerifier


@dataclass(frozen=True, slots=True)
class BrokerServices:
    node_id: int
    config: DynamicBrokerConfig
    log_dir: Path
    metadata: MetadataCache
    replica_manager: ReplicaManager
    group_coordinator: GroupCoordinator
    txn_coordinator: TransactionCoordinator
    share_router: ShareCoordinatorRouter
    share_partition_manager: SharePartitionManager
    share_group_offsets: ShareGroupOffsets
    producer_ids: ProducerIdManager
    produce_verifier: ProduceVerifier
    txn_offset_commit_verifier: TxnOffsetCommitVerifier
    channel: InterBrokerChannel
    # False once the node began to stop (a long poll ends then).
    is_online: Callable[[], bool]

    def internal_topic(self, name: str) -> TopicState:
        """__consumer_offsets, __transaction_state or __share_group_state, created by the controller on
        first use, sized by this node's config (Kafka's AutoTopicCreationManager)."""
        return self.channel.controller.internal_topic(name, self.config)
