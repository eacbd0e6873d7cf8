"""Commands over the in-memory cluster of tests/tools/admin/fakes.py: how results become output and exit codes
(end-to-end behaviour against real brokers is in tests/e2e)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kafka_txn_tools.cli import exit_codes
from kafka_txn_tools.cli.app import app
from tests.tools.admin.fakes import FakeCluster, cluster, txn


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeCluster:
    c = cluster()
    c.transactions = {"a": txn("a", 1, coordinator=0), "b": txn("b", 2, coordinator=2)}
    for module in ("describe", "listing", "find_hanging", "describe_producers"):
        monkeypatch.setattr(f"kafka_txn_tools.cli.commands.{module}.connect", lambda conn: c)
    return c


def run(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(app, [*args, "-b", "fake:9092"])
    return r.exit_code, r.stdout, r.stderr


def test_describe_all_never_exits_0_with_a_coordinator_unasked(fake: FakeCluster) -> None:
    assert run("describe", "--all", "-o", "json")[0] == exit_codes.OK
    fake.down = {2}
    code, out, err = run("describe", "--all", "-o", "json")
    doc = json.loads(out)
    assert code == exit_codes.PARTIAL and doc["partial"] is True
    assert [t["transactional_id"] for t in doc["transactions"]] == ["a"]
    assert "broker 2 is unreachable" in err
    fake.down = {0, 2}
    assert run("describe", "--all")[0] == exit_codes.ERROR  # nothing described, and errors: not "no transactions"


def test_missing_apis_are_exit_6_for_every_read_command(fake: FakeCluster) -> None:
    fake.unsupported = {"DescribeProducers", "ListTransactions", "DescribeTransactions"}
    for args in (["list"], ["describe", "--all"], ["describe", "-t", "a"], ["find-hanging", "--all"],
                 ["describe-producers", "--all"]):
        code, out, err = run(*args)
        assert code == exit_codes.UNSUPPORTED and err.startswith("error: the cluster does not support "), args
        assert out == ""


def plan_world(fake: FakeCluster, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """orders-1: producer 10's hanging transaction from offset 100; orders-2: producer 11's, live."""
    from kafka_txn_tools.models import TopicPartition
    from tests.tools.admin.fakes import MIN, producer

    monkeypatch.setattr("kafka_txn_tools.cli.session.connect", lambda conn: fake)
    hanging, live = TopicPartition("orders", 1), TopicPartition("orders", 2)
    fake.open_txn(hanging, producer(10, 100, 30 * MIN, epoch=4))
    fake.open_txn(live, producer(11, 50, 30 * MIN, epoch=2))
    fake.transactions["live"] = txn("live", 11, partitions=[live], epoch=2, coordinator=1)
    fake.append(hanging, records=100)
    fake.append(hanging, 10, 4, records=80, transactional=True)
    fake.offsets = {hanging: (100, 180), live: (50, 60)}
    entries = [{"topic": "orders", "partition": 1, "start_offset": 100, "producer_id": 10, "producer_epoch": 4},
               {"topic": "orders", "partition": 2, "start_offset": 50, "producer_id": 11, "producer_epoch": 2}]
    return hanging, live, entries


def write_plan(path, entries, **header):  # type: ignore[no-untyped-def]
    import yaml

    path.write_text(yaml.safe_dump({"version": 2, "kind": "kafka-txn-abort-plan", **header, "entries": entries}))
    return str(path)


def test_a_plan_is_written_all_or_nothing(fake: FakeCluster, monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    hanging, live, entries = plan_world(fake, monkeypatch)
    plan = write_plan(tmp_path / "plan.yaml", [], cluster_id="fake-cluster-id")
    assert run("abort", "--plan", plan, "--yes")[0] == exit_codes.OK and fake.markers == []
    plan = write_plan(tmp_path / "plan.yaml", entries, cluster_id="fake-cluster-id")
    code, out, err = run("abort", "--plan", plan, "--yes", "-o", "json")
    assert code == exit_codes.ERROR and fake.markers == []  # the live entry holds the whole plan back
    rows = json.loads(out)["aborts"]
    assert [r["result"] for r in rows] == ["not-written", "refused"]
    assert rows[0]["message"] == ("valid, not written: 1 of the plan's 2 entries were refused, and a plan is written "
                                  "all or nothing")
    assert "refused: entry 2 of 2 (orders-2 at offset 50): the coordinator still holds 'live' as ongoing" in err
    assert err.rstrip().endswith("error: 1 of the plan's 2 entries were refused: nothing was written (a plan is "
                                 "applied all or nothing; --skip-refused writes the 1 valid entry)")
    code, out, err = run("abort", "--plan", plan, "--yes", "--skip-refused", "-o", "json")
    assert code == exit_codes.PARTLY_APPLIED
    assert [r["result"] for r in json.loads(out)["aborts"]] == ["aborted", "refused"]
    assert fake.markers == [(1, hanging, 10, 4, 0, 100)]  # only the valid one
    code, out, _err = run("abort", "--plan", plan, "--yes", "--force", "-o", "json")
    assert code == exit_codes.OK  # the first was done (its marker is in the log), the second is forced
    assert [r["result"] for r in json.loads(out)["aborts"]] == ["already-done", "aborted"]
    assert fake.markers[-1] == (2, live, 11, 2, 0, 50)


def test_a_dry_run_of_a_plan_exits_as_the_write_would(fake: FakeCluster, monkeypatch: pytest.MonkeyPatch,
                                                       tmp_path) -> None:
    _hanging, _live, entries = plan_world(fake, monkeypatch)
    plan = write_plan(tmp_path / "plan.yaml", entries, cluster_id="fake-cluster-id")
    assert run("abort", "--plan", plan, "--dry-run")[0] == exit_codes.ERROR
    assert run("abort", "--plan", plan, "--dry-run", "--skip-refused")[0] == exit_codes.PARTLY_APPLIED
    assert run("abort", "--plan", write_plan(tmp_path / "one.yaml", entries[:1]), "--dry-run")[0] == exit_codes.OK
    assert fake.markers == []


def test_a_plan_made_on_another_cluster_is_refused_whole(fake: FakeCluster, monkeypatch: pytest.MonkeyPatch,
                                                         tmp_path) -> None:
    _hanging, _live, entries = plan_world(fake, monkeypatch)
    plan = write_plan(tmp_path / "plan.yaml", entries[:1], cluster_id="other-cluster-id", capture_time_ms=0)
    for extra in ([], ["--skip-refused"], ["--force"]):
        code, out, err = run("abort", "--plan", plan, "--yes", *extra)
        assert (code, out) == (exit_codes.ERROR, ""), err
        assert err.startswith("error: the plan was made on cluster other-cluster-id, and this is cluster "
                              "fake-cluster-id: a plan applies only to the cluster it was made on; nothing was "
                              "written: make the plan on this cluster (`kafka-txn find-hanging --all -o plan`)")
    assert fake.markers == []


def test_a_plan_without_a_cluster_id_is_applied_with_a_warning(fake: FakeCluster, monkeypatch: pytest.MonkeyPatch,
                                                               tmp_path) -> None:
    import yaml

    hanging, _live, entries = plan_world(fake, monkeypatch)
    old = tmp_path / "old.yaml"
    old.write_text(yaml.safe_dump({"version": 1, "entries": entries[:1]}))  # before plans recorded the cluster
    code, _out, err = run("abort", "--plan", str(old), "--yes")
    assert code == exit_codes.OK and fake.markers == [(1, hanging, 10, 4, 0, 100)]
    assert ("warning: the plan does not say which cluster it was made on (it was written before plans recorded it, "
            "or by hand): it is applied to this cluster with every entry still checked against its live state") in err


def test_a_plan_for_a_cluster_that_does_not_say_its_id_needs_a_person_or_force(
        fake: FakeCluster, monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    hanging, _live, entries = plan_world(fake, monkeypatch)
    fake.cluster_id = None
    plan = write_plan(tmp_path / "plan.yaml", entries[:1], cluster_id="fake-cluster-id")
    code, _out, err = run("abort", "--plan", plan, "--yes")
    assert code == exit_codes.ERROR and fake.markers == []
    assert "this cluster does not report its cluster id, so it cannot be checked that it is the same one" in err
    assert run("abort", "--plan", plan, "--yes", "--force")[0] == exit_codes.OK
    assert fake.markers == [(1, hanging, 10, 4, 0, 100)]


def test_skip_refused_is_for_plans_only(fake: FakeCluster) -> None:
    code, _out, err = run("abort", "--topic", "orders", "--partition", "1", "--start-offset", "100",
                          "--skip-refused")
    assert code == exit_codes.USAGE and "--skip-refused applies to --plan" in err


# ---- at 80 columns: the reasons stay, decoration goes (COLUMNS=80 as on a terminal) -----------------------------
def test_describe_share_group_at_80_columns_keeps_held_and_tx_pending(monkeypatch: pytest.MonkeyPatch) -> None:
    from kafka_txn_tools.admin import share_groups, share_pending
    from kafka_txn_tools.admin.share_groups import ShareGroupView, SharePartitionView
    from kafka_txn_tools.admin.share_pending import ShareHold

    view = ShareGroupView("payments-workers", "Stable", 3, "read_committed", [
        SharePartitionView("payments-ledger-eu-west-1", p, 100, 40, 100, 180, 7, 1, 2, 3, True) for p in (0, 1)])
    holds = [ShareHold("broker-0", "payments-workers", "payments-ledger-eu-west-1", 0, 2000, "ledger-writer-7f3a9c",
                       10, 16 * 60_000)]
    monkeypatch.setattr("kafka_txn_tools.cli.commands.share_group.connect",
                        lambda conn: cluster("payments-ledger-eu-west-1", partitions=2))
    monkeypatch.setattr(share_groups, "describe_share_group", lambda client, group: view)
    monkeypatch.setattr(share_pending, "read_metrics", lambda urls, timeout: (holds, []))
    r = CliRunner().invoke(app, ["describe-share-group", "--group", "payments-workers", "-b", "fake:9092",
                                 "--metrics-url", "http://broker-0:9404/metrics"], env={"COLUMNS": "80"})
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), r.stdout
    assert lines[0].split()[-2:] == ["HELD", "TX_PENDING"]  # kept: why the records wait
    assert "10 by ledger-writer-7f3a9c (16m)" in " ".join(r.stdout.split())  # wrapped between words at most
    assert "columns left out to fit 80 columns" in r.stderr and "MAX DELIV" in r.stderr  # decoration went first


def test_sweep_table_at_80_columns_keeps_verdict_and_reason(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    from types import SimpleNamespace

    from kafka_txn_tools.cli.commands.sweep import SweepOutput, _print

    row = {"topic": "payments-ledger-eu-west-1", "partition": 7, "producer_id": 2000, "producer_epoch": 3,
           "start_offset": 116, "age_ms": 2**31 - 1, "verdict": "hanging", "transactional_id": "ledger-writer-7f3a9c",
           "leader_broker_id": 1, "divergence": None, "reason": "transaction-not-ongoing",
           "action": "abort it: no coordinator will write its marker",
           "commands": ["kafka-txn abort --topic payments-ledger-eu-west-1 --partition 7 --start-offset 116"]}
    summary = {"hanging": 1, "stuck": 0, "late_live": 0, "unverified": 0, "as_of_ms": 1_700_000_000_000,
               "late_partitions_by_broker": {"1": 1}, "outputs": {"report.html": "/tmp/out/report.html",
                                                                 "abort-plan.yaml": "/tmp/out/abort-plan.yaml"},
               "cluster": {"reaches_cluster": True},
               "apply_plan": ["kafka-txn abort --plan /tmp/out/abort-plan.yaml --dry-run -b kafka-1:9092",
                              "kafka-txn abort --plan /tmp/out/abort-plan.yaml -b kafka-1:9092"]}
    monkeypatch.setenv("COLUMNS", "80")
    _print(SimpleNamespace(rows=[row], stuck=[], summary=summary), SweepOutput.table)
    out, err = capsys.readouterr()
    # Every line fits, except a command line: printed whole, never wrapped, so a copy runs as printed.
    commands = [*row["commands"], *summary["apply_plan"]]
    assert all(f"    {c}" in out.splitlines() for c in commands)
    assert all(len(line) <= 80 for line in out.splitlines() if line.strip() not in commands), out
    assert "hanging" in out and "transaction-not-ongoing" in out
    assert "24d 20h" in out or "AGE" in err  # the one duration spelling where it is shown
    assert "(as of 2023-11-14T22:13:20Z)" in " ".join(err.split())


def test_find_hanging_reads_the_lsos_first_and_full_scan_every_replica(fake: FakeCluster) -> None:
    from kafka_txn_tools.models import TopicPartition
    from tests.tools.admin.fakes import MIN, producer

    fake.open_txn(TopicPartition("orders", 1), producer(10, 100, 30 * MIN))
    fake.transactions["done"] = txn("done", 10, "CompleteCommit", coordinator=0)  # no marker is coming
    fake.offsets = {TopicPartition("orders", 1): (100, 180)}
    code, out, _err = run("find-hanging", "--topic", "orders", "-o", "json")  # the leaders of its 3 partitions
    doc = json.loads(out)
    assert code == exit_codes.OK and [r["producer_id"] for r in doc["hanging"]] == [10]
    assert doc["first_pass"] == {"full_scan": False, "partitions": 3, "clear_by_lso": 2,
                                 "replicas_asked": {"lso-below-high-watermark": 1}, "replicas_kept": 0}
    assert doc["scanned_replicas"] == 1
    code, out, _err = run("find-hanging", "--topic", "orders", "--full-scan", "-o", "json")
    full = json.loads(out)
    assert code == exit_codes.OK
    assert [{**r, "duration_ms": 0} for r in full["hanging"]] == [{**r, "duration_ms": 0} for r in doc["hanging"]]
    assert (full["first_pass"], full["scanned_replicas"]) == (None, 3)
