"""The acknowledgements a transaction stages, from the caller's shape to the wire's batches.

A caller gives, per (topic, partition), an iterable whose items are either
    (offset, ack_type)               one record, or
    (first, last, ack_type)          the records first..last, both inclusive,
with ack_type ACCEPT (1) or REJECT (3): the only types KIP-1289 allows inside a transaction (GAP 0, RELEASE 2
and RENEW 4 have no transactional meaning). Anything else is a ValueError raised here, before any request.

On the wire (TxnShareAcknowledge) each partition carries batches (FirstOffset, LastOffset, AcknowledgeTypes);
a single type covers the whole batch. Normalising sorts the offsets and merges touching runs of one type, so
a poll's 500 accepted records become one batch. An offset given twice (even with the same type) is refused:
the broker refuses overlapping batches whole, and a caller that names a record twice has a bug worth seeing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

ACCEPT = 1
RELEASE = 2  # never staged: what release_polled hands librdkafka
REJECT = 3
TRANSACTIONAL_TYPES = frozenset({ACCEPT, REJECT})
_NAMES = {0: "GAP", 1: "ACCEPT", 2: "RELEASE", 3: "REJECT", 4: "RENEW"}

TopicPartition = tuple[str, int]
Ack = tuple[int, int] | tuple[int, int, int]


@dataclass(frozen=True)
class AckBatch:
    """first..last (inclusive), all acknowledged with `ack_type`."""

    first_offset: int
    last_offset: int
    ack_type: int


def _ack_type(value: Any, where: str) -> int:
    # bool is an int: True would silently mean ACCEPT.
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{where}: the acknowledge type must be ACCEPT (1) or REJECT (3), not {value!r}")
    if value not in TRANSACTIONAL_TYPES:
        name = _NAMES.get(value, "unknown")
        raise ValueError(f"{where}: acknowledge type {value} ({name}) is not allowed in a transaction: "
                         "only ACCEPT (1) and REJECT (3) are")
    return int(value)


def _offset(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{where}: an offset must be an int >= 0, not {value!r}")
    return int(value)


def _runs(tp: TopicPartition, items: Iterable[Any]) -> list[tuple[int, int, int]]:
    """(first, last, type) per item, validated."""
    where = f"{tp[0]}-{tp[1]}"
    runs = []
    for item in items:
        if not isinstance(item, tuple) or len(item) not in (2, 3):
            raise ValueError(f"{where}: an acknowledgement is (offset, type) or (first, last, type), not {item!r}")
        first = _offset(item[0], where)
        last = _offset(item[-2], where)
        if last < first:
            raise ValueError(f"{where}: the range {first}..{last} is empty (last < first)")
        runs.append((first, last, _ack_type(item[-1], where)))
    return runs


def partition_batches(tp: TopicPartition, items: Iterable[Any]) -> list[AckBatch]:
    """The partition's acknowledgements as sorted, merged, non-overlapping batches."""
    batches: list[AckBatch] = []
    for first, last, kind in sorted(_runs(tp, items)):
        if batches and first <= batches[-1].last_offset:
            raise ValueError(f"{tp[0]}-{tp[1]}: offset {first} is acknowledged more than once")
        if batches and first == batches[-1].last_offset + 1 and kind == batches[-1].ack_type:
            batches[-1] = AckBatch(batches[-1].first_offset, last, kind)
        else:
            batches.append(AckBatch(first, last, kind))
    return batches


def normalize(acks: Mapping[TopicPartition, Iterable[Any]]) -> dict[TopicPartition, list[AckBatch]]:
    """Every partition's batches; partitions with nothing to acknowledge are left out."""
    out: dict[TopicPartition, list[AckBatch]] = {}
    for tp, items in acks.items():
        if not (isinstance(tp, tuple) and len(tp) == 2 and isinstance(tp[0], str) and isinstance(tp[1], int)):
            raise ValueError(f"acknowledgements are keyed by (topic, partition), not {tp!r}")
        batches = partition_batches(tp, items)
        if batches:
            out[(tp[0], tp[1])] = batches
    return out


def acks_from_messages(messages: Iterable[Any], ack_type: int = ACCEPT) -> dict[TopicPartition, list[Ack]]:
    """The acknowledgements of polled records (anything with topic(), partition() and offset(), like
    confluent_kafka's Message), all with `ack_type`. Messages carrying an error are skipped."""
    kind = _ack_type(ack_type, "acks_from_messages")
    out: dict[TopicPartition, list[Ack]] = {}
    for m in messages:
        error = getattr(m, "error", None)
        if callable(error) and error() is not None:
            continue
        out.setdefault((m.topic(), m.partition()), []).append((m.offset(), kind))
    return out


def release_polled(consumer: Any, messages: Iterable[Any]) -> None:
    """After the transaction that staged `messages` ended (committed or aborted), let librdkafka's
    ShareConsumer (share.acknowledgement.mode=explicit) poll again: it refuses to poll before every record of
    the previous poll is acknowledged through it. RELEASE is the one safe type: for committed records the
    broker refuses it (INVALID_RECORD_STATE, reported to the acknowledgement commit callback only), aborted ones
    go back to the group at once for redelivery. ACCEPT would acknowledge aborted records without their output.
    """
    for m in messages:
        if m.error() is None:
            consumer.acknowledge(m, RELEASE)
