"""`kafka-txn force-terminate`: fence a transactional id's producer, aborting its open transaction (KIP-939).

The flow is admin/fence.py: it goes through the coordinator (InitProducerId with producer id/epoch
-1 bumps the epoch), so it is the tool for a transaction stuck on the coordinator's side; `abort` is
for hanging ones the coordinator no longer tracks. This module asks, fences, and audits.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from kafka_txn_tools.cli import exit_codes
from kafka_txn_tools.cli.errors import KafkaTxnCommand, note, say, user_errors, warn
from kafka_txn_tools.cli.options import (
    SAFETY,
    AuditLogOpt,
    OutputFormat,
    OutputOpt,
    WideOpt,
    YesOpt,
)
from kafka_txn_tools.cli.session import CLUSTER, Connection, cluster_options, connect_or_audit, now_ms

EXAMPLES = """\b
Examples:
  kafka-txn force-terminate --transactional-id orders-writer-1 --dry-run
  kafka-txn force-terminate --transactional-id orders-writer-1

--transactional-id is required. Refused unless --force: an id with no
transaction in progress, a transaction still within its timeout (its
coordinator will abort it), a prepared 2PC transaction, or a cluster without
DescribeTransactions (nothing can be checked).
"""


def _row(txn_id: str, check: Any, result: str, after: tuple[int, int] | None = None) -> dict[str, Any]:
    d = check.description if check is not None else None
    return {"transactional_id": txn_id, "state_before": d.state if d else None,
            "producer_id": after[0] if after else (d.producer_id if d else None),
            "producer_epoch_before": d.producer_epoch if d else None,
            "producer_epoch_after": after[1] if after else None,
            "partitions": sorted(str(tp) for tp in d.partitions) if d else [], "result": result}


def _confirm(cluster: str, check: Any, yes: bool, force: bool) -> bool:
    from kafka_txn_tools.cli.prompt import Confirmation, NoTerminal, ask
    from kafka_txn_tools.errors import Refused, UsageError

    warnings = []
    if check.refusal and force:
        warnings.append(f"--force: fencing although {check.refusal}")
    if check.unverifiable:
        warnings.append(f"--force: not validated: {check.unverifiable}")
    for w in warnings:
        warn(w)
    if yes:
        return True
    write = (f"fence transactional id {check.transactional_id!r} (InitProducerId): its producer is fenced and "
             "its open transaction aborted")
    try:
        return ask(Confirmation(cluster, [write], warnings, action="make"))
    except NoTerminal:
        if check.unverifiable and not force:
            raise Refused(f"cannot be validated: {check.unverifiable}", "pass --force") from None
        raise UsageError("refusing to fence without confirmation: not a terminal", "pass --yes") from None


@cluster_options
def force_terminate_command(
    transactional_id: Annotated[str, typer.Option(
        "--transactional-id", "--transactionalId", "-t", metavar="ID", help="transactional id to fence (required)")],
    force: Annotated[bool, typer.Option(
        "--force", rich_help_panel=SAFETY,
        help="fence even a live or idle transactional id, or without DescribeTransactions")] = False,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", rich_help_panel=SAFETY, help="show what would be fenced; change nothing")] = False,
    yes: YesOpt = False,
    audit_log: AuditLogOpt = None,
    conn: Connection = CLUSTER,
    output: OutputOpt = None,
    wide: WideOpt = False,
) -> None:
    """Fence the producer of a transactional id (its open transaction is aborted by the coordinator)."""
    from kafka_txn_tools.admin.audit import AuditLog, AuditRecord
    from kafka_txn_tools.admin.fence import check_fence, fence, fence_timeout
    from kafka_txn_tools.cli.prompt import CANCELLED
    from kafka_txn_tools.cli.render import Column, Output, none_as_dash
    from kafka_txn_tools.errors import KafkaTxnError, NothingToDo, Refused, UsageError

    log = AuditLog(audit_log)
    target = {"transactional_id": transactional_id}
    code = exit_codes.OK
    try:
        with user_errors(), connect_or_audit(conn, log, "kafka-txn force-terminate", [target]) as client:
            check = None
            after: tuple[int, int] | None = None
            result, detail = "failed", ""
            try:
                check = check_fence(client, transactional_id, now_ms(), force)
                say(check.summary(now_ms()))
                if check.refusal and not force:
                    raise Refused(check.refusal, "pass --force to fence it anyway")
                if dry_run:
                    result, detail = "dry-run", "checked; nothing written (--dry-run)"
                elif not _confirm(client.cluster_name, check, yes, force):
                    say(CANCELLED)
                    result, detail, code = "cancelled", CANCELLED, exit_codes.ERROR
                else:
                    after = fence(client, check)
                    result, detail = "fenced", f"producer {after[0]} now at epoch {after[1]}"
                    changed = fence_timeout(check)[1]
                    if changed is not None:
                        note(changed)
                        detail += f"; {changed}"
            except NothingToDo as exc:
                result, detail = "already-done", exc.message
                raise
            except KafkaTxnError as exc:
                refused = isinstance(exc, Refused | UsageError)  # no confirmation is a refusal too
                result, detail = ("refused" if refused else "failed"), f"{exc}; nothing was written"
                raise
            finally:
                log.append(AuditRecord(client.cluster_name, "kafka-txn force-terminate", target, result, detail))
    finally:
        if log.problem:
            warn(f"{log.problem}; the command's result stands")
    if (output or OutputFormat.table) is not OutputFormat.kafka:  # upstream prints nothing
        Output(kind="fenced", rows=[_row(transactional_id, check, result, after)], columns=[
            Column("transactional_id", "TRANSACTIONAL ID"), Column("state_before", "STATE BEFORE"),
            Column("producer_id", "PRODUCER ID", none_as_dash, drop=3),
            Column("producer_epoch_before", "EPOCH BEFORE", none_as_dash, drop=2),
            Column("producer_epoch_after", "EPOCH AFTER", none_as_dash, drop=1), Column("result", "RESULT")],
        ).emit(output or OutputFormat.table, wide=wide)
    if code != exit_codes.OK:
        raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    app.command("force-terminate", cls=KafkaTxnCommand,
                epilog=EXAMPLES + "\n" + exit_codes.HELP_TEXT)(force_terminate_command)
