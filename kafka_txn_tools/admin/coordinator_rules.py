"""The coordinator-side rules (pure): a transaction its coordinator holds in Ongoing, PrepareCommit or
PrepareAbort that it cannot finish by itself, judged from the coordinator's description and each partition
leader's producer state; why (markers pending, a leader offline, a rejected marker retry, an exhausted epoch),
and, through admin/coordinator_advice.py, the action and commands that end it. Shared with the sweep
(spark/classify.py). The partition-side rules (KIP-664's hanging transactions) are admin/hanging.py's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kafka_txn_tools.admin import advice, coordinator_advice
from kafka_txn_tools.admin.hanging import ONGOING
from kafka_txn_tools.models import (
    ABORT_SCAN_INTERVAL_MS,
    EXHAUSTED_EPOCH,
    LAST_EPOCH,
    PREPARE_STATES,
    TWO_PHASE_COMMIT_TIMEOUT_MS,
    PendingPartition,
    PendingReason,
    ProducerState,
    StuckReason,
    StuckTransaction,
    TopicPartition,
)


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
    action, commands = coordinator_advice.stuck_advice(txn, reason, pending, invocation)
    return StuckTransaction(
        transactional_id=txn.transactional_id, state=txn.state, producer_id=txn.producer_id,
        producer_epoch=txn.producer_epoch, coordinator_id=txn.coordinator_id, timeout_ms=txn.timeout_ms,
        time_in_state_ms=age, time_in_state_source=source, reason=reason,
        detail=_stuck_detail(txn, reason, pending), action=action, pending_partitions=tuple(pending),
        commands=commands, upgrade_for=coordinator_advice.upgrade_for(txn, reason, pending))


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


def _listed(items: Iterable[object]) -> str:
    return ", ".join(map(str, items))


