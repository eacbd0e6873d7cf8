"""`kafka-txn history`, `find-hanging --history` and `monitor`'s usage errors, through the CLI (over the
in-memory cluster of tests/tools/admin/fakes.py for find-hanging)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kafka_txn_tools.cli import exit_codes
from kafka_txn_tools.cli.app import app
from kafka_txn_tools.cli.session import now_ms
from kafka_txn_tools.history import incidents as H
from kafka_txn_tools.history.store import HistoryStore
from tests.tools.history.test_incidents import CLUSTER, coordinator_row, partition_row
from tests.tools.monitor.test_exporter import T0 as ORDERS_0
from tests.tools.monitor.test_exporter import hanging_cluster

MIN = 60_000


def run(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(app, list(args))
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    return r.exit_code, r.stdout, r.stderr


@pytest.fixture
def history(tmp_path: Path) -> Path:
    """Three incidents: one resolved 10 days ago, one resolved by itself an hour ago, one still open."""
    path = tmp_path / "history.db"
    now = now_ms()
    with HistoryStore(path) as store:
        def scan(at: int, rows: list[dict]) -> None:
            H.record(store, H.ScanRecord(CLUSTER, at, 100, True, rows), None)

        scan(now - 11 * 86_400_000, [partition_row(start=1)])
        scan(now - 10 * 86_400_000, [])
        scan(now - 2 * 3_600_000, [partition_row(start=2), coordinator_row()])
        scan(now - 3_600_000, [coordinator_row()])
    return path


def test_history_lists_the_incidents_of_the_period(history: Path) -> None:
    code, out, err = run("history", "--history", str(history), "-o", "json")
    assert code == 0, err
    doc = json.loads(out)
    rows = doc["incidents"]
    assert [(r["kind"], r["resolution"]) for r in rows] == [("partition", "by itself"), ("coordinator", None)]
    assert rows[0]["duration_ms"] == 3_600_000 and doc["history"] == str(history)
    assert len(json.loads(run("history", "--history", str(history), "--since", "30d", "-o", "json")[1])[
        "incidents"]) == 3
    code, table, _ = run("history", "--history", str(history))
    assert code == 0 and "orders-1" in table and "by itself" in table and "open" in table and "pay-1" in table
    code, csv_text, _ = run("history", "--history", str(history), "-o", "csv")
    assert code == 0 and csv_text.splitlines()[0].startswith("cluster,kind,reason,topic")
    assert run("history", "--history", str(history), "--cluster", "other:9092", "-o", "json")[1].count("kind") == 0


def test_history_without_a_file_says_how_to_make_one(tmp_path: Path) -> None:
    code, out, err = run("history", "--history", str(tmp_path / "none.db"))
    assert code == exit_codes.ERROR and out == ""
    assert err.startswith("error: no history at ") and "kafka-txn monitor" in err
    assert not (tmp_path / "none.db").exists()
    assert run("history", "--since", "forever")[0] == exit_codes.USAGE


def test_history_export_writes_parquet(history: Path, tmp_path: Path) -> None:
    import pyarrow.parquet as pq
    code, _, err = run("history", "--history", str(history), "--export", str(tmp_path / "out"))
    assert code == 0 and "incidents.parquet (3 rows)" in err
    assert pq.read_table(tmp_path / "out" / "incidents.parquet").num_rows == 3
    (tmp_path / "file").write_text("x")
    assert run("history", "--history", str(history), "--export", str(tmp_path / "file"))[0] == exit_codes.USAGE


def test_find_hanging_history_records_and_a_later_run_resolves(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    fake = hanging_cluster()
    fake.cluster_name = "fake:9092"  # type: ignore[attr-defined]
    monkeypatch.setattr("kafka_txn_tools.cli.commands.find_hanging.connect", lambda conn: fake)
    monkeypatch.setattr("kafka_txn_tools.admin.acl_probe.scan_warning", lambda *args: None)
    path = tmp_path / "h.db"
    assert run("find-hanging", "--all", "-b", "fake:9092", "--history", str(path), "-o", "json")[0] == 0
    fake.complete(ORDERS_0, 10)
    assert run("find-hanging", "--topic", "orders", "-b", "fake:9092", "--history", str(path))[0] == 0
    with HistoryStore(path) as store:
        [incident] = store.incidents(0)
        assert (incident.cluster, incident.topic, incident.partition) == ("fake:9092", "orders", 0)
        assert incident.resolution == "by itself"
        assert [s.result for s in store.scans("fake:9092", 0)] == ["complete", "complete"]


@pytest.mark.parametrize("args, message", [
    (["--listen", "nowhere"], "error: invalid value for --listen"),
    (["--listen", "h:99999"], "error: invalid value for --listen"),
    (["--interval", "0"], "error: invalid value for --interval"),
    (["--top", "0"], "error: invalid value for '--top'"),
])
def test_monitor_usage_errors(args: list[str], message: str) -> None:
    code, _, err = run("monitor", "-b", "127.0.0.1:1", *args)
    assert code == exit_codes.USAGE and err.startswith(message), err


def test_monitor_refuses_a_port_in_use_clearly(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, _, err = run("monitor", "-b", "127.0.0.1:1", "--listen", f"127.0.0.1:{port}", "--history",
                           str(tmp_path / "h.db"))
    assert code == exit_codes.ERROR and f"cannot listen on 127.0.0.1:{port}" in err and "--listen" in err
