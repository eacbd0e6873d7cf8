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
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kafka_txn_tools.dumps import record_batch as rb
from kafka_txn_tools.dumps.schema import TXN_STATES, Row

TRANSACTION_STATE_TOPIC = "__transaction_state"
STATE_IDS = {name: i for i, name in enumerate(TXN_STATES)}


class TransactionLogError(ValueError):
    """A `__transaction_state` record cannot be decoded."""


@dataclass(frozen=True)
class TxnMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: str
    partitions: tuple[tuple[str, int], ...]
    last_update_ms: int
    start_time_ms: int | None  # None: not recorded (pre-4.0 dump-log text omits it)
    tagged: dict[int, Any] = field(default_factory=dict, compare=False)


class _Reader:
    """Big-endian cursor over one record value; errors say which field ran out."""

    def __init__(self, data: bytes) -> None:
        self.data = memoryview(data)
        self.pos = 0

    def take(self, fmt: str, what: str) -> Any:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise TransactionLogError(f"value ends inside {what}")
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return value

    def uvarint(self) -> int:
        value, self.pos = rb.read_uvarint(self.data, self.pos)
        return value

    def raw(self, size: int, what: str) -> bytes:
        if size < 0 or self.pos + size > len(self.data):
            raise TransactionLogError(f"value ends inside {what}")
        out = bytes(self.data[self.pos : self.pos + size])
        self.pos += size
        return out

    def skip_tags(self) -> dict[int, bytes]:
        tags = {}
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            tags[tag] = self.raw(self.uvarint(), f"tagged field {tag}")
        return tags


def decode_key(data: bytes) -> str:
    if len(data) < 4:
        raise TransactionLogError("key is shorter than 4 bytes")
    version, length = struct.unpack_from(">hh", data)
    if version != 0:
        raise TransactionLogError(f"key version {version} is not a transaction metadata key (expected 0)")
    return bytes(data[4 : 4 + length]).decode("utf-8")


def _state_name(status: int) -> str:
    if not 0 <= status < len(TXN_STATES):
        raise TransactionLogError(f"unknown transaction status {status}")
    return TXN_STATES[status]


def _partitions_v0(r: _Reader) -> tuple[tuple[str, int], ...]:
    out = []
    count = r.take(">i", "partition count")
    for _ in range(max(count, 0)):
        topic = r.raw(r.take(">h", "topic length"), "topic").decode("utf-8")
        out += [(topic, r.take(">i", "partition id")) for _ in range(r.take(">i", "partition id count"))]
    return tuple(out)


def _partitions_flexible(r: _Reader) -> tuple[tuple[str, int], ...]:
    out = []
    count = r.uvarint() - 1
    for _ in range(max(count, 0)):
        topic = r.raw(r.uvarint() - 1, "topic").decode("utf-8")
        out += [(topic, r.take(">i", "partition id")) for _ in range(r.uvarint() - 1)]
        r.skip_tags()
    return tuple(out)


_TAG_FORMATS = {0: ">q", 1: ">q", 2: ">h"}  # PreviousProducerId, NextProducerId, ClientTransactionVersion


def decode_value(transactional_id: str, data: bytes) -> TxnMetadata:
    r = _Reader(data)
    version = r.take(">h", "version")
    if version < 0:
        raise TransactionLogError(f"value version {version} is invalid")
    pid = r.take(">q", "ProducerId")
    epoch = r.take(">h", "ProducerEpoch")
    timeout = r.take(">i", "TransactionTimeoutMs")
    state = _state_name(r.take(">b", "TransactionStatus"))
    # Versions above 1 are read as v1: since KIP-915 new versions may only add tagged fields.
    partitions = _partitions_v0(r) if version == 0 else _partitions_flexible(r)
    last_update = r.take(">q", "TransactionLastUpdateTimestampMs")
    start = r.take(">q", "TransactionStartTimestampMs")
    tagged: dict[int, Any] = {}
    if version >= 1:
        for tag, raw in r.skip_tags().items():
            fmt = _TAG_FORMATS.get(tag)
            if fmt and len(raw) == struct.calcsize(fmt):
                tagged[tag] = struct.unpack(fmt, raw)[0]
    return TxnMetadata(transactional_id, pid, epoch, timeout, state, partitions, last_update, start, tagged)


