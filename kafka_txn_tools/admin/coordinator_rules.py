"""The coordinator-side rules (pure): a transaction its coordinator holds in Ongoing, PrepareCommit or
PrepareAbort that it cannot finish by itself, judged from the coordinator's description and each partition
leader's producer state; why (markers pending, a leader offline, a rejected marker retry, an exhausted epoch),
and the advice and commands that end it. Shared with the sweep (spark/classify.py). The partition-side rules
(KIP-664's hanging transactions) are admin/hanging.py's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from kafka_txn_broker.formats.partitioning import TXN_TOPIC
from kafka_txn_tools.admin import advice
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


