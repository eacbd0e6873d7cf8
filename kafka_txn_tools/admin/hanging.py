"""find-hanging as pure functions over state already fetched: which open transactions are hanging, and why.

The flow (admin/scan.py does the I/O between the steps):

1. `select_candidates`: producers with an open transaction (CurrentTxnStartOffset >= 0) whose last
   write is older than the threshold (strictly), by the tool's clock - upstream's rule.
2. The coordinators' view: ListTransactions filtered by the candidates' producer ids on every
   broker, then DescribeTransactions for the ids found.
3. `classify`: the reason a candidate is hanging, or that it is late but live.
4. `confirm`: re-read producer state *after* the coordinator was read, and keep a verdict only if the
   very same transaction (producer id, epoch, start offset) is still open. A transaction that
   completed while we looked closed its partition before the coordinator reported it complete, so
   the re-read no longer shows it; re-reading the coordinator instead would reopen that race.

Reasons, checked in this order (the first that applies wins):

- no-transactional-id: no coordinator lists the producer id. Either the coordinator forgot the
  transaction (KAFKA-9144) or the principal lacks DESCRIBE on the transactional id (ListTransactions
  drops those silently; the detail says so).
- transactional-id-not-found: an id maps to the producer, but DescribeTransactions says it is unknown.
- epoch-mismatch: the coordinator's transactional id now belongs to another producer id, or its
  producer epoch is older than the partition's - the coordinator's markers would be fenced.
- transaction-not-ongoing: the coordinator holds the transaction as Empty / CompleteCommit /
  CompleteAbort / Dead, so no marker is coming.
- partition-not-in-transaction: the transaction is ongoing but does not include this partition.
  (DescribeTransactions omits topics the caller cannot DESCRIBE; DescribeProducers needs READ, which
  implies DESCRIBE, so a partition we could scan is never hidden this way.)
- late: none of the above; the coordinator still owns it and will write the marker. Reported only
  with --include-late.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kafka_txn_tools.models import (
    HangingReason,
    HangingTransaction,
    OpenTransaction,
    PartitionOffsets,
    PartitionProducers,
    TopicPartition,
    TransactionDescription,
    TransactionListing,
)

DEFAULT_MAX_TRANSACTION_TIMEOUT_MS = 15 * 60_000


def select_candidates(
    replicas: Iterable[PartitionProducers], now_ms: int, max_timeout_ms: int,
) -> list[OpenTransaction]:
    """Open transactions whose last write is strictly older than `max_timeout_ms`."""
    return [
        OpenTransaction(r.partition, r.broker_id, p)
        for r in replicas
        for p in r.producers
        if p.has_open_transaction and now_ms - p.last_timestamp_ms > max_timeout_ms
    ]


def ids_by_producer(listings: Iterable[TransactionListing], producer_ids: Iterable[int]) -> dict[int, set[str]]:
    """Transactional ids per candidate producer id (listings for other ids are ignored)."""
    wanted = set(producer_ids)
    out: dict[int, set[str]] = {}
    for listing in listings:
        if listing.producer_id in wanted:
            out.setdefault(listing.producer_id, set()).add(listing.transactional_id)
    return out


@dataclass(frozen=True, slots=True)
class Verdict:
    candidate: OpenTransaction
    reason: HangingReason
    detail: str
    transactional_id: str | None = None


def classify(
    candidate: OpenTransaction,
    transactional_ids: Iterable[str],
    descriptions: Mapping[str, TransactionDescription],
    not_found: Iterable[str],
) -> Verdict | None:
    """The verdict for one candidate; None when the coordinator's answer is missing (cannot tell).

    With several ids for one producer id (possible while a coordinator moves), the candidate is
    live if any of them says so: reporting a live transaction as hanging is the costly mistake.
    """
    ids = sorted(transactional_ids)
    p = candidate.producer
    if not ids:
        return Verdict(candidate, HangingReason.NO_TRANSACTIONAL_ID,
                       f"no coordinator lists producer id {p.producer_id} (the transaction was forgotten, or "
                       "the principal lacks DESCRIBE on its transactional id)")
    missing = set(not_found)
    verdicts: list[Verdict] = []
    for txn_id in ids:
        if txn_id in missing:
            verdicts.append(Verdict(candidate, HangingReason.TRANSACTIONAL_ID_NOT_FOUND,
                                    f"coordinator does not know transactional id {txn_id!r}", txn_id))
            continue
        description = descriptions.get(txn_id)
        if description is None:
            return None
        verdicts.append(_against_description(candidate, description))
    live = [v for v in verdicts if not v.reason.is_hanging]
    return live[0] if live else verdicts[0]


def _against_description(candidate: OpenTransaction, d: TransactionDescription) -> Verdict:
    p = candidate.producer
    txn = d.transactional_id
    if d.producer_id != p.producer_id:
        return Verdict(candidate, HangingReason.EPOCH_MISMATCH,
                       f"{txn!r} now belongs to producer id {d.producer_id} (epoch {d.producer_epoch})", txn)
    if d.producer_epoch < p.producer_epoch:
        return Verdict(candidate, HangingReason.EPOCH_MISMATCH,
                       f"coordinator epoch {d.producer_epoch} for {txn!r} is older than the partition's "
                       f"{p.producer_epoch}; its markers would be fenced", txn)
    if not d.is_ongoing:
        return Verdict(candidate, HangingReason.TRANSACTION_NOT_ONGOING,
                       f"coordinator holds {txn!r} as {d.state}; no marker is coming", txn)
    if candidate.partition not in d.partitions:
        return Verdict(candidate, HangingReason.PARTITION_NOT_IN_TRANSACTION,
                       f"{txn!r} is {d.state} without partition {candidate.partition}", txn)
    return Verdict(candidate, HangingReason.LATE,
                   f"{txn!r} is {d.state} with this partition; its coordinator will complete it", txn)


def classify_all(
    candidates: Sequence[OpenTransaction],
    listings: Iterable[TransactionListing],
    descriptions: Mapping[str, TransactionDescription],
    not_found: Iterable[str],
) -> tuple[list[Verdict], list[OpenTransaction]]:
    """Verdicts, and the candidates that could not be classified (their coordinator did not answer)."""
    by_pid = ids_by_producer(listings, (c.producer.producer_id for c in candidates))
    missing = set(not_found)
    verdicts: list[Verdict] = []
    unknown: list[OpenTransaction] = []
    for c in candidates:
        v = classify(c, by_pid.get(c.producer.producer_id, ()), descriptions, missing)
        if v is None:
            unknown.append(c)
        else:
            verdicts.append(v)
    return verdicts, unknown


def _key(partition: TopicPartition, broker_id: int, producer_id: int, epoch: int, start: int) -> tuple[object, ...]:
    return (partition, broker_id, producer_id, epoch, start)


def confirm(verdicts: Iterable[Verdict], fresh: Iterable[PartitionProducers]) -> list[Verdict]:
    """Keep verdicts whose transaction is still open on the same replica, as first seen."""
    still_open = {
        _key(r.partition, r.broker_id, p.producer_id, p.producer_epoch, p.current_txn_start_offset)
        for r in fresh for p in r.producers if p.has_open_transaction
    }
    kept = []
    for v in verdicts:
        c, p = v.candidate, v.candidate.producer
        if _key(c.partition, c.broker_id, p.producer_id, p.producer_epoch, p.current_txn_start_offset) in still_open:
            kept.append(v)
    return kept


def to_results(
    verdicts: Iterable[Verdict],
    now_ms: int,
    include_late: bool,
    offsets: Mapping[TopicPartition, PartitionOffsets] | None = None,
) -> list[HangingTransaction]:
    """One row per transaction: the same open transaction seen on several replicas is merged."""
    merged: dict[tuple[object, ...], tuple[Verdict, list[int]]] = {}
    for v in verdicts:
        if not include_late and not v.reason.is_hanging:
            continue
        p = v.candidate.producer
        key = (v.candidate.partition, p.producer_id, p.producer_epoch, p.current_txn_start_offset)
        if key in merged:
            merged[key][1].append(v.candidate.broker_id)
        else:
            merged[key] = (v, [v.candidate.broker_id])
    rows = [
        HangingTransaction(
            partition=v.candidate.partition, producer=v.candidate.producer, reason=v.reason, detail=v.detail,
            duration_ms=now_ms - v.candidate.producer.last_timestamp_ms, brokers=tuple(sorted(set(brokers))),
            transactional_id=v.transactional_id, offsets=(offsets or {}).get(v.candidate.partition))
        for v, brokers in merged.values()
    ]
    rows.sort(key=lambda h: (h.partition, h.producer.current_txn_start_offset, h.producer.producer_id))
    return rows
