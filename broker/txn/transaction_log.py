"""TransactionLog: the key/value format of `__transaction_state` records (shared/reference/formats.md).

Key: int16 0 (coordinator record type) + TransactionalId (int16 length + UTF-8).
Value v0: int16 version, ProducerId int64, ProducerEpoch int16, TransactionTimeoutMs int32,
TransactionStatus int8, TransactionPartitions (int32 count, -1 = null; Topic string16 + int32 array),
TransactionLastUpdateTimestampMs int64, TransactionStartTimestampMs int64.
Value v1 (flexible): the same fields with compact strings/arrays (uvarint n+1), an empty tag section
per partition entry, then top-level tags 0 PreviousProducerId, 1 NextProducerId, 2 ClientTransactionVersion
(written only when they differ from their defaults -1, -1, 0; unknown tags are skipped on read).
A null value is a tombstone. The on-disk bytes are Kafka's, so `kafka-dump-log.sh
--transaction-log-decoder` and our sweep read them; this is disk format, not a wire message, so it
is encoded here rather than by kafka-python's message classes.
"""

from __future__ import annotations

import struct
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from kafka_txn_broker.txn.transaction_metadata import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TopicPartition,
    TransactionMetadata,
    TransactionState,
    TxnTransitMetadata,
)

KEY_TYPE_TRANSACTION_LOG = 0
_TAG_PREV_PID, _TAG_NEXT_PID, _TAG_CLIENT_TV = 0, 1, 2


class TransactionLogError(ValueError):
    """A record of __transaction_state cannot be decoded."""


# ---- encoding ----------------------------------------------------------------------------------
def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def key_to_bytes(transactional_id: str) -> bytes:
    raw = transactional_id.encode()
    return struct.pack(">hh", KEY_TYPE_TRANSACTION_LOG, len(raw)) + raw


def value_version_for(transaction_version_level: int) -> int:
    # Kafka writes the flexible v1 value once the cluster's transaction.version is at least 1.
    return 1 if transaction_version_level >= 1 else 0


def _grouped(partitions: Iterable[TopicPartition]) -> list[tuple[str, list[int]]]:
    by_topic: dict[str, list[int]] = defaultdict(list)
    for topic, partition in partitions:
        by_topic[topic].append(partition)
    return [(t, sorted(ps)) for t, ps in sorted(by_topic.items())]


def _partitions_v0(groups: list[tuple[str, list[int]]] | None) -> bytes:
    if groups is None:
        return struct.pack(">i", -1)
    out = [struct.pack(">i", len(groups))]
    for topic, ids in groups:
        raw = topic.encode()
        out.append(struct.pack(">h", len(raw)) + raw + struct.pack(f">i{len(ids)}i", len(ids), *ids))
    return b"".join(out)


def _partitions_v1(groups: list[tuple[str, list[int]]] | None) -> bytes:
    if groups is None:
        return _uvarint(0)
    out = [_uvarint(len(groups) + 1)]
    for topic, ids in groups:
        raw = topic.encode()
        out.append(_uvarint(len(raw) + 1) + raw + _uvarint(len(ids) + 1) + struct.pack(f">{len(ids)}i", *ids))
        out.append(_uvarint(0))  # the entry's (empty) tagged fields
    return b"".join(out)


def _tags_v1(t: TxnTransitMetadata) -> bytes:
    tags: list[tuple[int, bytes]] = []
    if t.prev_producer_id != NO_PRODUCER_ID:
        tags.append((_TAG_PREV_PID, struct.pack(">q", t.prev_producer_id)))
    if t.next_producer_id != NO_PRODUCER_ID:
        tags.append((_TAG_NEXT_PID, struct.pack(">q", t.next_producer_id)))
    if t.client_transaction_version != 0:
        tags.append((_TAG_CLIENT_TV, struct.pack(">h", t.client_transaction_version)))
    return _uvarint(len(tags)) + b"".join(_uvarint(tag) + _uvarint(len(v)) + v for tag, v in tags)


