"""Running a cluster in the foreground until SIGTERM/SIGINT (the `kafka-txn broker start` command)."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from pathlib import Path

from kafka_txn_broker.configs.broker_config import BrokerConfig
from kafka_txn_broker.server.cluster import Cluster

log = logging.getLogger(__name__)


async def _serve(nodes: int, data_dir: Path, config: BrokerConfig, ports: list[int],
                 metrics_port: int | None) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    cluster = Cluster(nodes, data_dir, config, ports=ports)
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
