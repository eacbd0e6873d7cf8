"""The incident history's flow (history/incidents.py) over a real SQLite file (history/store.py): when an
incident starts, is seen again, and ends; how it ended, from the audit log's lines as `kafka-txn abort` and
`force-terminate` write them (admin/audit.py); what a partial or scoped scan may not conclude."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from kafka_txn_tools.admin.audit import AuditLog, AuditRecord
from kafka_txn_tools.admin.scan import Scope
from kafka_txn_tools.history import incidents as H
from kafka_txn_tools.history.store import HistoryStore

CLUSTER = "kafka-1:9092,kafka-2:9092"
T0 = 1_700_000_000_000
MIN = 60_000


def partition_row(topic: str = "orders", partition: int = 1, pid: int = 7, start: int = 40, epoch: int = 0,
                  **extra: Any) -> dict[str, Any]:
    row = {"kind": "partition", "topic": topic, "partition": partition, "producer_id": pid, "producer_epoch": epoch,
           "start_offset": start, "duration_ms": 20 * MIN, "transactional_id": "app-1",
           "last_known_transactional_id": None, "reason": "transaction-not-ongoing", "lso": start,
           "high_watermark": start + 10, "brokers": [0, 1], "stalled_groups": [
               {"group_id": "readers", "type": "consumer", "topic": topic, "partition": partition,
                "committed_offset": start, "lag": 10}]}
    row.update(extra)
    return row


def coordinator_row(txn: str = "pay-1", pid: int = 9, epoch: int = 3) -> dict[str, Any]:
    return {"kind": "coordinator", "transactional_id": txn, "state": "PrepareCommit", "producer_id": pid,
            "producer_epoch": epoch, "coordinator_id": 2, "time_in_state_ms": 5 * MIN, "reason": "markers-pending",
            "pending_partitions": [{"topic": "payments", "partition": 0, "leader": 1, "reason": "open-transaction",
                                    "start_offset": 3}], "stalled_groups": None}


@pytest.fixture
def store(tmp_path: Path) -> HistoryStore:
    s = HistoryStore(tmp_path / "state" / "history.db")
    yield s  # type: ignore[misc]
    s.close()


def scan(store: HistoryStore, at: int, rows: list[dict[str, Any]], complete: bool = True, audit: Path | None = None,
         scope: Scope = Scope(all=True)) -> H.Recorded:
    return H.record(store, H.ScanRecord(CLUSTER, at, 1500, complete, rows, H.scope_covers(scope)), audit)


def audit_line(log: Path, at_ms: int, command: str, target: dict[str, Any], result: str, user: str = "alice",
               cluster: str = CLUSTER) -> None:
    """A line exactly as the CLI's audit log writes it."""
    line = AuditRecord(cluster, command, target, result, "").to_json(
        dt.datetime.fromtimestamp(at_ms / 1000, dt.UTC), user)
    with log.open("a") as f:
        f.write(line + "\n")


def abort_target(topic: str = "orders", partition: int = 1, start: int = 40, pid: int | None = 7) -> dict[str, Any]:
    return {"topic": topic, "partition": partition, "start_offset": start, "producer_id": pid, "producer_epoch": 0,
            "coordinator_epoch": 0}


def test_an_incident_starts_is_seen_again_and_ends_by_itself(store: HistoryStore) -> None:
    assert scan(store, T0, [partition_row()]).started == ["partition/orders/1/7/0/40"]
    assert scan(store, T0 + MIN, [partition_row(high_watermark=70)]).started == []
    [incident] = store.open_incidents(CLUSTER)
    assert (incident.first_seen_ms, incident.last_seen_ms, incident.resolved_ms) == (T0, T0 + MIN, None)
    assert incident.started_ms == T0 - 20 * MIN  # its age when first seen
    assert incident.max_lso_lag == 30 and incident.held_groups == ["readers"]
    done = scan(store, T0 + 2 * MIN, [])
    assert done.resolved == [("partition/orders/1/7/0/40", H.BY_ITSELF)]
    [ended] = store.incidents(T0)
    assert (ended.resolved_ms, ended.resolution, ended.resolved_by) == (T0 + 2 * MIN, "by itself", None)
    assert ended.duration_ms == 2 * MIN and ended.held_ms == 22 * MIN
    assert store.open_incidents(CLUSTER) == []


