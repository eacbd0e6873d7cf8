"""The dump format: the single source of truth for `kafka-txn dump` and every sweep input.

A dump is a directory::

    DIR/manifest.json            capture time, format, brokers, row counts (see `Manifest`)
    DIR/producers/*.parquet      producer-state rows, one per (replica, producer)   (or *.jsonl)
    DIR/transactions/*.parquet   coordinator-state rows, one per transactional id    (or *.jsonl)
    DIR/errors/*.parquet         partial failures, one per failed request item       (or *.jsonl)

One format per dump (all Parquet or all JSONL). JSONL is one JSON object per line with exactly the
column names below; `partitions` is a list of {"topic": str, "partition": int} objects.

Parquet producer files put the rows with an open transaction in row groups of their own, first,
then the others in row groups of `PRODUCER_ROW_GROUP` rows: the row-group statistics of
current_txn_start_offset then let readers looking for open transactions (about 1% of the rows)
skip the rest of the file unread.

Producer-state rows (`PRODUCER_SCHEMA`; DescribeProducers per replica, or a `.snapshot`):

| column                   | type   | null | meaning                                                      |
|--------------------------|--------|------|--------------------------------------------------------------|
| broker_id                | int32  | no   | broker holding this replica (the one that answered)          |
| topic                    | string | no   | topic name                                                   |
| partition                | int32  | no   | partition index                                              |
| is_leader                | bool   | yes  | replica is the partition leader; null = unknown (log dirs)   |
| producer_id              | int64  | no   | producer id                                                  |
| producer_epoch           | int32  | no   | producer epoch                                               |
| last_sequence            | int32  | no   | last sequence number, -1 none                                |
| last_timestamp_ms        | int64  | no   | last append timestamp (max timestamp of the last batch), -1  |
| coordinator_epoch        | int32  | no   | coordinator epoch of the last marker, -1 none                |
| current_txn_start_offset | int64  | no   | first offset of the open transaction, -1 none                |
| snapshot_offset          | int64  | yes  | offset the state reflects (snapshot or replay end); null live|
| capture_time_ms          | int64  | no   | when this row was captured (broker answer / file mtime)      |
| source                   | string | no   | describe-producers, snapshot, snapshot+log, dump-log-text    |

Coordinator-state rows (`TRANSACTION_SCHEMA`; ListTransactions + DescribeTransactions, or
`__transaction_state`):

| column          | type                         | null | meaning                                        |
|-----------------|------------------------------|------|------------------------------------------------|
| coordinator_id  | int32                        | no   | broker that answered / hosts the log partition |
| transactional_id| string                       | no   | transactional id                               |
| producer_id     | int64                        | no   | producer id the coordinator holds for the id   |
| producer_epoch  | int32                        | no   | producer epoch                                 |
| state           | string                       | no   | Kafka state name (TXN_STATES)                  |
| timeout_ms      | int32                        | yes  | transaction timeout; null unknown              |
| start_time_ms   | int64                        | yes  | current transaction start, -1 none, null unknown|
| last_update_ms  | int64                        | yes  | last state change; null unknown (live dumps)   |
| partitions      | list<struct<topic, partition>>| yes | partitions in the transaction; null unknown    |
| capture_time_ms | int64                        | no   | capture time                                   |
| source          | string                       | no   | describe-transactions, transaction-log,        |
|                 |                              |      | dump-log-text                                  |

An id whose DescribeTransactions answered TRANSACTIONAL_ID_NOT_FOUND is written with state Dead
(the producer id from ListTransactions, other details null); a tombstone in `__transaction_state`
becomes a Dead row too (source transaction-log or dump-log-text), keeping the producer id of the
value it deleted; after merging replicas the sweep drops those ids, as the coordinator forgets them.
Other describe failures go to errors with the transactional id, and the id gets a row with
`partitions` null (unknown).

Error rows (`ERROR_SCHEMA`):

| column           | type   | null | meaning                                              |
|------------------|--------|------|------------------------------------------------------|
| broker_id        | int32  | yes  | broker the request went to; null = not known         |
| api              | string | no   | DescribeProducers, ListTransactions, DescribeTransactions, Metadata |
| topic            | string | yes  | topic, for partition-level failures                  |
| partition        | int32  | yes  | partition, for partition-level failures              |
| transactional_id | string | yes  | id, for DescribeTransactions failures                |
| error_code       | int32  | no   | Kafka error code (-1 for a transport failure)        |
| error_name       | string | no   | Kafka error name, e.g. NOT_LEADER_OR_FOLLOWER        |
| message          | string | yes  | free text                                            |
| capture_time_ms  | int64  | no   | when the failure was seen                            |
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

FORMAT_VERSION = 1
PRODUCERS = "producers"
TRANSACTIONS = "transactions"
ERRORS = "errors"
KINDS = (PRODUCERS, TRANSACTIONS, ERRORS)
MANIFEST = "manifest.json"

TXN_STATES = (
    "Empty",
    "Ongoing",
    "PrepareCommit",
    "PrepareAbort",
    "CompleteCommit",
    "CompleteAbort",
    "Dead",
    "PrepareEpochFence",
)

PARTITION_STRUCT = pa.struct([pa.field("topic", pa.string(), False), pa.field("partition", pa.int32(), False)])

PRODUCER_SCHEMA = pa.schema(
    [
        pa.field("broker_id", pa.int32(), False),
        pa.field("topic", pa.string(), False),
        pa.field("partition", pa.int32(), False),
        pa.field("is_leader", pa.bool_(), True),
        pa.field("producer_id", pa.int64(), False),
        pa.field("producer_epoch", pa.int32(), False),
        pa.field("last_sequence", pa.int32(), False),
        pa.field("last_timestamp_ms", pa.int64(), False),
        pa.field("coordinator_epoch", pa.int32(), False),
        pa.field("current_txn_start_offset", pa.int64(), False),
        pa.field("snapshot_offset", pa.int64(), True),
        pa.field("capture_time_ms", pa.int64(), False),
        pa.field("source", pa.string(), False),
    ]
)

TRANSACTION_SCHEMA = pa.schema(
    [
        pa.field("coordinator_id", pa.int32(), False),
        pa.field("transactional_id", pa.string(), False),
        pa.field("producer_id", pa.int64(), False),
        pa.field("producer_epoch", pa.int32(), False),
        pa.field("state", pa.string(), False),
        pa.field("timeout_ms", pa.int32(), True),
        pa.field("start_time_ms", pa.int64(), True),
        pa.field("last_update_ms", pa.int64(), True),
        pa.field("partitions", pa.list_(PARTITION_STRUCT), True),
        pa.field("capture_time_ms", pa.int64(), False),
        pa.field("source", pa.string(), False),
    ]
)

ERROR_SCHEMA = pa.schema(
    [
        pa.field("broker_id", pa.int32(), True),
        pa.field("api", pa.string(), False),
        pa.field("topic", pa.string(), True),
        pa.field("partition", pa.int32(), True),
        pa.field("transactional_id", pa.string(), True),
        pa.field("error_code", pa.int32(), False),
        pa.field("error_name", pa.string(), False),
        pa.field("message", pa.string(), True),
        pa.field("capture_time_ms", pa.int64(), False),
    ]
)

SCHEMAS: dict[str, pa.Schema] = {
    PRODUCERS: PRODUCER_SCHEMA,
    TRANSACTIONS: TRANSACTION_SCHEMA,
    ERRORS: ERROR_SCHEMA,
}

Row = dict[str, Any]


class DumpFormatError(ValueError):
    """A dump file or row does not match the documented schema."""


def parse_topic_partition(text: str) -> dict[str, Any]:
    """'orders-3' -> {'topic': 'orders', 'partition': 3}; topic names may contain '-'."""
    topic, sep, index = text.strip().rpartition("-")
    if not sep or not topic or not index.lstrip("-").isdigit():
        raise DumpFormatError(f"bad topic-partition {text!r}: expected TOPIC-N, e.g. orders-3")
    return {"topic": topic, "partition": int(index)}


def _coerce_partitions(value: Any) -> list[dict[str, Any]] | None:
    if value is None:
        return None
    out = []
    for item in value:
        if isinstance(item, str):
            out.append(parse_topic_partition(item))
        elif isinstance(item, Mapping) and "topic" in item and "partition" in item:
            out.append({"topic": str(item["topic"]), "partition": int(item["partition"])})
        else:
            raise DumpFormatError(f"bad partitions entry {item!r}: expected 'topic-N' or {{topic, partition}}")
    return out


def conform_row(kind: str, row: Mapping[str, Any]) -> Row:
    """Check `row` against the schema of `kind`; fill nullable columns left out; fail naming the column."""
    schema = SCHEMAS[kind]
    out: Row = {}
    for fld in schema:
        value = row.get(fld.name)
        if value is None and not fld.nullable:
            raise DumpFormatError(f"{kind} row is missing required column {fld.name!r}: {dict(row)!r}")
        if fld.name == "partitions":
            value = _coerce_partitions(value)
        out[fld.name] = value
    unknown = set(row) - set(schema.names)
    if unknown:
        raise DumpFormatError(f"{kind} row has unknown columns {sorted(unknown)}; the schema is in dumps/schema.py")
    if kind == TRANSACTIONS and out["state"] not in TXN_STATES:
        raise DumpFormatError(f"unknown transaction state {out['state']!r}: use one of {', '.join(TXN_STATES)}")
    return out


def rows_to_table(kind: str, rows: Iterable[Mapping[str, Any]]) -> pa.Table:
    """Plain dict rows -> an Arrow table with the exact schema of `kind`."""
    return pa.Table.from_pylist([conform_row(kind, r) for r in rows], schema=SCHEMAS[kind])


def write_jsonl(rows: Iterable[Mapping[str, Any]], path: str | os.PathLike[str], kind: str) -> int:
    """Write rows as JSON lines (checked against the schema); return the row count."""
    count = 0
    with open(path, "w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(conform_row(kind, row), separators=(",", ":")) + "\n")
            count += 1
    return count


PRODUCER_ROW_GROUP = 65_536


def split_open(table: pa.Table) -> tuple[pa.Table, pa.Table]:
    """(rows with an open transaction, the others), each in its original order."""
    is_open = pc.greater_equal(table.column("current_txn_start_offset"), 0)
    return table.filter(is_open), table.filter(pc.invert(is_open))


def _write_producers(table: pa.Table, path: str | os.PathLike[str]) -> None:
    import pyarrow.parquet as pq

    with pq.ParquetWriter(path, table.schema, compression="snappy") as writer:
        for part in split_open(table):
            if part.num_rows:
                writer.write_table(part, row_group_size=PRODUCER_ROW_GROUP)


def write_parquet(rows: Iterable[Mapping[str, Any]] | pa.Table, path: str | os.PathLike[str], kind: str) -> int:
    """Write rows (dicts or an Arrow table of the right schema) as one Parquet file; return the count."""
    import pyarrow.parquet as pq

    table = rows if isinstance(rows, pa.Table) else rows_to_table(kind, rows)
    if not table.schema.equals(SCHEMAS[kind], check_metadata=False):
        table = table.cast(SCHEMAS[kind])
    if kind == PRODUCERS:
        _write_producers(table, path)
    else:
        pq.write_table(table, path, compression="snappy")
    return table.num_rows


def read_jsonl(path: str | os.PathLike[str], kind: str) -> Iterator[Row]:
    """Rows of one JSONL file, checked; errors name the file and line."""
    with open(path, encoding="utf-8") as src:
        for number, line in enumerate(src, 1):
            if not line.strip():
                continue
            try:
                yield conform_row(kind, json.loads(line))
            except (ValueError, TypeError) as exc:
                raise DumpFormatError(f"{path}:{number}: {exc}") from exc


def dump_files(directory: str | os.PathLike[str], kind: str) -> tuple[str, list[Path]]:
    """('parquet'|'jsonl', files) for one kind of a dump dir; ('none', []) when absent."""
    sub = Path(directory) / kind
    parquet = sorted(sub.glob("*.parquet"))
    jsonl = sorted(sub.glob("*.jsonl"))
    if parquet and jsonl:
        raise DumpFormatError(f"{sub} mixes .parquet and .jsonl files: keep one format per dump")
    if parquet:
        return "parquet", parquet
    if jsonl:
        return "jsonl", jsonl
    return "none", []


def read_rows(directory: str | os.PathLike[str], kind: str) -> Iterator[Row]:
    """All rows of one kind from a dump dir, for small dumps and tests (the sweep reads with Spark)."""
    fmt, files = dump_files(directory, kind)
    for path in files:
        if fmt == "jsonl":
            yield from read_jsonl(path, kind)
        else:
            import pyarrow.parquet as pq

            yield from pq.read_table(path, schema=SCHEMAS[kind]).to_pylist()


def is_dump_dir(path: str | os.PathLike[str]) -> bool:
    p = Path(path)
    return (p / MANIFEST).is_file() or any((p / kind).is_dir() for kind in (PRODUCERS, TRANSACTIONS))


@dataclass
class Manifest:
    """DIR/manifest.json: what the dump holds."""

    capture_time_ms: int
    format: str
    brokers: list[int] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    source: str = "kafka-txn dump"
    format_version: int = FORMAT_VERSION
    # The latest capture_time_ms of any row: the sweep's "now" without scanning the rows for it.
    max_capture_time_ms: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "format_version": self.format_version,
            "capture_time_ms": self.capture_time_ms,
            "format": self.format,
            "brokers": sorted(self.brokers),
            "counts": self.counts,
            "source": self.source,
            "max_capture_time_ms": self.max_capture_time_ms,
        }

    @classmethod
    def read(cls, directory: str | os.PathLike[str]) -> Manifest:
        path = Path(directory) / MANIFEST
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return cls(
                capture_time_ms=int(data["capture_time_ms"]),
                format=str(data["format"]),
                brokers=[int(b) for b in data.get("brokers", [])],
                counts={str(k): int(v) for k, v in data.get("counts", {}).items()},
                source=str(data.get("source", "")),
                format_version=int(data.get("format_version", FORMAT_VERSION)),
                max_capture_time_ms=None
                if data.get("max_capture_time_ms") is None
                else int(data["max_capture_time_ms"]),
            )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise DumpFormatError(
                f"cannot read {path}: {exc}; a dump manifest needs capture_time_ms and format"
            ) from exc


class DumpWriter:
    """Writes a dump dir in chunks (one file per `add_*` call), then the manifest on `close()`.

    Used by `kafka-txn dump` and by the generator, so both write the same layout.
    """

    def __init__(self, directory: str | os.PathLike[str], fmt: str = "parquet", capture_time_ms: int = 0) -> None:
        if fmt not in ("parquet", "jsonl"):
            raise ValueError(f"unknown dump format {fmt!r}: use parquet or jsonl")
        self.directory = Path(directory)
        self.format = fmt
        self.capture_time_ms = capture_time_ms
        self.counts = {kind: 0 for kind in KINDS}
        self.brokers: set[int] = set()
        self.max_capture_time_ms: int | None = None
        self._files = {kind: 0 for kind in KINDS}
        for kind in KINDS:
            (self.directory / kind).mkdir(parents=True, exist_ok=True)

    def _next_path(self, kind: str) -> Path:
        number = self._files[kind]
        self._files[kind] += 1
        return self.directory / kind / f"part-{number:05d}.{self.format}"

    def add(self, kind: str, rows: Iterable[Mapping[str, Any]] | pa.Table) -> int:
        """Append one chunk of rows (dicts, or an Arrow table for large chunks)."""
        path = self._next_path(kind)
        if isinstance(rows, pa.Table):
            count = (
                write_parquet(rows, path, kind)
                if self.format == "parquet"
                else write_jsonl(rows.to_pylist(), path, kind)
            )
            ids = rows.column("coordinator_id" if kind == TRANSACTIONS else "broker_id").drop_null()
            self.brokers.update(int(b) for b in pc.unique(ids).to_pylist())
            self._saw_capture(pc.max(rows.column("capture_time_ms")).as_py())
        else:
            materialized = [dict(r) for r in rows]
            writer = write_parquet if self.format == "parquet" else write_jsonl
            count = writer(materialized, path, kind)
            key = "coordinator_id" if kind == TRANSACTIONS else "broker_id"
            self.brokers.update(int(r[key]) for r in materialized if r.get(key) is not None)
            self._saw_capture(max((int(r["capture_time_ms"]) for r in materialized), default=None))
        self.counts[kind] += count
        return count

    def _saw_capture(self, ms: int | None) -> None:
        if ms is not None and (self.max_capture_time_ms is None or ms > self.max_capture_time_ms):
            self.max_capture_time_ms = ms

    def close(self) -> Manifest:
        manifest = Manifest(
            self.capture_time_ms,
            self.format,
            sorted(self.brokers),
            dict(self.counts),
            max_capture_time_ms=self.max_capture_time_ms,
        )
        (self.directory / MANIFEST).write_text(json.dumps(manifest.to_json(), indent=2) + "\n", encoding="utf-8")
        return manifest
