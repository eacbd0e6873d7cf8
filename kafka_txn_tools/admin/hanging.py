"""find-hanging's partition-side rules (KIP-664) as pure functions over state already fetched: which open
transactions are hanging, and why. The coordinator-side rules are admin/coordinator_rules.py's; what ends a
row, admin/partition_advice.py's.

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
- prepared-2pc: as late, but the transaction's timeout is Integer.MAX_VALUE (KIP-939): an external
  transaction manager owns it and will commit or abort it; its age never makes it hanging.

Coordinator-side stuck transactions (`judge_coordinator`, rows of kind "coordinator"): the coordinator
holds the transaction and cannot finish it.

- markers-pending: PrepareCommit / PrepareAbort / PrepareEpochFence for longer than --max-prepare-time
  with partitions still waiting for their marker. Each pending partition says why, when that can be told
  (`pending_partition`): its leader is offline, or unknown; the leader still shows the producer's open
  transaction; or the leader refuses the marker - it already landed and a retry at the same epoch is
  rejected (marker-rejected, KAFKA-19999), or the leader holds a newer coordinator epoch
  (coordinator-fenced).
- completion-pending: a Prepare state that long with no partition left waiting: COMPLETE_* is never
  written (the coordinator cannot append to its `__transaction_state` partition).
- epoch-exhausted: Ongoing at producer epoch Short.MAX_VALUE - 1 past its timeout, or at Short.MAX_VALUE:
  the producer cannot end it (its EndTxn would overflow the epoch) and a coordinator without the
  KAFKA-20090 fixes cannot fence it (KAFKA-20090).

How long a transaction has been in its state (`time_in_state`): DescribeTransactions v0 (the only version
in Kafka and kafka-python) has no last-update time - KIP-994's TransactionLastUpdateTimeMs was not
shipped. The exact time is the TransactionLastUpdateTimestampMs of the state's own record in
`__transaction_state`, which find-hanging reads when it may. Without it the tools use a lower bound that
never overstates: a transaction enters a Prepare state at the latest when its coordinator's reaper
aborts it, i.e. by its start + its timeout + the reaper's interval (Kafka's default 10 s), so the time
since then is at most its time in the state. 2PC transactions have no such bound: without the record
their time in state is unknown and they are not reported.

Who is involved and who is held back, for both kinds: `last_known_owner` (the transactional id that last
owned a producer id, from `__transaction_state` records) and `stalled_groups` (groups whose committed
offset is at or beyond the partition's LSO).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from kafka_txn_broker.formats.partitioning import SHARE_STATE_TOPIC
from kafka_txn_broker.formats.transactions import DEFAULT_MAX_TRANSACTION_TIMEOUT_MS
from kafka_txn_tools.admin import advice
from kafka_txn_tools.admin.decisions import Decision
from kafka_txn_tools.admin.partition_advice import partition_action, partition_commands
from kafka_txn_tools.models import (
    ONGOING_STATES,
    TWO_PHASE_COMMIT_TIMEOUT_MS,
    HangingReason,
    HangingTransaction,
    OpenTransaction,
    PartitionOffsets,
    PartitionProducers,
    StalledGroup,
    TopicPartition,
    TransactionDescription,
    TransactionListing,
)

ONGOING = "Ongoing"


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
    timeout_ms: int | None = None  # Integer.MAX_VALUE: a 2PC transaction (KIP-939)


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
    if view.timeout_ms is not None and view.timeout_ms >= TWO_PHASE_COMMIT_TIMEOUT_MS:
        return HangingReason.PREPARED_2PC
    return HangingReason.LATE


LIVE = frozenset({HangingReason.LATE, HangingReason.PREPARED_2PC})


def judge(judged: Iterable[tuple[CoordinatorView, HangingReason | None]]
          ) -> tuple[CoordinatorView | None, HangingReason | None]:
    """The deciding view and reason among a producer's transactional ids (several while a coordinator
    moves): no id at all is no-transactional-id; any id that cannot be told makes the whole unknown
    (None); any live one (late, prepared 2PC) makes it live (reporting a live transaction as hanging is
    the costly mistake); else the first id's reason."""
    ordered = sorted(judged, key=lambda vr: vr[0].transactional_id)
    if not ordered:
        return None, HangingReason.NO_TRANSACTIONAL_ID
    for view, why in ordered:
        if why is None:
            return view, why
    for view, why in ordered:
        if why in LIVE:
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
    return CoordinatorView(txn_id, d.state, d.producer_id, d.producer_epoch, d.partitions, timeout_ms=d.timeout_ms)


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
    if why is HangingReason.PREPARED_2PC:
        return (f"{txn!r} is a prepared two-phase-commit transaction (KIP-939, no timeout) with this partition: "
                "an external transaction manager owns it and will commit or abort it")
    if candidate.partition.topic == SHARE_STATE_TOPIC:
        return (f"{txn!r} is {view.state} with this partition, staging share-group acknowledgements (KIP-1289): "
                "their records stay TX_PENDING until it ends")
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


