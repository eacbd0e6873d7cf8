"""The sweep's view of the incident history: trends per cluster and topic from `kafka-txn history --export`.

The export (history/incidents.py `export_parquet`) holds one row per incident: when it was first seen, when and
how it was resolved, how long it held its partition. Spark reads it and reduces it to what the report shows:

- per cluster and topic: incidents, still open, resolved by an audited write (abort, force-terminate) or
  by themselves, time held (total and longest);
- per day (the `DAYS` days up to the sweep's as-of time): incidents first seen that day, per cluster and
  topic, so a topic that keeps hanging stands out.
A coordinator incident counts on the topic of its first pending partition.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DAYS = 14
DAY_MS = 86_400_000
INCIDENTS = "incidents.parquet"


class HistoryInputError(ValueError):
    """--history names no history export."""


def check_export(directory: str | os.PathLike[str]) -> Path:
    """The export's incidents file; HistoryInputError (before Spark starts) when it is not one."""
    path = Path(directory) / INCIDENTS
    if not path.is_file():
        raise HistoryInputError(f"--history {directory} holds no {INCIDENTS}: write it with "
                                f"`kafka-txn history --export {directory}`")
    return path


def trends(spark: SparkSession, directory: str | os.PathLike[str], as_of_ms: int, days: int = DAYS) -> dict[str, Any]:
    from pyspark.sql import functions as F

    df = spark.read.parquet(str(check_export(directory)))
    topic = F.coalesce(F.col("topic"), F.lit("(none)"))
    by_topic = (df.groupBy("cluster", topic.alias("topic")).agg(
        F.count(F.lit(1)).alias("incidents"),
        F.sum(F.when(F.col("resolved_ms").isNull(), 1).otherwise(0)).alias("open"),
        F.sum(F.when(F.col("resolution") == "audited write", 1).otherwise(0)).alias("resolved_by_write"),
        F.sum(F.when(F.col("resolution") == "by itself", 1).otherwise(0)).alias("resolved_by_itself"),
        F.sum(F.coalesce(F.col("held_ms"), F.col("duration_ms"))).alias("held_ms_total"),
        F.max(F.coalesce(F.col("held_ms"), F.col("duration_ms"))).alias("held_ms_max"),
        F.max("last_seen_ms").alias("last_seen_ms"))
        .orderBy(F.desc("incidents"), "cluster", "topic").collect())
    first_day = as_of_ms // DAY_MS - (days - 1)
    day = F.floor(F.col("first_seen_ms") / DAY_MS).cast("long")
    per_day = (df.where(day >= first_day).where(day <= as_of_ms // DAY_MS)
               .groupBy("cluster", topic.alias("topic"), day.alias("day")).count()
               .orderBy("day", "cluster", "topic").collect())
    return {
        "source": str(Path(directory)),
        "days": days,
        "first_day_ms": first_day * DAY_MS,
        "incidents": sum(int(r["incidents"]) for r in by_topic),
        "by_topic": [{k: (int(v) if isinstance(v, int) else v) for k, v in r.asDict().items()} for r in by_topic],
        "per_day": [{"cluster": r["cluster"], "topic": r["topic"], "day_ms": int(r["day"]) * DAY_MS,
                     "incidents": int(r["count"])} for r in per_day],
    }
