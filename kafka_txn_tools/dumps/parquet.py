"""The dump format's Parquet side: Arrow schemas built from schema.py's columns, and Parquet I/O.

Only Parquet dumps (and the sweep and the tests' generator, which work on Arrow tables) import this module, so
pyarrow stays an optional dependency of everything else.

Producer files put the rows with an open transaction in row groups of their own, first, then the
others in row groups of `PRODUCER_ROW_GROUP` rows: the row-group statistics of
current_txn_start_offset then let readers looking for open transactions (about 1% of the rows) skip
the rest of the file unread.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kafka_txn_tools.dumps.schema import (
    COLUMNS,
    ERRORS,
    PARTITIONS,
    PRODUCERS,
    TRANSACTIONS,
    Column,
    Row,
    conform_row,
)

PRODUCER_ROW_GROUP = 65_536
PARTITION_STRUCT = pa.struct([pa.field("topic", pa.string(), False), pa.field("partition", pa.int32(), False)])
_TYPES = {"int32": pa.int32(), "int64": pa.int64(), "bool": pa.bool_(), "string": pa.string(),
          PARTITIONS: pa.list_(PARTITION_STRUCT)}


def _schema(columns: Iterable[Column]) -> pa.Schema:
    return pa.schema([pa.field(c.name, _TYPES[c.type], c.nullable) for c in columns])


PRODUCER_SCHEMA = _schema(COLUMNS[PRODUCERS])
TRANSACTION_SCHEMA = _schema(COLUMNS[TRANSACTIONS])
ERROR_SCHEMA = _schema(COLUMNS[ERRORS])
SCHEMAS: dict[str, pa.Schema] = {PRODUCERS: PRODUCER_SCHEMA, TRANSACTIONS: TRANSACTION_SCHEMA, ERRORS: ERROR_SCHEMA}


def rows_to_table(kind: str, rows: Iterable[Mapping[str, Any]]) -> pa.Table:
    """Plain dict rows -> an Arrow table with the exact schema of `kind`."""
    return pa.Table.from_pylist([conform_row(kind, r) for r in rows], schema=SCHEMAS[kind])


def split_open(table: pa.Table) -> tuple[pa.Table, pa.Table]:
    """(rows with an open transaction, the others), each in its original order."""
    is_open = pc.greater_equal(table.column("current_txn_start_offset"), 0)
    return table.filter(is_open), table.filter(pc.invert(is_open))


def _write_producers(table: pa.Table, path: str | os.PathLike[str]) -> None:
    with pq.ParquetWriter(path, table.schema, compression="snappy") as writer:
        for part in split_open(table):
            if part.num_rows:
                writer.write_table(part, row_group_size=PRODUCER_ROW_GROUP)


def write_parquet(rows: Iterable[Mapping[str, Any]] | pa.Table, path: str | os.PathLike[str], kind: str) -> int:
    """Write rows (dicts or an Arrow table of the right schema) as one Parquet file; return the count."""
    table = rows if isinstance(rows, pa.Table) else rows_to_table(kind, rows)
    if not table.schema.equals(SCHEMAS[kind], check_metadata=False):
        table = table.cast(SCHEMAS[kind])
    if kind == PRODUCERS:
        _write_producers(table, path)
    else:
        pq.write_table(table, path, compression="snappy")
    return int(table.num_rows)


def read_rows(path: str | os.PathLike[str], kind: str) -> Iterator[Row]:
    yield from pq.read_table(path, schema=SCHEMAS[kind]).to_pylist()


def table_brokers_and_capture(table: pa.Table, kind: str) -> tuple[set[int], int | None]:
    """The broker (or coordinator) ids a chunk names and its latest capture time, for the manifest."""
    ids = table.column("coordinator_id" if kind == TRANSACTIONS else "broker_id").drop_null()
    return {int(b) for b in pc.unique(ids).to_pylist()}, pc.max(table.column("capture_time_ms")).as_py()
