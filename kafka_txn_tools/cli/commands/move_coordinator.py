"""`kafka-txn move-coordinator`: move a transactional id's coordinator to another in-sync replica of its
`__transaction_state` partition, so the transaction is loaded again and its markers sent again.

The flow is admin/coordinator_move.py; this module asks, writes, and audits, as every write does.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from kafka_txn_tools.cli import exit_codes
from kafka_txn_tools.cli.errors import KafkaTxnCommand, note, user_errors, warn
from kafka_txn_tools.cli.options import (
    SAFETY,
    AuditLogOpt,
    OutputFormat,
    OutputOpt,
    WideOpt,
    YesOpt,
)
from kafka_txn_tools.cli.session import CLUSTER, Connection, cluster_options, connect_or_audit

EXAMPLES = """\b
Examples:
  kafka-txn move-coordinator --transactional-id orders-writer-1 --dry-run
  kafka-txn move-coordinator --transactional-id orders-writer-1
  kafka-txn move-coordinator --transactional-id orders-writer-1 --to-broker 3

--transactional-id is required. It moves the leadership of the id's
__transaction_state partition (every id of that partition moves with it):
ElectLeaders to its preferred replica, after reordering the replicas when
the preferred one is the coordinator now. Refused, with nothing written: an
id its coordinator does not know, no other in-sync replica, a --to-broker
that is not an in-sync replica, or a partition without a leader.
"""


def _row(txn_id: str, plan: Any, outcome: Any, result: str) -> dict[str, Any]:
    return {"transactional_id": txn_id, "partition": str(plan.partition) if plan else None,
            "from_broker": plan.leader if plan else None, "to_broker": plan.target if plan else None,
            "state_before": plan.description.state if plan else None,
            "state_after": outcome.state_after if outcome else None,
            "leader_after": outcome.leader_after if outcome else None, "result": result}


def _confirm(cluster: str, plan: Any, yes: bool) -> bool:
    from kafka_txn_tools.cli.prompt import Confirmation, NoTerminal, ask
    from kafka_txn_tools.errors import UsageError

    if yes:
        return True
    try:
        return ask(Confirmation(cluster, plan.steps(), action="make"))
    except NoTerminal:
        raise UsageError("refusing to move the coordinator without confirmation: not a terminal",
                         "pass --yes") from None


def _after(outcome: Any) -> None:
    """What became of the transaction at its new coordinator, on stderr."""
    from kafka_txn_tools.models import PREPARE_STATES

    for text in outcome.notes:
        note(text)
    state, txn = outcome.state_after, outcome.plan.transactional_id
    if state in PREPARE_STATES:
        warn(f"{txn!r} is still {state} at its new coordinator, broker {outcome.leader_after}: its markers are "
             "still refused; `kafka-txn find-hanging --all` says why and what is left to do")
    elif state is None:
        warn(f"broker {outcome.leader_after} leads {outcome.plan.partition} but has not answered for {txn!r} yet")


@cluster_options
def move_coordinator_command(
    transactional_id: Annotated[str, typer.Option(
        "--transactional-id", "-t", metavar="ID", help="the transactional id whose coordinator to move (required)")],
    to_broker: Annotated[int | None, typer.Option(
        "--to-broker", metavar="ID", help="the in-sync replica to move it to (default: the preferred replica, "
                                          "else the first other in-sync one)")] = None,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", rich_help_panel=SAFETY, help="check and show the writes; change nothing")] = False,
    yes: YesOpt = False,
    audit_log: AuditLogOpt = None,
    conn: Connection = CLUSTER,
    output: OutputOpt = None,
    wide: WideOpt = False,
) -> None:
    """Move a transactional id's coordinator (the leadership of its __transaction_state partition) to another
    in-sync replica: the new coordinator loads its transactions and sends their markers again."""
    from kafka_txn_tools.admin.audit import AuditLog, AuditRecord
    from kafka_txn_tools.admin.coordinator_move import execute, plan_move
    from kafka_txn_tools.cli.prompt import CANCELLED
    from kafka_txn_tools.cli.render import Column, Output, none_as_dash
    from kafka_txn_tools.errors import KafkaTxnError, NothingToDo, Refused, UsageError

    log = AuditLog(audit_log)
    target: dict[str, Any] = {"transactional_id": transactional_id}
    code = exit_codes.OK
    plan = outcome = None
    result = "failed"
    writing = False  # past the confirmation: a failure may have left part of the move done
    try:
        with user_errors(), connect_or_audit(conn, log, "kafka-txn move-coordinator", [target]) as client:
            detail = ""
            try:
                plan = plan_move(client, transactional_id, to_broker)
                target.update(partition=str(plan.partition), from_broker=plan.leader, to_broker=plan.target)
                for step in plan.steps():
                    typer.echo(step, err=True)
                if dry_run:
                    result, detail = "dry-run", "checked; nothing written (--dry-run)"
                elif not _confirm(client.cluster_name, plan, yes):
                    typer.echo(CANCELLED, err=True)
                    result, detail, code = "cancelled", CANCELLED, exit_codes.ERROR
                else:
                    writing = True
                    outcome = execute(client, plan)
                    result = "moved"
                    detail = f"broker {outcome.leader_after} leads {plan.partition}; {transactional_id!r} is " \
                             f"{outcome.state_after or 'not answered for yet'} there"
            except NothingToDo as exc:
                result, detail = "already-done", exc.message
                raise
            except KafkaTxnError as exc:
                refused = isinstance(exc, Refused | UsageError)  # no confirmation is a refusal too
                result = "refused" if refused else "failed"
                detail = str(exc) if writing else f"{exc}; nothing was written"
                raise
            finally:
                log.append(AuditRecord(client.cluster_name, "kafka-txn move-coordinator", target, result, detail))
    finally:
        if log.problem:
            warn(f"{log.problem}; the command's result stands")
    if outcome is not None:
        _after(outcome)
    Output(kind="moves", rows=[_row(transactional_id, plan, outcome, result)], columns=[
        Column("transactional_id", "TRANSACTIONAL ID"), Column("partition", "PARTITION", none_as_dash, drop=3),
        Column("from_broker", "FROM", none_as_dash), Column("to_broker", "TO", none_as_dash),
        Column("state_before", "STATE BEFORE", none_as_dash, drop=2),
        Column("state_after", "STATE AFTER", none_as_dash, drop=1), Column("result", "RESULT")],
    ).emit(output or OutputFormat.table, wide=wide)
    if code != exit_codes.OK:
        raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    app.command("move-coordinator", cls=KafkaTxnCommand,
                epilog=EXAMPLES + "\n" + exit_codes.HELP_TEXT)(move_coordinator_command)
