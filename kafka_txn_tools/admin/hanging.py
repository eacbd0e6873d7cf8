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
from dataclasses import dataclass, replace

from kafka_txn_broker.formats.partitioning import SHARE_STATE_TOPIC, TXN_TOPIC
from kafka_txn_broker.formats.transactions import DEFAULT_MAX_TRANSACTION_TIMEOUT_MS
from kafka_txn_tools.admin import advice
from kafka_txn_tools.models import (
    ABORT_SCAN_INTERVAL_MS,
    EXHAUSTED_EPOCH,
    LAST_EPOCH,
    ONGOING_STATES,
    PREPARE_STATES,
    TWO_PHASE_COMMIT_TIMEOUT_MS,
    HangingReason,
    HangingTransaction,
    OpenTransaction,
    PartitionOffsets,
    PartitionProducers,
    PendingPartition,
    PendingReason,
    ProducerState,
    StalledGroup,
    StuckReason,
    StuckTransaction,
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


def partition_action(reason: HangingReason, tp: TopicPartition, start_offset: int, transactional_id: str | None
                     ) -> str:
    """What to do about a partition row, and why (its commands: `partition_commands`)."""
    if reason is HangingReason.LATE and tp.topic == SHARE_STATE_TOPIC:
        return (f"end it now with the command below: {transactional_id!r} stages share-group acknowledgements "
                f"(KIP-1289) on {tp}, and until it ends their records stay TX_PENDING: no member can have them and "
                "the group cannot pass them. Fencing the id aborts the transaction (--force: its coordinator still "
                "runs it; its producer fails and must restart), and the records are delivered again once their "
                "lock runs out; waiting for its producer or its timeout keeps the group held")
    if reason is HangingReason.LATE:
        return (f"wait: the coordinator of {transactional_id!r} still owns it and ends it by itself (its producer "
                "commits or aborts it, or the coordinator aborts it at its timeout), and the command below exits "
                "once it has; to end it now, fence the id with force-terminate and --force (its producer fails and "
                "must restart)")
    if reason is HangingReason.PREPARED_2PC:
        return (f"held by its external transaction manager (KIP-939): that manager must commit or abort "
                f"{transactional_id!r} (it recovers the prepared transaction with InitProducerId keepPreparedTxn and "
                f"completes it), and the command below exits once it has; only if that manager is gone for good, "
                f"abort it on each of its partitions with kafka-txn abort and --force (its decision is lost)")
    return f"abort it: no coordinator will ever write the marker that ends it, so {tp}'s LSO stays at {start_offset}"


def partition_commands(reason: HangingReason, tp: TopicPartition, start_offset: int,
                       invocation: advice.Invocation,
                       max_timeout_ms: int = DEFAULT_MAX_TRANSACTION_TIMEOUT_MS,
                       transactional_id: str | None = None) -> tuple[str, ...]:
    """The commands that resolve a partition row: the abort of a hanging transaction; for a live one (late:
    its coordinator ends it; prepared 2PC: its external transaction manager decides) the watch that waits
    for that end, since the owner ends it and nothing here should (its action names the last resort)."""
    if reason is HangingReason.LATE and tp.topic == SHARE_STATE_TOPIC and transactional_id is not None:
        return (advice.force_terminate(invocation, transactional_id, force=True),)  # partition_action says why
    if not reason.is_hanging:
        own = None if max_timeout_ms == DEFAULT_MAX_TRANSACTION_TIMEOUT_MS else max_timeout_ms
        return (advice.watch_until_ended(invocation, tp, own),)
    return (advice.abort(invocation, tp, start_offset),)


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
    invocation: advice.Invocation = advice.Invocation(),
    max_timeout_ms: int = DEFAULT_MAX_TRANSACTION_TIMEOUT_MS,
) -> list[HangingTransaction]:
    """One row per transaction: the same open transaction seen on several replicas is merged. `max_timeout_ms`:
    the scan's threshold, which a live row's watch command repeats."""
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
            transactional_id=v.transactional_id, offsets=(offsets or {}).get(v.candidate.partition),
            action=partition_action(v.reason, v.candidate.partition, v.candidate.producer.current_txn_start_offset,
                                    v.transactional_id),
            commands=partition_commands(v.reason, v.candidate.partition,
                                        v.candidate.producer.current_txn_start_offset, invocation, max_timeout_ms,
                                        v.transactional_id))
        for v, brokers in merged.values()
    ]
    rows.sort(key=lambda h: (h.partition, h.producer.current_txn_start_offset, h.producer.producer_id))
    return rows


