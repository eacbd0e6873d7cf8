"""The monitor's scan loop and HTTP endpoints (monitor/exporter.py, server.py) over the in-memory cluster of
tests/tools/admin/fakes.py: /api/findings is find-hanging's JSON exactly; a broker down, a refused login
and a bug in a scan never stop the loop; the history follows; every endpoint answers as documented."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from typer.testing import CliRunner

from kafka_txn_tools.admin import findings
from kafka_txn_tools.admin.advice import Invocation
from kafka_txn_tools.admin.findings import findings_document
from kafka_txn_tools.admin.scan import ScanOptions
from kafka_txn_tools.cli.app import app
from kafka_txn_tools.cli.render import render_json
from kafka_txn_tools.errors import ConnectionFailed
from kafka_txn_tools.history.store import HistoryStore
from kafka_txn_tools.models import TopicPartition
from kafka_txn_tools.monitor.exporter import Monitor, MonitorConfig
from kafka_txn_tools.monitor.server import MonitorServer
from tests.tools.admin.fakes import MIN, NOW, FakeCluster, cluster, producer, txn

T0, T1 = TopicPartition("orders", 0), TopicPartition("orders", 1)
# As `kafka-txn monitor -b fake:9092` scans: late rows shown, and the findings' commands name the cluster.
SCAN = ScanOptions(include_late=True, invocation=Invocation.of("fake:9092", None, None))
CONFIG = MonitorConfig(30.0, SCAN, top=50)


def hanging_cluster() -> FakeCluster:
    """One forgotten transaction (no coordinator lists producer 10) on orders-0, one live one on orders-1."""
    c = cluster(internal=["__transaction_state"])
    c.open_txn(T0, producer(10, 100, 30 * MIN))
    c.open_txn(T1, producer(11, 200, 30 * MIN))
    c.transactions["live"] = txn("live", 11, partitions=[T1], coordinator=1)
    c.offsets = {T0: (100, 150)}
    return c


def document(report: Any) -> dict[str, Any]:
    return findings_document(report, ScanOptions().max_timeout_ms, ScanOptions().max_prepare_ms)


def monitor_of(connect: Any, history: HistoryStore | None = None, config: MonitorConfig = CONFIG) -> Monitor:
    return Monitor("fake:9092", connect, document, config, history, clock=lambda: NOW)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Monitor, str, FakeCluster]]:
    fake = hanging_cluster()
    store = HistoryStore(tmp_path / "history.db")
    monitor = monitor_of(lambda: fake, store)
    server = MonitorServer("127.0.0.1", 0, monitor.source(render_json))
    server.start()
    host, port = server.address
    try:
        yield monitor, f"http://{host}:{port}", fake
    finally:
        server.stop()
        store.close()


def get(url: str, method: str = "GET") -> tuple[int, str, str]:
    request = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as r:  # noqa: S310
            return r.status, r.headers["Content-Type"], r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["Content-Type"], exc.read().decode()


def test_api_findings_is_exactly_what_find_hanging_prints(served: tuple[Monitor, str, FakeCluster],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monitor, url, fake = served
    assert get(url + "/api/findings")[0] == 503  # before the first scan
    assert monitor.scan_once().result == "complete"
    status, kind, body = get(url + "/api/findings")
    assert (status, kind) == (200, "application/json")
    monkeypatch.setattr("kafka_txn_tools.cli.commands.find_hanging.connect", lambda conn: fake)
    monkeypatch.setattr("kafka_txn_tools.cli.commands.find_hanging.now_ms", lambda: NOW)
    monkeypatch.setattr("kafka_txn_tools.admin.acl_probe.scan_warning", lambda *args: None)  # no DescribeAcls here
    printed = CliRunner().invoke(app, ["find-hanging", "--all", "-o", "json", "-b", "fake:9092"]).stdout
    assert body == printed
    jsonschema.validate(json.loads(body), findings.schema())  # the document's one JSON Schema
    # The forgotten one, and the live one shown too (late, its coordinator will end it): nothing holding an LSO
    # is hidden.
    assert [(r["topic"], r["partition"], r["producer_id"], r["reason"]) for r in json.loads(body)["hanging"]] == [
        ("orders", 0, 10, "no-transactional-id"), ("orders", 1, 11, "late")]


def test_every_endpoint(served: tuple[Monitor, str, FakeCluster]) -> None:
    monitor, url, _ = served
    status, _, body = get(url + "/healthz")
    assert status == 200 and json.loads(body)["last_scan"] is None  # the first scan is still to come
    monitor.scan_once()
    status, kind, text = get(url + "/metrics")
    assert (status, kind) == (200, "text/plain; version=0.0.4; charset=utf-8")
    assert 'kafka_txn_findings{kind="partition",reason="no-transactional-id"} 1' in text
    status, kind, page = get(url + "/")
    assert status == 200 and kind.startswith("text/html")
    assert "kafka-txn abort --topic orders --partition 0 --start-offset 100" in page and "orders-0" in page
    assert get(url + "/nope")[0] == 404
    assert get(url + "/metrics", "POST")[0] == 405
    assert get(url + "/metrics", "HEAD")[0] == 200


def test_the_history_follows_the_scans(served: tuple[Monitor, str, FakeCluster]) -> None:
    monitor, url, fake = served
    monitor.scan_once()
    fake.complete(T0, 10)  # its marker lands
    monitor.scan_once()
    [incident] = monitor.incidents()
    assert (incident.topic, incident.partition, incident.resolution) == ("orders", 0, "by itself")
    assert [p.held_partitions for p in monitor.scan_points()] == [1, 0]
    assert "by itself" in get(url + "/")[2]


def test_a_broker_down_is_a_partial_scan_and_a_fresh_connection_next_time() -> None:
    fake = hanging_cluster()
    connects: list[int] = []
    monitor = monitor_of(lambda: connects.append(1) or fake)
    monitor.scan_once()
    fake.down = {2}
    outcome = monitor.scan_once()
    assert outcome.result == "partial" and outcome.causes["BROKER_UNREACHABLE"] >= 1
    assert outcome.document is not None  # the causes are the printed errors', counted
    assert outcome.causes == Counter(e["error"] for e in outcome.document["errors"])
    assert len(connects) == 1
    monitor.scan_once()
    assert len(connects) == 2  # bootstrapped afresh after the scan a broker was missing from
    assert monitor.snapshot().scans == {"complete": 1, "partial": 2, "failed": 0}


def test_a_refused_login_and_a_bug_are_failed_scans_and_the_loop_goes_on(capsys: pytest.CaptureFixture[str]) -> None:
    attempts: list[str] = []

    def connect() -> Any:
        attempts.append("x")
        if len(attempts) == 1:
            raise ConnectionFailed("refused", cause="SASL_AUTHENTICATION_FAILED")
        raise RuntimeError("a bug")

    monitor = monitor_of(connect, config=MonitorConfig(0.001, ScanOptions(), top=5))
    stop = threading.Event()
    original = monitor.scan_once

    def counted() -> Any:
        outcome = original()
        if len(attempts) >= 3:
            stop.set()
        return outcome

    monitor.scan_once = counted  # type: ignore[method-assign]
    monitor.start(stop)
    monitor.join(timeout=10)
    snap = monitor.snapshot()
    assert snap.errors == {"SASL_AUTHENTICATION_FAILED": 1, "INTERNAL_ERROR": 2}
    assert snap.scans["failed"] == 3 and snap.last is not None and snap.last.failure == "RuntimeError: a bug"
    err = capsys.readouterr().err
    assert "Traceback" in err and "RuntimeError: a bug" in err  # a bug is shown, once per scan
    ok, detail = monitor.healthy()
    assert not ok and detail["status"] == "the scan loop has stopped"


def test_a_history_that_cannot_be_written_is_a_warning_once_and_never_stops_the_scans(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fake = hanging_cluster()
    store = HistoryStore(tmp_path / "history.db")
    monitor = monitor_of(lambda: fake, store)
    store.close()  # as a file gone bad under it
    assert [monitor.scan_once().result for _ in range(3)] == ["complete"] * 3
    assert capsys.readouterr().err.count("could not be used") == 1
    assert monitor.incidents() == [] and len(monitor.snapshot().findings) == 1


def test_the_status_page_reads_only_the_recent_incidents_however_many_the_history_holds(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A monitor runs for weeks: each page view must not load (and parse) every incident of its window."""
    from kafka_txn_tools.history import incidents as H
    from kafka_txn_tools.history import store as history_store
    from kafka_txn_tools.monitor import exporter

    store = HistoryStore(tmp_path / "history.db")
    for i in range(3 * exporter.RECENT_INCIDENTS):  # one incident per minute, each ended by the next scan
        row = {"kind": "partition", "topic": "orders", "partition": 0, "producer_id": 100 + i, "producer_epoch": 0,
               "start_offset": i, "duration_ms": 0, "reason": "no-transactional-id"}
        H.record(store, H.ScanRecord("fake:9092", NOW - (200 - 2 * i) * 60_000, 10, True, [row]), None)
        H.record(store, H.ScanRecord("fake:9092", NOW - (199 - 2 * i) * 60_000, 10, True, []), None)
    read = Counter[str]()
    parse = history_store._incident
    monkeypatch.setattr(history_store, "_incident", lambda r: (read.update(["incident"]), parse(r))[1])
    shown = monitor_of(lambda: hanging_cluster(), store).incidents()
    assert [i.producer_id for i in shown] == [100 + i for i in reversed(range(50, 75))]  # the newest first
    assert read["incident"] == exporter.RECENT_INCIDENTS
    store.close()


