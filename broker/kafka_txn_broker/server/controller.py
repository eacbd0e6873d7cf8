"""What a broker forwards to the controller (Kafka's ForwardingManager, answered by the controller's
ReplicationControlManager and ConfigurationControlManager): topic creation and deletion, CreatePartitions,
leader elections, partition reassignments and dynamic config changes.

The controller of an embedded cluster is the cluster itself, in this process: each call is answered within
the call. A request handler reaches it only through the inter-broker channel (`channel.controller`), the
seam a multi-process cluster would replace with the forwarded requests. Event-loop owned.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from kafka_txn_broker.configs.configuration_control import ConfigurationControl
from kafka_txn_broker.formats.partitioning import SHARE_STATE_TOPIC, TXN_TOPIC
from kafka_txn_broker.metadata.topics import PartitionState, TopicState

if TYPE_CHECKING:
    from kafka_txn_broker.configs.broker_config import BrokerConfig
    from kafka_txn_broker.server.cluster import Cluster
    from kafka_txn_broker.server.partition_change import Election

# The size, replication factor and segment size settings of each internal topic (created on first use).
_INTERNAL_TOPIC_SETTINGS = {
    TXN_TOPIC: ("transaction.state.log.num.partitions", "transaction.state.log.replication.factor",
                "transaction.state.log.segment.bytes", "compact"),
    SHARE_STATE_TOPIC: ("share.coordinator.state.topic.num.partitions",
                        "share.coordinator.state.topic.replication.factor",
                        "share.coordinator.state.topic.segment.bytes", "delete"),
}
_OFFSETS_SETTINGS = ("offsets.topic.num.partitions", "offsets.topic.replication.factor", "offsets.topic.segment.bytes",
                     "compact")


def internal_topic_configs(name: str, config: BrokerConfig) -> dict[str, str]:
    """Kafka's topic configs for an internal topic (cleanup policy, segment size), so DescribeConfigs shows them."""
    _partitions, _replication, segment, policy = _INTERNAL_TOPIC_SETTINGS.get(name, _OFFSETS_SETTINGS)
    return {"cleanup.policy": policy, "segment.bytes": str(config[segment])}


class Controller:
    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster

    # ---- topics ------------------------------------------------------------------------------------
    def create_topic(self, name: str, partitions: int, replication_factor: int,
                     configs: Mapping[str, str] | None = None, *, validate_only: bool = False,
                     cap_replication: bool = False, assignments: list[list[int]] | None = None) -> TopicState:
        """CreateTopics (or auto-creation with `cap_replication`); `validate_only` checks and creates nothing."""
        if validate_only:
            return self._cluster.metadata.create_topic(name, partitions, replication_factor, dict(configs or {}),
                                                       validate_only=True, assignments=assignments)
        return self._cluster.create_topic(name, partitions, replication_factor, configs,
                                          cap_replication=cap_replication, assignments=assignments)

    def delete_topic(self, name: str) -> None:
        self._cluster.delete_topic(name)

    def internal_topic(self, name: str, config: BrokerConfig) -> TopicState:
        """__consumer_offsets, __transaction_state or __share_group_state, created on first use with the size,
        replication factor and segment size the asking broker's config gives it, and Kafka's cleanup policy."""
        partitions, replication, _segment, _policy = _INTERNAL_TOPIC_SETTINGS.get(name, _OFFSETS_SETTINGS)
        return self._cluster.ensure_internal_topic(name, config[partitions], config[replication],
                                                   internal_topic_configs(name, config))

    # ---- partitions (the controller's ReplicationControlManager) -----------------------------------
    def create_partitions(self, name: str, count: int, assignments: list[list[int]] | None,
                          validate_only: bool = False) -> list[PartitionState]:
        return self._cluster.replication.create_partitions(name, count, assignments, validate_only)

    def topic_assignments(self, assignments: dict[int, list[int]]) -> list[list[int]]:
        return self._cluster.replication.topic_assignments(assignments)

    def elect_leader(self, topic: str, partition: int, election: Election) -> None:
        self._cluster.replication.elect_leader(topic, partition, election)

    def alter_reassignment(self, topic: str, partition: int, replicas: list[int] | None) -> None:
        self._cluster.replication.alter_reassignment(topic, partition, replicas)

    def reassignments(self, topics: dict[str, list[int]] | None) -> list[PartitionState]:
        return self._cluster.replication.reassignments(topics)

    # ---- dynamic configs (the controller's ConfigurationControlManager) ----------------------------
    def configuration(self, broker: BrokerConfig, node_id: int) -> ConfigurationControl:
        """IncrementalAlterConfigs / AlterConfigs as received by node `node_id` (its view of the broker config)."""
        return ConfigurationControl(self._cluster.metadata, broker, node_id)