# ---- coordinator-side stuck transactions, shared with the sweep -----------------------------------------
@dataclass(frozen=True, slots=True)
class CoordinatorTxn:
    """One transactional id's coordinator state, as either front end read it: DescribeTransactions and the
    id's `__transaction_state` record (live), or a dump / log-dir row (the sweep)."""

    transactional_id: str
    state: str  # Kafka's state name
    producer_id: int
    producer_epoch: int
    timeout_ms: int | None
    start_ms: int | None  # the transaction's start; None or -1: not known / none
    # In a Prepare state, live: the partitions the coordinator still waits for (DescribeTransactions lists
    # only those); in the sweep: the record's partitions. Ongoing: the transaction's partitions.
    partitions: tuple[TopicPartition, ...]
    coordinator_id: int | None = None
    entered_ms: int | None = None  # TransactionLastUpdateTimestampMs of the state's own record
    coordinator_epoch: int | None = None  # the leader epoch of that record's batch
    txn_partition: int | None = None  # its __transaction_state partition
    # That partition now: its leader epoch (the coordinator epoch now; None: not known), and whether another
    # in-sync replica could take it over (`kafka-txn move-coordinator`; None: not known, as in a sweep).
    coordinator_epoch_now: int | None = None
    movable: bool | None = None


@dataclass(frozen=True, slots=True)
class LeaderView:
    """What one partition's leader shows of a stuck transaction's producer."""

    leader: int | None  # None: the partition is not in the metadata; -1: it has no leader
    online: bool = True  # the leader is a live broker
    read: bool = True  # its producer state was read (False: it did not answer)
    producer: ProducerState | None = None  # the transaction's producer on the leader, if it has an entry
    offline_replicas: tuple[int, ...] = ()  # its replicas on brokers that are not live (when it has no leader)


def time_in_state(txn: CoordinatorTxn, now_ms: int) -> tuple[int | None, str]:
    """(milliseconds in its state, how that was found); None when it cannot be told (module docstring)."""
    start = txn.start_ms if txn.start_ms is not None and txn.start_ms >= 0 else None
    if txn.state == ONGOING:  # Ongoing since its first partition was added (later records only add partitions)
        return (None, "unknown") if start is None else (now_ms - start, "transaction-start")
    if txn.entered_ms is not None and txn.entered_ms >= 0:
        return now_ms - txn.entered_ms, "transaction-log"
    if start is None:
        return None, "unknown"
    if txn.timeout_ms is None or txn.timeout_ms >= TWO_PHASE_COMMIT_TIMEOUT_MS:
        return None, "unknown"
    return max(0, now_ms - (start + txn.timeout_ms + ABORT_SCAN_INTERVAL_MS)), "lower-bound"


def pending_partition(tp: TopicPartition, view: LeaderView, txn: CoordinatorTxn,
                      coordinator_waits: bool = True) -> PendingPartition | None:
    """Why `tp` has no marker yet. `coordinator_waits`: the coordinator listed it as waiting (live); else it
    is one of the record's partitions (sweep) and None means its marker evidently landed."""
    leader, p = view.leader, view.producer
    if leader is None:
        return PendingPartition(tp, None, PendingReason.LEADER_UNKNOWN,
                                f"{tp} is not in the cluster metadata or the inputs (deleted, not visible to this "
                                "principal, or not captured)")
    if leader < 0 or not view.online:
        what = "has no leader" if leader < 0 else f"has its leader on broker {leader}, which is offline"
        down = f" (its replica on broker {_listed(view.offline_replicas)} is offline)" if view.offline_replicas else ""
        return PendingPartition(tp, leader, PendingReason.LEADER_OFFLINE,
                                f"{tp} {what}{down}: there is no broker to write the marker to",
                                offline_replicas=view.offline_replicas)
    if not view.read:
        return PendingPartition(tp, leader, None, f"its leader, broker {leader}, did not answer DescribeProducers")
    fenced = (p is not None and txn.coordinator_epoch is not None and p.coordinator_epoch > txn.coordinator_epoch)
    if fenced:
        assert p is not None
        return PendingPartition(tp, leader, PendingReason.COORDINATOR_FENCED, (
            f"broker {leader} holds coordinator epoch {p.coordinator_epoch} for producer {txn.producer_id}, newer "
            f"than this coordinator's {txn.coordinator_epoch}: it rejects the marker (TRANSACTION_COORDINATOR_FENCED)"))
    if p is not None and p.has_open_transaction:
        return PendingPartition(tp, leader, PendingReason.OPEN_TRANSACTION, (
            f"broker {leader} still shows producer {p.producer_id} epoch {p.producer_epoch} with a transaction "
            f"open from offset {p.current_txn_start_offset}"), p.current_txn_start_offset)
    if not coordinator_waits:
        return None  # the leader holds nothing open for it: the marker landed, or it never had data there
    if p is not None and p.producer_epoch >= txn.producer_epoch:
        return PendingPartition(tp, leader, PendingReason.MARKER_REJECTED, (
            f"the marker landed (broker {leader} has producer {p.producer_id} at epoch {p.producer_epoch} with no "
            "open transaction) but the coordinator still waits for it: its retries at the same epoch are "
            "rejected (KAFKA-19999)"), marker_coordinator_epoch=p.coordinator_epoch)
    return PendingPartition(tp, leader, None, f"broker {leader} shows no open transaction of producer "
                                              f"{txn.producer_id}, yet the coordinator still waits for its marker")