def test_a_new_transaction_on_the_same_partition_is_a_new_incident(store: HistoryStore) -> None:
    scan(store, T0, [partition_row(start=40)])
    scan(store, T0 + MIN, [partition_row(start=55)])
    incidents = store.incidents(T0)
    assert [(i.finding["start_offset"], i.resolved_ms) for i in incidents] == [(40, T0 + MIN), (55, None)]


def test_a_partial_scan_never_resolves_and_a_scoped_scan_only_what_it_covered(store: HistoryStore) -> None:
    scan(store, T0, [partition_row(topic="orders"), partition_row(topic="payments", pid=8), coordinator_row()])
    assert scan(store, T0 + MIN, [], complete=False).resolved == []
    assert scan(store, T0 + 2 * MIN, [], scope=Scope(topic="orders")).resolved == [
        ("partition/orders/1/7/0/40", H.BY_ITSELF)]
    assert [i.key for i in store.open_incidents(CLUSTER)] == ["partition/payments/1/8/0/40", "coordinator/pay-1/9/3"]
    # The coordinator row's pending partition is on `payments`: a scan of that topic covers it.
    assert scan(store, T0 + 3 * MIN, [], scope=Scope(topic="payments", partition=0)).resolved == [
        ("coordinator/pay-1/9/3", H.BY_ITSELF)]
    assert scan(store, T0 + 4 * MIN, [], scope=Scope(broker_id=5)).resolved == []  # not a replica of it
    assert scan(store, T0 + 5 * MIN, [], scope=Scope(broker_id=1)).resolved == [
        ("partition/payments/1/8/0/40", H.BY_ITSELF)]