def value_to_bytes(t: TxnTransitMetadata, transaction_version_level: int) -> bytes:
    """The record value for a transition (Empty is written with null partitions, as Kafka does)."""
    if t.state is TransactionState.EMPTY and t.topic_partitions:
        raise ValueError(f"an Empty transaction cannot have partitions: {t}")
    version = value_version_for(transaction_version_level)
    groups = None if t.state is TransactionState.EMPTY else _grouped(t.topic_partitions)
    head = struct.pack(">hqhib", version, t.producer_id, t.producer_epoch, t.txn_timeout_ms, int(t.state))
    tail = struct.pack(">qq", t.txn_last_update_timestamp, t.txn_start_timestamp)
    if version == 0:
        return head + _partitions_v0(groups) + tail
    return head + _partitions_v1(groups) + tail + _tags_v1(t)


# ---- decoding ----------------------------------------------------------------------------------
class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, fmt: str) -> tuple[int, ...]:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise TransactionLogError(f"record ends at byte {len(self.data)}, needed {self.pos + size}")
        values = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return values

    def raw(self, size: int) -> bytes:
        if size < 0 or self.pos + size > len(self.data):
            raise TransactionLogError("field runs past the end of the record")
        out = self.data[self.pos:self.pos + size]
        self.pos += size
        return out

    def uvarint(self) -> int:
        shift = result = 0
        while True:
            (b,) = self.take(">B")
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7
            if shift > 35:
                raise TransactionLogError("varint too long")


def read_key(data: bytes) -> str | None:
    """The transactional id, or None for a key type this version does not know (Kafka skips those)."""
    r = _Reader(data)
    (kind,) = r.take(">h")
    if kind != KEY_TYPE_TRANSACTION_LOG:
        return None
    (length,) = r.take(">h")
    return r.raw(length).decode()


@dataclass(frozen=True)
class TxnLogValue:
    producer_id: int
    producer_epoch: int
    txn_timeout_ms: int
    state: TransactionState
    partitions: frozenset[TopicPartition]
    last_update_ms: int
    start_ms: int
    prev_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    client_transaction_version: int = 0

    def to_metadata(self, transactional_id: str) -> TransactionMetadata:
        # Kafka does not persist lastProducerEpoch: a loaded transaction starts without it.
        return TransactionMetadata(
            transactional_id, self.producer_id, self.prev_producer_id, self.next_producer_id, self.producer_epoch,
            NO_PRODUCER_EPOCH, self.txn_timeout_ms, self.state,
            set() if self.state is TransactionState.EMPTY else set(self.partitions), self.start_ms,
            self.last_update_ms, self.client_transaction_version)


def _read_partitions(r: _Reader, flexible: bool) -> frozenset[TopicPartition]:
    count = r.uvarint() - 1 if flexible else r.take(">i")[0]
    out: set[TopicPartition] = set()
    for _ in range(max(count, 0)):
        topic = r.raw(r.uvarint() - 1 if flexible else r.take(">h")[0]).decode()
        n = r.uvarint() - 1 if flexible else r.take(">i")[0]
        out.update((topic, p) for p in r.take(f">{n}i"))
        if flexible:
            _skip_tags(r)
    return frozenset(out)


def _skip_tags(r: _Reader) -> dict[int, bytes]:
    tags = {}
    for _ in range(r.uvarint()):
        tag = r.uvarint()
        tags[tag] = r.raw(r.uvarint())
    return tags


def read_value(data: bytes) -> TxnLogValue:
    r = _Reader(data)
    (version,) = r.take(">h")
    if version not in (0, 1):
        raise TransactionLogError(f"unknown __transaction_state value version {version}")
    pid, epoch, timeout, status = r.take(">qhib")
    try:
        state = TransactionState(status)
    except ValueError:
        raise TransactionLogError(f"unknown transaction status {status}") from None
    partitions = _read_partitions(r, version >= 1)
    last_update, start = r.take(">qq")
    tags = _skip_tags(r) if version >= 1 else {}
    prev = struct.unpack(">q", tags[_TAG_PREV_PID])[0] if _TAG_PREV_PID in tags else NO_PRODUCER_ID
    nxt = struct.unpack(">q", tags[_TAG_NEXT_PID])[0] if _TAG_NEXT_PID in tags else NO_PRODUCER_ID
    tv = struct.unpack(">h", tags[_TAG_CLIENT_TV])[0] if _TAG_CLIENT_TV in tags else 0
    return TxnLogValue(pid, epoch, timeout, state, partitions, last_update, start, prev, nxt, tv)