def at_last_epoch(state: str, producer_epoch: int) -> bool:
    """Ongoing at Short.MAX_VALUE: its producer cannot end it and a coordinator without the KAFKA-20090 fixes
    cannot fence it, whatever its age, so the first scan that sees it says so (a "wait" first and "it cannot
    end" a minute later would be a reversal)."""
    return state == ONGOING and producer_epoch >= LAST_EPOCH


def _exhausted_past_recovery(txn: CoordinatorTxn, age_ms: int) -> bool:
    if txn.producer_epoch >= LAST_EPOCH:
        return True  # a producer never holds Short.MAX_VALUE: nothing can end it, whatever its age
    timeout = txn.timeout_ms
    return (txn.producer_epoch >= EXHAUSTED_EPOCH and timeout is not None and timeout < TWO_PHASE_COMMIT_TIMEOUT_MS
            and age_ms > timeout + ABORT_SCAN_INTERVAL_MS)


def judge_coordinator(txn: CoordinatorTxn, leaders: Mapping[TopicPartition, LeaderView], now_ms: int,
                      max_prepare_ms: int, coordinator_waits: bool = True,
                      invocation: advice.Invocation = advice.Invocation()) -> StuckTransaction | None:
    """The coordinator-side verdict for one transaction (module docstring); None when it is not stuck, or
    how long it has been in its state cannot be told."""
    age, source = time_in_state(txn, now_ms)
    if age is None or (age <= max_prepare_ms and not at_last_epoch(txn.state, txn.producer_epoch)):
        return None  # (at the last epoch nothing ends it, however young: reported from the first scan)
    if txn.state in PREPARE_STATES:
        pending = _pending(txn, leaders, coordinator_waits)
        reason = StuckReason.MARKERS_PENDING if pending else StuckReason.COMPLETION_PENDING
    elif txn.state == ONGOING and _exhausted_past_recovery(txn, age):
        pending = _pending(txn, leaders, coordinator_waits=False)
        reason = StuckReason.EPOCH_EXHAUSTED
    else:
        return None
    action, commands = stuck_advice(txn, reason, pending, invocation)
    return StuckTransaction(
        transactional_id=txn.transactional_id, state=txn.state, producer_id=txn.producer_id,
        producer_epoch=txn.producer_epoch, coordinator_id=txn.coordinator_id, timeout_ms=txn.timeout_ms,
        time_in_state_ms=age, time_in_state_source=source, reason=reason,
        detail=_stuck_detail(txn, reason, pending), action=action, pending_partitions=tuple(pending),
        commands=commands, upgrade_for=upgrade_for(txn, reason, pending))


def _pending(txn: CoordinatorTxn, leaders: Mapping[TopicPartition, LeaderView],
             coordinator_waits: bool) -> list[PendingPartition]:
    out = []
    for tp in sorted(set(txn.partitions)):
        found = pending_partition(tp, leaders.get(tp, LeaderView(None)), txn, coordinator_waits)
        if found is not None:
            out.append(found)
    return out


