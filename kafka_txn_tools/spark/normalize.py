"""One producer-state table and one coordinator-state table, with sentinels and duplicates resolved.

Producer rows stay one per (replica observation, producer): picking each replica's freshest
observation is done in classify on the small open-transaction subset, not on the full table.
Coordinator rows are reduced to one per transactional id: the newest state wins, where "newest" is
the last update time, or the capture time for live dumps that do not carry it.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from kafka_txn_tools.models import DEAD_STATE

MAX_LONG = (1 << 63) - 1
TOMBSTONE_SOURCES = ("transaction-log", "dump-log-text")


def normalize_producers(df: DataFrame) -> DataFrame:

    return df.select(
        F.col("broker_id").cast("int").alias("broker_id"),
        F.col("topic"),
        F.col("partition").cast("int").alias("partition"),
        F.col("is_leader"),
        F.col("producer_id").cast("long").alias("producer_id"),
        F.col("producer_epoch").cast("int").alias("producer_epoch"),
        F.coalesce(F.col("last_sequence"), F.lit(-1)).cast("int").alias("last_sequence"),
        F.coalesce(F.col("last_timestamp_ms"), F.lit(-1)).cast("long").alias("last_timestamp_ms"),
        F.coalesce(F.col("coordinator_epoch"), F.lit(-1)).cast("int").alias("coordinator_epoch"),
        # Kafka readers treat any negative first offset as "no open transaction".
        F.when(F.col("current_txn_start_offset") >= 0, F.col("current_txn_start_offset"))
        .otherwise(F.lit(-1))
        .cast("long")
        .alias("current_txn_start_offset"),
        F.col("snapshot_offset").cast("long").alias("snapshot_offset"),
        F.col("capture_time_ms").cast("long").alias("capture_time_ms"),
        F.coalesce(F.col("source"), F.lit("unknown")).alias("source"),
    )


def normalize_transactions(df: DataFrame) -> DataFrame:
    """One row per transactional id: the newest state seen by any coordinator replica or input."""

    recency = F.coalesce(F.col("last_update_ms"), F.col("capture_time_ms"))
    window = Window.partitionBy("transactional_id").orderBy(
        recency.desc(), F.col("capture_time_ms").desc(), F.col("coordinator_id").asc()
    )
    # A Dead row read from `__transaction_state` is a tombstone: once it is the newest state of the
    # id, the id is gone, as in the coordinator's memory. (Dead rows of a live dump stay: there the
    # coordinator listed the id but could not describe it.)
    tombstone = (F.col("state") == DEAD_STATE) & F.col("source").isin(*TOMBSTONE_SOURCES)
    return (
        df.where(F.col("transactional_id").isNotNull() & F.col("producer_id").isNotNull())
        .withColumn("_rank", F.row_number().over(window))
        .where((F.col("_rank") == 1) & ~tombstone)
        .drop("_rank")
    )
