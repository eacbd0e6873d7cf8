"""Late and hanging transactions as pure DataFrame transforms.

Two lateness rules, both evaluated at `now` (the input's capture time or --as-of, never the clock):

- find-hanging's, per producer: open transaction and `now - last_timestamp > max_timeout` (strict,
  no padding). These are the candidates that get a verdict.
- the broker metric's (PartitionsWithLateTransactionsCount), per partition on its leader: the
  producer owning the open transaction with the lowest first offset has `last_timestamp > 0` and
  `now - last_timestamp > max_timeout + 5 min`; counted per leader broker.

Verdicts come from the partition leader's view (where an abort goes). The leader is the replica
flagged is_leader; when no input says (log dirs, dump-log text) it is inferred: the replica whose
state reaches the highest offset, then the freshest capture, then the lowest broker id.

Reasons, checked in this order against the coordinator state of the candidate's producer id, the
same rules as the CLI's find-hanging (kafka_txn_tools/admin/hanging.py), so both give one verdict:
1. no-transactional-id: no transactional id maps to the producer id (never listed, or expired: a
   tombstone in `__transaction_state` removes the id, as the coordinator does);
2. transactional-id-not-found: the id maps to the producer but its coordinator does not know it
   (state Dead in a dump: DescribeTransactions answered TRANSACTIONAL_ID_NOT_FOUND);
3. epoch-mismatch: the coordinator's epoch is older than the partition's: its markers would be fenced;
4. transaction-not-ongoing: the coordinator holds the id as Empty / CompleteCommit / CompleteAbort:
   no marker is coming;
5. partition-not-in-transaction: the transaction is ongoing without this partition;
otherwise `late`: the coordinator confirms a live transaction (reported only with include_late).
A coordinator row without partitions (describe failed) gives `coordinator-state-unknown`,
verdict `unverified`: reported, never planned.

All tables after the two reads of the producer table hold only partitions with late transactions.
Only joins against the big tables are broadcast on purpose; between the small ones, local runs
use plain one-partition shuffles (a broadcast costs a Spark job each) and clusters let adaptive
execution choose.

Replica divergence, for transactions open longer than the timeout: open on a follower but not on
the leader, and open on the leader but missing on a follower that reported the partition.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from kafka_txn_tools.dumps.plan import HANGING_REASONS
from kafka_txn_tools.spark.normalize import normalize_transactions

LATE_TRANSACTION_BUFFER_MS = 5 * 60 * 1000
REASONS = HANGING_REASONS
NO_ID, NOT_FOUND, NOT_IN_TXN, EPOCH_MISMATCH, NOT_ONGOING = HANGING_REASONS
LATE = "late"
UNKNOWN = "coordinator-state-unknown"
# States in which the coordinator will still write markers (the CLI's models.ONGOING_STATES).
ONGOING_STATES = ("Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence")
FOLLOWER_ONLY = "open-on-follower-not-leader"
LEADER_ONLY = "open-on-leader-not-follower"
MAX_LONG = (1 << 63) - 1
TXN_KEY = ["topic", "partition", "producer_id", "start_offset"]


@dataclass(frozen=True)
class SweepParams:
    now_ms: int
    max_transaction_timeout_ms: int = 900_000
    include_late: bool = False


def open_transactions(producers: DataFrame) -> DataFrame:
    """Rows with an open transaction: the small subset everything else works on."""
    return producers.where(F.col("current_txn_start_offset") >= 0).select(
        "broker_id",
        "topic",
        "partition",
        "is_leader",
        "producer_id",
        "producer_epoch",
        "coordinator_epoch",
        F.col("current_txn_start_offset").alias("start_offset"),
        "last_timestamp_ms",
        "snapshot_offset",
        "capture_time_ms",
        "source",
    )


def late_partition_keys(open_txns: DataFrame, params: SweepParams) -> DataFrame:
    """Partitions where some replica shows a transaction open longer than the timeout: the only ones
    either rule can flag (the metric's threshold is higher still). Everything after works on these."""
    age = F.lit(params.now_ms) - F.col("last_timestamp_ms")
    return open_txns.where(age > params.max_transaction_timeout_ms).select("topic", "partition").distinct()


def in_partitions(frame: DataFrame, keys: DataFrame, hint: list[tuple[str, int]] | None = None) -> DataFrame:
    """Rows of `frame` in the partitions `keys`. With `hint` (the same keys, known to be few), cheap
    integer and string tests run in the scan first, so the exact join only sees a sliver of a big table."""
    if hint is not None:
        topics = sorted({t for t, _ in hint})
        indexes = sorted({p for _, p in hint})
        frame = frame.where(F.col("partition").isin(indexes) & F.col("topic").isin(topics))
    return frame.join(F.broadcast(keys), ["topic", "partition"], "left_semi")


def replica_observations(rows: DataFrame) -> DataFrame:
    """Per replica (topic, partition, broker): leader flag and freshest observation of the rows given."""
    obs = F.struct(
        F.col("capture_time_ms").alias("capture"),
        F.coalesce(F.col("snapshot_offset"), F.lit(MAX_LONG)).alias("offset"),
    )
    return rows.groupBy("topic", "partition", "broker_id").agg(
        F.max("is_leader").alias("is_leader"), F.max(obs).alias("obs")
    )


def open_transaction_ages(open_txns: DataFrame, now_ms: int) -> DataFrame:
    """Each open transaction once (across replicas and observations), aged by its latest write."""
    return open_txns.groupBy(*TXN_KEY).agg((F.lit(now_ms) - F.max("last_timestamp_ms")).alias("age_ms"))


def leaders(replicas: DataFrame) -> DataFrame:
    """(topic, partition) -> leader_broker_id, leader_inferred."""

    flag_rank = F.when(F.col("is_leader"), 0).when(F.col("is_leader").isNull(), 1).otherwise(2)
    window = Window.partitionBy("topic", "partition").orderBy(
        flag_rank, F.col("obs.offset").desc(), F.col("obs.capture").desc(), F.col("broker_id").asc()
    )
    return (
        replicas.withColumn("_rank", F.row_number().over(window))
        .where(F.col("_rank") == 1)
        .select(
            "topic",
            "partition",
            F.col("broker_id").alias("leader_broker_id"),
            (~F.coalesce(F.col("is_leader"), F.lit(False))).alias("leader_inferred"),
        )
    )


def fresh_open(open_txns: DataFrame, replicas: DataFrame, now_ms: int) -> DataFrame:
    """Open transactions from each replica's freshest observation only, one per producer, with age."""

    latest = replicas.select(
        "topic",
        "partition",
        "broker_id",
        F.col("obs.capture").alias("_capture"),
        F.col("obs.offset").alias("_offset"),
    )
    joined = open_txns.join(latest, ["topic", "partition", "broker_id"]).where(
        (F.col("capture_time_ms") == F.col("_capture"))
        & (F.coalesce(F.col("snapshot_offset"), F.lit(MAX_LONG)) == F.col("_offset"))
    )
    window = Window.partitionBy("topic", "partition", "broker_id", "producer_id").orderBy(
        F.col("start_offset").asc(), F.col("source").asc()
    )
    return (
        joined.withColumn("_rank", F.row_number().over(window))
        .where(F.col("_rank") == 1)
        .drop("_rank", "_capture", "_offset")
        .withColumn("age_ms", F.lit(now_ms) - F.col("last_timestamp_ms"))
    )


def leader_view(fresh: DataFrame, leader_table: DataFrame) -> DataFrame:
    on_leader = F.col("broker_id") == F.col("leader_broker_id")
    return fresh.join(leader_table, ["topic", "partition"]).where(on_leader)


def late_partitions(on_leader: DataFrame, params: SweepParams) -> DataFrame:
    """Per partition (leader view): the oldest open transaction and whether the metric counts it late."""

    window = Window.partitionBy("topic", "partition").orderBy(F.col("start_offset").asc(), F.col("producer_id"))
    threshold = params.max_transaction_timeout_ms + LATE_TRANSACTION_BUFFER_MS
    return (
        on_leader.withColumn("_rank", F.row_number().over(window))
        .where(F.col("_rank") == 1)
        .select(
            "topic",
            "partition",
            "leader_broker_id",
            "leader_inferred",
            F.col("producer_id").alias("oldest_producer_id"),
            ((F.col("last_timestamp_ms") > 0) & (F.col("age_ms") > F.lit(threshold))).alias("metric_late"),
        )
    )


def late_partition_counts(late: DataFrame) -> DataFrame:
    """Per leader broker: PartitionsWithLateTransactionsCount, partitions with open transactions, and
    how many of those had their leader inferred (brokers leading no open transaction are absent)."""
    return late.groupBy("leader_broker_id").agg(
        F.sum(F.col("metric_late").cast("int")).alias("late_partitions"),
        F.count(F.lit(1)).alias("open_partitions"),
        F.sum(F.col("leader_inferred").cast("int")).alias("inferred_leaders"),
    )


def divergence(fresh: DataFrame, leader_table: DataFrame, replicas: DataFrame, params: SweepParams) -> DataFrame:
    """Late transactions open on some replicas only: (txn key, kind, leader, broker_ids)."""
    timeout = params.max_transaction_timeout_ms
    with_leader = fresh.join(leader_table, ["topic", "partition"])
    late_any = with_leader.where(F.col("age_ms") > timeout)
    on_leader = with_leader.where(F.col("broker_id") == F.col("leader_broker_id")).select(*TXN_KEY)
    follower_only = (
        late_any.where(F.col("broker_id") != F.col("leader_broker_id"))
        .join(on_leader, TXN_KEY, "left_anti")
        .groupBy(*TXN_KEY, "leader_broker_id")
        .agg(F.array_sort(F.collect_set("broker_id")).alias("broker_ids"))
        .withColumn("kind", F.lit(FOLLOWER_ONLY))
    )
    leader_late = late_any.where(F.col("broker_id") == F.col("leader_broker_id")).select(*TXN_KEY, "leader_broker_id")
    followers = replicas.select("topic", "partition", F.col("broker_id").alias("follower_id"))
    open_anywhere = fresh.select(*TXN_KEY, F.col("broker_id").alias("follower_id"))
    leader_only = (
        leader_late.join(followers, ["topic", "partition"])
        .where(F.col("follower_id") != F.col("leader_broker_id"))
        .join(open_anywhere, [*TXN_KEY, "follower_id"], "left_anti")
        .groupBy(*TXN_KEY, "leader_broker_id")
        .agg(F.array_sort(F.collect_set("follower_id")).alias("broker_ids"))
        .withColumn("kind", F.lit(LEADER_ONLY))
    )
    return follower_only.unionByName(leader_only)


def coordinator_rows(transactions: DataFrame) -> DataFrame:
    """Coordinator columns keyed by producer id (one row per transactional id)."""
    return transactions.select(
        "producer_id",
        "transactional_id",
        "coordinator_id",
        F.col("state").alias("coordinator_state"),
        F.col("producer_epoch").alias("coordinator_producer_epoch"),
        F.col("partitions").alias("_txn_partitions"),
    )


def reason_column() -> Column:
    """The CLI's reason for a candidate against one coordinator row (see module docstring)."""
    state = F.col("coordinator_state")
    in_txn = F.exists(
        "_txn_partitions", lambda p: (p["topic"] == F.col("topic")) & (p["partition"] == F.col("partition"))
    )
    return (
        F.when(F.col("transactional_id").isNull(), F.lit(NO_ID))
        .when(state == "Dead", F.lit(NOT_FOUND))
        .when(F.col("_txn_partitions").isNull() | state.isNull(), F.lit(UNKNOWN))
        .when(F.col("coordinator_producer_epoch") < F.col("producer_epoch"), F.lit(EPOCH_MISMATCH))
        .when(~state.isin(*ONGOING_STATES), F.lit(NOT_ONGOING))
        .when(~in_txn, F.lit(NOT_IN_TXN))
        .otherwise(F.lit(LATE))
    )


def verdict_column() -> Column:
    reason = F.col("reason")
    return (
        F.when(reason.isin(*REASONS), F.lit("hanging"))
        .when(reason == LATE, F.lit("late"))
        .otherwise(F.lit("unverified"))
    )


def classify(candidates: DataFrame, coordinators: DataFrame) -> DataFrame:
    """Candidates (leader view, late by find-hanging's rule) with reason and verdict.

    A producer id mapped by several transactional ids (a coordinator moving) is judged as the CLI
    does: unknown if any id's state is unknown, else live if any id says so, else by the first id.
    """
    key = ["topic", "partition", "producer_id", "start_offset"]
    pick = Window.partitionBy(*key).orderBy(
        (F.col("reason") == UNKNOWN).desc(), (F.col("reason") == LATE).desc(), F.col("transactional_id").asc()
    )
    return (
        candidates.join(coordinator_rows(coordinators), "producer_id", "left")
        .withColumn("reason", reason_column())
        .withColumn("_rank", F.row_number().over(pick))
        .where(F.col("_rank") == 1)
        .withColumn("verdict", verdict_column())
        .withColumn("duration_min", F.floor(F.col("age_ms") / 60_000).cast("long"))
        .drop("_txn_partitions", "_rank")
    )


def verdicts(
    fresh: DataFrame,
    leader_table: DataFrame,
    late: DataFrame,
    diverged: DataFrame,
    coordinators: DataFrame,
    params: SweepParams,
) -> DataFrame:
    """Every candidate (late by find-hanging's rule, leader view) with its verdict and context."""
    candidates = leader_view(fresh, leader_table).where(F.col("age_ms") > params.max_transaction_timeout_ms)
    open_on = fresh.groupBy(*TXN_KEY).agg(
        F.array_join(F.array_sort(F.collect_set("broker_id")).cast("array<string>"), ",").alias("open_on_brokers")
    )
    leader_flags = diverged.where(F.col("kind") == LEADER_ONLY).select(
        *TXN_KEY,
        F.col("kind").alias("divergence"),
        F.array_join(F.col("broker_ids").cast("array<string>"), ",").alias("missing_on_brokers"),
    )
    metric = late.select(
        "topic",
        "partition",
        (F.col("metric_late") & F.col("oldest_producer_id").isNotNull()).alias("_partition_late"),
        "oldest_producer_id",
    )
    result = (
        classify(candidates, coordinators)
        .join(open_on, TXN_KEY, "left")
        .join(leader_flags, TXN_KEY, "left")
        .join(metric, ["topic", "partition"], "left")
        .withColumn(
            "metric_late",
            F.coalesce(F.col("_partition_late") & (F.col("oldest_producer_id") == F.col("producer_id")), F.lit(False)),
        )
    )
    return result.select(*OUTPUT_COLUMNS)


def relevant_transactions(transactions: DataFrame, candidates: DataFrame) -> DataFrame:
    """Coordinator rows of the transactional ids that ever named a candidate's producer id, newest
    state per id (normalize_transactions). Cutting to those ids first keeps the per-id sort small:
    a fleet has millions of ids, a sweep a handful of candidates."""
    pids = candidates.select("producer_id").distinct()
    ids = transactions.join(F.broadcast(pids), "producer_id", "left_semi").select("transactional_id").distinct()
    return normalize_transactions(transactions.join(F.broadcast(ids), "transactional_id", "left_semi"))


def analyze(
    producers: DataFrame,
    transactions: DataFrame,
    params: SweepParams,
    keep: Callable[[DataFrame], DataFrame] = lambda frame: frame,
    hint_limit: int = 5_000,
) -> dict[str, DataFrame]:
    """The whole classification: a function of the normalized producer table, the raw coordinator
    rows (normalized here, for the ids that matter) and the params.

    The big producer table is read twice: once for the open transactions (about 1% of rows), once
    for the replicas of the few partitions with late ones. `keep` lets the job cache the small
    intermediate tables several outputs reuse; the partitions with late transactions are fetched
    (at most `hint_limit` of them) to pre-filter the second read; 0 turns that off.
    """
    open_txns = keep(open_transactions(producers))
    keys = keep(late_partition_keys(open_txns, params))
    hint = None
    if hint_limit > 0:
        found = [(r["topic"], int(r["partition"])) for r in keys.limit(hint_limit + 1).collect()]
        hint = found if len(found) <= hint_limit else None
    replicas = keep(replica_observations(in_partitions(producers, keys, hint)))
    leader_table = keep(leaders(replicas))
    fresh = keep(fresh_open(in_partitions(open_txns, keys), replicas, params.now_ms))
    on_leader = keep(leader_view(fresh, leader_table))
    late = keep(late_partitions(on_leader, params))
    diverged = keep(divergence(fresh, leader_table, replicas, params))
    candidates = on_leader.where(F.col("age_ms") > params.max_transaction_timeout_ms)
    coordinators = keep(relevant_transactions(transactions, candidates))
    verdict_table = keep(verdicts(fresh, leader_table, late, diverged, coordinators, params))
    return {
        "open": open_txns,
        "open_ages": open_transaction_ages(open_txns, params.now_ms),
        "late_keys": keys,
        "replicas": replicas,
        "leaders": leader_table,
        "fresh": fresh,
        "on_leader": on_leader,
        "late": late,
        "divergence": diverged,
        "verdicts": verdict_table,
    }


def reported(verdict_table: DataFrame, include_late: bool) -> DataFrame:
    """What the sweep reports: hanging and unverified always, late-but-live only on request."""
    keep = F.col("verdict").isin("hanging", "unverified")
    if include_late:
        keep = keep | (F.col("verdict") == "late")
    return verdict_table.where(keep).orderBy("topic", "partition", "start_offset", "producer_id")


OUTPUT_COLUMNS = [
    "topic",
    "partition",
    "producer_id",
    "producer_epoch",
    "coordinator_epoch",
    "start_offset",
    "last_timestamp_ms",
    "age_ms",
    "duration_min",
    "verdict",
    "reason",
    "transactional_id",
    "coordinator_id",
    "coordinator_state",
    "coordinator_producer_epoch",
    "leader_broker_id",
    "leader_inferred",
    "open_on_brokers",
    "metric_late",
    "divergence",
    "missing_on_brokers",
    "snapshot_offset",
    "source",
]