def _stuck_detail(txn: CoordinatorTxn, reason: StuckReason, pending: Sequence[PendingPartition]) -> str:
    where = f"coordinator broker {txn.coordinator_id}" if txn.coordinator_id is not None else "its coordinator"
    if reason is StuckReason.EPOCH_EXHAUSTED:
        return (f"{txn.transactional_id!r} is Ongoing at producer epoch {txn.producer_epoch}, the last one "
                f"(Short.MAX_VALUE{'' if txn.producer_epoch >= LAST_EPOCH else ' - 1'}): the producer cannot end "
                "it and the coordinator cannot fence it (KAFKA-20090)")
    if reason is StuckReason.COMPLETION_PENDING:
        return (f"{txn.transactional_id!r} is {txn.state} with every marker written, but {where} has not "
                "recorded its completion")
    counts: dict[str, int] = {}
    for p in pending:
        key = p.reason.value if p.reason is not None else "reason unknown"
        counts[key] = counts.get(key, 0) + 1
    why = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
    count = f"{len(pending)} partitions still wait for their marker" if len(pending) != 1 else \
        "1 partition still waits for its marker"
    return f"{txn.transactional_id!r} is {txn.state} at {where}; {count} ({why})"


def _txn_log_partition(txn: CoordinatorTxn) -> str:
    return f"{TXN_TOPIC}-{txn.txn_partition}" if txn.txn_partition is not None else f"the {TXN_TOPIC} partition"


def stuck_advice(txn: CoordinatorTxn, reason: StuckReason, pending: Sequence[PendingPartition],
                 invocation: advice.Invocation = advice.Invocation()) -> tuple[str, tuple[str, ...]]:
    """(action, commands) for a coordinator-side stuck transaction: what ends it on Kafka, and why.

    A coordinator gives a marker up for good when its leader answers INVALID_PRODUCER_EPOCH or
    TRANSACTION_COORDINATOR_FENCED (TransactionMarkerRequestCompletionHandler): only a coordinator that
    loads the transaction again - a move of its `__transaction_state` partition's leadership - sends the
    markers again. A leader that is offline gets them once it is back (they are retried). KAFKA-19999 is
    fixed in the partition leaders (a retried marker at the same epoch is accepted), KAFKA-20090 in the
    coordinator (a timeout abort at the last epoch fences and rotates the producer id)."""
    if reason is StuckReason.EPOCH_EXHAUSTED:
        return _exhausted_advice(txn, pending, invocation)
    move = _move(txn, invocation)
    if reason is StuckReason.COMPLETION_PENDING:
        isr = (f"check the in-sync replicas of {_txn_log_partition(txn)} (transaction.state.log.min.isr): "
               f"{_coordinator(txn)} cannot append the transaction's completion to it")
        return f"{isr}; {move[0]}", move[1]
    steps: list[str] = []
    commands: list[str] = []
    down = [p for p in pending if p.reason is PendingReason.LEADER_OFFLINE]
    if down:
        brokers = sorted({b for p in down for b in p.offline_replicas}
                         | {p.leader for p in down if p.leader is not None and p.leader >= 0})
        back = f"bring broker {_listed(brokers)} back" if brokers else "bring a replica back"
        steps.append(f"{back} or reassign {_listed(str(p.partition) for p in down)} to live brokers: the "
                     "coordinator re-sends the markers to the new leader and completes the transaction by itself "
                     "(no command can write a marker to a partition without a leader)")
    unknown = [str(p.partition) for p in pending if p.reason is PendingReason.LEADER_UNKNOWN]
    if unknown:
        steps.append(f"check whether {', '.join(unknown)} were deleted or are hidden by ACLs (a deleted partition's "
                     "marker is skipped once the coordinator sees the deletion)")
    rejected = [p for p in pending if p.reason is PendingReason.MARKER_REJECTED]
    if rejected:
        step, cmds = _rejected_advice(txn, rejected, move)
        steps.append(step)
        commands += cmds
    elif any(p.reason in (PendingReason.OPEN_TRANSACTION, PendingReason.COORDINATOR_FENCED, None) for p in pending):
        steps.append(move[0])
        commands += move[1]
    return "; ".join(steps), advice.unique(commands)


def _coordinator(txn: CoordinatorTxn) -> str:
    return f"broker {txn.coordinator_id}" if txn.coordinator_id is not None else "its coordinator's broker"


def _move(txn: CoordinatorTxn, invocation: advice.Invocation) -> tuple[str, tuple[str, ...]]:
    """Moving the coordinator: the command when another in-sync replica can take the partition over, else
    the restart that reloads it."""
    log_part = _txn_log_partition(txn)
    if txn.movable is False:
        return (f"restart {_coordinator(txn)}: {log_part} has no other in-sync replica to move its coordinator to, "
                "and the restarted broker loads the transaction again and re-sends its markers"), ()
    return (f"move its coordinator with the command below: another replica of {log_part} takes it over, "
            "loads the transaction and sends its markers again"), (
        advice.move_coordinator(invocation, txn.transactional_id),)