def verdict_key(v: Verdict) -> tuple[object, ...]:
    """One open transaction on one partition, whichever replica showed it."""
    p = v.candidate.producer
    return (v.candidate.partition, p.producer_id, p.producer_epoch, p.current_txn_start_offset)


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
    invocation: advice.Invocation = advice.Invocation(),
    max_timeout_ms: int = DEFAULT_MAX_TRANSACTION_TIMEOUT_MS,
    decisions: Mapping[tuple[object, ...], Decision] | None = None,
) -> list[HangingTransaction]:
    """One row per transaction: the same open transaction seen on several replicas is merged. `max_timeout_ms`:
    the scan's threshold, which a live row's watch command repeats. `decisions`: the coordinator's decision on
    a transaction (by `verdict_key`), where `__transaction_state` showed one: a commit is ended by a COMMIT
    marker (admin/decisions.py)."""
    merged: dict[tuple[object, ...], tuple[Verdict, list[int]]] = {}
    for v in verdicts:
        if not include_late and not v.reason.is_hanging:
            continue
        key = verdict_key(v)
        if key in merged:
            merged[key][1].append(v.candidate.broker_id)
        else:
            merged[key] = (v, [v.candidate.broker_id])
    rows = [_row(v, brokers, now_ms, offsets, invocation, max_timeout_ms, (decisions or {}).get(key))
            for key, (v, brokers) in merged.items()]
    rows.sort(key=lambda h: (h.partition, h.producer.current_txn_start_offset, h.producer.producer_id))
    return rows


def _row(v: Verdict, brokers: list[int], now_ms: int, offsets: Mapping[TopicPartition, PartitionOffsets] | None,
         invocation: advice.Invocation, max_timeout_ms: int, decision: Decision | None) -> HangingTransaction:
    tp, p = v.candidate.partition, v.candidate.producer
    start = p.current_txn_start_offset
    detail = v.detail if decision is None or not v.reason.is_hanging else f"{v.detail}; {decision.describe()}"
    return HangingTransaction(
        partition=tp, producer=p, reason=v.reason, detail=detail, duration_ms=now_ms - p.last_timestamp_ms,
        brokers=tuple(sorted(set(brokers))), transactional_id=v.transactional_id,
        offsets=(offsets or {}).get(tp), decision=decision if v.reason.is_hanging else None,
        action=partition_action(v.reason, tp, start, v.transactional_id, decision),
        commands=partition_commands(v.reason, tp, start, invocation, max_timeout_ms, v.transactional_id, decision))


# ---- who owns a producer id, who is held back --------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Ownership:
    """A `__transaction_state` value naming a producer id as its transactional id's (current, previous or
    next): that id owned the producer id at `time_ms` (the record's last update time)."""

    transactional_id: str
    producer_id: int
    time_ms: int


