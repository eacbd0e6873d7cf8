"""/metrics (monitor/metrics.py): Prometheus's own linter accepts it (promtool check metrics: names, units,
counters' _total, help texts, duplicates); values follow the findings; labels stay bounded by --top."""

from __future__ import annotations

import subprocess

import pytest

from kafka_txn_tools.admin.share_pending import samples
from kafka_txn_tools.monitor.metrics import METRICS, escape, render
from kafka_txn_tools.monitor.state import COMPLETE, FAILED, PARTIAL, ScanOutcome, Snapshot, after_scan
from tests.tools.history.test_incidents import coordinator_row, partition_row

START = Snapshot("prod (kafka-1:9092)", 30.0, 0)


def snapshot(rows: list[dict], result: str = COMPLETE, **causes: int) -> Snapshot:
    return after_scan(START, ScanOutcome(1_700_000_000_000, 0.25, result, tuple(rows), {"hanging": rows}, causes,
                                         scanned_replicas=90, unread_replicas=3 if result == PARTIAL else 0))


def values(text: str, name: str) -> list[tuple[dict[str, str], float]]:
    return [(labels, v) for n, labels, v in samples(text) if n == name]


def many(n: int) -> list[dict]:
    return [partition_row(topic=f"t{i:03d}", partition=0, pid=i, duration_ms=(i + 1) * 60_000,
                          high_watermark=40 + i) for i in range(n)]


@pytest.mark.needs("promtool")
@pytest.mark.parametrize("result", [COMPLETE, PARTIAL])
def test_prometheus_lints_it_clean(result: str) -> None:
    text = render(snapshot([*many(3), coordinator_row()], result, BROKER_UNREACHABLE=2), top=2, rss_bytes=1 << 20)
    done = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert {n for n, _, _ in samples(text)} <= set(METRICS)


def test_counts_ages_lags_and_groups() -> None:
    text = render(snapshot([partition_row(), coordinator_row()]))
    findings = {(labels["kind"], labels["reason"]): v for labels, v in values(text, "kafka_txn_findings")}
    assert findings[("partition", "transaction-not-ongoing")] == 1 and findings[("coordinator", "markers-pending")] == 1
    assert findings[("partition", "no-transactional-id")] == 0 and findings[("share", "share-acks-pending")] == 0
    ages = {labels["kind"]: (labels, v) for labels, v in values(text, "kafka_txn_finding_age_seconds")}
    assert ages["partition"] == ({"kind": "partition", "reason": "transaction-not-ongoing", "topic": "orders",
                                  "partition": "1", "producer_id": "7", "transactional_id": "app-1",
                                  "last_known_transactional_id": ""}, 1200)
    assert ages["coordinator"][1] == 300 and ages["coordinator"][0]["transactional_id"] == "pay-1"
    assert values(text, "kafka_txn_held_partitions") == [({}, 2)]
    assert values(text, "kafka_txn_partition_lso_lag_records") == [({"topic": "orders", "partition": "1"}, 10)]
    assert values(text, "kafka_txn_group_held_lag_records") == [(
        {"group": "readers", "group_type": "consumer", "topic": "orders", "partition": "1", "producer_id": "7",
         "transactional_id": "app-1"}, 10)]
    assert values(text, "kafka_txn_monitor_info")[0][0]["cluster"] == "prod (kafka-1:9092)"


def test_top_bounds_the_labelled_series_and_the_aggregates_keep_everything() -> None:
    text = render(snapshot(many(120)), top=10)
    detailed = values(text, "kafka_txn_finding_age_seconds")
    assert len(detailed) == 10 and {labels["topic"] for labels, _ in detailed} == {f"t{i}" for i in range(110, 120)}
    assert values(text, "kafka_txn_findings_not_detailed") == [({}, 110)]
    assert values(text, "kafka_txn_oldest_finding_age_seconds") == [({"kind": "partition"}, 120 * 60)]
    assert len(values(text, "kafka_txn_partition_lso_lag_records")) == 10
    assert values(text, "kafka_txn_held_partitions") == [({}, 120)]
    assert values(text, "kafka_txn_held_lso_lag_records") == [({}, sum(range(120)))]
    assert values(text, "kafka_txn_held_groups_not_detailed") == [({}, 110)]
    assert len(text.splitlines()) < 200  # 120 findings, bounded output


def test_scan_health_by_result_and_cause() -> None:
    snap = snapshot([partition_row()], PARTIAL, BROKER_UNREACHABLE=2, TOPIC_AUTHORIZATION_FAILED=1)
    snap = after_scan(snap, ScanOutcome(1_700_000_030_000, 5.0, FAILED, causes={"SASL_AUTHENTICATION_FAILED": 1}))
    text = render(snap)
    assert dict((labels["result"], v) for labels, v in values(text, "kafka_txn_scans_total")) == {
        "complete": 0, "partial": 1, "failed": 1}
    assert dict((labels["cause"], v) for labels, v in values(text, "kafka_txn_scan_errors_total")) == {
        "BROKER_UNREACHABLE": 2, "TOPIC_AUTHORIZATION_FAILED": 1, "SASL_AUTHENTICATION_FAILED": 1}
    assert values(text, "kafka_txn_scan_success") == [({}, 0)] and values(text, "kafka_txn_scan_stale") == [({}, 1)]
    assert values(text, "kafka_txn_stale_findings") == [({}, 1)]
    assert values(text, "kafka_txn_last_good_scan_timestamp_seconds") == []  # there was none yet
    assert values(text, "kafka_txn_last_scan_timestamp_seconds") == [({}, 1_700_000_030)]
    assert values(text, "kafka_txn_scan_duration_seconds") == [({}, 5)]


def test_label_values_are_escaped() -> None:
    assert escape('a"b\\c\nd') == 'a\\"b\\\\c\\nd'
    text = render(snapshot([partition_row(transactional_id='we"ird\\id')]))
    [(labels, _)] = [x for x in values(text, "kafka_txn_finding_age_seconds")]
    assert labels["transactional_id"] == 'we"ird\\id'


def test_docs_list_every_metric() -> None:
    from pathlib import Path

    docs = (Path(__file__).resolve().parents[3] / "docs" / "monitor.md").read_text()
    for name, (kind, _) in METRICS.items():
        assert f"| `{name}` | {kind} |" in docs, name