def encode_key(transactional_id: str) -> bytes:
    raw = transactional_id.encode("utf-8")
    return struct.pack(">hh", 0, len(raw)) + raw


def _group(partitions: Iterable[tuple[str, int]]) -> dict[str, list[int]]:
    grouped: dict[str, list[int]] = {}
    for topic, index in partitions:
        grouped.setdefault(topic, []).append(index)
    return grouped


def encode_value(meta: TxnMetadata, version: int = 0) -> bytes:
    out = bytearray(
        struct.pack(">hqhib", version, meta.producer_id, meta.producer_epoch, meta.timeout_ms, STATE_IDS[meta.state])
    )
    grouped = _group(meta.partitions)
    if version == 0:
        out += struct.pack(">i", len(grouped))
        for topic, ids in grouped.items():
            raw = topic.encode("utf-8")
            out += struct.pack(">h", len(raw)) + raw + struct.pack(">i", len(ids))
            out += b"".join(struct.pack(">i", i) for i in ids)
    else:
        out += rb.write_uvarint(len(grouped) + 1)
        for topic, ids in grouped.items():
            raw = topic.encode("utf-8")
            out += rb.write_uvarint(len(raw) + 1) + raw + rb.write_uvarint(len(ids) + 1)
            out += b"".join(struct.pack(">i", i) for i in ids) + b"\x00"
    start = -1 if meta.start_time_ms is None else meta.start_time_ms
    out += struct.pack(">qq", meta.last_update_ms, start)
    if version >= 1:
        tags = sorted(meta.tagged.items())
        out += rb.write_uvarint(len(tags))
        for tag, value in tags:
            raw = struct.pack(_TAG_FORMATS.get(tag, ">q"), value)
            out += rb.write_uvarint(tag) + rb.write_uvarint(len(raw)) + raw
    return bytes(out)


@dataclass(frozen=True)
class TxnLogRecord:
    """One decoded record: `meta` None for a tombstone."""

    offset: int
    timestamp: int
    transactional_id: str
    meta: TxnMetadata | None


def iter_log_records(path: str | os.PathLike[str], verify_crc: bool = True) -> Iterator[TxnLogRecord]:
    for header, batch in rb.iter_segment(path, verify_crc):
        if header.is_control:
            continue
        for record in rb.decode_records(batch, str(path)):
            if record.key is None:
                continue
            try:
                tid = decode_key(record.key)
                meta = None if record.value is None else decode_value(tid, record.value)
            except (TransactionLogError, rb.SegmentError, UnicodeDecodeError) as exc:
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
                previous, state="Dead", partitions=(), last_update_ms=rec.timestamp, start_time_ms=-1
            )
    return latest


def read_transaction_log(partition_dir: str | os.PathLike[str], verify_crc: bool = True) -> dict[str, TxnMetadata]:
    """Latest state per transactional id from every segment of one `__transaction_state-N` dir."""

    def records() -> Iterator[TxnLogRecord]:
        for segment in rb.segment_files(partition_dir):
            yield from iter_log_records(segment, verify_crc)

    return latest_states(records())


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


def partition_for(transactional_id: str, num_partitions: int = 50) -> int:
    """The `__transaction_state` partition of an id (50 partitions by default, as in Kafka)."""
    from kafka_txn_broker.coordinator_partition import partition_for as broker_partition_for

    return broker_partition_for(transactional_id, num_partitions)


def segment_from_records(records: Iterable[TxnLogRecord], version: int = 0) -> bytes:
    """A segment with one single-record batch per record (how the coordinator writes them)."""
    # Imported here for the same reason as in record_batch: decoding values must not need kafka-python.
    from kafka_txn_broker.log.record_batch import build_batch

    out = bytearray()
    for rec in records:
        value = None if rec.meta is None else encode_value(rec.meta, version)
        out += build_batch([(encode_key(rec.transactional_id), value)], timestamp_ms=rec.timestamp,
                           base_offset=rec.offset)
    return bytes(out)


def write_segment(path: str | os.PathLike[str], records: Iterable[TxnLogRecord], version: int = 0) -> None:
    Path(path).write_bytes(segment_from_records(records, version))