def last_known_owner(producer_id: int, records: Iterable[Ownership]) -> str | None:
    """The transactional id that last owned `producer_id`: the newest record naming it (ties: lowest id)."""
    best: tuple[int, str] | None = None
    for r in records:
        if r.producer_id != producer_id:
            continue
        key = (r.time_ms, r.transactional_id)
        if best is None or key[0] > best[0] or (key[0] == best[0] and key[1] < best[1]):
            best = key
    return best[1] if best is not None else None


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    group_id: str
    group_type: str  # "consumer" or "share"
    partition: TopicPartition
    offset: int


def stalled_groups(tp: TopicPartition, offsets: PartitionOffsets | None,
                   committed: Iterable[CommittedOffset]) -> tuple[StalledGroup, ...] | None:
    """Groups whose committed offset on `tp` is at or beyond its LSO: a read_committed member cannot get
    past the LSO while the transaction holds it. None when the LSO is not known."""
    if offsets is None or offsets.last_stable_offset is None:
        return None
    lso, hw = offsets.last_stable_offset, offsets.high_watermark
    found = [StalledGroup(c.group_id, c.group_type, tp, c.offset, None if hw is None else max(hw - c.offset, 0))
             for c in committed if c.partition == tp and c.offset >= lso]
    return tuple(sorted(found, key=lambda g: (g.group_type, g.group_id)))


# ---- what holds a partition but is not reported, and why ------------------------------------------------
@dataclass(frozen=True, slots=True)
class Unreported:
    """Something a scan saw holding a partition's LSO (or in a Prepare state) and did not report, because it is
    younger than the scan's threshold: said in the summary, with the command that reports it now."""

    name: str  # the partition, or the transactional id
    holder: str  # "producer 1001", or the Prepare state
    age_ms: int | None  # how long it has held it (None: not known)


def young_holds(replicas: Iterable[PartitionProducers], now_ms: int, max_timeout_ms: int,
                reported: Collection[TopicPartition]) -> list[Unreported]:
    """The partitions an open transaction holds whose last write is within `max_timeout_ms` (not candidates:
    `select_candidates`' rule), other than those with a row; one entry a partition (its oldest such hold)."""
    oldest: dict[TopicPartition, tuple[int, int]] = {}
    for r in replicas:
        if r.partition in reported:
            continue
        for p in r.producers:
            age = now_ms - p.last_timestamp_ms
            if p.has_open_transaction and age <= max_timeout_ms and age > oldest.get(r.partition, (-1, 0))[0]:
                oldest[r.partition] = (age, p.producer_id)
    return [Unreported(str(tp), f"producer {pid}", age) for tp, (age, pid) in sorted(oldest.items())]


def unreported_summary(holds: Sequence[Unreported], prepares: Sequence[Unreported], max_timeout_ms: int,
                       max_prepare_ms: int, report_holds: str, report_prepares: str) -> list[str]:
    """What a summary adds about what it did not report: what holds it, why it is not reported, and the exact
    command that reports it now (`report_holds`, `report_prepares`: find-hanging with a zero threshold)."""
    from kafka_txn_tools.durations import format_duration_ms as human

    out = []
    if holds:
        names = ", ".join(f"{h.name} ({h.holder}, {human(h.age_ms or 0)})" for h in holds[:5])
        more = f" and {len(holds) - 5} more" if len(holds) > 5 else ""
        n = len(holds)
        out.append(f"{n} partition{'s' if n != 1 else ''} held by {'transactions' if n != 1 else 'a transaction'} "
                   f"younger than the max transaction timeout ({human(max_timeout_ms)}), not reported: {names}{more}. "
                   "Within that timeout its producer or its coordinator still ends it; to report "
                   f"{'them' if n != 1 else 'it'} now (--max-transaction-timeout 0):")
        out.append(f"  {report_holds}")
    if prepares:
        names = ", ".join(f"{p.name!r} ({p.holder})" for p in prepares[:5])
        n = len(prepares)
        out.append(f"{n} transaction{'s' if n != 1 else ''} in a Prepare state for less than --max-prepare-time "
                   f"({human(max_prepare_ms)}), not reported: {names}. A coordinator normally completes one within "
                   f"seconds; to report {'them' if n != 1 else 'it'} now (--max-prepare-time 0):")
        out.append(f"  {report_prepares}")
    return out
