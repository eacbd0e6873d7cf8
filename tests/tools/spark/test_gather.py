"""Classification on small inputs built from plain rows: through Spark's gather step, then the pure rules."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import pytest

from kafka_txn_broker.formats.transactions import LATE_TRANSACTION_BUFFER_MS
from kafka_txn_tools.dumps import schema
from kafka_txn_tools.spark import classify as C
from kafka_txn_tools.spark.gather import LITERAL_LIMIT, gather
from kafka_txn_tools.spark.ingest import row_tuple, spark_schema
from kafka_txn_tools.spark.normalize import normalize_producers, normalize_transactions

pytestmark = pytest.mark.spark

NOW = 1_700_000_000_000
TIMEOUT = 900_000
PARAMS = C.SweepParams(NOW, TIMEOUT, include_late=True)
OLD = NOW - TIMEOUT - 60_000  # late by find-hanging's rule, not by the metric's


def producer(**fields: Any) -> dict[str, Any]:
    row = {"broker_id": 1, "topic": "t", "partition": 0, "is_leader": True, "producer_id": 1, "producer_epoch": 2,
           "last_sequence": 5, "last_timestamp_ms": OLD, "coordinator_epoch": 0, "current_txn_start_offset": 10,
           "capture_time_ms": NOW, "source": "describe-producers"}
    row.update(fields)
    return row


def txn(**fields: Any) -> dict[str, Any]:
    row = {"coordinator_id": 1, "transactional_id": "tid", "producer_id": 1, "producer_epoch": 2, "state": "Ongoing",
           "timeout_ms": 60_000, "start_time_ms": OLD, "last_update_ms": OLD,
           "partitions": [{"topic": "t", "partition": 0}], "capture_time_ms": NOW, "source": "describe-transactions"}
    row.update(fields)
    return row


def frame(spark, kind: str, rows: list[dict[str, Any]]):
    full = [schema.conform_row(kind, r) for r in rows]
    return spark.createDataFrame([row_tuple(kind, r) for r in full], spark_schema(kind))


def run(spark, producers, transactions=(), params=PARAMS, limit=LITERAL_LIMIT) -> dict[str, list[dict[str, Any]]]:
    """The sweep's two halves: Spark gathers the partitions with late transactions, classify judges them."""
    p = frame(spark, schema.PRODUCERS, list(producers))
    t = frame(spark, schema.TRANSACTIONS, list(transactions))
    gathered = gather(p, t, params, limit)
    analysis = C.analyze(gathered.open_rows, gathered.replicas, gathered.coordinators, params)
    return {
        "verdicts": sorted(analysis.verdicts, key=lambda r: (r["topic"], r["partition"], r["producer_id"])),
        "late": [asdict(r) for r in analysis.late],
        "divergence": sorted((asdict(d) for d in analysis.divergence), key=lambda d: d["producer_id"]),
        "leaders": [asdict(r) for _, r in sorted(analysis.leaders.items())],
        "reported": C.reported(analysis.verdicts, include_late=False),
    }


CASES = [
    ("no coordinator row", [], "no-transactional-id"),
    ("listed but not describable", [txn(state="Dead", partitions=None, timeout_ms=None)], "transactional-id-not-found"),
    ("coordinator epoch older", [txn(producer_epoch=1)], "epoch-mismatch"),
    ("completed, partition still listed", [txn(state="CompleteCommit")], "transaction-not-ongoing"),
    ("completed and cleared", [txn(state="CompleteAbort", partitions=[])], "transaction-not-ongoing"),
    ("empty", [txn(state="Empty", partitions=[])], "transaction-not-ongoing"),
    ("ongoing elsewhere", [txn(partitions=[{"topic": "T", "partition": 1}])], "partition-not-in-transaction"),
    ("other topic, same index", [txn(partitions=[{"topic": "u", "partition": 0}])], "partition-not-in-transaction"),
    ("live", [txn()], "late"),
    ("markers being written", [txn(state="PrepareCommit")], "late"),
    ("epoch bumped at end (TV2)", [txn(state="PrepareAbort", producer_epoch=3)], "late"),
    ("describe failed", [txn(partitions=None)], "coordinator-state-unknown"),
    ("two ids, one live", [txn(transactional_id="a", state="Empty", partitions=[]), txn(transactional_id="b")],
     "late"),
    ("two ids, both hanging: the first by name", [txn(transactional_id="b", state="Empty", partitions=[]),
                                                  txn(transactional_id="a", producer_epoch=0)], "epoch-mismatch"),
]


