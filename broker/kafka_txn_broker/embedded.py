"""The embedded cluster, assembled: the broker's nodes (server) with their request side (apis), run on a
thread of its own (EmbeddedCluster, for tests, demos and rehearsals) or in the foreground until SIGTERM /
SIGINT (`kafka-txn broker start`).

This is the one place that joins the two top layers of the broker: `server` knows a node's request handler
only as a factory it is given, and `apis` never starts a node.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Coroutine, Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

from kafka_txn_broker.apis.request_handler import KafkaApis
from kafka_txn_broker.clock import SYSTEM_CLOCK, Clock
from kafka_txn_broker.configs.broker_config import BrokerConfig
from kafka_txn_broker.server.cluster import Cluster

log = logging.getLogger(__name__)
T = TypeVar("T")


def new_cluster(nodes: int, data_dir: Path, config: BrokerConfig, clock: Clock = SYSTEM_CLOCK,
                ports: list[int] | None = None) -> Cluster:
    """A cluster whose nodes answer every registered API (not started)."""
    return Cluster(nodes, data_dir, config, clock, ports, request_handler=KafkaApis)


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
        self.cluster = new_cluster(self._node_count, self.data_dir, self.config, self.clock, self._ports)
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

    def stop_node(self, node_id: int, *, clean: bool = True) -> None:
        """Stop one node while the others run: cleanly, or (`clean=False`) as kill -9 would stop its
        process, so that its next start recovers its logs (no producer snapshot, no clean-shutdown
        marker). `start_node` brings it back on the same port and log dir."""
        assert self.cluster is not None
        self.call(self.cluster.stop_node(node_id, clean=clean))

    def start_node(self, node_id: int) -> None:
        """Start a stopped node again: it reopens (recovers) its logs, catches up and rejoins the ISR."""
        assert self.cluster is not None
        self.call(self.cluster.start_node(node_id))

    def restart(self) -> None:
        """Stop every node cleanly and start them again on the same ports and data."""
        assert self.cluster is not None
        self.call(self.cluster.stop())
        self.cluster = new_cluster(self._node_count, self.data_dir, self.config, self.clock, self._ports)
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


# ---- the foreground broker (`kafka-txn broker start`) ------------------------------------------------
async def _serve(nodes: int, data_dir: Path, config: BrokerConfig, ports: list[int],
                 metrics_port: int | None) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    cluster = new_cluster(nodes, data_dir, config, ports=ports)
    await cluster.start()
    metrics = None
    if metrics_port is not None:
        from kafka_txn_broker.server.metrics import serve_metrics

        metrics = await serve_metrics(cluster, config["host"], metrics_port)
    # The one line scripts wait for: every node is accepting connections now.
    print(f"bootstrap.servers={cluster.bootstrap_servers}", flush=True)
    try:
        await stop.wait()
    finally:
        if metrics is not None:
            metrics.close()
        # Clean shutdown: flush logs and write producer snapshots (LocalLog.close does both).
        await cluster.stop()


def run_foreground(nodes: int, data_dir: Path, config: BrokerConfig, ports: list[int],
                   metrics_port: int | None = None) -> None:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    asyncio.run(_serve(nodes, data_dir, config, ports, metrics_port))