def _rejected_after_move(txn: CoordinatorTxn, rejected: Sequence[PendingPartition]) -> bool:
    """The markers were rejected again by a coordinator that loaded the transaction anew (a newer coordinator
    epoch than the one that wrote them): moving it again changes nothing, the leaders need the fix."""
    now = txn.coordinator_epoch_now
    return bool(rejected) and now is not None and all(
        p.marker_coordinator_epoch is not None and p.marker_coordinator_epoch < now for p in rejected)


KAFKA_19999, KAFKA_20090 = "KAFKA-19999", "KAFKA-20090"


def upgrade_for(txn: CoordinatorTxn, reason: StuckReason, pending: Sequence[PendingPartition]) -> str | None:
    """The upstream bug whose fix is the remaining step (a broker upgrade), or None when something else is."""
    if reason is StuckReason.EPOCH_EXHAUSTED:
        return KAFKA_20090
    rejected = [p for p in pending if p.reason is PendingReason.MARKER_REJECTED]
    return KAFKA_19999 if reason is StuckReason.MARKERS_PENDING and _rejected_after_move(txn, rejected) else None


def with_upgrade_command(row: StuckTransaction, upgrade: str) -> StuckTransaction:
    """A row whose remaining step is a broker upgrade (`upgrade_for`), on a cluster where the tool can do the
    upgrade (the embedded broker emulating that bug: admin/emulation.py): the command `upgrade`, in the place
    the upgrade takes. KAFKA-19999: first the upgrade, then the printed move, which the fixed leaders now
    accept; KAFKA-20090: first the aborts that free the LSO now, then the upgrade, after which the fixed
    coordinator's timeout abort ends the transaction by itself."""
    if row.upgrade_for is None or upgrade in row.commands:
        return row
    first = row.upgrade_for == KAFKA_19999
    commands = (upgrade, *row.commands) if first else (*row.commands, upgrade)
    then = ("; then the move below, whose new coordinator sends the markers again to leaders that now accept them"
            if first and row.commands else "")
    where = "first" if first or not row.commands else "last"
    action = (f"{row.action}. This cluster is the embedded broker, emulating Kafka before the {row.upgrade_for} "
              f"fix (its test-only fault.injection): its upgrade is the {where} command below (kafka-txn broker "
              f"upgrade){then}")
    return replace(row, action=action, commands=commands)


def _rejected_advice(txn: CoordinatorTxn, rejected: Sequence[PendingPartition],
                     move: tuple[str, tuple[str, ...]]) -> tuple[str, tuple[str, ...]]:
    leaders = _listed(sorted({p.leader for p in rejected if p.leader is not None}))
    if _rejected_after_move(txn, rejected):
        return (f"remaining step: a broker upgrade. The markers landed, but broker {leaders} rejects every retry at "
                "the same epoch (KAFKA-19999), and rejected them again after the coordinator moved: upgrade it to "
                "a release with the KAFKA-19999 fix (a rolling restart moves the coordinator too); if the row is "
                f"still here after that, {move[0]}"), move[1]
    return (f"the markers landed but broker {leaders} rejects the coordinator's retries at the same epoch "
            "(KAFKA-19999) and the coordinator gave them up; " + move[0] + ": a leader with the KAFKA-19999 fix "
            "accepts them; one without it rejects them again, and then the remaining step is a broker upgrade"
            ), move[1]


def _exhausted_advice(txn: CoordinatorTxn, pending: Sequence[PendingPartition],
                      invocation: advice.Invocation) -> tuple[str, tuple[str, ...]]:
    aborts = tuple(advice.abort(invocation, p.partition, p.start_offset, force=True)
                   for p in pending if p.start_offset is not None)
    coord = _coordinator(txn)
    upgrade = (f"upgrade {coord} (its coordinator) to a release with the KAFKA-20090 fixes: a coordinator with them "
               "fences and aborts a transaction at the last epoch on its timeout, so this one, Ongoing past its "
               "timeout, shows they are missing; after the upgrade its timeout abort ends the transaction and "
               "frees the transactional id (until then its producer cannot end it)")
    if aborts:
        return (f"free the LSO now with the abort below (--force: the coordinator still holds the transaction as "
                f"Ongoing); then the remaining step is a broker upgrade: {upgrade}"), aborts
    return f"remaining step: a broker upgrade (no partition is held any more): {upgrade}", ()


def _listed(items: Iterable[object]) -> str:
    return ", ".join(map(str, items))


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
