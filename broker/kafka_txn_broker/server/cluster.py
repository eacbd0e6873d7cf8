"""Cluster: N broker nodes in one process, each on its own port with its own log dir, and the controller
that moves leadership between them.

`Cluster` is the asyncio core (metadata, nodes, leadership moves); the request side of each node comes
from the layer above as a factory (kafka_txn_broker/embedded.py wires in apis' KafkaApis and runs the
cluster on a thread of its own, or in the foreground). Nodes reach each other only through the
InterBrokerChannel (server/inter_broker.py). On the cluster's event loop, like all broker state.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from pathlib import Path

from kafka_txn_broker.clock import SYSTEM_CLOCK, Clock
from kafka_txn_broker.configs.broker_config import BrokerConfig
from kafka_txn_broker.configs.config_def import ResourceType
from kafka_txn_broker.configs.dynamic_broker_config import DynamicBrokerConfig
from kafka_txn_broker.configs.group_config_manager import GroupConfigManager
from kafka_txn_broker.metadata.topics import PartitionState, TopicState
from kafka_txn_broker.security.auth import ClusterSecurity
from kafka_txn_broker.server.cluster_metadata import ClusterMetadata
from kafka_txn_broker.server.controller import internal_topic_configs
from kafka_txn_broker.server.inter_broker import InterBrokerChannel
from kafka_txn_broker.server.node import BrokerNode, RequestHandlerFactory
from kafka_txn_broker.server.replication_control import ReplicationControlManager

log = logging.getLogger(__name__)

TICK_SECONDS = 0.1


class Cluster:
    def __init__(self, nodes: int, data_dir: Path, config: BrokerConfig, clock: Clock = SYSTEM_CLOCK,
                 ports: list[int] | None = None, *, request_handler: RequestHandlerFactory) -> None:
        if nodes < 1:
            raise ValueError("an embedded cluster needs at least one node")
        if ports is not None and len(ports) != nodes:
            raise ValueError(f"{len(ports)} ports given for {nodes} nodes")
        self.data_dir = data_dir
        self.config = config
        self.clock = clock
        # TLS context, SASL credentials and ACLs: built before anything listens (ConfigError if wrong).
        self.security = ClusterSecurity.from_config(config, data_dir, clock)
        self.metadata = ClusterMetadata(data_dir, range(nodes))
        self.metadata.add_listener(self._on_leadership_change)
        self.metadata.add_config_listener(self._on_config_change)
        # Effective group configs for the coordinators (a group's override, else the broker default).
        self.group_configs = GroupConfigManager(self.metadata, config)
        # The controller's broker configs: the cluster-wide dynamic values over the static ones.
        self.controller_config = DynamicBrokerConfig(config, -1, self.metadata)
        self.replication = ReplicationControlManager(self.metadata, self.unclean_leader_election_enabled)
        # What crosses from one node to another (and to the controller) goes through this one object.
        self.channel = InterBrokerChannel(self)
        self.nodes = {i: BrokerNode(self, i, (ports or [0] * nodes)[i], self.channel, request_handler)
                      for i in range(nodes)}
        self._ticker: asyncio.Task[None] | None = None

    # ---- lifecycle ---------------------------------------------------------------------------
    async def start(self) -> None:
        for node_id in self.nodes:
            self.metadata.node_started(node_id)
        for node in self.nodes.values():
            node.open_logs()
        for state in list(self.metadata.all_partitions()):
            self._reconcile(state)
        for node in self.nodes.values():
            await node.start_listener()
        for node in self.nodes.values():
            node.on_started()
        self._ticker = asyncio.create_task(self._tick_loop())

    async def stop(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
            self._ticker = None
        for node in self.nodes.values():
            if node.online:
                await node.stop()
        self.metadata.close()

    async def stop_node(self, node_id: int, *, clean: bool = True) -> None:
        """Take one node offline while the others run (its partitions elect new leaders); `clean=False`
        as a crash (kill -9): its logs are recovered when it starts again."""
        node = self.nodes[node_id]
        if not node.online:
            return
        await node.stop(clean=clean)
        changed = self.metadata.node_stopped(node_id)
        self.replication.elect_unclean_if_allowed(p for p in changed if p.leader == -1)

    async def start_node(self, node_id: int) -> None:
        node = self.nodes[node_id]
        if node.online:
            return
        self.metadata.node_started(node_id)
        node.open_logs()
        for state in list(self.metadata.all_partitions()):
            if node_id in state.replicas:
                self._reconcile(state)
        await node.start_listener()
        node.on_started()

    def _reconcile(self, state: PartitionState) -> None:
        """After (re)start: bring an offline partition back (an out-of-sync replica only where the topic
        allows unclean elections), catch followers up, restore the preferred leader
        (auto.leader.rebalance.enable)."""
        if state.leader == -1 or self.live_node(state.leader) is None:
            candidates = [r for r in state.isr if self.live_node(r) is not None]
            if candidates:
                self.metadata.elect(state, candidates[0])
            elif not self.replication.elect_unclean_if_allowed([state]):
                return
        leader = self.live_node(state.leader)
        assert leader is not None
        part = leader.replica_manager.get(state.topic, state.partition)
        if part is None:
            return
        part.replicate()
        preferred = state.replicas[0]
        if state.leader != preferred and preferred in state.isr and self.live_node(preferred) is not None \
                and self.controller_config["auto.leader.rebalance.enable"]:
            self.metadata.elect(state, preferred)

    def _on_leadership_change(self, changed: list[PartitionState]) -> None:
        online = [node for node in self.nodes.values() if node.online]
        # Every node opens (or deletes) its replicas first, so a leader catches up a replica just added.
        for node in online:
            node.replica_manager.apply_assignments(changed)
        for node in online:
            node.on_leadership_change(changed)

    def _on_config_change(self, resource_type: int, name: str) -> None:
        """Dynamic configs changed (AlterConfigs): every node, online or not, applies them now."""
        for node in self.nodes.values():
            node.on_config_change(resource_type, name)
        self.group_configs.on_config_change(resource_type, name)
        if resource_type == ResourceType.BROKER:
            self.controller_config.reload()

    async def _tick_loop(self) -> None:
        while True:
            await asyncio.sleep(TICK_SECONDS)
            self.tick()

    def tick(self) -> None:
        """Run periodic work (timeouts, expirations) against the clock; tests call it directly."""
        for node in self.nodes.values():
            if node.online:
                try:
                    node.tick()
                except Exception:
                    log.exception("periodic work on node %s failed", node.node_id)

    # ---- lookups and admin ---------------------------------------------------------------------
    def live_node(self, node_id: int) -> BrokerNode | None:
        node = self.nodes.get(node_id)
        return node if node is not None and node.online else None

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(n.address for n in self.nodes.values() if n.online)

    def unclean_leader_election_enabled(self, topic: str) -> bool:
        """The topic's unclean.leader.election.enable, else the broker's (dynamic cluster default, static)."""
        t = self.metadata.topics.get(topic)
        value = t.configs.get("unclean.leader.election.enable") if t is not None else None
        if value is not None:
            return value.strip().lower() == "true"
        return bool(self.controller_config["unclean.leader.election.enable"])

    def controller_id(self) -> int:
        """The node Metadata and DescribeCluster name as controller: the lowest live node id, or -1
        (Kafka's "no controller") once every node went offline, e.g. while the cluster stops with clients
        still connected."""
        return min((node_id for node_id, node in self.nodes.items() if node.online), default=-1)

    def create_topic(self, name: str, partitions: int, replication_factor: int,
                     configs: Mapping[str, str] | None = None, *, cap_replication: bool = False,
                     assignments: list[list[int]] | None = None) -> TopicState:
        # Auto-created and internal topics take what the cluster can give (as Kafka caps the internal
        # topics' factor on small clusters); an explicit CreateTopics gets INVALID_REPLICATION_FACTOR.
        rf = min(replication_factor, len(self.nodes)) if cap_replication else replication_factor
        topic = self.metadata.create_topic(name, partitions, rf, dict(configs or {}), assignments=assignments)
        for node in self.nodes.values():
            if node.online:
                node.replica_manager.add_topic(topic.partitions)
        return topic

    def delete_topic(self, name: str) -> None:
        self.metadata.delete_topic(name)
        for node in self.nodes.values():
            if node.online:
                node.replica_manager.delete_topic(name)

    def ensure_internal_topic(self, name: str, partitions: int, replication_factor: int,
                              configs: Mapping[str, str] | None = None) -> TopicState:
        """An internal topic, created on first use with Kafka's topic configs for it (so DescribeConfigs shows
        its segment size and cleanup policy)."""
        topic = self.metadata.topics.get(name)
        if topic is None:
            configs = internal_topic_configs(name, self.config) if configs is None else configs
            topic = self.create_topic(name, partitions, replication_factor, configs, cap_replication=True)
        return topic
