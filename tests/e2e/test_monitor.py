"""`kafka-txn monitor` against the embedded cluster, as a child process: its status page in a real browser
(headless Chromium), a broker going down (partial scans, findings kept and flagged stale, no crash), and a
read-only principal on a SASL_SSL cluster with ACLs (the ACLs docs/monitor.md documents are enough; an
unauthorized topic and a refused login are counted by cause; nothing is written).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.testing.scenarios import HANGING_PARTITION, ScenarioOptions, ScenarioResult, run_scenario
from kafka_txn_tools.admin.share_pending import samples
from kafka_txn_tools.connection.client import AdminClient
from kafka_txn_tools.connection.config import ClientSettings
from kafka_txn_tools.connection.profiles import resolve_settings
from kafka_txn_tools.models import PartitionOffsets, TopicPartition
from tests.broker.security.support import USERS, broker_config
from tests.e2e.monitor_support import MonitorProcess, chromium_dom, wait_for
from tests.e2e.test_monitor_prometheus import hold_group
from tests.e2e.test_security import properties

BACKDATE_MS = 30 * 60_000
CONFIG = {"transaction.partition.verification.enable": False}
DOCS = Path(__file__).resolve().parents[2] / "docs" / "monitor.md"


def metric(text: str, name: str, **labels: str) -> float | None:
    """The value of one sample of a /metrics text (labels given must match), None if absent."""
    for found, found_labels, value in samples(text):
        if found == name and all(found_labels.get(k) == v for k, v in labels.items()):
            return value
    return None


def hang(bs: str, **options: object) -> ScenarioResult:
    [result] = run_scenario("late-write-after-abort", bs, ScenarioOptions(backdate_ms=BACKDATE_MS, healthy=False,
                                                                           **options))  # type: ignore[arg-type]
    return result


# ---- the status page ---------------------------------------------------------------------------------------
@pytest.mark.needs("chromium")
def test_status_page_in_a_browser_shows_the_held_partition_and_its_command(tmp_path: Path) -> None:
    with EmbeddedCluster(nodes=1, data_dir=tmp_path / "kafka", config=CONFIG) as cluster:
        bs = cluster.bootstrap_servers
        truth = hang(bs).hanging[0]
        hold_group(bs, truth.topic, "page-readers", truth.start_offset)
        with MonitorProcess(bs, tmp_path / "history.db") as monitor:
            wait_for("the monitor to find the hang", lambda: (monitor.findings() or {}).get("hanging"))
            dom = chromium_dom(monitor.url + "/", tmp_path / "chromium")
    held = re.search(r'<table id="held">.*?</table>', dom, re.S)
    assert held is not None, dom[:2000]
    rows = re.findall(r'<tr class="held">(.*?)</tr>', held.group(0), re.S)
    [row] = rows
    cells = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td>(.*?)</td>", row, re.S)]
    assert cells[0] == "partition" and cells[1] == f"{truth.topic}-{HANGING_PARTITION}"
    assert cells[3] == truth.transactional_id and cells[7] == "page-readers"
    command = (f"kafka-txn abort --topic {truth.topic} --partition {HANGING_PARTITION} --start-offset "
               f"{truth.start_offset}")
    assert command in cells[8]
    assert '<svg id="held-chart"' in dom and "<path d=" in dom  # the chart has drawn its line
    incidents = re.search(r'<table id="incidents">.*?</table>', dom, re.S)
    assert incidents is not None and f"{truth.topic}-{HANGING_PARTITION}" in incidents.group(0)
    assert "still open" in incidents.group(0)
    assert not re.search(r'(src|href)="(https?:)?//', dom)  # nothing fetched from elsewhere


# ---- a broker down ------------------------------------------------------------------------------------------
def test_a_broker_down_makes_scans_partial_and_keeps_its_findings_flagged_stale(tmp_path: Path) -> None:
    with EmbeddedCluster(nodes=2, data_dir=tmp_path / "kafka", config=CONFIG) as cluster:
        bs = cluster.bootstrap_servers
        truth = hang(bs, replication_factor=1).hanging[0]
        with MonitorProcess(bs, tmp_path / "history.db") as monitor:
            wait_for("the hang", lambda: (monitor.findings() or {}).get("hanging"))
            [leader] = {b for h in monitor.findings()["hanging"] for b in h["brokers"]}  # type: ignore[index]
            cluster.stop_node(leader)  # the only replica of the hanging partition

            def partial() -> str | None:
                text = monitor.get("/metrics")[1]
                return text if metric(text, "kafka_txn_scan_partial") == 1 else None

            text = wait_for("a partial scan", partial)
            assert metric(text, "kafka_txn_findings", kind="partition", reason="transaction-not-ongoing") == 1
            assert metric(text, "kafka_txn_scan_stale") == 1 and metric(text, "kafka_txn_stale_findings") == 1
            assert (metric(text, "kafka_txn_scan_unread_replicas") or 0) > 0
            assert any(name == "kafka_txn_scan_errors_total" and value > 0 for name, _, value in samples(text))
            assert metric(text, "kafka_txn_scans_total", result="partial") >= 1  # type: ignore[operator]
            assert monitor.get("/healthz")[0] == 200
            assert "(not seen by the last scan)" in monitor.get("/")[1]
            doc = monitor.findings()
            assert doc is not None and doc["partial"] is True and doc["errors"]

            cluster.start_node(leader)

            def complete() -> str | None:
                text = monitor.get("/metrics")[1]
                return text if metric(text, "kafka_txn_scan_stale") == 0 else None

            text = wait_for("a complete scan after the broker is back", complete, timeout=90)
            assert metric(text, "kafka_txn_findings", kind="partition", reason="transaction-not-ongoing") == 1
            code, log = monitor.terminate()
    assert code == 0 and "Traceback" not in log
    assert truth.partition == HANGING_PARTITION


# ---- a read-only principal ----------------------------------------------------------------------------------
def documented_acls(principal: str) -> list[str]:
    """The read-only ACLs docs/monitor.md gives as kafka-acls.sh commands, in the embedded broker's form."""
    lines = [line for line in DOCS.read_text().splitlines() if line.startswith("kafka-acls.sh ")]
    assert lines, "docs/monitor.md lists no kafka-acls.sh commands"
    acls = []
    for line in lines:
        words = line.replace("'", "").split()
        operation = words[words.index("--operation") + 1]
        if "--cluster" in words:
            resource = "Cluster kafka-cluster"
        else:
            kind = next(w for w in words if w in ("--topic", "--group", "--transactional-id"))
            resource = f"{ {'--topic': 'Topic', '--group': 'Group', '--transactional-id': 'TransactionalId'}[kind]} "\
                       f"{words[words.index(kind) + 1]}"
        acls.append(f"User:{principal} ALLOW {operation} {resource}")
    return acls


