"""The whole sweep on generated clusters: exact verdicts in every input kind, outputs, determinism."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml

from kafka_txn_tools.dumps.plan import load_plan
from kafka_txn_tools.spark.job import run_sweep

pytestmark = pytest.mark.spark


def keys(rows: list[dict[str, Any]]) -> set[tuple[Any, ...]]:
    return {(r["topic"], r["partition"], r["producer_id"], r["start_offset"], r["verdict"], r["reason"],
             r["leader_broker_id"]) for r in rows}


def divergence_keys(path: Path) -> set[tuple[Any, ...]]:
    with open(path, newline="") as src:
        return {(r["topic"], int(r["partition"]), int(r["producer_id"]), r["kind"]) for r in csv.DictReader(src)}


@pytest.mark.parametrize("kind", ["dump", "jsonl", "logdir", "text"])
def test_exact_verdicts_in_every_input_kind(spark, generated, tmp_path, kind):
    inputs, truth = generated[kind]
    result = run_sweep(inputs, tmp_path, include_late=True, spark=spark)
    assert keys(result.rows) == keys(truth["expected"])  # every one found, right reason, nothing else
    summary = result.summary
    assert summary["as_of_ms"] == truth["as_of_ms"] and not summary["as_of_given"]
    assert summary["late_partitions_by_broker"] == truth["late_partitions_by_broker"]
    assert summary["producer_rows"] == truth["producer_rows"]
    assert divergence_keys(tmp_path / "replica_divergence.csv") == {
        (d["topic"], d["partition"], d["producer_id"], d["kind"]) for d in truth["divergence"]}
    # Leadership is in live dumps; from logs and text it is inferred (and right: see keys above).
    assert (summary["leader_inferred_partitions"] > 0) == (kind in ("logdir", "text"))
    # The plan, field by field, is the hanging transactions as the generator injected them.
    assert plan_entries(tmp_path / "abort-plan.yaml") == truth["plan"]


def plan_entries(path: Path) -> list[dict[str, Any]]:
    entries = yaml.safe_load(path.read_text())["entries"]
    return sorted(entries, key=lambda e: (e["topic"], e["partition"], e["producer_id"]))


def test_outputs_plan_and_report(spark, generated, tmp_path):
    """Without --include-late only hanging transactions are reported and planned."""
    inputs, truth = generated["dump"]
    result = run_sweep(inputs, tmp_path, spark=spark)
    hanging = [r for r in truth["expected"] if r["verdict"] == "hanging"]
    assert keys(result.rows) == keys(hanging)
    assert result.summary["late_live"] == len(truth["expected"]) - len(hanging)  # counted, not reported
    table = pq.read_table(tmp_path / "late_transactions").to_pylist()
    assert keys(table) == keys(hanging)
    with open(tmp_path / "late_transactions.csv", newline="") as src:
        csv_rows = list(csv.DictReader(src))
    assert {(r["topic"], int(r["partition"]), int(r["producer_id"])) for r in csv_rows} == {
        (r["topic"], r["partition"], r["producer_id"]) for r in hanging}
    plan = load_plan(tmp_path / "abort-plan.yaml")
    assert {(e.topic, e.partition, e.producer_id, e.start_offset, e.reason) for e in plan.entries} == {
        (r["topic"], r["partition"], r["producer_id"], r["start_offset"], r["reason"]) for r in hanging}
    assert plan.as_of_ms == truth["as_of_ms"] and plan.max_transaction_timeout_ms == 900_000
    assert all(e.leader_broker_id in e.replica_broker_ids or not e.replica_broker_ids for e in plan.entries)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["counts_by_reason"] == result.summary["counts_by_reason"]
    assert sum(summary["counts_by_reason"].values()) == len(truth["expected"])
    html = (tmp_path / "report.html").read_text()
    assert html.count("<svg") >= 2 and "Open transactions by age" in html
    for external in ("<script", "<link", "src=", "url(", "@import"):
        assert external not in html  # self-contained: opens offline, mails as one file
    assert "no-transactional-id" in html
    from kafka_txn_tools.timestamps import iso_utc

    # The tools' one format: the time in ISO-8601 UTC, the timeout as a duration.
    assert f"As of {iso_utc(truth['as_of_ms'])} (input capture time" in html and "timeout 15m." in html


def test_as_of_makes_runs_deterministic(spark, generated, tmp_path):
    inputs, truth = generated["logdir"]
    later = truth["as_of_ms"] + 3_600_000
    first = run_sweep(inputs, tmp_path / "a", as_of_ms=later, include_late=True, spark=spark)
    second = run_sweep(inputs, tmp_path / "b", as_of_ms=later, include_late=True, spark=spark)
    for name in ("late_transactions.csv", "abort-plan.yaml", "replica_divergence.csv", "report.html"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    assert first.summary["as_of_ms"] == later and first.summary["as_of_given"]
    # An hour later the healthy transactions have become late too: more candidates, same hanging set.
    assert first.summary["candidates"] > len(truth["expected"])
    hanging_then = {k for k in keys(truth["expected"]) if k[4] == "hanging"}
    assert {k for k in keys(first.rows) if k[4] == "hanging"} >= hanging_then
    assert second.rows == first.rows


def test_mixed_inputs_of_the_same_cluster(spark, generated, tmp_path):
    """A live dump plus log dirs of the same replicas: duplicates merge, the freshest state wins."""
    result = run_sweep(generated["dump"][0] + generated["logdir"][0], tmp_path, include_late=True, spark=spark)
    assert keys(result.rows) == keys(generated["dump"][1]["expected"])
    assert [i["kind"] for i in result.summary["inputs"]] == ["dump", "logdir"]


def test_the_shipped_package_reads_log_dirs_without_an_install(tmp_path: Path) -> None:
    # Executors of a real cluster import the project from the zip ship_package sends: the tools and
    # the broker's formats package must come from it, and nothing else of the broker is shipped.
    import subprocess
    import sys
    import zipfile

    from kafka_txn_tools.spark.executors import package_zip

    archive = package_zip(tmp_path)
    broker_files = {n for n in zipfile.ZipFile(archive).namelist() if n.startswith("kafka_txn_broker/")}
    assert broker_files >= {"kafka_txn_broker/__init__.py", "kafka_txn_broker/formats/record_batch.py"}
    # Beside formats, only its parent's __init__ and the one neutral utility formats imports (gc_pause).
    assert all(n in ("kafka_txn_broker/__init__.py", "kafka_txn_broker/gc_pause.py")
               or n.startswith("kafka_txn_broker/formats/") for n in broker_files), sorted(broker_files)
    code = ("import sys; sys.path.insert(0, sys.argv[1]); "
            "import kafka_txn_tools.dumps.logdir, kafka_txn_broker.formats.record_batch as rb; "
            "print(kafka_txn_tools.dumps.logdir.__file__); print(rb.__file__)")
    out = subprocess.run([sys.executable, "-c", code, str(archive)], capture_output=True, text=True, check=True)
    assert all(line.startswith(str(archive)) for line in out.stdout.splitlines()), out.stdout
