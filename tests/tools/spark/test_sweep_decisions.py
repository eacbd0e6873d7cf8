"""The sweep, on Spark, of `kafka-dump-log.sh` text that holds Apache Kafka 4.x's commit without one partition's
marker: orders-1's snapshot still shows producer 7's transaction (epoch 3) open from offset 40, and the id's
`__transaction_state` partition holds Ongoing (epoch 3, orders-1 and orders-2), PrepareCommit (epoch 4:
transaction version 2 bumps the epoch when it prepares), then CompleteCommit with no partitions. The sweep reads the
PrepareCommit, prints `kafka-txn commit` and leaves the transaction out of the abort plan; without that record
(compacted away) it plans the abort as before. (On real Kafka: tests/external/real_kafka/sweep_of_a_commit.py.)"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from kafka_txn_tools.admin.advice import Invocation
from kafka_txn_tools.dumps.plan import load_plan
from kafka_txn_tools.spark.job import run_sweep

T = 1_700_000_000_000
MIN = 60_000
COMMIT = "kafka-txn commit --topic orders --partition 1 --start-offset 40 --bootstrap-server k1:9092"
ABORT = "kafka-txn abort --topic orders --partition 1 --start-offset 40 --bootstrap-server k1:9092"


def record(offset: int, state: str, epoch: int, at: int, partitions: list[int]) -> str:
    key = json.dumps({"type": "0", "data": {"transactionalId": "app"}}, separators=(",", ":"))
    data = {"producerId": 7, "previousProducerId": -1, "nextProducerId": -1, "producerEpoch": epoch,
            "transactionTimeoutMs": 60000, "transactionStatus": state,
            "transactionPartitions": [{"topic": "orders", "partitionIds": partitions}] if partitions else [],
            "transactionLastUpdateTimestampMs": at, "transactionStartTimestampMs": T - 30 * MIN,
            "clientTransactionVersion": 2}
    payload = json.dumps({"version": "1", "data": data}, separators=(",", ":"))
    return (f"| offset: {offset} CreateTime: {at} keySize: 5 valueSize: 60 sequence: -1 headerKeys: [] key: {key} "
            f"payload: {payload}\n")


def dump_log_text(path: Path, with_decision: bool = True) -> Path:
    last_write = T - 25 * MIN
    lines = ["Dumping /kafka/node-1/orders-1/00000000000000000050.snapshot\n",
             f"producerId: 7 producerEpoch: 3 coordinatorEpoch: 0 currentTxnFirstOffset: OptionalLong[40] "
             f"lastTimestamp: {last_write} firstSequence: 0 lastSequence: 0 lastOffset: 40 offsetDelta: 0 "
             f"timestamp: {last_write}\n",
             "Dumping /kafka/node-1/__transaction_state-12/00000000000000000000.log\n",
             "Log starting offset: 0\n",
             record(0, "Ongoing", 3, T - 30 * MIN, [1, 2])]
    if with_decision:
        lines.append(record(1, "PrepareCommit", 4, T - 20 * MIN, [1, 2]))
    lines.append(record(2, "CompleteCommit", 4, T - 20 * MIN + 50, []))
    path.write_text("".join(lines))
    return path


def sweep(spark: Any, tmp_path: Path, with_decision: bool) -> Any:
    text = dump_log_text(tmp_path / "broker-1.txt", with_decision)
    return run_sweep([str(text)], tmp_path / "out", as_of_ms=T, spark=spark,
                     invocation=Invocation(bootstrap_server="k1:9092"))


def test_a_commit_decision_in_the_transaction_log_is_ended_by_kafka_txn_commit_outside_the_plan(
        spark: Any, tmp_path: Path) -> None:
    result = sweep(spark, tmp_path, with_decision=True)
    [row] = result.rows
    assert (row["verdict"], row["reason"], row["transactional_id"]) == ("hanging", "transaction-not-ongoing", "app")
    assert row["commands"] == [COMMIT]
    assert row["coordinator_decision"] == {
        "outcome": "commit", "transactional_id": "app", "producer_id": 7, "producer_epoch": 4,
        "decided_ms": T - 20 * MIN, "transaction_state_partition": 12, "offset": 1}
    assert load_plan(tmp_path / "out" / "abort-plan.yaml").entries == []
    [left] = result.summary["left_out_of_plan"]
    assert (left["topic"], left["partition"], left["commands"]) == ("orders", 1, [COMMIT])
    assert result.summary["apply_plan"] == []
    assert "Not in the abort plan" in (tmp_path / "out" / "report.html").read_text()
    with open(tmp_path / "out" / "late_transactions.csv", newline="") as src:
        [csv_row] = csv.DictReader(src)
    assert json.loads(csv_row["coordinator_decision"]) == row["coordinator_decision"]
    [parquet_row] = pq.read_table(tmp_path / "out" / "late_transactions").to_pylist()
    assert parquet_row["coordinator_decision"] == row["coordinator_decision"]


def test_the_printed_next_steps_say_it_is_not_in_the_plan_and_give_its_commit(spark: Any, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from kafka_txn_tools.cli.app import app

    text = dump_log_text(tmp_path / "broker-1.txt")
    r = CliRunner().invoke(app, ["sweep", str(text), "--out", str(tmp_path / "out"), "--as-of", str(T),
                                 "-b", "k1:9092", "--master", "local[2]"])
    assert r.exit_code == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("not in the abort plan: orders-1 producer 7"))
    assert lines[at + 1:at + 3] == ["  run:", f"    {COMMIT}"]
    assert "kafka-txn abort" not in r.stdout


def test_without_the_decision_the_abort_is_planned(spark: Any, tmp_path: Path) -> None:
    result = sweep(spark, tmp_path, with_decision=False)
    [row] = result.rows
    assert (row["commands"], row["coordinator_decision"]) == ([ABORT], None)
    [entry] = load_plan(tmp_path / "out" / "abort-plan.yaml").entries
    assert (entry.topic, entry.partition, entry.start_offset, entry.producer_id) == ("orders", 1, 40, 7)
    assert result.summary["left_out_of_plan"] == []
