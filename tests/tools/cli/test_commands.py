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


def test_abort_plans_over_the_fake(fake: FakeCluster, monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    import yaml

    from kafka_txn_tools.models import TopicPartition
    from tests.tools.admin.fakes import MIN, producer

    monkeypatch.setattr("kafka_txn_tools.cli.session.connect", lambda conn: fake)
    hanging, live = TopicPartition("orders", 1), TopicPartition("orders", 2)
    fake.open_txn(hanging, producer(10, 100, 30 * MIN, epoch=4))
    fake.open_txn(live, producer(11, 50, 30 * MIN, epoch=2))
    fake.transactions["live"] = txn("live", 11, partitions=[live], epoch=2, coordinator=1)
    fake.offsets = {hanging: (100, 180), live: (50, 60)}
    plan = tmp_path / "plan.yaml"
    plan.write_text(yaml.safe_dump({"version": 1, "entries": []}))
    assert run("abort", "--plan", str(plan), "--yes")[0] == exit_codes.OK and fake.markers == []
    entries = [{"topic": "orders", "partition": 1, "start_offset": 100, "producer_id": 10, "producer_epoch": 4},
               {"topic": "orders", "partition": 2, "start_offset": 50, "producer_id": 11, "producer_epoch": 2}]
    plan.write_text(yaml.safe_dump({"version": 1, "entries": entries}))
    code, out, _err = run("abort", "--plan", str(plan), "--yes", "-o", "json")
    assert code == exit_codes.ERROR
    assert [r["result"] for r in json.loads(out)["aborts"]] == ["aborted", "refused"]
    assert fake.markers == [(1, hanging, 10, 4, 0, 100)]  # only the hanging one
    code, out, _err = run("abort", "--plan", str(plan), "--yes", "--force", "-o", "json")
    assert [r["result"] for r in json.loads(out)["aborts"]] == ["already-done", "aborted"]
    assert fake.markers[-1] == (2, live, 11, 2, 0, 50)
