"""kafka-txn list / describe / describe-producers / find-hanging / dump against a live embedded cluster.

The cluster holds one live open transaction (`live-1` on orders-0 and orders-1), one committed
transaction (`done-1`) and plain records, so every output format has real rows to show.
Hanging-transaction scenarios are in test_cli_hanging.py.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_tools.cli import exit_codes
from tests.e2e.cli_support import header, kafka_transactions, kafka_txn, leader_of, open_transaction


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(nodes=3, data_dir=tmp_path_factory.mktemp("kafka")) as c:
        c.create_topic("orders", 3, 3)
        done = open_transaction(c.bootstrap_servers, "done-1", "orders", [2])
        done.commit_transaction(30)
        live = open_transaction(c.bootstrap_servers, "live-1", "orders", [0, 1])
        yield c
        live.abort_transaction(30)


@pytest.fixture(scope="module")
def bs(cluster: EmbeddedCluster) -> str:
    return cluster.bootstrap_servers


def test_list_in_every_format(bs: str) -> None:
    rows = kafka_txn(bs, "list", "-o", "json").json()["transactions"]
    states = {r["transactional_id"]: r["state"] for r in rows}
    assert states == {"live-1": "Ongoing", "done-1": "CompleteCommit"}
    assert set(rows[0]) == {"transactional_id", "coordinator_id", "producer_id", "state"}
    assert yaml.safe_load(kafka_txn(bs, "list", "-o", "yaml").out)["transactions"] == rows
    as_csv = list(csv.DictReader(io.StringIO(kafka_txn(bs, "list", "-o", "csv").out)))
    assert {r["transactional_id"] for r in as_csv} == {"live-1", "done-1"}
    tsv = kafka_txn(bs, "list", "-o", "tsv").out
    assert tsv.splitlines()[0] == "transactional_id\tcoordinator_id\tproducer_id\tstate"
    assert header(kafka_txn(bs, "list", "-o", "kafka").out) == [
        "TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
    table = kafka_txn(bs, "list").out
    assert table.splitlines()[0].split() == ["TRANSACTIONAL", "ID", "COORDINATOR", "PRODUCER", "ID", "STATE"]


def test_list_filters(bs: str) -> None:
    def ids(*args: str) -> set[str]:
        return {r["transactional_id"] for r in kafka_txn(bs, "list", "-o", "json", *args).json()["transactions"]}

    assert ids("--state", "ongoing") == {"live-1"}
    assert ids("--transactional-id-pattern", "done-.*") == {"done-1"}
    assert ids("--transactional-id-pattern", "done") == set()
    assert ids("--min-duration", "1h") == set()
    assert ids("--duration-filter", "-1") == {"live-1", "done-1"}


def test_describe(bs: str) -> None:
    r = kafka_txn(bs, "describe", "--transactional-id", "live-1", "done-1", "-o", "json")
    assert r.code == 0, r.err
    by_id = {t["transactional_id"]: t for t in r.json()["transactions"]}
    assert by_id["live-1"]["state"] == "Ongoing" and by_id["live-1"]["partitions"] == ["orders-0", "orders-1"]
    assert by_id["live-1"]["duration_ms"] >= 0 and by_id["live-1"]["timeout_ms"] == 600_000
    assert by_id["done-1"]["partitions"] == []
    everything = kafka_txn(bs, "describe", "--all", "-o", "json").json()["transactions"]
    assert {t["transactional_id"] for t in everything} == {"live-1", "done-1"}
    upstream = kafka_txn(bs, "describe", "-t", "live-1", "-o", "kafka").out
    assert header(upstream) == ["CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
                                "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs",
                                "TopicPartitions"]
    assert upstream.splitlines()[1].split("\t")[8] == "orders-0,orders-1"


def test_describe_unknown_id_is_an_error_naming_it(bs: str) -> None:
    r = kafka_txn(bs, "describe", "-t", "nope")
    assert r.code == exit_codes.ERROR and "transactional id 'nope' is not known" in r.err
    partial = kafka_txn(bs, "describe", "-t", "nope", "-t", "live-1", "-o", "json")
    assert partial.code == exit_codes.PARTIAL and len(partial.json()["transactions"]) == 1


def test_describe_producers(cluster: EmbeddedCluster, bs: str) -> None:
    one = kafka_txn(bs, "describe-producers", "--topic", "orders", "--partition", "0", "-o", "json").json()
    open_rows = [r for r in one["producers"] if r["current_txn_start_offset"] is not None]
    leader = leader_of(bs, "orders", 0)
    assert len(open_rows) == 1 and open_rows[0]["broker_id"] == leader
    upstream = kafka_txn(bs, "describe-producers", "--topic", "orders", "--partition", "0", "-o", "kafka").out
    assert header(upstream) == ["ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence",
                                "LastTimestamp", "CurrentTransactionStartOffset"]
    other = str((leader + 1) % 3)
    follower = kafka_txn(bs, "describe-producers", "--topic", "orders", "--partition", "0", "--broker-id", other,
                         "-o", "json").json()["producers"]
    assert {r["broker_id"] for r in follower} == {int(other)}
    everywhere = kafka_txn(bs, "describe-producers", "--all", "--open-only", "-o", "json").json()["producers"]
    assert {(r["partition"], r["broker_id"]) for r in everywhere} == {(p, b) for p in (0, 1) for b in (0, 1, 2)}


def test_find_hanging_finds_nothing_in_a_healthy_cluster(bs: str) -> None:
    r = kafka_txn(bs, "find-hanging", "--all", "--exit-code", "-o", "json")
    assert r.code == exit_codes.OK, r.err
    doc = r.json()
    # Every partition's LSO read from its leader (the first pass); the full scan asks every replica.
    assert doc["hanging"] == [] and doc["errors"] == [] and doc["first_pass"]["partitions"] >= 3
    full = kafka_txn(bs, "find-hanging", "--all", "--full-scan", "--exit-code", "-o", "json")
    assert full.code == exit_codes.OK and full.json()["hanging"] == [] and full.json()["scanned_replicas"] >= 9
    assert "no hanging transactions" in kafka_txn(bs, "find-hanging", "--all").out
    plan = yaml.safe_load(kafka_txn(bs, "find-hanging", "--all", "-o", "plan").out)
    assert plan["kind"] == "kafka-txn-abort-plan" and plan["entries"] == []


def test_find_hanging_include_late_shows_the_live_one_with_what_it_holds_back(bs: str) -> None:
    r = kafka_txn(bs, "find-hanging", "--topic", "orders", "--max-transaction-timeout", "0", "--include-late",
                  "--exit-code", "-o", "json")
    assert r.code == exit_codes.OK  # late is not hanging
    rows = r.json()["hanging"]
    assert {(h["partition"], h["reason"], h["transactional_id"]) for h in rows} == {
        (0, "late", "live-1"), (1, "late", "live-1")}
    assert all(h["lso"] == h["start_offset"] and h["high_watermark"] > h["lso"] for h in rows)
    upstream = kafka_txn(bs, "find-hanging", "--topic", "orders", "--max-transaction-timeout", "0",
                         "--include-late", "-o", "kafka").out
    assert header(upstream) == ["Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch",
                                "StartOffset", "LastTimestamp", "Duration(min)"]


def test_abort_refuses_a_live_transaction(bs: str) -> None:
    start = str(next(r["current_txn_start_offset"] for r in kafka_txn(
        bs, "describe-producers", "--topic", "orders", "--partition", "0", "--open-only", "-o", "json"
    ).json()["producers"]))
    r = kafka_txn(bs, "abort", "--topic", "orders", "--partition", "0", "--start-offset", start, "--yes")
    assert r.code == exit_codes.ERROR and "still holds 'live-1' as ongoing with orders-0" in r.err
    dry = kafka_txn(bs, "abort", "--topic", "orders", "--partition", "0", "--start-offset", start, "--dry-run")
    assert dry.code == exit_codes.ERROR
    assert f"coordinator epoch 0, start offset {start}; coordinator view: late" in dry.err


def test_dump(bs: str, tmp_path: Path) -> None:
    from kafka_txn_tools.dumps.schema import ERRORS, PRODUCERS, TRANSACTIONS, Manifest, read_rows

    for fmt in ("jsonl", "parquet"):
        out = tmp_path / fmt
        r = kafka_txn(bs, "dump", "--all", "--out", str(out), "--format", fmt)
        assert r.code == 0, r.err
        producers = list(read_rows(out, PRODUCERS))
        assert {(p["partition"], p["broker_id"]) for p in producers if p["current_txn_start_offset"] >= 0} == {
            (p, b) for p in (0, 1) for b in (0, 1, 2)}
        assert {t["transactional_id"]: t["state"] for t in read_rows(out, TRANSACTIONS)} == {
            "live-1": "Ongoing", "done-1": "CompleteCommit"}
        assert list(read_rows(out, ERRORS)) == []
        assert Manifest.read(out).brokers == [0, 1, 2]


def test_kafka_transactions_entry_point(bs: str) -> None:
    listed = kafka_transactions(bs, "list")
    assert listed.code == 0 and header(listed.out) == ["TransactionalId", "Coordinator", "ProducerId",
                                                        "TransactionState"]
    assert len(listed.out.splitlines()) == 3
    described = kafka_transactions(bs, "describe", "--transactional-id", "live-1")
    assert described.code == 0 and "\tOngoing" in described.out
    missing = kafka_transactions(bs, "describe", "--transactional-id", "nope")
    assert (missing.code, missing.err) == (1, "Failed to describe transaction state of transactional-id `nope`: "
                                              "The transactionalId could not be found.. Enable debug logging for "
                                              "additional detail.\n")
    producers = kafka_transactions(bs, "describe-producers", "--topic", "orders", "--partition", "1")
    assert producers.code == 0 and len(producers.out.splitlines()) == 2
    hanging = kafka_transactions(bs, "find-hanging", "--broker-id", "0")
    assert (hanging.code, hanging.out) == (0, "Topic\tPartition\tProducerId\tProducerEpoch\tCoordinatorEpoch\t"
                                              "StartOffset\tLastTimestamp\tDuration(min)\t\n")
    no_offset = kafka_transactions(bs, "abort", "--topic", "orders", "--partition", "2", "--start-offset", "0")
    assert no_offset.code == 1  # upstream's code and first sentence, then the evidence: the transaction's marker
    assert no_offset.err.startswith("Could not find any open transactions starting at offset 0 on partition orders-2: "
                                    "the transaction of producer ")
    assert "was already committed: its COMMIT marker is at offset" in no_offset.err


@pytest.mark.parametrize("args", [
    ["find-hanging", "--topic", "orders", "--max-transaction-timeout", "0", "--include-late"],
    ["describe", "--all"], ["describe-producers", "--all"], ["list"],
])
def test_tables_fit_80_columns_without_breaking_a_value(bs: str, args: list[str]) -> None:
    narrow = kafka_txn(bs, *args, env={"COLUMNS": "80"})
    wide = kafka_txn(bs, *args, "--wide", env={"COLUMNS": "80"})
    assert narrow.code == wide.code == 0, narrow.err
    # Every line fits but a printed command, kept whole so that it pastes as printed.
    assert max(len(line) for line in narrow.out.splitlines() if not line.lstrip().startswith("kafka-txn ")) <= 80
    rows = next(iter(kafka_txn(bs, *args, "-o", "json").json().values()))
    tokens = {t for line in narrow.out.splitlines() for t in line.split()}
    for row in rows:  # the first column is essential: each value on one line, whole
        # (find-hanging's rows lead with their kind, a column a narrow table leaves out; its first is the partition)
        first = f"{row['topic']}-{row['partition']}" if row.get("kind") == "partition" else next(iter(row.values()))
        assert str(first) in tokens
    if "note: " in narrow.err:
        assert "use --wide for all" in " ".join(narrow.err.split())  # stderr wraps between words at 80 columns
        assert max(map(len, wide.out.splitlines())) > 80
