"""The sweep's Spark side: scan the big tables once each and bring the driver only the small sets
classify.py judges - never the producer table itself.

1. The open transactions: the filter is on the raw column, ahead of normalize's casts and
   sentinels, so Parquet readers push it down, and since dumps keep the rows with an open
   transaction in row groups of their own (dumps/schema.py) the scan skips about 99% of the data.
   One aggregation over them gives both the age histogram of all open transactions and the late
   ones (open longer than the timeout on some replica): the partitions and producer ids that matter.
2. The rows of those partitions, the only full pass over the producer table (a few columns and an
   exact filter Parquet can push down), reduced on the executors to one row per replica: its leader
   flag, its freshest observation and its open transactions. Idle producers never leave the scan.
3. The coordinator state of the transactional ids that ever named one of those producer ids, and
   which of them named each last (find-hanging's last_known_transactional_id).
4. Coordinator-side: the newest state of the ids caught in a Prepare state, or Ongoing at an exhausted
   epoch (few); their partitions join step 2's, so their leaders' open transactions are gathered too.
5. The coordinators' decisions (PrepareCommit / PrepareAbort records, read from `__transaction_state`
   segments and transaction-log text) of step 3's ids: few, collected to the driver, where classify.py
   applies admin/decisions.py to each hanging row, as find-hanging does.

Each step is one Spark job with one or two stages: Spark's per-stage cost, not the data, dominated
when the classification itself ran as a dozen joins and windows.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import Column, DataFrame, Row
from pyspark.sql import functions as F

from kafka_txn_tools.admin.decisions import PREPARE_COMMIT, Decision
from kafka_txn_tools.admin.hanging import Ownership
from kafka_txn_tools.models import EXHAUSTED_EPOCH, PREPARE_STATES, TopicPartition
from kafka_txn_tools.spark.classify import (
    MAX_LONG,
    TXN_KEY,
    Coordinator,
    OpenRow,
    PartitionKey,
    Replica,
    SweepParams,
)
from kafka_txn_tools.spark.normalize import normalize_producers, normalize_transactions
from kafka_txn_tools.spark.report import AGE_BUCKETS

# Up to this many values, lookups are literal IN filters: Parquet skips row groups by them and no
# extra job is needed. Beyond, a broadcast semi-join keeps the query plan small.
LITERAL_LIMIT = 5_000

# OpenRow's fields as normalize_producers names them.
_OPEN_FIELDS = {
    "is_leader": "is_leader",
    "producer_id": "producer_id",
    "producer_epoch": "producer_epoch",
    "coordinator_epoch": "coordinator_epoch",
    "start_offset": "current_txn_start_offset",
    "last_timestamp_ms": "last_timestamp_ms",
    "snapshot_offset": "snapshot_offset",
    "capture_time_ms": "capture_time_ms",
    "source": "source",
}


@dataclass
class Gathered:
    """Everything classify needs, on the driver: small by construction."""

    age_histogram: dict[str, int]  # every open transaction, once, by age bucket
    open_rows: list[OpenRow]  # open transactions of the partitions with late ones
    replicas: list[Replica]  # the replicas of those partitions
    coordinators: list[Coordinator]  # newest state of the ids that named a late producer id
    stuck: list[Coordinator] = field(default_factory=list)  # newest state of the Prepare / exhausted ones
    owners: list[Ownership] = field(default_factory=list)  # every row naming a late producer id
    decisions: list[Decision] = field(default_factory=list)  # every Prepare record of `coordinators`' ids


def open_transactions(producers: DataFrame) -> DataFrame:
    """Normalized rows with an open transaction. Filtering the raw column first is the same test
    (normalize maps every negative or missing first offset to -1) but one Parquet can push down."""
    opened = normalize_producers(producers.where(F.col("current_txn_start_offset") >= 0))
    return opened.select("topic", "partition", "broker_id", *[F.col(c).alias(n) for n, c in _OPEN_FIELDS.items()])


def _age_bucket(age: Column) -> Column:
    bucket: Column | None = None
    for label, upper in reversed(AGE_BUCKETS):
        if bucket is None:
            bucket = F.lit(label)
        elif upper is not None:
            bucket = F.when(age < upper, F.lit(label)).otherwise(bucket)
    assert bucket is not None
    return bucket


def open_summary(opened: DataFrame, params: SweepParams) -> DataFrame:
    """Per age bucket: how many open transactions (each once across replicas and observations, aged
    by its latest write), and the late ones - open longer than the timeout on some replica, i.e. by
    its earliest write - as (topic, partition, producer_id). One row per bucket."""
    now, timeout = F.lit(params.now_ms), params.max_transaction_timeout_ms
    per_txn = opened.groupBy(*TXN_KEY).agg(
        F.max("last_timestamp_ms").alias("newest"), F.min("last_timestamp_ms").alias("oldest")
    )
    late = F.when(now - F.col("oldest") > timeout, F.struct("topic", "partition", "producer_id"))
    return per_txn.groupBy(_age_bucket(now - F.col("newest")).alias("bucket")).agg(
        F.count(F.lit(1)).alias("count"), F.collect_list(late).alias("late")
    )


def _any(conditions: Sequence[Column]) -> Column:
    """OR of the conditions as a balanced tree: Catalyst recurses over expression depth."""
    if len(conditions) == 1:
        return conditions[0]
    middle = len(conditions) // 2
    return _any(conditions[:middle]) | _any(conditions[middle:])


def where_partitions(frame: DataFrame, keys: Collection[PartitionKey], limit: int = LITERAL_LIMIT) -> DataFrame:
    """Rows of `frame` in the partitions `keys`, exactly."""
    if len(keys) > limit:
        lookup = frame.sparkSession.createDataFrame(sorted(keys), "topic string, partition int")
        return frame.join(F.broadcast(lookup), ["topic", "partition"], "left_semi")
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(keys):
        by_topic.setdefault(topic, []).append(partition)
    return frame.where(_any([(F.col("topic") == t) & F.col("partition").isin(ps) for t, ps in by_topic.items()]))


def where_in(frame: DataFrame, column: str, values: Collection[Any], limit: int = LITERAL_LIMIT) -> DataFrame:
    if len(values) > limit:
        lookup = frame.sparkSession.createDataFrame([(v,) for v in values], frame.select(column).schema)
        return frame.join(F.broadcast(lookup), column, "left_semi")
    return frame.where(F.col(column).isin(list(values)))


def replica_states(producers: DataFrame, keys: Collection[PartitionKey], limit: int = LITERAL_LIMIT) -> DataFrame:
    """One row per replica of the partitions `keys`: its leader flag (any row's), its freshest
    observation (the latest capture, then the highest snapshot offset; a live dump has none and is
    newer than any snapshot), and its open transactions."""
    rows = normalize_producers(where_partitions(producers, keys, limit))
    observation = F.struct(
        F.col("capture_time_ms").alias("capture"),
        F.coalesce(F.col("snapshot_offset"), F.lit(MAX_LONG)).alias("offset"),
    )
    opened = F.when(
        F.col("current_txn_start_offset") >= 0,
        F.struct(*[F.col(column).alias(name) for name, column in _OPEN_FIELDS.items()]),
    )
    return rows.groupBy("topic", "partition", "broker_id").agg(
        F.max("is_leader").alias("is_leader"),
        F.max(observation).alias("obs"),
        F.collect_list(opened).alias("open"),
    )


def _replica(row: Row) -> Replica:
    return Replica(row["topic"], row["partition"], row["broker_id"], row["is_leader"], row["obs"]["capture"],
                   row["obs"]["offset"])


def _open_rows(row: Row) -> list[OpenRow]:
    return [OpenRow(topic=row["topic"], partition=row["partition"], broker_id=row["broker_id"], **o.asDict())
            for o in row["open"]]


def coordinator_states(transactions: DataFrame, producer_ids: Collection[int], limit: int = LITERAL_LIMIT
                       ) -> tuple[list[Coordinator], list[Ownership]]:
    """The newest state of every transactional id that ever named one of `producer_ids`
    (normalize_transactions over all rows of those ids: a fleet has millions of ids, a sweep a few), and
    each row naming one of them, tombstones included, as an ownership record."""
    named = where_in(transactions, "producer_id", producer_ids, limit).select(
        "transactional_id", "producer_id", F.coalesce("last_update_ms", "capture_time_ms").alias("time")).collect()
    owners = [Ownership(r["transactional_id"], int(r["producer_id"]), int(r["time"] or 0)) for r in named
              if r["transactional_id"] is not None]
    ids = {o.transactional_id for o in owners}
    if not ids:
        return [], owners
    newest = normalize_transactions(where_in(transactions, "transactional_id", ids, limit))
    return [_coordinator(r) for r in newest.collect()], owners


def stuck_states(transactions: DataFrame, limit: int = LITERAL_LIMIT) -> list[Coordinator]:
    """The newest state of the ids with a row in a Prepare state or Ongoing at an exhausted epoch, when
    that newest state still is one (a PREPARE record without its COMPLETE)."""
    caught = (F.col("state").isin(*sorted(PREPARE_STATES))
              | ((F.col("state") == "Ongoing") & (F.col("producer_epoch") >= EXHAUSTED_EPOCH)))
    ids = {r["transactional_id"] for r in transactions.where(caught).select("transactional_id").distinct().collect()}
    ids.discard(None)
    if not ids:
        return []
    newest = normalize_transactions(where_in(transactions, "transactional_id", ids, limit))
    return [c for c in map(_coordinator, newest.where(caught).collect())]


def coordinator_decisions(decisions: DataFrame, ids: Collection[str], limit: int = LITERAL_LIMIT) -> list[Decision]:
    """Every PrepareCommit / PrepareAbort record read of the ids `ids`, as the coordinator's decisions; a record
    read from several replicas of its `__transaction_state` partition counts once."""
    rows = where_in(decisions, "transactional_id", ids, limit).collect()
    return sorted({_decision(r) for r in rows}, key=lambda d: (d.transactional_id, d.txn_partition, d.offset))


def _decision(row: Row) -> Decision:
    return Decision(row["transactional_id"], row["state"] == PREPARE_COMMIT, row["producer_id"], row["producer_epoch"],
                    frozenset(TopicPartition(p[0], p[1]) for p in row["partitions"] or () if p is not None),
                    row["last_update_ms"], row["txn_partition"], row["offset"], row["prev_producer_id"],
                    row["client_transaction_version"])


def _coordinator(row: Row) -> Coordinator:
    parts = row["partitions"]
    return Coordinator(
        producer_id=row["producer_id"],
        transactional_id=row["transactional_id"],
        coordinator_id=row["coordinator_id"],
        state=row["state"],
        producer_epoch=row["producer_epoch"],
        partitions=None if parts is None else tuple((None, None) if p is None else (p[0], p[1]) for p in parts),
        timeout_ms=row["timeout_ms"],
        start_time_ms=row["start_time_ms"],
        last_update_ms=row["last_update_ms"],
    )


def gather(
    producers: DataFrame, transactions: DataFrame, params: SweepParams, limit: int = LITERAL_LIMIT,
    decisions: DataFrame | None = None,
) -> Gathered:
    """The small sets of one sweep, in at most seven Spark jobs (two when nothing is late or stuck).
    `producers` and `transactions` are the raw tables read by ingest; `decisions` its Prepare records (None:
    the inputs hold none)."""
    buckets = open_summary(open_transactions(producers), params).collect()
    histogram = {r["bucket"]: int(r["count"]) for r in buckets}
    late = [t for r in buckets for t in r["late"]]
    stuck = stuck_states(transactions, limit)
    # A row without topic or partition belongs to no partition: nothing to judge it against.
    keys = {(t["topic"], t["partition"]) for t in late if t["topic"] is not None and t["partition"] is not None}
    keys |= {(t, p) for c in stuck for t, p in c.partitions or () if t is not None and p is not None}
    if not keys:
        return Gathered(histogram, [], [], [], stuck)
    replicas = replica_states(producers, keys, limit).collect()
    late_pids = {t["producer_id"] for t in late} - {None}
    coordinators, owners = coordinator_states(transactions, late_pids, limit) if late_pids else ([], [])
    ids = {c.transactional_id for c in coordinators}
    decided = coordinator_decisions(decisions, ids, limit) if decisions is not None and ids else []
    return Gathered(
        age_histogram=histogram,
        open_rows=[o for r in replicas for o in _open_rows(r)],
        replicas=[_replica(r) for r in replicas],
        coordinators=coordinators,
        stuck=stuck,
        owners=owners,
        decisions=decided,
    )
