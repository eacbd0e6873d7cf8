"""One broker node: its log dir, replicas, coordinators and listener."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_txn_broker.config import BrokerConfig
from kafka_txn_broker.replica.replica_manager import ReplicaManager
from kafka_txn_broker.server.producer_id_manager import ProducerIdManager
from kafka_txn_broker.server.socket_server import Listener

if TYPE_CHECKING:
    from kafka_txn_broker.clock import Clock
    from kafka_txn_broker.server.cluster import Cluster
    from kafka_txn_broker.server.metadata import PartitionState

log = logging.getLogger(__name__)


class BrokerNode:
    def __init__(self, cluster: Cluster, node_id: int, port: int) -> None:
        self.cluster = cluster
        self.node_id = node_id
        self.config: BrokerConfig = cluster.config
        self.clock: Clock = cluster.clock
        self.host: str = self.config["host"]
        self.port = port
        self.log_dir: Path = cluster.data_dir / f"node-{node_id}"
        self.replica_manager = ReplicaManager(self)
        self.producer_ids = ProducerIdManager(cluster.metadata, self.config["producer.id.block.size"])
        self.listener = Listener(self, self.host, port)
        # Online from the moment its logs are open (replication needs it) until stop() begins.
        self.online = False
        from kafka_txn_broker.group.coordinator import GroupCoordinator

        self.group_coordinator = GroupCoordinator(self)
        from kafka_txn_broker.txn.coordinator import TransactionCoordinator

        self.txn_coordinator = TransactionCoordinator(self)

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
        self.replica_manager.shutdown()

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    # ---- hooks the cluster calls ---------------------------------------------------------------
    def on_started(self) -> None:
        self.group_coordinator.on_leadership_change(list(self.cluster.metadata.all_partitions()))
        self.txn_coordinator.on_leadership_change(list(self.cluster.metadata.all_partitions()))

    def on_leadership_change(self, changed: list[PartitionState]) -> None:
        self.replica_manager.on_leadership_change(changed)
        self.group_coordinator.on_leadership_change(changed)
        self.txn_coordinator.on_leadership_change(changed)
        self.replica_manager.notify_data()

    def tick(self) -> None:
        now = self.clock.millis()
        self.replica_manager.tick(now)
        self.group_coordinator.tick(now)
        self.txn_coordinator.tick(now)
