"""The dump format: the single source of truth for `kafka-txn dump` and every sweep input.

A dump is a directory::

    DIR/manifest.json            capture time, format, brokers, row counts, cluster id (see `Manifest`)
    DIR/producers/*.parquet      producer-state rows, one per (replica, producer)   (or *.jsonl)
    DIR/transactions/*.parquet   coordinator-state rows, one per transactional id    (or *.jsonl)
    DIR/errors/*.parquet         partial failures, one per failed request item       (or *.jsonl)

One format per dump (all Parquet or all JSONL). JSONL is one JSON object per line with exactly the
column names below; `partitions` is a list of {"topic": str, "partition": int} objects. This module
is the format without its Parquet side, so JSONL dumps and the log-dir readers need no pyarrow; the
Arrow schemas and Parquet I/O are in parquet.py.

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
| state           | string                       | no   | Kafka state name (STATE_NAMES)                 |
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
from typing import TYPE_CHECKING, Any

from kafka_txn_broker.formats.transactions import STATE_NAMES

if TYPE_CHECKING:
    import pyarrow as pa

FORMAT_VERSION = 1
PRODUCERS = "producers"
TRANSACTIONS = "transactions"
ERRORS = "errors"
KINDS = (PRODUCERS, TRANSACTIONS, ERRORS)
MANIFEST = "manifest.json"

# Column types: int32, int64, bool, string, and `partitions` (list<struct<topic: string, partition: int32>>).
PARTITIONS = "partitions"


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: str
    nullable: bool


def _columns(*spec: tuple[str, str, bool]) -> tuple[Column, ...]:
    return tuple(Column(*c) for c in spec)


PRODUCER_COLUMNS = _columns(
    ("broker_id", "int32", False),
    ("topic", "string", False),
    ("partition", "int32", False),
    ("is_leader", "bool", True),
    ("producer_id", "int64", False),
    ("producer_epoch", "int32", False),
    ("last_sequence", "int32", False),
    ("last_timestamp_ms", "int64", False),
    ("coordinator_epoch", "int32", False),
    ("current_txn_start_offset", "int64", False),
    ("snapshot_offset", "int64", True),
    ("capture_time_ms", "int64", False),
    ("source", "string", False),
)

TRANSACTION_COLUMNS = _columns(
    ("coordinator_id", "int32", False),
    ("transactional_id", "string", False),
    ("producer_id", "int64", False),
    ("producer_epoch", "int32", False),
    ("state", "string", False),
    ("timeout_ms", "int32", True),
    ("start_time_ms", "int64", True),
    ("last_update_ms", "int64", True),
    ("partitions", PARTITIONS, True),
    ("capture_time_ms", "int64", False),
    ("source", "string", False),
)

ERROR_COLUMNS = _columns(
    ("broker_id", "int32", True),
    ("api", "string", False),
    ("topic", "string", True),
    ("partition", "int32", True),
    ("transactional_id", "string", True),
    ("error_code", "int32", False),
    ("error_name", "string", False),
    ("message", "string", True),
    ("capture_time_ms", "int64", False),
)

# Not a dump table (a dump holds no `__transaction_state` record): what a sweep reads from copied
# `__transaction_state` segments besides each id's newest state, every PrepareCommit / PrepareAbort record,
# the coordinator's decision on a transaction (admin/decisions.py). `coordinator_id`: the replica's broker.
DECISIONS = "decisions"
DECISION_COLUMNS = _columns(
    ("coordinator_id", "int32", False),
    ("transactional_id", "string", False),
    ("state", "string", False),
    ("producer_id", "int64", False),
    ("producer_epoch", "int32", False),
    ("prev_producer_id", "int64", False),
    ("client_transaction_version", "int32", False),
    ("partitions", PARTITIONS, False),
    ("last_update_ms", "int64", False),
    ("txn_partition", "int32", False),
    ("offset", "int64", False),
)

COLUMNS: dict[str, tuple[Column, ...]] = {
    PRODUCERS: PRODUCER_COLUMNS,
    TRANSACTIONS: TRANSACTION_COLUMNS,
    ERRORS: ERROR_COLUMNS,
    DECISIONS: DECISION_COLUMNS,
}


def column_names(kind: str) -> list[str]:
    return [c.name for c in COLUMNS[kind]]


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
    columns = COLUMNS[kind]
    out: Row = {}
    for col in columns:
        value = row.get(col.name)
        if value is None and not col.nullable:
            raise DumpFormatError(f"{kind} row is missing required column {col.name!r}: {dict(row)!r}")
        if col.type == PARTITIONS:
            value = _coerce_partitions(value)
        out[col.name] = value
    unknown = set(row) - {c.name for c in columns}
    if unknown:
        raise DumpFormatError(f"{kind} row has unknown columns {sorted(unknown)}; the schema is in dumps/schema.py")
    if kind == TRANSACTIONS and out["state"] not in STATE_NAMES:
        raise DumpFormatError(f"unknown transaction state {out['state']!r}: use one of {', '.join(STATE_NAMES)}")
    return out


def write_jsonl(rows: Iterable[Mapping[str, Any]], path: str | os.PathLike[str], kind: str) -> int:
    """Write rows as JSON lines (checked against the schema); return the row count."""
    count = 0
    with open(path, "w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(conform_row(kind, row), separators=(",", ":")) + "\n")
            count += 1
    return count


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
            from kafka_txn_tools.dumps import parquet

            yield from parquet.read_rows(path, kind)


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
    # The cluster the rows were read from (Metadata's cluster id; None: not known): the sweep's abort
    # plan records it, and `abort --plan` refuses to apply the plan to another cluster.
    cluster_id: str | None = None
    # How the dump reached the cluster, never a secret (None: not recorded, a dump made before this field):
    # {"bootstrap_server", "profile", "command_config"}: the options the sweep's printed commands repeat;
    # "bootstrap_servers": the servers they resolved to; "properties": security.protocol, sasl.mechanism and
    # the TLS file paths (connection/config.py's DESCRIBED).
    connection: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "format_version": self.format_version,
            "capture_time_ms": self.capture_time_ms,
            "format": self.format,
            "brokers": sorted(self.brokers),
            "counts": self.counts,
            "source": self.source,
            "max_capture_time_ms": self.max_capture_time_ms,
            "cluster_id": self.cluster_id,
            "connection": self.connection,
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
                cluster_id=None if data.get("cluster_id") is None else str(data["cluster_id"]),
                connection=_connection(data.get("connection")),
            )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise DumpFormatError(
                f"cannot read {path}: {exc}; a dump manifest needs capture_time_ms and format"
            ) from exc


def _connection(raw: Any) -> dict[str, Any] | None:
    """A manifest's connection record; anything but a mapping is refused (a hand-edited manifest)."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise TypeError(f"connection is {type(raw).__name__}, not a mapping")
    return raw


