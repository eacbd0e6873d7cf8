"""The monitor's history file as an operator meets it: a second monitor on the same file is refused (one
monitor per file; readers share it); a file that is not a history, damaged, or from a newer version stops the
monitor at start with what to do, and is left byte for byte as it was; a version 1 file is migrated and its
open incident goes on, recorded once."""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
import subprocess
import sys
from pathlib import Path

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_tools.history.store import SCHEMA_VERSION, HistoryStore
from tests.e2e.monitor_support import MonitorProcess, wait_for
from tests.e2e.test_monitor import hang
from tests.e2e.test_monitor_faults import CONFIG, incidents

NOWHERE = "127.0.0.1:1"  # no cluster: the scans fail, the monitor runs


def start(history: Path) -> subprocess.CompletedProcess[str]:
    """A monitor that should refuse to start (bounded: one that starts is a failure)."""
    done = subprocess.run([sys.executable, "-m", "kafka_txn_tools", "monitor", "-b", NOWHERE, "--listen",
                           "127.0.0.1:0", "--history", str(history)], capture_output=True, text=True, timeout=60)
    done.stderr = " ".join(done.stderr.split())  # as one line, however the terminal width wrapped it
    return done


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_second_monitor_on_the_same_history_is_refused_until_the_first_is_gone(tmp_path: Path) -> None:
    history = tmp_path / "history.db"
    with MonitorProcess(NOWHERE, history) as first:
        assert first.proc is not None
        refused = start(history)
        assert refused.returncode == 1 and "Traceback" not in refused.stderr
        assert (f"error: the history file {history} is in use by another kafka-txn monitor (pid {first.proc.pid} "
                in refused.stderr), refused.stderr
        assert "give this one its own --history FILE" in refused.stderr
        # Readers share it.
        listed = subprocess.run([sys.executable, "-m", "kafka_txn_tools", "history", "--history", str(history), "-o",
                                 "json"], capture_output=True, text=True, timeout=60)
        assert listed.returncode == 0, listed.stderr
        first.proc.kill()  # -9: the kernel drops its claim
        first.proc.wait(10)
    with MonitorProcess(NOWHERE, history) as second:
        code, log = second.terminate()
    assert code == 0, log


def test_a_file_that_is_not_a_history_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    history = tmp_path / "history.db"
    history.write_bytes(b"not a database, an operator's notes\n" * 100)
    before = digest(history)
    refused = start(history)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert f"error: the history file {history} is not a usable history file (file is not a database)" in \
        refused.stderr, refused.stderr
    assert "move it aside" in refused.stderr and digest(history) == before


def test_a_damaged_history_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    history = tmp_path / "history.db"
    with HistoryStore(history) as store:
        for i in range(2000):  # some pages of scan rows
            store.record_scan("c", 1_000 + i, [], [], scan=(1, "complete", 0, "test"))
    with contextlib.closing(sqlite3.connect(history)) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        pages = db.execute("PRAGMA page_count").fetchone()[0]
        page_size = db.execute("PRAGMA page_size").fetchone()[0]
    assert pages > 10
    data = bytearray(history.read_bytes())
    middle = page_size * (pages // 2)
    data[middle:middle + page_size] = b"\xa5" * page_size  # one b-tree page overwritten
    history.write_bytes(bytes(data))
    before = digest(history)
    refused = start(history)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert f"{history} is not a usable history file" in refused.stderr and "left as it is" in refused.stderr, \
        refused.stderr
    assert digest(history) == before


def test_a_newer_schema_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    history = tmp_path / "history.db"
    HistoryStore(history).close()
    with contextlib.closing(sqlite3.connect(history)) as db:
        db.execute(f"PRAGMA user_version={SCHEMA_VERSION + 7}")
    before = digest(history)
    refused = start(history)
    assert refused.returncode == 1 and "written by a newer kafka-txn" in refused.stderr, refused.stderr
    assert digest(history) == before


def version_1(history: Path) -> None:
    """What a version 1 monitor left: its schema had no `incidents_recent` index."""
    with contextlib.closing(sqlite3.connect(history)) as db:
        db.execute("DROP INDEX incidents_recent")
        db.execute("PRAGMA user_version=1")


def test_a_version_1_history_is_migrated_and_its_open_incident_goes_on(tmp_path: Path) -> None:
    history = tmp_path / "history.db"
    with EmbeddedCluster(nodes=1, data_dir=tmp_path / "kafka", config=CONFIG) as cluster:
        bs = cluster.bootstrap_servers
        truth = hang(bs).hanging[0]
        with MonitorProcess(bs, history) as monitor:
            wait_for("the incident recorded", lambda: history.exists() and incidents(history))
            monitor.terminate()
        [old] = incidents(history)
        version_1(history)
        with MonitorProcess(bs, history) as monitor:
            wait_for("the incident seen again", lambda: incidents(history)[0]["last_seen_ms"] > old["last_seen_ms"])
            code, log = monitor.terminate()
    assert code == 0 and f"note: the history file {history} was migrated from schema 1" in log, log
    with contextlib.closing(sqlite3.connect(history)) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert db.execute("SELECT 1 FROM sqlite_master WHERE name='incidents_recent'").fetchone()
    [incident] = incidents(history)
    assert (incident["id"], incident["first_seen_ms"], incident["resolved_ms"]) == (old["id"], old["first_seen_ms"],
                                                                                    None)
    assert incident["producer_id"] == truth.producer_id
