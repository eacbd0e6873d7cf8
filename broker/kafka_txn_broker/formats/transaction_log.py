"""The key/value format of `__transaction_state` records (Kafka's TransactionLog; formats.md).

Key: int16 0 (coordinator record type) + TransactionalId (int16 length + UTF-8).
Value v0: int16 version, ProducerId int64, ProducerEpoch int16, TransactionTimeoutMs int32,
TransactionStatus int8, TransactionPartitions (int32 count, -1 = null; Topic string16 + int32 array),
TransactionLastUpdateTimestampMs int64, TransactionStartTimestampMs int64.
Value v1 (flexible): the same fields with compact strings/arrays (uvarint n+1), an empty tag section
per partition entry, then top-level tags 0 PreviousProducerId, 1 NextProducerId, 2 ClientTransactionVersion
(written only when they differ from their defaults -1, -1, 0; unknown tags are skipped on read).
A null value is a tombstone: the id expired.

The coordinator and the readers of copied log dirs share this code; they differ in one rule, chosen by
the caller: Kafka's coordinator refuses a value version it does not know, while a reader of someone
else's files reads a newer version as v1 (since KIP-915 new versions may only add tagged fields).
These are the on-disk bytes Kafka writes, so `kafka-dump-log.sh --transaction-log-decoder` reads ours.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass

from kafka_txn_broker.formats.bytes import Reader, Writer
from kafka_txn_broker.formats.transactions import NO_PRODUCER_ID, TransactionState

KEY_VERSION = 0
HIGHEST_VALUE_VERSION = 1
_TAG_PREV_PID, _TAG_NEXT_PID, _TAG_CLIENT_TV = 0, 1, 2
_HEAD_FIELDS = (("version", ">h"), ("ProducerId", ">q"), ("ProducerEpoch", ">h"), ("TransactionTimeoutMs", ">i"),
                ("TransactionStatus", ">b"))
_HEAD = struct.Struct(">" + "".join(fmt[1:] for _, fmt in _HEAD_FIELDS))

TopicPartition = tuple[str, int]


class TransactionLogError(ValueError):
    """A record of __transaction_state cannot be decoded."""


class UnknownKeyError(TransactionLogError):
    """A key of another coordinator record type: Kafka's coordinator skips such records."""


@dataclass(frozen=True, slots=True)
class TransactionLogValue:
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TransactionState
    partitions: tuple[TopicPartition, ...]  # in record order
    last_update_ms: int
    start_ms: int  # -1: no transaction in progress
    prev_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    client_transaction_version: int = 0


# ---- keys --------------------------------------------------------------------------------------
def encode_key(transactional_id: str) -> bytes:
    raw = transactional_id.encode()
    return struct.pack(">hh", KEY_VERSION, len(raw)) + raw


def decode_key(data: bytes) -> str:
    """The transactional id; UnknownKeyError for another record type's key."""
    r = Reader(data, error=TransactionLogError)
    version = r.int16("key version")
    if version != KEY_VERSION:
        raise UnknownKeyError(f"key version {version} is not a transaction metadata key (expected {KEY_VERSION})")
    return r.string("TransactionalId") or ""


# ---- values ------------------------------------------------------------------------------------
def value_version_for(transaction_version_level: int) -> int:
    """Kafka writes the flexible v1 value once the cluster's transaction.version is at least 1."""
    return 1 if transaction_version_level >= 1 else 0


def _grouped(partitions: Iterable[TopicPartition]) -> list[tuple[str, list[int]]]:
    """Partitions by topic, topics and partitions in first-seen order."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    return list(by_topic.items())


def _tags(v: TransactionLogValue) -> list[tuple[int, bytes]]:
    tags = []
    if v.prev_producer_id != NO_PRODUCER_ID:
        tags.append((_TAG_PREV_PID, struct.pack(">q", v.prev_producer_id)))
    if v.next_producer_id != NO_PRODUCER_ID:
        tags.append((_TAG_NEXT_PID, struct.pack(">q", v.next_producer_id)))
    if v.client_transaction_version != 0:
        tags.append((_TAG_CLIENT_TV, struct.pack(">h", v.client_transaction_version)))
    return tags


def encode_value(v: TransactionLogValue, version: int) -> bytes:
    """A record value; Empty is written with null partitions, as Kafka does."""
    if v.state is TransactionState.EMPTY and v.partitions:
        raise ValueError(f"an Empty transaction cannot have partitions: {v}")
    if not 0 <= version <= HIGHEST_VALUE_VERSION:
        raise ValueError(f"cannot write __transaction_state value version {version}")
    w = Writer(flexible=version >= 1).raw(_HEAD.pack(version, v.producer_id, v.producer_epoch, v.timeout_ms,
                                                    int(v.state)))
    if v.state is TransactionState.EMPTY:
        w.array_length(-1)
    else:
        groups = _grouped(v.partitions)
        w.array_length(len(groups))
        for topic, ids in groups:
            w.string(topic).array_length(len(ids)).pack(f">{len(ids)}i", *ids).tags()
    w.pack(">qq", v.last_update_ms, v.start_ms)
    return w.tags(_tags(v)).to_bytes()


def decode_value(data: bytes, *, newer_versions: bool = False) -> TransactionLogValue:
    """A record value. A version above v1 is refused (the coordinator, as Kafka's), or read as v1 with
    `newer_versions` (readers of copied logs: newer versions only add tagged fields)."""
    version, pid, epoch, timeout, status = _head(data)
    if version < 0 or (version > HIGHEST_VALUE_VERSION and not newer_versions):
        raise TransactionLogError(f"unknown __transaction_state value version {version}")
    try:
        state = TransactionState(status)
    except ValueError:
        raise TransactionLogError(f"unknown transaction status {status}") from None
    r = Reader(data, flexible=version >= 1, error=TransactionLogError)
    r.pos = _HEAD.size
    partitions = _read_partitions(r)
    last_update, start = r.int64("TransactionLastUpdateTimestampMs"), r.int64("TransactionStartTimestampMs")
    tags = r.tags()
    return TransactionLogValue(
        pid, epoch, timeout, state, () if state is TransactionState.EMPTY else partitions, last_update, start,
        _tag(tags, _TAG_PREV_PID, ">q", NO_PRODUCER_ID), _tag(tags, _TAG_NEXT_PID, ">q", NO_PRODUCER_ID),
        _tag(tags, _TAG_CLIENT_TV, ">h", 0))


def _head(data: bytes) -> tuple[int, ...]:
    """The fixed fields in one unpack; field by field when the value is too short, to name the one it
    ends in."""
    if len(data) >= _HEAD.size:
        return tuple(_HEAD.unpack_from(data))
    r = Reader(data, error=TransactionLogError)
    return tuple(r.take(fmt, what) for what, fmt in _HEAD_FIELDS)


def _read_partitions(r: Reader) -> tuple[TopicPartition, ...]:
    out: list[TopicPartition] = []
    for _ in range(max(r.array_length("TransactionPartitions"), 0)):
        topic = r.string("Topic") or ""
        count = r.array_length("PartitionIds")
        out += [(topic, r.int32("partition id")) for _ in range(max(count, 0))]
        r.tags()
    return tuple(out)


def _tag(tags: dict[int, bytes], tag: int, fmt: str, default: int) -> int:
    raw = tags.get(tag)
    if raw is None or len(raw) != struct.calcsize(fmt):
        return default
    return int(struct.unpack(fmt, raw)[0])