@pytest.fixture
def secure(tmp_path: Path) -> Iterator[tuple[EmbeddedCluster, ScenarioResult]]:
    """A hanging transaction made over PLAINTEXT (the scenarios speak no SASL), then the same log dirs served
    over SASL_SSL with ACLs: bob has exactly the documented read-only ACLs; alice may describe every topic
    but read only `orders`."""
    plain = {**CONFIG, "offsets.topic.num.partitions": 3, "transaction.state.log.num.partitions": 3}
    with EmbeddedCluster(nodes=1, data_dir=tmp_path / "kafka", config=plain) as cluster:
        result = hang(cluster.bootstrap_servers)
        hold_group(cluster.bootstrap_servers, result.topics[0], "acl-readers", result.hanging[0].start_offset)
    alice = ["User:alice ALLOW Describe Topic *", "User:alice ALLOW Read Topic orders",
             "User:alice ALLOW Describe TransactionalId *", "User:alice ALLOW Describe Cluster kafka-cluster",
             "User:alice ALLOW Describe Group *"]
    cfg = broker_config("SASL_SSL", **{**CONFIG, "authorizer.class.name": "acl", "super.users": "User:admin",
                                       "authorizer.acls": documented_acls("bob") + alice})
    with EmbeddedCluster(nodes=1, data_dir=tmp_path / "kafka", config=cfg) as cluster:
        yield cluster, result


def log_ends(settings: ClientSettings, partitions: list[TopicPartition]) -> dict[TopicPartition, PartitionOffsets]:
    """Each partition's high watermark (its log end: one replica) and LSO, read as the super user."""
    with AdminClient(settings) as admin:
        return admin.partition_offsets({tp: 0 for tp in partitions})