def _scenarios() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every scenario in one input, each on its own topic (and producer ids), so one Spark run
    classifies them all: the transforms work per partition and producer, so scenarios cannot mix."""
    producers: list[dict[str, Any]] = []
    txns: list[dict[str, Any]] = []
    for i, (_, coordinator, _) in enumerate(CASES):
        topic, pid = f"reason-{i}", 1000 + i
        producers.append(producer(topic=topic, producer_id=pid))
        for row in coordinator:
            parts = row["partitions"]
            if parts is not None:
                parts = [{**p, "topic": topic if p["topic"] == "t" else p["topic"].lower() + f"-{i}"} for p in parts]
            txns.append({**row, "producer_id": pid, "transactional_id": f"{row['transactional_id']}-{i}",
                         "partitions": parts})
    buffer = LATE_TRANSACTION_BUFFER_MS
    producers += [
        # strict: exactly the timeout is not late; any negative start offset is no transaction
        producer(topic="strict", producer_id=1, last_timestamp_ms=NOW - TIMEOUT),
        producer(topic="strict", producer_id=2, last_timestamp_ms=NOW - TIMEOUT - 1),
        producer(topic="strict", producer_id=3, current_txn_start_offset=-1, last_timestamp_ms=1),
        producer(topic="strict", producer_id=4, current_txn_start_offset=-7, last_timestamp_ms=1),
        # leader view: three replicas, broker 2 leads
        *[producer(topic="replicated", producer_id=5, broker_id=b, is_leader=b == 2) for b in (1, 2, 3)],
        # metric p0: the lowest first offset is older than timeout + 5 min -> late
        producer(topic="metric", partition=0, producer_id=10, current_txn_start_offset=5,
                 last_timestamp_ms=NOW - TIMEOUT - buffer - 1),
        producer(topic="metric", partition=0, producer_id=11, current_txn_start_offset=9, last_timestamp_ms=NOW - 1),
        # p1: exactly timeout + 5 min -> not late (strict)
        producer(topic="metric", partition=1, producer_id=12, last_timestamp_ms=NOW - TIMEOUT - buffer),
        # p2: the lowest first offset is recent; an older one at a higher offset does not count
        producer(topic="metric", partition=2, producer_id=13, current_txn_start_offset=3, last_timestamp_ms=NOW - 1),
        producer(topic="metric", partition=2, producer_id=14, current_txn_start_offset=8,
                 last_timestamp_ms=NOW - 10 * TIMEOUT),
        # p3: late on a follower only: the metric counts leaders
        producer(topic="metric", partition=3, producer_id=15, broker_id=2, is_leader=False,
                 last_timestamp_ms=NOW - 10 * TIMEOUT),
        producer(topic="metric", partition=3, producer_id=16, broker_id=1, current_txn_start_offset=-1),
        # p4: lastTimestamp 0 never counts
        producer(topic="metric", partition=4, producer_id=17, last_timestamp_ms=0),
        # leader inference: offset, then capture time, then lowest broker id
        producer(topic="infer", partition=0, broker_id=1, is_leader=None, snapshot_offset=100, producer_id=20),
        producer(topic="infer", partition=0, broker_id=2, is_leader=None, snapshot_offset=101, producer_id=20),
        producer(topic="infer", partition=1, broker_id=3, is_leader=None, snapshot_offset=50,
                 capture_time_ms=NOW - 5, producer_id=21),
        producer(topic="infer", partition=1, broker_id=1, is_leader=None, snapshot_offset=50, producer_id=21),
        producer(topic="infer", partition=2, broker_id=3, is_leader=None, snapshot_offset=7, producer_id=22),
        producer(topic="infer", partition=2, broker_id=2, is_leader=None, snapshot_offset=7, producer_id=22),
        # freshest observation: yesterday's snapshot shows it open, today's dump shows it closed
        producer(topic="fresh", producer_id=30, source="snapshot", snapshot_offset=100,
                 capture_time_ms=NOW - 3_600_000, is_leader=None),
        producer(topic="fresh", producer_id=30, current_txn_start_offset=-1),
        # divergence: pid 40 open on a follower only; pid 41 open on the leader, missing on follower 3
        producer(topic="diverge", producer_id=40, broker_id=2, is_leader=False),
        producer(topic="diverge", producer_id=40, broker_id=1, current_txn_start_offset=-1),
        producer(topic="diverge", producer_id=41, broker_id=1, current_txn_start_offset=20),
        producer(topic="diverge", producer_id=41, broker_id=2, is_leader=False, current_txn_start_offset=20),
        producer(topic="diverge", producer_id=49, broker_id=3, is_leader=False, current_txn_start_offset=-1),
    ]
    return producers, txns


@pytest.fixture(scope="module")
def result(spark) -> dict[str, list[dict[str, Any]]]:
    producers, txns = _scenarios()
    return run(spark, producers, txns)


def by_topic(rows: list[dict[str, Any]], topic: str) -> list[dict[str, Any]]:
    return [r for r in rows if r["topic"] == topic]


@pytest.mark.parametrize(("index", "reason"), [(i, c[2]) for i, c in enumerate(CASES)], ids=[c[0] for c in CASES])
def test_reasons(result, index, reason):
    [verdict] = by_topic(result["verdicts"], f"reason-{index}")
    assert verdict["reason"] == reason
    expected = {"late": "late", "coordinator-state-unknown": "unverified"}.get(reason, "hanging")
    assert verdict["verdict"] == expected
    assert verdict["duration_min"] == 16 and verdict["age_ms"] == TIMEOUT + 60_000


def test_find_hanging_rule_is_strict_and_needs_an_open_transaction(result):
    assert [v["producer_id"] for v in by_topic(result["verdicts"], "strict")] == [2]


def test_verdicts_come_from_the_leader_replica_only(result):
    [verdict] = by_topic(result["verdicts"], "replicated")
    assert (verdict["leader_broker_id"], verdict["leader_inferred"], verdict["open_on_brokers"]) == (2, False, "1,2,3")


def test_metric_rule_oldest_open_transaction_on_the_leader_with_padding(result):
    late = by_topic(result["late"], "metric")
    assert {r["partition"]: r["metric_late"] for r in late} == {0: True, 1: False, 2: False, 4: False}
    flags = {v["producer_id"]: v["metric_late"] for v in by_topic(result["verdicts"], "metric")}
    assert flags == {10: True, 12: False, 14: False, 17: False}


def test_leader_inferred_from_offsets_then_capture_then_broker_id(result):
    leaders = {r["partition"]: (r["leader_broker_id"], r["leader_inferred"])
               for r in by_topic(result["leaders"], "infer")}
    assert leaders == {0: (2, True), 1: (1, True), 2: (2, True)}


def test_only_each_replicas_freshest_observation_counts(result):
    assert by_topic(result["verdicts"], "fresh") == []


def test_replica_divergence_both_ways(result):
    kinds = {(d["producer_id"], d["kind"], tuple(d["broker_ids"])) for d in by_topic(result["divergence"], "diverge")}
    assert kinds == {(40, C.FOLLOWER_ONLY, (2,)), (41, C.LEADER_ONLY, (3,))}
    [verdict] = by_topic(result["verdicts"], "diverge")
    assert (verdict["producer_id"], verdict["divergence"], verdict["missing_on_brokers"]) == (41, C.LEADER_ONLY, "3")


def test_reported_filters_late_unless_asked(result):
    late = {v["producer_id"] for v in result["verdicts"] if v["verdict"] == "late"}
    assert late == {1000 + i for i, c in enumerate(CASES) if c[2] == "late"}
    assert {v["producer_id"] for v in result["reported"]} == {v["producer_id"] for v in result["verdicts"]} - late


def test_many_partitions_and_ids_are_looked_up_by_join_with_the_same_result(spark, result):
    """Past `limit` values the lookups are broadcast semi-joins instead of IN filters."""
    producers, txns = _scenarios()
    assert run(spark, producers, txns, limit=1) == result


def test_tombstones_from_logs_remove_the_id_but_dump_dead_rows_stay(spark):
    log_rows = [
        txn(transactional_id="gone", state="Ongoing", last_update_ms=NOW - 100, source="transaction-log",
            coordinator_id=2),
        txn(transactional_id="gone", state="Dead", partitions=[], last_update_ms=NOW - 50, source="transaction-log",
            coordinator_id=1),
        txn(transactional_id="kept", producer_id=7, state="Dead", partitions=None, last_update_ms=None),
        txn(transactional_id="newest", producer_id=8, state="Empty", partitions=[], last_update_ms=NOW - 10,
            source="transaction-log"),
        txn(transactional_id="newest", producer_id=8, state="Ongoing", last_update_ms=NOW - 20,
            source="transaction-log"),
    ]
    normalized = normalize_transactions(frame(spark, schema.TRANSACTIONS, log_rows))
    got = {r["transactional_id"]: r["state"] for r in normalized.collect()}
    assert got == {"kept": "Dead", "newest": "Empty"}


def test_normalize_producers_sentinels(spark):
    df = frame(spark, schema.PRODUCERS, [producer(current_txn_start_offset=-3)])
    [row] = normalize_producers(df).collect()
    assert row["current_txn_start_offset"] == -1


def test_a_prepare_record_without_its_complete_and_the_last_owner_of_a_forgotten_producer(spark) -> None:
    """Coordinator-side: the newest row of 'prep' is PrepareCommit, 5 minutes old, and t-1's leader still holds
    its producer's transaction. Partition side: producer 1 is open and late on t-0, and the only id that ever
    named it, 'gone', was tombstoned (a Dead row read from __transaction_state): no-transactional-id, and
    'gone' its last known owner."""
    prep_partitions = [{"topic": "t", "partition": 1}]
    transactions = [
        txn(transactional_id="prep", producer_id=5, state="Ongoing", last_update_ms=NOW - 9 * 60_000,
            partitions=prep_partitions, source="transaction-log"),
        txn(transactional_id="prep", producer_id=5, producer_epoch=3, state="PrepareCommit",
            last_update_ms=NOW - 5 * 60_000, partitions=prep_partitions, source="transaction-log"),
        txn(transactional_id="gone", producer_id=1, state="CompleteAbort", last_update_ms=OLD - 60_000,
            partitions=[], source="transaction-log"),
        txn(transactional_id="gone", producer_id=1, state="Dead", last_update_ms=NOW - 60_000, partitions=[],
            source="transaction-log"),
    ]
    producers = [producer(), producer(partition=1, producer_id=5, last_timestamp_ms=NOW - 6 * 60_000,
                                      current_txn_start_offset=40)]
    p = frame(spark, schema.PRODUCERS, producers)
    t = frame(spark, schema.TRANSACTIONS, transactions)
    gathered = gather(p, t, PARAMS)
    analysis = C.analyze(gathered.open_rows, gathered.replicas, gathered.coordinators, PARAMS, gathered.stuck,
                         gathered.owners)
    [stuck] = analysis.stuck
    assert (stuck.transactional_id, stuck.state, stuck.reason.value) == ("prep", "PrepareCommit", "markers-pending")
    assert (stuck.time_in_state_ms, stuck.time_in_state_source) == (5 * 60_000, "transaction-log")
    assert [(str(x.partition), x.reason.value if x.reason else None) for x in stuck.pending_partitions] == [
        ("t-1", "open-transaction")]
    [verdict] = analysis.verdicts
    assert (verdict["reason"], verdict["last_known_transactional_id"]) == ("no-transactional-id", "gone")
