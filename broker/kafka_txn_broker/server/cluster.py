"""EmbeddedCluster: N broker nodes in one process, each on its own port with its own log dir.

`Cluster` is the asyncio core (metadata, nodes, leadership moves); `EmbeddedCluster` runs it on a
private event loop thread so synchronous code and tests can use real Kafka clients against it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import tempfile
import threading
from collections.abc import Coroutine, Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

from kafka_txn_broker.clock import SYSTEM_CLOCK, Clock
from kafka_txn_broker.config import BrokerConfig
from kafka_txn_broker.configs.config_def import ResourceType
from kafka_txn_broker.configs.dynamic_broker_config import DynamicBrokerConfig
from kafka_txn_broker.configs.group_config_manager import GroupConfigManager
from kafka_txn_broker.formats.partitioning import TXN_TOPIC
from kafka_txn_broker.security.auth import ClusterSecurity
from kafka_txn_broker.server.metadata import ClusterMetadata, PartitionState, TopicState
from kafka_txn_broker.server.node import BrokerNode
from kafka_txn_broker.server.replication_control import ReplicationControlManager

log = logging.getLogger(__name__)
T = TypeVar("T")

TICK_SECONDS = 0.1


class Cluster:
    def __init__(self, nodes: int, data_dir: Path, config: BrokerConfig, clock: Clock = SYSTEM_CLOCK,
                 ports: list[int] | None = None) -> None:
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
        self.nodes = {i: BrokerNode(self, i, (ports or [0] * nodes)[i]) for i in range(nodes)}
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

    async def stop_node(self, node_id: int) -> None:
        node = self.nodes[node_id]
        if not node.online:
            return
        await node.stop()
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
        topic = self.metadata.topics.get(name)
        if topic is None:
            if configs is None:
                # Kafka's own topic configs for them, so DescribeConfigs shows their segment size.
                segment_key = ("transaction.state.log.segment.bytes" if name == TXN_TOPIC
                               else "offsets.topic.segment.bytes")
                configs = {"cleanup.policy": "compact", "segment.bytes": str(self.config[segment_key])}
            topic = self.create_topic(name, partitions, replication_factor, configs, cap_replication=True)
        return topic


class EmbeddedCluster:
    """A Kafka cluster in this process, for tests, demos and incident rehearsal.

        with EmbeddedCluster(nodes=3, data_dir=tmp) as cluster:
            Producer({"bootstrap.servers": cluster.bootstrap_servers})
    """

    def __init__(self, nodes: int = 3, data_dir: str | Path | None = None,
                 config: Mapping[str, Any] | None = None, clock: Clock = SYSTEM_CLOCK,
                 ports: list[int] | None = None) -> None:
        self._owns_dir = data_dir is None
        self.data_dir = Path(data_dir) if data_dir is not None else Path(tempfile.mkdtemp(prefix="kafka-txn-"))
        self.config = BrokerConfig(config)
        self.clock = clock
        self._node_count = nodes
        self._ports = ports
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self.cluster: Cluster | None = None

    # ---- loop plumbing ---------------------------------------------------------------------------
    def _run_loop(self, ready: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        ready.set()
        loop.run_forever()
        try:
            _finish_leftover_tasks(loop)
        finally:
            loop.close()

    def call(self, coro: Coroutine[Any, Any, T], timeout: float = 60.0) -> T:
        """Run a coroutine on the cluster's loop and wait for its result."""
        assert self._loop is not None, "cluster not started"
        fut: Future[T] = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return fut.result(timeout)

    def call_soon(self, fn: Any, *args: Any) -> Any:
        """Run a plain function on the loop thread (the broker's state is not thread-safe)."""

        async def wrapper() -> Any:
            return fn(*args)

        return self.call(wrapper())

    # ---- public API ------------------------------------------------------------------------------
    def start(self) -> EmbeddedCluster:
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run_loop, args=(ready,), name="kafka-txn-broker",
                                        daemon=True)
        self._thread.start()
        ready.wait()
        self.cluster = Cluster(self._node_count, self.data_dir, self.config, self.clock, self._ports)
        self.call(self.cluster.start())
        self._ports = [n.port for n in self.cluster.nodes.values()]
        return self

    def stop(self) -> None:
        if self.cluster is not None:
            self.call(self.cluster.stop())
            self.cluster = None
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None
        self._loop = None

    def close(self) -> None:
        self.stop()
        if self._owns_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> EmbeddedCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def bootstrap_servers(self) -> str:
        assert self.cluster is not None, "cluster not started"
        return ",".join(f"{n.host}:{n.port}" for n in self.cluster.nodes.values())

    @property
    def node_ids(self) -> list[int]:
        assert self.cluster is not None
        return list(self.cluster.nodes)

    def stop_node(self, node_id: int) -> None:
        assert self.cluster is not None
        self.call(self.cluster.stop_node(node_id))

    def start_node(self, node_id: int) -> None:
        assert self.cluster is not None
        self.call(self.cluster.start_node(node_id))

    def restart(self) -> None:
        """Stop every node cleanly and start them again on the same ports and data."""
        assert self.cluster is not None
        self.call(self.cluster.stop())
        self.cluster = Cluster(self._node_count, self.data_dir, self.config, self.clock, self._ports)
        self.call(self.cluster.start())

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 1,
                     configs: Mapping[str, str] | None = None, *, assignments: list[list[int]] | None = None) -> None:
        """A topic placed round-robin, or as `assignments` say (partition i on the nodes assignments[i],
        the first one leading): then `partitions` and `replication_factor` come from them."""
        assert self.cluster is not None
        cluster = self.cluster
        if assignments is not None:
            partitions, replication_factor = len(assignments), len(assignments[0])

        def create() -> None:
            cluster.create_topic(name, partitions, replication_factor, configs, assignments=assignments)

        self.call_soon(create)

    def tick(self) -> None:
        assert self.cluster is not None
        self.call_soon(self.cluster.tick)


def _finish_leftover_tasks(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel what is still running when the loop stops (e.g. a TLS connection whose handshake ended
    while the node was stopping) and let it unwind now: left for the garbage collector, it would try to
    schedule its socket's shutdown on the closed loop."""
    tasks = asyncio.all_tasks(loop)
    for task in tasks:
        task.cancel()
    if tasks:
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
    loop.run_until_complete(loop.shutdown_asyncgens())