def test_a_read_only_principal_with_the_documented_acls_sees_everything_and_writes_nothing(
        secure: tuple[EmbeddedCluster, ScenarioResult], tmp_path: Path) -> None:
    cluster, result = secure
    bs, truth = cluster.bootstrap_servers, result.hanging[0]
    partitions = [TopicPartition(truth.topic, p) for p in range(4)] + [
        TopicPartition(internal, p) for internal in ("__transaction_state", "__consumer_offsets") for p in range(3)]
    admin = resolve_settings(bs, properties(tmp_path, "admin", USERS["admin"]), None)
    before = log_ends(admin, partitions)
    assert all(o.high_watermark is not None and o.last_stable_offset is not None for o in before.values())
    held = before[TopicPartition(truth.topic, truth.partition)]
    assert held.last_stable_offset == truth.start_offset < held.high_watermark  # type: ignore[operator]
    bob = properties(tmp_path, "bob", USERS["bob"])
    with MonitorProcess(bs, tmp_path / "bob.db", "--command-config", str(bob)) as monitor:
        doc = wait_for("bob's monitor to find the hang", lambda: (monitor.findings() or {}).get("hanging") and
                       monitor.findings())
        wait_for("a few more scans", lambda: (metric(monitor.get("/metrics")[1], "kafka_txn_scans_total",
                                                     result="complete") or 0) >= 3)
        text = monitor.get("/metrics")[1]
    [row] = doc["hanging"]
    assert (row["topic"], row["partition"], row["start_offset"]) == (truth.topic, truth.partition, truth.start_offset)
    assert row["transactional_id"] == truth.transactional_id  # DESCRIBE on TransactionalId:* names it
    assert [g["group_id"] for g in row["stalled_groups"]] == ["acl-readers"]  # DESCRIBE on Group:* finds it
    assert doc["errors"] == [] and doc["partial"] is False
    assert metric(text, "kafka_txn_scans_total", result="partial") == 0
    assert not [n for n, _, v in samples(text) if n == "kafka_txn_scan_errors_total" and v > 0]
    # Every request was authorized (a refused one is an error, counted above), and none wrote anything.
    assert log_ends(admin, partitions) == before


def metrics_once(monitor: MonitorProcess, what: str, name: str, at_least: float, **labels: str) -> str:
    """The monitor's /metrics text once the sample `name{labels}` is at least `at_least`."""
    def check() -> str | None:
        text = monitor.get("/metrics")[1]
        return text if (metric(text, name, **labels) or 0) >= at_least else None

    return wait_for(what, check)


def test_refusals_are_counted_by_cause_and_never_stop_the_monitor(
        secure: tuple[EmbeddedCluster, ScenarioResult], tmp_path: Path) -> None:
    cluster, _ = secure
    bs = cluster.bootstrap_servers
    alice = properties(tmp_path, "alice", USERS["alice"])
    with MonitorProcess(bs, tmp_path / "alice.db", "--command-config", str(alice)) as monitor:
        text = metrics_once(monitor, "alice's refused reads", "kafka_txn_scan_errors_total", 1,
                            cause="TOPIC_AUTHORIZATION_FAILED")
        assert metric(text, "kafka_txn_scan_partial") == 1
    wrong = properties(tmp_path, "bob", "not-" + USERS["bob"])
    with MonitorProcess(bs, tmp_path / "wrong.db", "--command-config", str(wrong)) as monitor:
        text = metrics_once(monitor, "two refused logins", "kafka_txn_scan_errors_total", 2,
                            cause="SASL_AUTHENTICATION_FAILED")
        assert metric(text, "kafka_txn_scan_success") == 0 and metric(text, "kafka_txn_scans_total",
                                                                      result="failed") >= 2  # type: ignore[operator]
        status, body = monitor.get("/healthz")
        assert status == 200 and '"last_scan": "failed"' in body  # alive: the cluster refuses, the loop goes on
        assert monitor.get("/api/findings")[0] == 503  # it never read the cluster
        code, log = monitor.terminate()
    assert code == 0 and "refused SASL/SCRAM-SHA-512 authentication" in log and "Traceback" not in log
