"""`kafka-txn monitor` under a real Prometheus (Debian's), watching the embedded cluster:

a hanging transaction (the late-write-after-abort scenario) fires the shipped alerts (their `for:` shortened
in the test's copy); every query of the shipped Grafana dashboard evaluates, with data; the finding's printed
fix, run as printed, resolves it and the alert resolves; the history says it was that audited abort;
SIGTERM stops the monitor cleanly and the monitor-absent alert fires.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as CTopicPartition

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.testing.scenarios import HANGING_PARTITION, ScenarioOptions, run_scenario
from tests.e2e.monitor_support import (
    RULES,
    MonitorProcess,
    PrometheusProcess,
    dashboard_queries,
    short_for,
    wait_for,
)

pytestmark = pytest.mark.needs("prometheus")

BACKDATE_MS = 30 * 60_000
CONFIG = {"transaction.partition.verification.enable": False}
CONNECTION_OPTIONS = {"-b", "--bootstrap-server", "--profile", "-p", "--command-config"}


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(nodes=1, data_dir=tmp_path / "kafka", config=CONFIG) as c:
        yield c


def hold_group(bs: str, topic: str, group: str, offset: int) -> None:
    """A read_committed group that has read up to the LSO (its committed offset is there)."""
    c = Consumer({"bootstrap.servers": bs, "group.id": group, "isolation.level": "read_committed",
                  "enable.auto.commit": False, "log_level": 0})
    try:
        c.commit(offsets=[CTopicPartition(topic, HANGING_PARTITION, offset)], asynchronous=False)
    finally:
        c.close()


def printed_fix(row: dict[str, Any]) -> list[list[str]]:
    """The command lines the finding prints: its `commands`, or the command its `action` spells out."""
    if row.get("commands"):
        return [shlex.split(c) for c in row["commands"]]
    action = row["action"]
    assert action.startswith("kafka-txn abort "), action
    return [shlex.split(action.split(" (", 1)[0])]


def run_as_printed(argv: list[str], bootstrap: str) -> subprocess.CompletedProcess[str]:
    """A printed command line, run in a shell-less child process as a script would: with the cluster when
    the line does not name one, and --yes (there is no terminal to confirm on)."""
    assert argv[0] == "kafka-txn", argv
    extra = [] if CONNECTION_OPTIONS & set(argv) else ["-b", bootstrap]
    extra += [] if "--yes" in argv or "-y" in argv else ["--yes"]
    return subprocess.run([sys.executable, "-m", "kafka_txn_tools", *argv[1:], *extra], capture_output=True,
                          text=True, timeout=120)


def test_alert_fires_on_a_hanging_transaction_and_resolves_after_its_printed_fix(
        cluster: EmbeddedCluster, tmp_path: Path) -> None:
    bs = cluster.bootstrap_servers
    history = tmp_path / "history.db"
    rules = short_for(RULES, tmp_path / "rules.yml")
    with MonitorProcess(bs, history) as monitor, \
            PrometheusProcess(tmp_path, [monitor.url.removeprefix("http://")], [rules]) as prom:
        wait_for("Prometheus to scrape the monitor", lambda: prom.query("kafka_txn_monitor_info"))
        assert prom.alerts("KafkaTxnHangingTransaction") == []

        [result] = run_scenario("late-write-after-abort", bs, ScenarioOptions(backdate_ms=BACKDATE_MS,
                                                                              healthy=False))
        hang = result.hanging[0]
        hold_group(bs, hang.topic, "held-readers", hang.start_offset)

        [alert] = wait_for("the hanging-transaction alert", lambda: prom.alerts("KafkaTxnHangingTransaction"))
        assert alert["labels"]["cluster"] == bs and alert["value"] in ("1", "1e+00")
        assert "`kafka-txn find-hanging --all`" in alert["annotations"]["runbook"]
        wait_for("the held-back group alert", lambda: prom.alerts("KafkaTxnGroupHeldBack"))
        lag = prom.query(f'kafka_txn_group_held_lag_records{{group="held-readers",topic="{hang.topic}"}}')
        assert [s["metric"]["producer_id"] for s in lag] == [str(hang.producer_id)]

        # Every dashboard query evaluates, and finds the data it charts.
        for expr in dashboard_queries():
            assert prom.query(expr), f"dashboard query {expr!r} returned nothing"

        # The finding, as find-hanging prints it, and its fix run as printed.
        doc = monitor.findings()
        assert doc is not None
        [row] = doc["hanging"]
        assert (row["topic"], row["partition"], row["start_offset"]) == (hang.topic, HANGING_PARTITION,
                                                                        hang.start_offset)
        for argv in printed_fix(row):
            done = run_as_printed(argv, bs)
            assert done.returncode == 0, done.stderr

        wait_for("the alert to resolve", lambda: not prom.active("KafkaTxnHangingTransaction"), timeout=60)
        wait_for("the group alert to resolve", lambda: not prom.active("KafkaTxnGroupHeldBack"), timeout=60)
        assert prom.query("sum(kafka_txn_findings)")[0]["value"][1] == "0"

        # The history: one incident, resolved by that audited abort.
        listed = subprocess.run([sys.executable, "-m", "kafka_txn_tools", "history", "--history", str(history),
                                 "-o", "json"], capture_output=True, text=True, check=True)
        [incident] = json.loads(listed.stdout)["incidents"]
        assert incident["resolution"] == "audited write" and incident["resolved_ms"] is not None
        assert incident["resolved_command"] == (f"kafka-txn abort --topic {hang.topic} --partition "
                                                f"{HANGING_PARTITION} --start-offset {hang.start_offset}")
        assert incident["held_groups"] == ["held-readers"] and incident["max_lso_lag"] >= 1

        code, log = monitor.terminate()
        assert code == 0 and "stopping" in log and "Traceback" not in log
        wait_for("the monitor-absent alert", lambda: prom.alerts("KafkaTxnMonitorAbsent"), timeout=60)