def test_an_audited_abort_of_that_transaction_is_how_it_ended(store: HistoryStore, tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    scan(store, T0, [partition_row(), partition_row(partition=2, pid=8)], audit=log)
    audit_line(log, T0 + 30_000, "kafka-txn abort", abort_target(), "aborted", user="alice")
    audit_line(log, T0 + 40_000, "kafka-txn abort", abort_target(partition=2, pid=8), "refused")  # wrote nothing
    audit_line(log, T0 + 40_000, "kafka-txn abort", abort_target(partition=2, start=41, pid=8), "aborted")
    with log.open("a") as f:
        f.write("not json\n{\"time\": \"yesterday\"}\n")  # a damaged log is read around
    done = scan(store, T0 + MIN, [], audit=log)
    assert sorted(done.resolved) == [("partition/orders/1/7/0/40", "kafka-txn abort"),
                                     ("partition/orders/2/8/0/40", H.BY_ITSELF)]
    ended = {i.partition: i for i in store.incidents(T0)}
    assert (ended[1].resolution, ended[1].resolved_by) == ("audited write", "alice")
    assert ended[1].resolved_command == "kafka-txn abort --topic orders --partition 1 --start-offset 40"
    assert ended[2].resolution == "by itself"


def test_an_audited_commit_of_that_transaction_is_how_it_ended(store: HistoryStore, tmp_path: Path) -> None:
    # `kafka-txn commit` writes the COMMIT marker a coordinator decided on; its audit target has no producer id.
    log = tmp_path / "audit.log"
    scan(store, T0, [partition_row(), coordinator_row()], audit=log)
    commit = {"topic": "orders", "partition": 1, "start_offset": 40}
    audit_line(log, T0 + 30_000, "kafka-txn commit", commit, "committed")
    audit_line(log, T0 + 31_000, "kafka-txn commit", {"topic": "payments", "partition": 0, "start_offset": 3},
               "committed")  # names no producer: never ends a coordinator row
    done = scan(store, T0 + MIN, [], audit=log)
    assert sorted(done.resolved) == [("coordinator/pay-1/9/3", H.BY_ITSELF),
                                     ("partition/orders/1/7/0/40", "kafka-txn commit")]
    [ended] = [i for i in store.incidents(T0) if i.partition == 1]
    assert ended.resolved_command == "kafka-txn commit --topic orders --partition 1 --start-offset 40"


def test_an_abort_long_before_the_incident_or_on_another_cluster_does_not_count(store: HistoryStore,
                                                                                  tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    audit_line(log, T0 - 10 * MIN, "kafka-txn abort", abort_target(), "aborted")  # an earlier transaction's
    scan(store, T0, [partition_row()], audit=log)
    audit_line(log, T0 + 30_000, "kafka-txn abort", abort_target(), "aborted", cluster="other:9092")
    scan(store, T0 + MIN, [], audit=log)
    [ended] = store.incidents(T0)
    assert ended.resolution == "by itself"


def test_a_profile_and_its_bootstrap_servers_name_one_cluster(store: HistoryStore, tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    scan(store, T0, [coordinator_row()], audit=log)
    audit_line(log, T0 + 10_000, "kafka-txn force-terminate", {"transactional_id": "pay-1"}, "fenced", user="bob",
               cluster="prod (kafka-2:9092)")
    scan(store, T0 + MIN, [], audit=log)
    [ended] = store.incidents(T0)
    assert (ended.resolved_by, ended.resolved_command) == ("bob", "kafka-txn force-terminate --transactional-id pay-1")


def test_the_audit_log_the_cli_writes_is_the_one_read(store: HistoryStore, tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit" / "audit.log")
    now = int(dt.datetime.now(dt.UTC).timestamp() * 1000)
    scan(store, now, [partition_row()], audit=log.path)
    assert log.append(AuditRecord(CLUSTER, "kafka-txn abort", abort_target(), "aborted", "LSO moved"))
    assert scan(store, now + MIN, [], audit=log.path).resolved == [("partition/orders/1/7/0/40", "kafka-txn abort")]


def test_keys_and_sightings_of_each_kind() -> None:
    share = {"kind": "share", "node": "0", "group": "g", "topic": "t", "partition": 2, "producer_id": 4,
             "transactional_id": "x", "records": 5, "oldest_age_ms": 99, "stalled_groups": ["g"]}
    assert H.finding_key(share) == "share/g/t/2/4"
    s = H.sighting(share)
    assert (s.age_ms, s.held_groups, s.where) == (99, ("g",), "t-2")
    c = H.sighting(coordinator_row())
    assert (c.key, c.topic, c.partition, c.age_ms, c.lso_lag) == ("coordinator/pay-1/9/3", "payments", 0, 5 * MIN,
                                                                  None)
    orphan = H.sighting(partition_row(transactional_id=None, last_known_transactional_id="old-app"))
    assert orphan.transactional_id == "old-app"
    assert H.finding_key({"kind": "future", "x": 1}).startswith("future/")
    assert H.held_count([partition_row(), partition_row(pid=8, start=50), coordinator_row(), share]) == 2


def test_the_default_path_follows_xdg_and_its_override() -> None:
    assert H.default_path({"XDG_STATE_HOME": "/s"}) == Path("/s/kafka-txn/history.db")
    assert H.default_path({"KAFKA_TXN_HISTORY": "/x/h.db", "XDG_STATE_HOME": "/s"}) == Path("/x/h.db")
    assert H.default_path({}).parts[-4:] == (".local", "state", "kafka-txn", "history.db")


def test_the_file_is_one_sqlite_database_in_wal_mode_and_survives_a_reopen(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "h.db"
    with HistoryStore(path) as s:
        scan(s, T0, [partition_row()])
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert (path.parent.stat().st_mode & 0o777) in (0o700, 0o755)  # an existing directory keeps its mode
    with HistoryStore(path) as again:
        assert [i.key for i in again.open_incidents(CLUSTER)] == ["partition/orders/1/7/0/40"]
        assert [(p.time_ms, p.result, p.held_partitions) for p in again.scans(CLUSTER, 0)] == [(T0, "complete", 1)]


def test_export_writes_parquet_the_sweep_can_read(store: HistoryStore, tmp_path: Path) -> None:
    import pyarrow.parquet as pq
    scan(store, T0, [partition_row(), coordinator_row()])
    scan(store, T0 + MIN, [coordinator_row()])
    H.record_failed_scan(store, CLUSTER, T0 + 2 * MIN, 30_000, "monitor")
    counts = H.export_parquet(store, tmp_path / "export")
    assert counts == {"incidents.parquet": 2, "scans.parquet": 3}
    incidents = pq.read_table(tmp_path / "export" / "incidents.parquet").to_pylist()
    assert [(r["kind"], r["topic"], r["resolution"], r["held_groups"]) for r in incidents] == [
        ("partition", "orders", "by itself", "readers"), ("coordinator", "payments", None, "")]
    assert json.loads(json.dumps(incidents[0]))["duration_ms"] == MIN
    scans = pq.read_table(tmp_path / "export" / "scans.parquet").to_pylist()
    assert [s["result"] for s in scans] == ["complete", "complete", "failed"] and scans[2]["held_partitions"] is None


def test_the_audit_log_is_read_a_line_at_a_time(tmp_path: Path) -> None:
    """The audit log only grows, and a monitor reads it whenever an incident ends: what that read holds at once
    must not grow with the log (tracemalloc's peak, not a timing)."""
    import tracemalloc

    log = tmp_path / "audit.log"
    audit_line(log, T0 - 60 * MIN, "kafka-txn abort", abort_target(), "aborted")
    line = log.read_text()
    log.write_text(line * (4 * 2**20 // len(line)))  # 4 MiB of writes older than the incident
    audit_line(log, T0 + MIN, "kafka-txn abort", abort_target(partition=2), "aborted")
    tracemalloc.start()
    try:
        writes = H.read_audit(log, T0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [w.target["partition"] for w in writes] == [2]
    assert peak < 2**20


def test_a_partial_scan_resolves_only_what_none_of_its_errors_could_hide(store: HistoryStore) -> None:
    from kafka_txn_tools.models import ScanError, TopicPartition

    scan(store, T0, [partition_row(partition=1, start=1, brokers=[0, 1]),
                     partition_row(partition=2, start=2, brokers=[0, 2]), coordinator_row()])
    down = [ScanError("BROKER_UNREACHABLE", "x", broker_id=2, api="DescribeProducers"),
            ScanError("TOPIC_AUTHORIZATION_FAILED", "x", partition=TopicPartition("payments", 0))]
    partial = H.ScanRecord(CLUSTER, T0 + MIN, 1500, False, [], unread=H.Unread.of(down))
    assert H.record(store, partial, None).resolved == [("partition/orders/1/7/0/1", H.BY_ITSELF)]
    assert {i.key for i in store.open_incidents(CLUSTER)} == {"partition/orders/2/7/0/2", "coordinator/pay-1/9/3"}
    # Without what it could not read (the default), a partial scan resolves nothing.
    assert H.record(store, H.ScanRecord(CLUSTER, T0 + 2 * MIN, 1500, False, []), None).resolved == []


def test_the_latest_incidents_are_read_along_an_index_not_the_whole_history(store: HistoryStore) -> None:
    """The status page asks for them at every view: SQLite must walk back from the newest and stop, not read
    (and cache) every incident the file holds."""
    for i in range(5):
        scan(store, T0 + i * MIN, [partition_row(start=i)])
    sent: list[str] = []
    store._db.set_trace_callback(sent.append)  # the statement as SQLite runs it, its parameters bound
    assert [i.finding["start_offset"] for i in store.latest_incidents(T0, CLUSTER, 3)] == [4, 3, 2]
    store._db.set_trace_callback(None)
    [query] = [q for q in sent if q.startswith("SELECT")]
    plan = [row[3] for row in store._db.execute("EXPLAIN QUERY PLAN " + query).fetchall()]
    assert plan == ["SEARCH incidents USING INDEX incidents_recent (cluster=?)"]