class DumpWriter:
    """Writes a dump dir in chunks (one file per `add_*` call), then the manifest on `close()`.

    Used by `kafka-txn dump` and by the tests' data generator, so both write the same layout.
    """

    def __init__(self, directory: str | os.PathLike[str], fmt: str = "parquet", capture_time_ms: int = 0) -> None:
        if fmt not in ("parquet", "jsonl"):
            raise ValueError(f"unknown dump format {fmt!r}: use parquet or jsonl")
        if fmt == "parquet":
            from kafka_txn_tools.dumps import parquet  # noqa: F401  (ImportError now, before any file: no pyarrow)
        self.directory = Path(directory)
        self.format = fmt
        self.capture_time_ms = capture_time_ms
        self.counts = {kind: 0 for kind in KINDS}
        self.brokers: set[int] = set()
        self.max_capture_time_ms: int | None = None
        self.cluster_id: str | None = None
        self.connection: dict[str, Any] | None = None
        self._files = {kind: 0 for kind in KINDS}
        for kind in KINDS:
            (self.directory / kind).mkdir(parents=True, exist_ok=True)

    def _next_path(self, kind: str) -> Path:
        number = self._files[kind]
        self._files[kind] += 1
        return self.directory / kind / f"part-{number:05d}.{self.format}"

    def add(self, kind: str, rows: Iterable[Mapping[str, Any]]) -> int:
        """Append one chunk of rows."""
        materialized = [dict(r) for r in rows]
        path = self._next_path(kind)
        if self.format == "parquet":
            from kafka_txn_tools.dumps import parquet

            count = parquet.write_parquet(materialized, path, kind)
        else:
            count = write_jsonl(materialized, path, kind)
        key = "coordinator_id" if kind == TRANSACTIONS else "broker_id"
        self.brokers.update(int(r[key]) for r in materialized if r.get(key) is not None)
        self._saw_capture(max((int(r["capture_time_ms"]) for r in materialized), default=None))
        self.counts[kind] += count
        return count

    def add_table(self, kind: str, table: pa.Table) -> int:
        """Append one chunk given as an Arrow table of the kind's schema (large generated chunks)."""
        from kafka_txn_tools.dumps import parquet

        path = self._next_path(kind)
        if self.format == "parquet":
            count = parquet.write_parquet(table, path, kind)
        else:
            count = write_jsonl(table.to_pylist(), path, kind)
        brokers, max_capture = parquet.table_brokers_and_capture(table, kind)
        self.brokers.update(brokers)
        self._saw_capture(max_capture)
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
            cluster_id=self.cluster_id,
            connection=self.connection,
        )
        (self.directory / MANIFEST).write_text(json.dumps(manifest.to_json(), indent=2) + "\n", encoding="utf-8")
        return manifest
