"""The commands a finding prints, as the table shows them: each whole on its own line at any width (copy and
paste must work at 80 columns), and the same as the JSON rows' `commands`; the prose around them wraps."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from kafka_txn_tools.cli.app import app
from tests.tools.admin.fakes import MIN, FakeCluster, cluster, producer, txn
from tests.tools.admin.test_scan import T0, T2, mixed


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeCluster:
    c = mixed()
    for module in ("describe", "find_hanging"):
        monkeypatch.setattr(f"kafka_txn_tools.cli.commands.{module}.connect", lambda conn: c)
    monkeypatch.setattr("kafka_txn_tools.admin.acl_probe.scan_warning", lambda *args: None)  # no ACLs to probe
    return c


def run(*args: str, columns: int = 80) -> tuple[int, str]:
    r = CliRunner().invoke(app, [*args, "-b", "kafka-1.example.com:9092,kafka-2.example.com:9092"],
                           env={"COLUMNS": str(columns)})
    return r.exit_code, r.stdout


@pytest.mark.parametrize("columns", [80, 40, 200])
def test_each_command_is_a_whole_line_of_the_table_at_any_width(fake: FakeCluster, columns: int) -> None:
    _, doc = run("find-hanging", "--all", "-o", "json")
    import json

    rows = json.loads(doc)["hanging"]
    commands = [c for row in rows for c in row["commands"]]
    hanging = [c for row in rows if row["reason"] not in ("late", "prepared-2pc") for c in row["commands"]]
    assert sorted(hanging) == sorted(
        f"kafka-txn abort --topic orders --partition {tp.partition} --start-offset {start} --bootstrap-server "
        "kafka-1.example.com:9092,kafka-2.example.com:9092" for tp, start in ((T0, 100), (T2, 310)))
    live = [row for row in rows if row["reason"] in ("late", "prepared-2pc")]
    assert live and all(row["commands"] == [
        f"kafka-txn find-hanging --topic orders --partition {row['partition']} --watch --count-held "
        "--bootstrap-server kafka-1.example.com:9092,kafka-2.example.com:9092"] for row in live)
    code, table = run("find-hanging", "--all", columns=columns)
    assert code == 0
    lines = table.splitlines()
    for command in commands:
        assert f"    {command}" in lines  # whole, on its own line, however long
    # After the table: each row's why ("orders-0 producer 10: ..."), what to do, and its commands.
    footer = lines[next(i for i, line in enumerate(lines) if line.startswith("orders-0 producer ")):]
    prose = [line for line in footer if not line.lstrip().startswith("kafka-txn ")]
    assert prose and all(len(line) <= columns or " " not in line.strip() for line in prose)


def test_describe_prints_what_ends_a_transaction_stuck_at_its_coordinator(monkeypatch: pytest.MonkeyPatch) -> None:
    from kafka_txn_broker.formats.partitioning import TXN_TOPIC
    from kafka_txn_tools.models import PartitionInfo, TopicPartition

    c: FakeCluster = cluster(internal=[])
    c.partitions += [PartitionInfo(TopicPartition(TXN_TOPIC, i), 0, (0, 1, 2), (0, 1, 2), True) for i in range(3)]
    # PrepareCommit, orders-1's leader still shows the producer's transaction open: its coordinator gave it up.
    c.transactions["stuck"] = txn("stuck", 40, "PrepareCommit", partitions=[TopicPartition("orders", 1)])
    c.open_txn(TopicPartition("orders", 1), producer(40, 12, 30 * MIN))
    monkeypatch.setattr("kafka_txn_tools.cli.commands.describe.connect", lambda conn: c)
    import json

    code, doc = run("describe", "-t", "stuck", "-o", "json")
    [row] = json.loads(doc)["transactions"]
    command = ("kafka-txn move-coordinator --transactional-id stuck --bootstrap-server "
               "kafka-1.example.com:9092,kafka-2.example.com:9092")
    assert (code, row["stuck_reason"], row["commands"]) == (0, "markers-pending", [command])
    assert row["action"].startswith("move its coordinator with the command below")
    _, table = run("describe", "-t", "stuck")
    assert f"    {command}" in table.splitlines()
