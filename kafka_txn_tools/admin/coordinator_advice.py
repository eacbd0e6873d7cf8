"""What ends a coordinator-side stuck transaction on Kafka, and why: the action text and the commands of a row of
kind "coordinator" (admin/coordinator_rules.py decides that a transaction is stuck, and why; this module says what
to do about it). Pure: strings from the rules' plain data; the command lines themselves are admin/advice.py's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from kafka_txn_broker.formats.partitioning import TXN_TOPIC
from kafka_txn_tools.admin import advice
from kafka_txn_tools.models import PendingPartition, PendingReason, StuckReason, StuckTransaction

if TYPE_CHECKING:  # the rules import this module; their row type is only named here
    from kafka_txn_tools.admin.coordinator_rules import CoordinatorTxn


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
