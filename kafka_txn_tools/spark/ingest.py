"""Read any mix of sweep inputs into two DataFrames (producer state, coordinator state).

Input kinds, told apart by what is on disk:
- dump dir (`manifest.json` or `producers/` / `transactions/`): read natively by Spark, Parquet or JSONL;
- Kafka log-dir tree (any other directory): partition dirs listed on the driver, read by tasks;
- `kafka-dump-log.sh` text (a file starting with `Dumping `): one task per file.
Nothing here collects rows to the driver.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_txn_tools.dumps import schema as dschema
from kafka_txn_tools.dumps.dump_log_text import looks_like_dump_log_text

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import DataType, StructType


class InputError(ValueError):
    """An input path is missing or of no kind the sweep reads."""


@dataclass(frozen=True)
class InputSpec:
    path: str
    kind: str  # dump | logdir | text
    format: str = ""  # parquet | jsonl for dumps
    max_capture_time_ms: int | None = None  # from a dump's manifest
    # The clusters the input comes from: a dump's manifest, log dirs' meta.properties; empty: not known
    # (kafka-dump-log.sh text, a dump made before manifests recorded it).
    cluster_ids: frozenset[str] = frozenset()
    # How a dump reached its cluster (its manifest's connection record; None: not recorded).
    connection: dict[str, Any] | None = field(default=None, compare=False)

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "kind": self.kind}
        if self.format:
            out["format"] = self.format
        return out


def classify_input(path: str) -> InputSpec:
    p = Path(path)
    if not p.exists():
        raise InputError(f"input {path} does not exist")
    if p.is_dir() and dschema.is_dump_dir(p):
        formats = {dschema.dump_files(p, kind)[0] for kind in (dschema.PRODUCERS, dschema.TRANSACTIONS)} - {"none"}
        if len(formats) > 1:
            raise InputError(f"dump {path} mixes Parquet and JSONL: keep one format per dump")
        manifest = dschema.Manifest.read(p) if (p / dschema.MANIFEST).is_file() else None
        capture = manifest.max_capture_time_ms if manifest else None
        ids = frozenset([manifest.cluster_id] if manifest and manifest.cluster_id else [])
        return InputSpec(str(p), "dump", formats.pop() if formats else "parquet", capture, ids,
                         manifest.connection if manifest else None)
    if p.is_dir():
        from kafka_txn_tools.dumps.logdir import cluster_ids

        return InputSpec(str(p), "logdir", cluster_ids=frozenset(cluster_ids(p)))
    if looks_like_dump_log_text(p):
        return InputSpec(str(p), "text")
    raise InputError(
        f"cannot tell what {path} is: pass a dump dir (with manifest.json), a Kafka log dir or a tree of them, "
        "or a kafka-dump-log.sh output file (starting with 'Dumping ')"
    )


# --- schemas -------------------------------------------------------------------------------------


def _spark_type(column_type: str) -> DataType:
    from pyspark.sql import types as T

    simple = {"int32": T.IntegerType, "int64": T.LongType, "bool": T.BooleanType, "string": T.StringType}
    if column_type in simple:
        return simple[column_type]()
    if column_type == dschema.PARTITIONS:
        entry = T.StructType([T.StructField("topic", T.StringType(), True),
                              T.StructField("partition", T.IntegerType(), True)])
        return T.ArrayType(entry, True)
    raise TypeError(f"no Spark type for {column_type}")


def spark_schema(kind: str) -> StructType:
    """The Spark schema of a dump table (all nullable: Spark relaxes nullability on read anyway)."""
    from pyspark.sql import types as T

    return T.StructType([T.StructField(c.name, _spark_type(c.type), True) for c in dschema.COLUMNS[kind]])


def row_tuple(kind: str, row: dict[str, Any]) -> tuple[Any, ...]:
    values = []
    for name in dschema.column_names(kind):
        value = row.get(name)
        if name == "partitions" and value is not None:
            value = [(p["topic"], p["partition"]) for p in value]
        values.append(value)
    return tuple(values)


# --- tasks (run on executors) --------------------------------------------------------------------


def _logdir_task(item: tuple[str, str, int, int]) -> Iterator[tuple[str, tuple[Any, ...]]]:
    from kafka_txn_tools.dumps.logdir import PartitionDir, read_partition

    path, topic, partition, broker = item
    for kind, row in read_partition(PartitionDir(path, topic, partition, broker)):
        yield kind, row_tuple(kind, row)


def _text_task(path: str) -> Iterator[tuple[str, tuple[Any, ...]]]:
    from kafka_txn_tools.dumps.dump_log_text import parse_dump_log_text

    decisions: list[dict[str, Any]] = []
    producers, coordinators = parse_dump_log_text(path, decisions=decisions)
    for row in producers:
        yield dschema.PRODUCERS, row_tuple(dschema.PRODUCERS, row)
    for row in coordinators:
        yield dschema.TRANSACTIONS, row_tuple(dschema.TRANSACTIONS, row)
    for row in decisions:
        yield dschema.DECISIONS, row_tuple(dschema.DECISIONS, row)


# --- readers -------------------------------------------------------------------------------------


@dataclass
class Ingested:
    producers: DataFrame
    transactions: DataFrame
    errors: DataFrame
    inputs: list[InputSpec]
    # Capture times known without a scan (dump manifests), and frames whose capture time and broker
    # ids must still be computed (small: log dirs, text, dumps without manifest).
    known_capture_ms: list[int]
    known_brokers: list[int]
    scan_for_capture: list[DataFrame]
    # Producer row count from dump manifests, when every input is a dump that has one.
    known_producer_rows: int | None = None
    # The PrepareCommit / PrepareAbort records of the `__transaction_state` segments and transaction-log text
    # read (dumps/schema.py's `decisions`); None: no input holds such records (a dump has none).
    decisions: DataFrame | None = None


def _empty(spark: SparkSession, kind: str) -> DataFrame:
    return spark.createDataFrame([], spark_schema(kind))


def _read_dump(spark: SparkSession, spec: InputSpec, kind: str) -> DataFrame:
    fmt, files = dschema.dump_files(spec.path, kind)
    if fmt == "none":
        return _empty(spark, kind)
    reader = spark.read.schema(spark_schema(kind))
    directory = os.path.join(spec.path, kind)
    if fmt == "parquet":
        return reader.parquet(directory)
    return reader.option("mode", "FAILFAST").json([str(f) for f in files])


Frames = tuple["DataFrame", "DataFrame", "DataFrame"]  # producers, transactions, decisions


def _from_tasks(spark: SparkSession, rdd: Any) -> Frames:
    rdd = rdd.cache()  # every table comes from one read of the files

    def table(kind: str) -> DataFrame:
        return spark.createDataFrame(rdd.filter(lambda kv: kv[0] == kind).map(lambda kv: kv[1]), spark_schema(kind))

    return table(dschema.PRODUCERS), table(dschema.TRANSACTIONS), table(dschema.DECISIONS)


def _read_logdirs(spark: SparkSession, specs: Sequence[InputSpec]) -> Frames | None:
    from kafka_txn_tools.dumps.logdir import list_partition_dirs

    items = [(d.path, d.topic, d.partition, d.broker_id) for s in specs for d in list_partition_dirs(s.path)]
    if not items:
        return None
    slices = max(1, min(len(items), spark.sparkContext.defaultParallelism * 4))
    return _from_tasks(spark, spark.sparkContext.parallelize(items, slices).flatMap(_logdir_task))


def _read_texts(spark: SparkSession, specs: Sequence[InputSpec]) -> Frames | None:
    paths = [s.path for s in specs]
    if not paths:
        return None
    return _from_tasks(spark, spark.sparkContext.parallelize(paths, len(paths)).flatMap(_text_task))


def _union(frames: list[DataFrame], fallback: DataFrame) -> DataFrame:
    if not frames:
        return fallback
    out = frames[0]
    for frame in frames[1:]:
        out = out.unionByName(frame)
    return out


def read_inputs(spark: SparkSession, paths: Sequence[str]) -> Ingested:
    if not paths:
        raise InputError("no inputs: pass dump dirs, log dirs or kafka-dump-log.sh text files")
    specs = [classify_input(p) for p in paths]
    producers: list[DataFrame] = []
    transactions: list[DataFrame] = []
    errors: list[DataFrame] = []
    decisions: list[DataFrame] = []
    known_capture: list[int] = []
    known_brokers: set[int] = set()
    scan: list[DataFrame] = []
    manifest_rows: list[int | None] = []
    for spec in specs:
        if spec.kind != "dump":
            manifest_rows.append(None)
            continue
        frames = [_read_dump(spark, spec, kind) for kind in dschema.KINDS]
        producers.append(frames[0])
        transactions.append(frames[1])
        errors.append(frames[2])
        if spec.max_capture_time_ms is not None:
            manifest = dschema.Manifest.read(spec.path)
            known_capture.append(spec.max_capture_time_ms)
            known_brokers.update(manifest.brokers)
            manifest_rows.append(manifest.counts.get(dschema.PRODUCERS))
        else:
            manifest_rows.append(None)
            scan += [
                frames[0].select("capture_time_ms", "broker_id"),
                frames[1].select("capture_time_ms", frames[1]["coordinator_id"].alias("broker_id")),
            ]
    for read, kind in ((_read_logdirs, "logdir"), (_read_texts, "text")):
        found = read(spark, [s for s in specs if s.kind == kind])
        if found is not None:
            producers.append(found[0])
            transactions.append(found[1])
            decisions.append(found[2])
            scan += [
                found[0].select("capture_time_ms", "broker_id"),
                found[1].select("capture_time_ms", found[1]["coordinator_id"].alias("broker_id")),
            ]
    return Ingested(
        producers=_union(producers, _empty(spark, dschema.PRODUCERS)),
        transactions=_union(transactions, _empty(spark, dschema.TRANSACTIONS)),
        errors=_union(errors, _empty(spark, dschema.ERRORS)),
        inputs=specs,
        known_capture_ms=known_capture,
        known_brokers=sorted(known_brokers),
        scan_for_capture=scan,
        known_producer_rows=None if None in manifest_rows else sum(r or 0 for r in manifest_rows),
        decisions=_union(decisions, _empty(spark, dschema.DECISIONS)) if decisions else None,
    )
