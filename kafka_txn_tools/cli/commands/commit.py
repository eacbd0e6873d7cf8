"""`kafka-txn commit`: write the COMMIT marker a transaction's coordinator decided on and never delivered.

The flow is admin/commit.py (the decision read from `__transaction_state`, the open transaction from the
leader); the write is abort's (admin/abort.py `execute`). This module asks, writes, audits and prints the
LSO before and after. There is no --force: only a commit the coordinator decided is ever written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from kafka_txn_tools.cli import exit_codes
from kafka_txn_tools.cli.errors import KafkaTxnCommand, say, user_errors, warn
from kafka_txn_tools.cli.options import SAFETY, AuditLogOpt, OutputFormat, OutputOpt, WideOpt, YesOpt
from kafka_txn_tools.cli.session import CLUSTER, Connection, cluster_options, connect_or_audit, invocation_of

if TYPE_CHECKING:
    from kafka_txn_tools.admin.abort import AbortCheck, AbortOutcome

EXAMPLES = """\b
Examples:
  kafka-txn commit --topic orders --partition 3 --start-offset 116 --dry-run
  kafka-txn commit --topic orders --partition 3 --start-offset 116

For a partition `find-hanging` says to commit: its transaction's coordinator
committed it (a PrepareCommit in __transaction_state listing the partition)
and completed it without the partition's COMMIT marker (Apache Kafka 4.3+
skips the marker of a partition whose leader is offline). Refused, writing
nothing, unless the leader holds an open transaction at --start-offset, its
coordinator calls it hanging, and that PrepareCommit is found; a PrepareAbort
instead is refused with the abort command. There is no --force.
"""


def _row(tp: Any, start_offset: int, check: AbortCheck | None, outcome: AbortOutcome | None, result: str,
         message: str) -> dict[str, Any]:
    spec = check.spec if check is not None else None
    d = check.decision if check is not None else None
    return {"topic": tp.topic, "partition": tp.partition, "start_offset": start_offset, "result": result,
            "producer_id": spec.producer_id if spec else None, "producer_epoch": spec.producer_epoch if spec else None,
            "coordinator_epoch": spec.coordinator_epoch if spec else None,
            "transactional_id": d.transactional_id if d else None,
            "decision": d.to_row() if d else None, "leader": check.leader if check else None,
            "lso_before": check.before.last_stable_offset if check else None,
            "lso_after": outcome.after.last_stable_offset if outcome else None,
            "high_watermark_after": outcome.after.high_watermark if outcome else None, "message": message}


def _confirm(cluster: str, check: AbortCheck, yes: bool) -> bool:
    from kafka_txn_tools.cli.prompt import Confirmation, NoTerminal, ask
    from kafka_txn_tools.errors import UsageError

    if yes:
        return True
    try:
        return ask(Confirmation(cluster, [check.marker_text()], [], action="write"))
    except NoTerminal:
        raise UsageError("refusing to write without confirmation: not a terminal", "pass --yes") from None


@cluster_options
def commit_command(
    topic: Annotated[str, typer.Option("--topic", metavar="TOPIC", help="topic of the transaction (required)")],
    partition: Annotated[int, typer.Option("--partition", metavar="N", help="partition number (required)")],
    start_offset: Annotated[int, typer.Option(
        "--start-offset", metavar="OFFSET", help="first offset of the open transaction to commit (required)")],
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", rich_help_panel=SAFETY, help="validate and print the exact marker; write nothing")] = False,
    yes: YesOpt = False,
    audit_log: AuditLogOpt = None,
    conn: Connection = CLUSTER,
    output: OutputOpt = None,
    wide: WideOpt = False,
) -> None:
    """Commit a hanging transaction its coordinator committed: the COMMIT marker it never delivered, written
    only after that decision is found in __transaction_state; confirmed on the terminal (or --yes), audited."""
    from kafka_txn_tools.admin.abort import AbortTarget, execute
    from kafka_txn_tools.admin.audit import AuditLog, AuditRecord
    from kafka_txn_tools.admin.commit import validate
    from kafka_txn_tools.cli.prompt import CANCELLED
    from kafka_txn_tools.cli.render import Column, Output
    from kafka_txn_tools.errors import KafkaTxnError, NothingToDo, Refused, UsageError
    from kafka_txn_tools.models import TopicPartition

    log = AuditLog(audit_log)
    fields = {"topic": topic, "partition": partition, "start_offset": start_offset}
    code = exit_codes.OK
    check: AbortCheck | None = None
    outcome: AbortOutcome | None = None
    result, message = "failed", ""
    try:
        with user_errors():
            target = AbortTarget(TopicPartition(topic, partition), start_offset)
            with connect_or_audit(conn, log, "kafka-txn commit", [fields]) as client:
                try:
                    check = validate(client, target, invocation_of(client, conn))
                    say(f"{check.marker_text()}; {check.decision.describe() if check.decision else ''}")
                    if dry_run:
                        result, message = "dry-run", "validated; nothing written (--dry-run)"
                    elif not _confirm(client.cluster_name, check, yes):
                        say(CANCELLED)
                        result, message, code = "cancelled", CANCELLED, exit_codes.ERROR
                    else:
                        outcome = execute(client, check)
                        result = "committed"
                        message = ("the COMMIT marker was written, but the transaction still shows open"
                                   if outcome.still_open else "the COMMIT marker its coordinator decided on")
                except NothingToDo as exc:
                    result, message = "already-done", exc.message
                    raise
                except KafkaTxnError as exc:
                    refused = isinstance(exc, Refused | UsageError)
                    result, message = ("refused" if refused else "failed"), f"{exc}; nothing was written"
                    raise
                finally:
                    log.append(AuditRecord(client.cluster_name, "kafka-txn commit", fields, result, message))
    finally:
        if log.problem:
            warn(f"{log.problem}; the command's result stands")
    Output(kind="commits", rows=[_row(TopicPartition(topic, partition), start_offset, check, outcome, result,
                                      message)], columns=[
        Column("topic", "TOPIC"), Column("partition", "PART"), Column("start_offset", "START"),
        Column("producer_id", "PRODUCER ID", drop=3), Column("result", "RESULT"),
        Column("lso_before", "LSO BEFORE", drop=2), Column("lso_after", "LSO AFTER", drop=1),
        Column("high_watermark_after", "HW", drop=4), Column("message", "DETAIL", wrap=True)],
    ).emit(output or OutputFormat.table, wide=wide)
    if code != exit_codes.OK:
        raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    app.command("commit", cls=KafkaTxnCommand, epilog=EXAMPLES + "\n" + exit_codes.HELP_TEXT)(commit_command)
