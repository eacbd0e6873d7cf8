"""`kafka-txn monitor` (a child process) through faults, against the embedded cluster with a hanging
transaction; after each, the history holds the incident exactly once:

- the whole cluster unreachable (a loopback proxy in front of the only broker goes dark): failed scans,
  findings kept and flagged stale, /healthz says how the last scan went; it recovers without a restart;
  SIGTERM while a scan waits on the dark network: a clean exit, and the next start loses nothing;
- SIGTERM while a history write waits for the file's lock: the write completes whole, a clean exit;
- the history file on a full disk (a 4 MiB tmpfs, below SQLite's 4 MB write-ahead log checkpoint): the
  error is reported, scanning goes on, and once there is room again the history catches up;
- a broker of three, leading a hanging transaction's partition (RF 3), stopped and started again while the
  monitor scans: partial scans, then complete ones in the same process, each hang one incident throughout.
  (The embedded broker runs in this process, so it is stopped rather than killed with -9.)
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafka_txn_broker import EmbeddedCluster
from tests.e2e.monitor_support import MonitorProcess, wait_for
from tests.e2e.test_monitor import hang, metric
from tests.e2e.test_monitor_prometheus import printed_fix, run_as_printed
from tests.support.tcp_proxy import BLACKHOLE, FORWARD, TcpProxy

CONFIG = {"transaction.partition.verification.enable": False}


def incidents(history: Path) -> list[dict[str, Any]]:
    with contextlib.closing(sqlite3.connect(history, timeout=30)) as db:
        db.row_factory = sqlite3.Row
        return [dict(r) for r in db.execute("SELECT * FROM incidents ORDER BY id")]


def scan_rows(history: Path) -> int:
    with contextlib.closing(sqlite3.connect(history, timeout=30)) as db:
        return int(db.execute("SELECT count(*) FROM scans").fetchone()[0])


def metrics_where(monitor: MonitorProcess, name: str, value: float) -> str | None:
    status, text = monitor.get("/metrics")
    return text if status == 200 and metric(text, name) == value else None


@pytest.fixture
def dark_cluster(tmp_path: Path) -> Iterator[tuple[EmbeddedCluster, TcpProxy]]:
    """One broker that binds 127.0.0.2 but advertises 127.0.0.1, where a proxy to it listens: every client
    connection, bootstrap and after, goes through the proxy."""
    with EmbeddedCluster(nodes=1, data_dir=tmp_path / "kafka", config={**CONFIG, "host": "127.0.0.2"}) as cluster:
        assert cluster.cluster is not None
        [node] = cluster.cluster.nodes.values()
        with TcpProxy(("127.0.0.1", node.port), ("127.0.0.2", node.port)) as proxy:
            node.host = "127.0.0.1"  # what Metadata and FindCoordinator answer
            yield cluster, proxy


def test_the_cluster_unreachable_then_back_and_sigterm_mid_scan(
        dark_cluster: tuple[EmbeddedCluster, TcpProxy], tmp_path: Path) -> None:
    cluster, proxy = dark_cluster
    bs = proxy.address
    truth = hang(bs).hanging[0]
    history = tmp_path / "history.db"
    with MonitorProcess(bs, history, "--timeout", "2s") as monitor:
        wait_for("the hang", lambda: (monitor.findings() or {}).get("hanging"))

        proxy.mode = BLACKHOLE
        text = wait_for("a failed scan", lambda: metrics_where(monitor, "kafka_txn_scan_success", 0), timeout=90)
        assert metric(text, "kafka_txn_scan_stale") == 1 and metric(text, "kafka_txn_stale_findings") == 1
        assert metric(text, "kafka_txn_findings", kind="partition", reason="transaction-not-ongoing") == 1
        assert (metric(text, "kafka_txn_scan_errors_total", cause="REQUEST_TIMED_OUT") or 0) + (
            metric(text, "kafka_txn_scan_errors_total", cause="BROKER_UNREACHABLE") or 0) >= 1
        status, body = monitor.get("/healthz")
        assert status == 200 and json.loads(body)["last_scan"] == "failed" and json.loads(body)["stale"] is True
        kept = monitor.findings()  # the last document that read the cluster
        assert kept is not None and [h["producer_id"] for h in kept["hanging"]] == [truth.producer_id]

        proxy.mode = FORWARD
        text = wait_for("a complete scan, same process", lambda: metrics_where(monitor, "kafka_txn_scan_stale", 0),
                        timeout=90)
        assert metric(text, "kafka_txn_scan_success") == 1 and metric(text, "kafka_txn_stale_findings") == 0

        # Dark again, and SIGTERM while a scan waits on it.
        proxy.mode = BLACKHOLE
        wait_for("a scan waiting on the dark network",
                 lambda: metrics_where(monitor, "kafka_txn_scan_success", 0), timeout=90)
        began = time.monotonic()
        code, log = monitor.terminate(timeout=60)
        assert code == 0 and "Traceback" not in log, log
        assert time.monotonic() - began < 30

    proxy.mode = FORWARD
    with MonitorProcess(bs, history, "--timeout", "2s") as again:
        wait_for("a complete scan after the restart", lambda: metrics_where(again, "kafka_txn_scan_stale", 0),
                 timeout=90)
        wait_for("the incident seen again", lambda: incidents(history)[-1]["last_seen_ms"] > int(time.time() * 1000)
                 - 5000)
        code, _ = again.terminate()
    [incident] = incidents(history)
    assert (incident["topic"], incident["producer_id"], incident["resolved_ms"]) == (truth.topic, truth.producer_id,
                                                                                      None)


def test_sigterm_while_a_history_write_waits_for_the_lock(tmp_path: Path) -> None:
    with EmbeddedCluster(nodes=1, data_dir=tmp_path / "kafka", config=CONFIG) as cluster:
        bs = cluster.bootstrap_servers
        truth = hang(bs).hanging[0]
        history = tmp_path / "history.db"
        with MonitorProcess(bs, history) as monitor:
            wait_for("the incident recorded", lambda: history.exists() and incidents(history))
            holder = sqlite3.connect(history, timeout=30, isolation_level=None)
            holder.execute("BEGIN IMMEDIATE")  # another writer holds the file: the monitor's next write waits
            before = int(holder.execute("SELECT count(*) FROM scans").fetchone()[0])
            time.sleep(2.5)  # a scan ends every second: its write is waiting now
            assert monitor.proc is not None
            monitor.proc.send_signal(15)
            time.sleep(1)
            holder.execute("COMMIT")
            holder.close()
            code, log = monitor.terminate(timeout=60)  # already signalled: waits for the exit
        assert code == 0 and "Traceback" not in log, log
        assert scan_rows(history) > before  # the waiting write went in whole
        with MonitorProcess(bs, history) as again:
            wait_for("a scan after the restart", lambda: scan_rows(history) > before + 2)
            again.terminate()
    [incident] = incidents(history)
    assert incident["producer_id"] == truth.producer_id and incident["resolved_ms"] is None


@contextlib.contextmanager
def small_disk(path: Path, size: str = "4m") -> Iterator[Path]:
    path.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True,
                          text=True)
    if done.returncode != 0:
        pytest.fail(f"cannot mount a tmpfs (the test needs root): {done.stderr}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def fill(disk: Path) -> Path:
    filler = disk / "filler"
    with open(filler, "wb", buffering=0) as f, contextlib.suppress(OSError):
        while True:
            f.write(b"\0" * 4096)
    return filler


def test_history_on_a_full_disk_reports_and_scans_on_then_catches_up(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA_TXN_AUDIT_LOG", str(tmp_path / "audit.log"))  # the abort's and the monitor's
    with EmbeddedCluster(nodes=1, data_dir=tmp_path / "kafka", config=CONFIG) as cluster, \
            small_disk(tmp_path / "disk") as disk:
        bs = cluster.bootstrap_servers
        truth = hang(bs).hanging[0]
        history = disk / "history.db"
        with MonitorProcess(bs, history, "--interval", "0.3s") as monitor:
            wait_for("the incident recorded", lambda: history.exists() and incidents(history))
            filler = fill(disk)
            def write_failed() -> str | None:
                text = monitor.get("/metrics")[1]
                return text if (metric(text, "kafka_txn_history_write_errors_total") or 0) >= 1 else None

            text = wait_for("a failed history write", write_failed)
            assert metric(text, "kafka_txn_scan_success") == 1  # the scans go on
            status, body = monitor.get("/healthz")
            assert status == 200 and "disk is full" in json.loads(body)["history"], body
            # The incident ends while nothing can be written.
            doc = monitor.findings()
            assert doc is not None
            for argv in printed_fix(doc["hanging"][0]):
                done = run_as_printed(argv, bs)
                assert done.returncode == 0, done.stderr
            wait_for("the monitor to see it gone", lambda: (monitor.findings() or {"hanging": 1})["hanging"] == [])
            assert incidents(history)[0]["resolved_ms"] is None  # not recorded yet
            filler.unlink()
            wait_for("the history to catch up", lambda: incidents(history)[0]["resolved_ms"] is not None)
            status, body = monitor.get("/healthz")
            assert json.loads(body)["history"] == "ok"
            code, log = monitor.terminate()
        assert code == 0 and "database or disk is full" in log and "can be used again" in log, log
        assert log.count("database or disk is full") == 1  # once, not once per scan
        [incident] = incidents(history)
        assert incident["producer_id"] == truth.producer_id
        assert incident["resolution"] == "audited write", incident
        os.sync()


def test_a_broker_stopped_and_restarted_while_the_monitor_scans(tmp_path: Path) -> None:
    """3 nodes, two hangs on partitions of RF 3: the node leading the first stops (its leaders move) and
    comes back; the scans go partial and complete again in the same process, and each hang stays one incident."""
    with EmbeddedCluster(nodes=3, data_dir=tmp_path / "kafka", config=CONFIG) as cluster:
        bs = cluster.bootstrap_servers
        hangs = [hang(bs, replication_factor=3).hanging[0] for _ in range(2)]
        history = tmp_path / "history.db"
        with MonitorProcess(bs, history, "--timeout", "3s") as monitor:
            wait_for("both hangs", lambda: len((monitor.findings() or {}).get("hanging", [])) == 2)
            assert cluster.cluster is not None
            victim = cluster.cluster.metadata.leader(hangs[0].topic, hangs[0].partition)
            assert victim is not None and victim >= 0
            cluster.stop_node(victim)  # its leaders move to the other replicas

            def scans(result: str) -> float:
                return metric(monitor.get("/metrics")[1], "kafka_txn_scans_total", result=result) or 0

            wait_for("a partial scan", lambda: scans("partial") >= 1, timeout=90)
            cluster.start_node(victim)
            complete_before = scans("complete")

            def recovered() -> bool:
                text = monitor.get("/metrics")[1]
                return (scans("complete") > complete_before + 1 and metric(text, "kafka_txn_scan_stale") == 0
                        and metric(text, "kafka_txn_findings", kind="partition",
                                   reason="transaction-not-ongoing") == 2)

            wait_for("complete scans with both findings after the restart", recovered, timeout=120)
            code, log = monitor.terminate()
    assert code == 0 and "Traceback" not in log, log
    recorded = incidents(history)
    assert sorted((i["topic"], i["partition"], i["producer_id"]) for i in recorded) == sorted(
        (h.topic, h.partition, h.producer_id) for h in hangs)
    assert all(i["resolved_ms"] is None for i in recorded)