def test_a_partition_refused_for_good_does_not_keep_what_ended_elsewhere(tmp_path: Path) -> None:
    """Every scan partial (one partition refused, for days): a finding on a partition read again and found
    clear still ends, in the snapshot, the metrics and the history."""
    fake = hanging_cluster()
    fake.partition_errors[(2, TopicPartition("orders", 2))] = "TOPIC_AUTHORIZATION_FAILED"
    store = HistoryStore(tmp_path / "history.db")
    full = MonitorConfig(30.0, ScanOptions(include_late=True, first_pass=False), top=50)
    monitor = monitor_of(lambda: fake, store, full)
    assert monitor.scan_once().result == "partial"
    assert [f.partition for f in monitor.snapshot().findings] == [0]
    fake.complete(T0, 10)
    assert monitor.scan_once().result == "partial"
    assert monitor.snapshot().findings == ()
    assert [(i.partition, i.resolution) for i in monitor.incidents() if i.resolved_ms] == [(0, "by itself")]
    store.close()


def test_the_chart_keeps_a_point_per_step_or_change_not_per_scan() -> None:
    """A 1 s interval for 100 s with nothing changing keeps a point every 30 s; a change is kept at once."""
    from kafka_txn_tools.monitor.exporter import CHART_STEP_MS

    fake = hanging_cluster()
    now = [NOW]
    monitor = Monitor("fake:9092", lambda: fake, document, MonitorConfig(1.0, SCAN, top=50), clock=lambda: now[0])
    for _ in range(100):
        monitor.scan_once()
        now[0] += 1000
    points = monitor.scan_points()
    assert [p.time_ms - NOW for p in points] == [0, CHART_STEP_MS, 2 * CHART_STEP_MS, 3 * CHART_STEP_MS]
    fake.complete(T0, 10)
    monitor.scan_once()
    assert [p.held_partitions for p in monitor.scan_points()] == [1, 1, 1, 1, 0]
