"""A small embedded cluster on a manual clock, and helpers that drive its coordinators and logs on its loop
(the `harness` fixture of tests/broker/conftest.py)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from kafka_txn_broker.clock import ManualClock
from kafka_txn_broker.embedded import EmbeddedCluster
from kafka_txn_broker.formats.partitioning import TXN_TOPIC, partition_for
from kafka_txn_broker.formats.record_batch import build_batch
from kafka_txn_broker.server.node import BrokerNode
from kafka_txn_broker.txn.coordinator import TransactionCoordinator
from kafka_txn_broker.txn.transaction_metadata import TransactionMetadata

T = TypeVar("T")
TXN_PARTITIONS = 5


class Harness:
    def __init__(self, cluster: EmbeddedCluster, clock: ManualClock) -> None:
        self.cluster = cluster
        self.clock = clock
        assert cluster.cluster is not None
        self.core = cluster.cluster
        self.run(lambda: self.core.ensure_internal_topic(TXN_TOPIC, TXN_PARTITIONS, 3))

    def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Call fn on the broker's loop; markers scheduled by it run before the next call."""
        result: T = self.cluster.call_soon(fn, *args)
        self.cluster.call_soon(lambda: None)  # let call_soon work (marker sends) finish
        return result

    def coordinator_node(self, txn_id: str) -> BrokerNode:
        state = self.core.metadata.topics[TXN_TOPIC].partitions[partition_for(txn_id, TXN_PARTITIONS)]
        return self.core.nodes[state.leader]

    def coord(self, txn_id: str) -> TransactionCoordinator:
        return self.coordinator_node(txn_id).txn_coordinator

    def metadata(self, txn_id: str) -> TransactionMetadata | None:
        return self.run(lambda: self.coord(txn_id).state_manager.get(txn_id)[1])

    def init(self, txn_id: str, timeout_ms: int = 60000, pid: int = -1, epoch: int = -1) -> tuple[int, int, int]:
        return self.run(lambda: self.coord(txn_id).init_producer_id(txn_id, timeout_ms, pid, epoch))

    def add(self, txn_id: str, pid: int, epoch: int, *parts: tuple[str, int], tv: int = 0) -> int:
        return self.run(lambda: self.coord(txn_id).add_partitions_to_transaction(txn_id, pid, epoch, parts, tv))

    def end(self, txn_id: str, pid: int, epoch: int, commit: bool, tv: int = 0) -> tuple[int, int, int]:
        return self.run(lambda: self.coord(txn_id).end_transaction(txn_id, pid, epoch, commit, client_tv=tv))

    def leader_log(self, topic: str, partition: int) -> Any:
        state = self.core.metadata.partition(topic, partition)
        part = self.core.nodes[state.leader].replica_manager.get(topic, partition)
        assert part is not None
        return part

    def produce(self, topic: str, partition: int, pid: int, epoch: int, seq: int, n: int = 2,
                transactional: bool = True) -> int:
        batch = build_batch([(None, f"v{i}".encode()) for i in range(n)], timestamp_ms=self.clock.millis(),
                            producer_id=pid, producer_epoch=epoch, base_sequence=seq, transactional=transactional)
        return self.run(lambda: self.leader_log(topic, partition).append_as_leader(batch, -1).first_offset)

    def lso(self, topic: str, partition: int) -> tuple[int, int]:
        return self.run(lambda: (self.leader_log(topic, partition).log.last_stable_offset,
                                 self.leader_log(topic, partition).log.high_watermark))

    def tick(self, advance_ms: int = 0) -> None:
        self.clock.advance(advance_ms)
        self.cluster.tick()
        self.run(lambda: None)


@contextlib.contextmanager
def make_harness(tmp_path: Path, nodes: int = 3, config: dict[str, Any] | None = None) -> Iterator[Harness]:
    clock = ManualClock()
    cfg = {"transaction.state.log.num.partitions": TXN_PARTITIONS, "offsets.topic.num.partitions": 3}
    cfg.update(config or {})
    with EmbeddedCluster(nodes=nodes, data_dir=tmp_path / "kafka", config=cfg, clock=clock) as cluster:
        h = Harness(cluster, clock)
        cluster.create_topic("t", 3, min(3, nodes))
        yield h
