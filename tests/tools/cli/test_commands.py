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
