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
