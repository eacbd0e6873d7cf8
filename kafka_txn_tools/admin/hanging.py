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

The rules themselves (`reason_against`, `judge`) are pure functions over a CoordinatorView, shared with
the sweep (spark/classify.py), so both front ends give one verdict for the same facts. Reasons, checked
in this order (the first that applies wins):

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

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from kafka_txn_tools.models import (
    ONGOING_STATES,
    HangingReason,
    HangingTransaction,
    OpenTransaction,
    PartitionOffsets,
    PartitionProducers,
    TopicPartition,
    TransactionDescription,
    TransactionListing,
)


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


# ---- the rules, shared with the sweep (spark/classify.py) ---------------------------------------------
@dataclass(frozen=True, slots=True)
class CoordinatorView:
    """What one coordinator says of one transactional id, as either front end read it: a live
    DescribeTransactions answer, or a row of a dump or a `__transaction_state` log. None is "not known"
    (a dump may miss a field): a rule over an unknown value decides nothing, as SQL's comparisons."""

    transactional_id: str
    state: str | None  # Kafka's state name
    producer_id: int | None
    producer_epoch: int | None
    # A set (membership is checked per candidate); None: the coordinator's answer is missing.
    partitions: Collection[tuple[str | None, int | None]] | None
    found: bool = True  # False: TRANSACTIONAL_ID_NOT_FOUND (a Dead row in a dump)


def reason_against(topic: str, partition: int, producer_id: int, producer_epoch: int | None,
                   view: CoordinatorView) -> HangingReason | None:
    """The reason for an open transaction of (producer id, epoch) on (topic, partition) against one
    coordinator view; None when the view is too incomplete to tell."""
    if not view.found:
        return HangingReason.TRANSACTIONAL_ID_NOT_FOUND
    if view.state is None or view.partitions is None:
        return None
    if view.producer_id is not None and view.producer_id != producer_id:
        return HangingReason.EPOCH_MISMATCH  # the id now belongs to another producer
    if view.producer_epoch is not None and producer_epoch is not None and view.producer_epoch < producer_epoch:
        return HangingReason.EPOCH_MISMATCH  # the coordinator's markers would be fenced
    if view.state not in ONGOING_STATES:
        return HangingReason.TRANSACTION_NOT_ONGOING
    if _in_transaction(view.partitions, topic, partition) is False:
        return HangingReason.PARTITION_NOT_IN_TRANSACTION
    return HangingReason.LATE


def judge(judged: Iterable[tuple[CoordinatorView, HangingReason | None]]
          ) -> tuple[CoordinatorView | None, HangingReason | None]:
    """The deciding view and reason among a producer's transactional ids (several while a coordinator
    moves): no id at all is no-transactional-id; any id that cannot be told makes the whole unknown
    (None); any live one makes it live (reporting a live transaction as hanging is the costly mistake);
    else the first id's reason."""
    ordered = sorted(judged, key=lambda vr: vr[0].transactional_id)
    if not ordered:
        return None, HangingReason.NO_TRANSACTIONAL_ID
    for wanted in (None, HangingReason.LATE):
        for view, why in ordered:
            if why is wanted:
                return view, why
    return ordered[0]


def _in_transaction(parts: Collection[tuple[str | None, int | None]], topic: str, partition: int) -> bool | None:
    """Whether (topic, partition) is among the transaction's partitions; None when no entry matches
    but some entry with an unknown field might (SQL's exists())."""
    if (topic, partition) in parts:
        return True
    for part_topic, part_index in parts:  # only for a partition outside the transaction (rare)
        if part_topic in (None, topic) and part_index in (None, partition):
            return None
    return False


# ---- find-hanging's use of them ----------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Verdict:
    candidate: OpenTransaction
    reason: HangingReason
    detail: str
    transactional_id: str | None = None


def _view(txn_id: str, descriptions: Mapping[str, TransactionDescription], not_found: set[str]) -> CoordinatorView:
    if txn_id in not_found:
        return CoordinatorView(txn_id, None, None, None, None, found=False)
    d = descriptions.get(txn_id)
    if d is None:  # no answer for it: nothing can be told
        return CoordinatorView(txn_id, None, None, None, None)
    return CoordinatorView(txn_id, d.state, d.producer_id, d.producer_epoch, d.partitions)


def classify(
    candidate: OpenTransaction,
    transactional_ids: Iterable[str],
    descriptions: Mapping[str, TransactionDescription],
    not_found: Iterable[str],
) -> Verdict | None:
    """The verdict for one candidate; None when the coordinator's answer is missing (cannot tell)."""
    missing = set(not_found)
    return _decide(candidate, [_view(txn_id, descriptions, missing) for txn_id in transactional_ids])


def _decide(candidate: OpenTransaction, views: Iterable[CoordinatorView]) -> Verdict | None:
    p, tp = candidate.producer, candidate.partition
    view, why = judge((v, reason_against(tp.topic, tp.partition, p.producer_id, p.producer_epoch, v)) for v in views)
    if why is None:
        return None
    txn_id = view.transactional_id if view is not None else None
    return Verdict(candidate, why, _detail(why, candidate, view), txn_id)


def _detail(why: HangingReason, candidate: OpenTransaction, view: CoordinatorView | None) -> str:
    p = candidate.producer
    if view is None:
        return (f"no coordinator lists producer id {p.producer_id} (the transaction was forgotten, or "
                "the principal lacks DESCRIBE on its transactional id)")
    txn = view.transactional_id
    if why is HangingReason.TRANSACTIONAL_ID_NOT_FOUND:
        return f"coordinator does not know transactional id {txn!r}"
    if why is HangingReason.EPOCH_MISMATCH and view.producer_id != p.producer_id:
        return f"{txn!r} now belongs to producer id {view.producer_id} (epoch {view.producer_epoch})"
    if why is HangingReason.EPOCH_MISMATCH:
        return (f"coordinator epoch {view.producer_epoch} for {txn!r} is older than the partition's "
                f"{p.producer_epoch}; its markers would be fenced")
    if why is HangingReason.TRANSACTION_NOT_ONGOING:
        return f"coordinator holds {txn!r} as {view.state}; no marker is coming"
    if why is HangingReason.PARTITION_NOT_IN_TRANSACTION:
        return f"{txn!r} is {view.state} without partition {candidate.partition}"
    return f"{txn!r} is {view.state} with this partition; its coordinator will complete it"


def classify_all(
    candidates: Sequence[OpenTransaction],
    listings: Iterable[TransactionListing],
    descriptions: Mapping[str, TransactionDescription],
    not_found: Iterable[str],
) -> tuple[list[Verdict], list[OpenTransaction]]:
    """Verdicts, and the candidates that could not be classified (their coordinator did not answer)."""
    by_pid = ids_by_producer(listings, (c.producer.producer_id for c in candidates))
    missing = set(not_found)
    views = {txn_id: _view(txn_id, descriptions, missing) for ids in by_pid.values() for txn_id in ids}
    verdicts: list[Verdict] = []
    unknown: list[OpenTransaction] = []
    for c in candidates:
        v = _decide(c, [views[txn_id] for txn_id in by_pid.get(c.producer.producer_id, ())])
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
