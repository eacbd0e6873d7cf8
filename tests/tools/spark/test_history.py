"""The sweep reads `kafka-txn history --export` (spark/history.py): incidents per cluster and topic, how they
ended, how long they held, and per day; the report shows them."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_txn_tools.history import incidents as H
from kafka_txn_tools.history.store import HistoryStore
from kafka_txn_tools.spark.history import DAY_MS, HistoryInputError, check_export, trends
from kafka_txn_tools.spark.job import run_sweep
from kafka_txn_tools.spark.report import render_report
from tests.tools.history.test_incidents import partition_row

pytestmark = pytest.mark.spark

AS_OF = 1_700_000_000_000 // DAY_MS * DAY_MS + 12 * 3_600_000  # noon
MIN = 60_000


def export(tmp_path: Path) -> Path:
    """prod: orders hangs three times (two days ago twice, today once, one still open), payments once;
    staging: orders once."""
    with HistoryStore(tmp_path / "h.db") as store:
        def scan(cluster: str, at: int, rows: list[dict]) -> None:
            H.record(store, H.ScanRecord(cluster, at, 100, True, rows), None)

        two_days = AS_OF - 2 * DAY_MS
        scan("prod:9092", two_days, [partition_row(start=1), partition_row(topic="payments", start=1)])
        scan("prod:9092", two_days + 10 * MIN, [partition_row(start=2)])  # 1 and payments end by themselves
        scan("prod:9092", two_days + 40 * MIN, [])
        scan("prod:9092", AS_OF - 60 * MIN, [partition_row(start=3)])
        scan("staging:9092", AS_OF - 5 * DAY_MS, [partition_row(start=1)])
        scan("staging:9092", AS_OF - 5 * DAY_MS + 5 * MIN, [])
        H.export_parquet(store, tmp_path / "export")
    return tmp_path / "export"


def test_trends_per_cluster_and_topic_and_per_day(spark, tmp_path: Path) -> None:
    t = trends(spark, export(tmp_path), AS_OF)
    by = {(r["cluster"], r["topic"]): r for r in t["by_topic"]}
    assert t["incidents"] == 5 and set(by) == {("prod:9092", "orders"), ("prod:9092", "payments"),
                                                ("staging:9092", "orders")}
    orders = by[("prod:9092", "orders")]
    assert (orders["incidents"], orders["open"], orders["resolved_by_itself"], orders["resolved_by_write"]) == (
        3, 1, 2, 0)
    # Each held 20 minutes before it was first seen (its age), then until it ended or was last seen.
    assert orders["held_ms_max"] == (20 + 30) * MIN and orders["held_ms_total"] == (30 + 50 + 20) * MIN
    days = {(d["cluster"], d["topic"], (AS_OF // DAY_MS * DAY_MS - d["day_ms"]) // DAY_MS): d["incidents"]
            for d in t["per_day"]}
    assert days == {("prod:9092", "orders", 2): 2, ("prod:9092", "payments", 2): 1, ("prod:9092", "orders", 0): 1,
                    ("staging:9092", "orders", 5): 1}


def test_the_sweep_report_shows_the_history(spark, generated, tmp_path: Path) -> None:
    inputs, _ = generated["dump"]
    history = export(tmp_path)
    result = run_sweep(inputs, tmp_path / "out", spark=spark, history=history, as_of_ms=AS_OF)
    assert result.summary["history"]["incidents"] == 5
    html = (tmp_path / "out" / "report.html").read_text()
    section = html[html.index('<h2 id="history">'):]
    assert "5 incidents recorded" in section and "prod:9092" in section and "payments" in section
    assert "<svg" in section
    assert 'id="history"' not in render_report({**result.summary, "history": None}, result.rows, {})


def test_a_directory_without_an_export_is_refused_before_spark_starts(tmp_path: Path) -> None:
    with pytest.raises(HistoryInputError, match="kafka-txn history --export"):
        check_export(tmp_path)
