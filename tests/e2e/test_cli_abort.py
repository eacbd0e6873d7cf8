"""abort and force-terminate against the embedded cluster, on live transactions (hanging ones: test_cli_hanging.py).

A live transaction is the dangerous case: abort must refuse it unless --force, and force-terminate is
the tool for it. Each test gets its own cluster because both commands change state.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_tools.cli import exit_codes
from tests.e2e.cli_support import kafka_transactions, kafka_txn, open_transaction, run_printed


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(nodes=3, data_dir=tmp_path / "kafka") as c:
        c.create_topic("orders", 3, 3)
        yield c


def open_offsets(bs: str) -> dict[int, int]:
    rows = kafka_txn(bs, "describe-producers", "--topic", "orders", "--open-only", "-o", "json").json()["producers"]
    return {r["partition"]: r["current_txn_start_offset"] for r in rows}


def test_forced_abort_moves_the_lso_and_a_rerun_is_already_done(cluster: EmbeddedCluster) -> None:
    bs = cluster.bootstrap_servers
    producer = open_transaction(bs, "app", "orders", [0, 1], records=4)
    start = str(open_offsets(bs)[0])
    r = kafka_txn(bs, "abort", "--topic", "orders", "--partition", "0", "--start-offset", start, "--force", "--yes",
                  "-o", "json")
    assert r.code == exit_codes.OK, r.err
    row = r.json()["aborts"][0]
    assert row["result"] == "aborted" and row["lso_before"] == int(start)
    assert row["lso_after"] == row["high_watermark_after"] > row["lso_before"]
    assert "late: 'app' is Ongoing" in row["coordinator_view"]
    assert open_offsets(bs) == {1: 0}  # only the forced partition was aborted
    again = kafka_txn(bs, "abort", "--topic", "orders", "--partition", "0", "--start-offset", start, "--yes")
    assert again.code == exit_codes.ALREADY_DONE, again.err
    # "Already done" with its evidence: the ABORT marker written above, after the transaction's start.
    assert (f"nothing to do: the transaction of producer {row['producer_id']} that started at offset {start} on "
            "partition orders-0 was already aborted: its ABORT marker is at offset") in again.err
    producer.abort_transaction(30)


def test_force_terminate_fences_and_aborts_through_the_coordinator(cluster: EmbeddedCluster) -> None:
    bs = cluster.bootstrap_servers
    open_transaction(bs, "stuck-app", "orders", [2])
    dry = kafka_txn(bs, "force-terminate", "--transactional-id", "stuck-app", "--force", "--dry-run", "-o", "json")
    assert dry.code == 0 and dry.json()["fenced"][0]["result"] == "dry-run"
    live = kafka_txn(bs, "force-terminate", "--transactional-id", "stuck-app", "--yes")
    assert live.code == exit_codes.ERROR and "is Ongoing and live" in live.err and "pass --force" in live.err
    no_tty = kafka_txn(bs, "force-terminate", "--transactional-id", "stuck-app", "--force")
    assert no_tty.code == exit_codes.USAGE and "pass --yes" in no_tty.err
    r = kafka_txn(bs, "force-terminate", "--transactionalId", "stuck-app", "--force", "--yes", "-o", "json")
    assert r.code == 0, r.err
    row = r.json()["fenced"][0]
    assert row["state_before"] == "Ongoing" and row["producer_epoch_after"] > row["producer_epoch_before"]
    assert "--force: fencing although 'stuck-app' is Ongoing and live" in r.err
    described = kafka_txn(bs, "describe", "-t", "stuck-app", "-o", "json").json()["transactions"][0]
    assert described["state"] in ("CompleteAbort", "Empty", "PrepareAbort")
    idle = kafka_txn(bs, "force-terminate", "-t", "stuck-app", "--yes")
    assert idle.code == exit_codes.ERROR and "no transaction in progress" in idle.err
    unknown = kafka_txn(bs, "force-terminate", "-t", "never-existed", "--yes")
    # Not "already done": nothing shows a transaction of this id ever completed (it may be a typo).
    assert unknown.code == exit_codes.ERROR and "'never-existed' is not known to its coordinator" in unknown.err


def test_plan_entries_are_revalidated_one_by_one(cluster: EmbeddedCluster, tmp_path: Path) -> None:
    bs = cluster.bootstrap_servers
    producer = open_transaction(bs, "live", "orders", [0])
    start = open_offsets(bs)[0]
    entry = {"topic": "orders", "partition": 0, "start_offset": start, "producer_id": 0, "producer_epoch": 0,
             "coordinator_epoch": -1, "reason": "no-transactional-id", "last_timestamp_ms": 0}
    plan = tmp_path / "plan.yaml"
    plan.write_text(yaml.safe_dump({"version": 1, "kind": "kafka-txn-abort-plan", "as_of_ms": 0, "entries": [
        entry, {**entry, "partition": 2, "start_offset": 999}]}))
    r = kafka_txn(bs, "abort", "--plan", str(plan), "--yes", "-o", "json")
    assert r.code == exit_codes.ERROR
    results = [(a["partition"], a["result"]) for a in r.json()["aborts"]]
    assert results == [(0, "refused"), (2, "refused")]  # live; no transaction at offset 999 (past the end)
    assert open_offsets(bs) == {0: start}
    producer.commit_transaction(30)
    done = kafka_txn(bs, "abort", "--plan", str(plan), "--yes", "-o", "json")
    assert done.code == exit_codes.ERROR  # the second entry is still refused
    assert [a["result"] for a in done.json()["aborts"]] == ["already-done", "refused"]
    assert "was already committed: its COMMIT marker is at offset" in done.json()["aborts"][0]["message"]


def test_kafka_transactions_refuses_a_live_transaction_in_upstream_style(cluster: EmbeddedCluster) -> None:
    bs = cluster.bootstrap_servers
    producer = open_transaction(bs, "app", "orders", [1])
    start = str(open_offsets(bs)[1])
    r = kafka_transactions(bs, "abort", "--topic", "orders", "--partition", "1", "--start-offset", start)
    assert (r.code, r.out) == (1, "")
    assert r.err.startswith("Refusing to abort the transaction on partition orders-1: the coordinator still holds "
                            "'app' as ongoing with orders-1")
    override = f"kafka-txn abort --topic orders --partition 1 --start-offset {start} --force --bootstrap-server {bs}"
    assert r.err.endswith(f"To abort it anyway: {override}\n")
    assert open_offsets(bs) == {1: int(start)}
    # The override is accepted exactly as printed (plus --yes: it is a write).
    run_printed(override)
    assert open_offsets(bs) == {}
    fenced = kafka_transactions(bs, "forceTerminateTransaction", "--transactionalId", "app")
    assert fenced.code == 1
    assert f"kafka-txn force-terminate --transactional-id app --force --bootstrap-server {bs}" in fenced.err
    producer.commit_transaction(30)  # it was live: its commit still works


def test_the_leader_enforces_txn_start_offset(cluster: EmbeddedCluster) -> None:
    """KIP-664's tag on the wire: a marker naming the wrong start offset is refused, the right one accepted."""
    from kafka_txn_tools.connection.client import AdminClient
    from kafka_txn_tools.connection.config import ClientSettings
    from kafka_txn_tools.models import TopicPartition

    bs = cluster.bootstrap_servers
    producer = open_transaction(bs, "app", "orders", [0])
    tp = TopicPartition("orders", 0)
    with AdminClient(ClientSettings(bootstrap_servers=bs)) as admin:
        leader = admin.metadata(["orders"]).partition(tp).leader
        replicas, _ = admin.describe_producers({leader: [tp]}, open_only=True)
        p = replicas[0].producers[0]
        args = (leader, tp, p.producer_id, p.producer_epoch, max(p.coordinator_epoch, 0))
        assert admin.write_abort_marker(*args, p.current_txn_start_offset + 1) == "INVALID_TXN_STATE"
        assert open_offsets(bs) == {0: p.current_txn_start_offset}
        assert admin.write_abort_marker(*args, p.current_txn_start_offset) is None
    assert open_offsets(bs) == {}
    del producer
