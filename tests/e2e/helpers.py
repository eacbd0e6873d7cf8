"""Shared helpers for end-to-end tests with real clients."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def free_port_block(count: int) -> int:
    """A base port P such that P..P+count-1 are free right now (for restarts on the same addresses)."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + count >= 65535:
            continue
        socks = []
        try:
            for p in range(base, base + count):
                sk = socket.socket()
                sk.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sk.bind(("127.0.0.1", p))
                socks.append(sk)
            return base
        except OSError:
            continue
        finally:
            for sk in socks:
                sk.close()
    raise RuntimeError("no block of free ports found")


class BrokerProcess:
    """`kafka-txn broker start` in a child process, for crash (kill -9) tests."""

    def __init__(self, data_dir: Path, nodes: int, port: int, sets: Iterable[str] = (),
                 launcher: Iterable[str] = ("-m", "kafka_txn_tools")) -> None:
        """`launcher`: what follows the interpreter on the command line and precedes the CLI's
        arguments (load_soak.py runs the CLI through a tracemalloc wrapper)."""
        self.launcher = list(launcher)
        self.data_dir = data_dir
        self.nodes = nodes
        self.port = port
        self.sets = list(sets)
        self.proc: subprocess.Popen[str] | None = None
        self.bootstrap = ""

    def start(self, timeout: float = 60.0) -> str:
        cmd = [sys.executable, *self.launcher, "broker", "start", "--nodes", str(self.nodes),
               "--port", str(self.port), "--data-dir", str(self.data_dir)]
        for s in self.sets:
            cmd += ["--set", s]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1"})
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if line.startswith("bootstrap.servers="):
                self.bootstrap = line.strip().split("=", 1)[1]
                return self.bootstrap
            if not line and self.proc.poll() is not None:
                break
        raise RuntimeError(f"broker did not start (exit code {self.proc.poll()})")

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)

    def terminate(self) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(60)


def consume_all(bootstrap: str, topic: str, partitions: int, *, read_committed: bool = False,
                timeout_s: float = 120.0) -> dict[int, list[Any]]:
    """Every record of every partition (assign, no group), as {partition: [(offset, key, value)]}: read up to
    the end offsets ListOffsets gives when the call starts (the last stable offset for `read_committed`, else
    the high watermark), so the read stops as soon as it is complete, not after a quiet spell (records written
    after the call starts are not awaited)."""
    from confluent_kafka import Consumer, TopicPartition

    ends = _end_offsets(bootstrap, topic, partitions, read_committed)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "e2e-reader", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest",
                  "isolation.level": "read_committed" if read_committed else "read_uncommitted"})
    tps = [TopicPartition(topic, p, 0) for p in range(partitions)]
    c.assign(tps)
    out: dict[int, list[Any]] = {p: [] for p in range(partitions)}
    deadline = time.monotonic() + timeout_s
    try:
        left = {p for p in range(partitions) if ends[p] > 0}
        while left:
            for m in c.consume(10000, 0.2):
                partition = m.partition()
                if m.error() is None and partition is not None:
                    out[partition].append((m.offset(), m.key(), m.value()))
            # The position passes aborted batches and markers too: it reaches the end offset exactly when
            # every record below it has been delivered.
            left = {tp.partition for tp in c.position([tps[p] for p in left]) if tp.offset < ends[tp.partition]}
            if left and time.monotonic() > deadline:
                raise AssertionError(f"{topic}: partitions {sorted(left)} not read to their end offsets "
                                     f"{[ends[p] for p in sorted(left)]} within {timeout_s:g}s")
    finally:
        c.close()
    return out


def _end_offsets(bootstrap: str, topic: str, partitions: int, read_committed: bool) -> list[int]:
    from confluent_kafka import IsolationLevel, TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    level = IsolationLevel.READ_COMMITTED if read_committed else IsolationLevel.READ_UNCOMMITTED
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    admin = AdminClient({"bootstrap.servers": bootstrap})  # held until the answers are in: destroyed, it drops them
    futures = admin.list_offsets({tp: OffsetSpec.latest() for tp in tps}, isolation_level=level, request_timeout=30)
    return [futures[tp].result(60).offset for tp in tps]
