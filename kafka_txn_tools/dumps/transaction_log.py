"""`__transaction_state-N` segments decoded natively: the coordinator's view of every transactional id.

Key: int16 version 0 + TransactionalId (int16-length string). Value v0 (fixed) or v1+ (flexible:
compact arrays and strings, tagged fields, unknown tags skipped). A null value is a tombstone: the
id expired. The latest record per id wins; a tombstone turns the id into a Dead row that keeps the
producer id of the value it deleted and the tombstone's timestamp, so that replicas can be merged
(a lagging replica's older value loses to the tombstone); the sweep then drops such ids, as the
coordinator forgets them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from kafka_txn_broker.formats import transaction_log as codec
from kafka_txn_broker.formats.errors import CorruptRecordError
from kafka_txn_broker.formats.record_batch import build_batch
from kafka_txn_broker.formats.transactions import NO_PRODUCER_ID, TransactionState
from kafka_txn_tools.dumps import segments
from kafka_txn_tools.dumps.schema import Row
from kafka_txn_tools.models import DEAD_STATE

TransactionLogError = codec.TransactionLogError


@dataclass(frozen=True)
class TxnMetadata:
    """One transactional id as a coordinator row: Kafka's state name, partitions in record order."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: str
    partitions: tuple[tuple[str, int], ...]
    last_update_ms: int
    start_time_ms: int | None  # None: not recorded (pre-4.0 dump-log text omits it)
    prev_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    client_transaction_version: int = 0


def decode_value(transactional_id: str, data: bytes) -> TxnMetadata:
    """A value as Kafka wrote it; a version newer than v1 is read as v1 (it may only add tagged fields)."""
    v = codec.decode_value(data, newer_versions=True)
    return TxnMetadata(transactional_id, v.producer_id, v.producer_epoch, v.timeout_ms, v.state.state_name,
                       v.partitions, v.last_update_ms, v.start_ms, v.prev_producer_id, v.next_producer_id,
                       v.client_transaction_version)


def encode_value(meta: TxnMetadata, version: int = 0) -> bytes:
    state = TransactionState.from_name(meta.state)
    if state is None:
        raise ValueError(f"unknown transaction state {meta.state!r}")
    start = -1 if meta.start_time_ms is None else meta.start_time_ms
    value = codec.TransactionLogValue(meta.producer_id, meta.producer_epoch, meta.timeout_ms, state, meta.partitions,
                                      meta.last_update_ms, start, meta.prev_producer_id, meta.next_producer_id,
                                      meta.client_transaction_version)
    return codec.encode_value(value, version)


@dataclass(frozen=True)
class TxnLogRecord:
    """One decoded record: `meta` None for a tombstone."""

    offset: int
    timestamp: int
    transactional_id: str
    meta: TxnMetadata | None


def iter_log_records(path: str | os.PathLike[str], verify_crc: bool = True) -> Iterator[TxnLogRecord]:
    for header, batch in segments.iter_segment(path, verify_crc):
        if header.is_control:
            continue
        for record in segments.decode_records(batch, str(path)):
            if record.key is None:
                continue
            try:
                tid = codec.decode_key(record.key)
                meta = None if record.value is None else decode_value(tid, record.value)
            except (TransactionLogError, CorruptRecordError) as exc:
                raise TransactionLogError(f"{path}: record at offset {record.offset}: {exc}") from exc
            yield TxnLogRecord(record.offset, record.timestamp, tid, meta)


def latest_states(records: Iterable[TxnLogRecord]) -> dict[str, TxnMetadata]:
    """Latest metadata per id; a tombstone becomes a Dead entry keeping the deleted value's producer."""
    latest: dict[str, TxnMetadata] = {}
    for rec in records:
        if rec.meta is not None:
            latest[rec.transactional_id] = rec.meta
            continue
        previous = latest.get(rec.transactional_id)
        if previous is None:
            latest.pop(rec.transactional_id, None)  # nothing left that names a producer
        else:
            latest[rec.transactional_id] = replace(
                previous, state=DEAD_STATE, partitions=(), last_update_ms=rec.timestamp, start_time_ms=-1
            )
    return latest


def read_transaction_log(partition_dir: str | os.PathLike[str], verify_crc: bool = True,
                         prepares: list[TxnLogRecord] | None = None) -> dict[str, TxnMetadata]:
    """Latest state per transactional id from every segment of one `__transaction_state-N` dir; every
    PrepareCommit / PrepareAbort record read is appended to `prepares` when given (one pass over the files)."""

    def records() -> Iterator[TxnLogRecord]:
        for segment in segments.segment_files(partition_dir):
            for rec in iter_log_records(segment, verify_crc):
                if prepares is not None and is_prepare(rec):
                    prepares.append(rec)
                yield rec

    return latest_states(records())


# The records that hold a coordinator's decision on a transaction (admin/decisions.py).
PREPARE_STATE_NAMES = frozenset({"PrepareCommit", "PrepareAbort"})


def is_prepare(rec: TxnLogRecord) -> bool:
    return rec.meta is not None and rec.meta.state in PREPARE_STATE_NAMES


def decision_row(rec: TxnLogRecord, txn_partition: int, coordinator_id: int) -> Row:
    """A Prepare record as a `decisions` row (dumps/schema.py): the coordinator's decision, as the sweep
    carries it to the driver (spark/gather.py makes it a models.CoordinatorDecision)."""
    meta = rec.meta
    if meta is None:
        raise ValueError(f"{rec.transactional_id!r} at offset {rec.offset} is a tombstone, not a decision")
    return {
        "coordinator_id": coordinator_id,
        "transactional_id": meta.transactional_id,
        "state": meta.state,
        "producer_id": meta.producer_id,
        "producer_epoch": meta.producer_epoch,
        "prev_producer_id": meta.prev_producer_id,
        "client_transaction_version": meta.client_transaction_version,
        "partitions": [{"topic": t, "partition": p} for t, p in meta.partitions],
        "last_update_ms": meta.last_update_ms,
        "txn_partition": txn_partition,
        "offset": rec.offset,
    }


def to_row(meta: TxnMetadata, coordinator_id: int, capture_time_ms: int, source: str) -> Row:
    return {
        "coordinator_id": coordinator_id,
        "transactional_id": meta.transactional_id,
        "producer_id": meta.producer_id,
        "producer_epoch": meta.producer_epoch,
        "state": meta.state,
        "timeout_ms": meta.timeout_ms,
        "start_time_ms": meta.start_time_ms,
        "last_update_ms": meta.last_update_ms,
        "partitions": [{"topic": t, "partition": p} for t, p in meta.partitions],
        "capture_time_ms": capture_time_ms,
        "source": source,
    }


def segment_from_records(records: Iterable[TxnLogRecord], version: int = 0) -> bytes:
    """A segment with one single-record batch per record (how the coordinator writes them)."""
    out = bytearray()
    for rec in records:
        value = None if rec.meta is None else encode_value(rec.meta, version)
        out += build_batch([(codec.encode_key(rec.transactional_id), value)], timestamp_ms=rec.timestamp,
                           base_offset=rec.offset)
    return bytes(out)


def write_segment(path: str | os.PathLike[str], records: Iterable[TxnLogRecord], version: int = 0) -> None:
    Path(path).write_bytes(segment_from_records(records, version))
