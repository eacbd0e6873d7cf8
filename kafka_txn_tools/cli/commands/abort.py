"""`kafka-txn abort`: abort one hanging transaction (or each entry of an abort plan), safely.

The flow is admin/abort_batch.py (validation in admin/abort.py); this module is the conversation:
show what validation found, refuse or ask (on the terminal, naming the cluster and every marker),
write, record each attempt in the audit log, print before/after.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kafka_txn_tools.cli import exit_codes
from kafka_txn_tools.cli.errors import KafkaTxnCommand, exit_code_for, fail, note, say, user_errors, warn
from kafka_txn_tools.cli.options import (
    SAFETY,
    AuditLogOpt,
    OutputFormat,
    OutputOpt,
    WideOpt,
    YesOpt,
)
from kafka_txn_tools.cli.session import CLUSTER, Connection, cluster_options, connect_or_audit

if TYPE_CHECKING:
    from kafka_txn_tools.admin.abort import AbortTarget
    from kafka_txn_tools.admin.abort_batch import AbortItem
    from kafka_txn_tools.admin.audit import AuditLog
    from kafka_txn_tools.connection.client import AdminClient
    from kafka_txn_tools.dumps.plan import AbortPlan

EXAMPLES = """\b
Examples:
  kafka-txn abort --topic orders --partition 3 --start-offset 116 --dry-run
  kafka-txn abort --topic orders --partition 3 --start-offset 116
  kafka-txn abort --plan plan.yaml --dry-run    (find-hanging -o plan, sweep)
  kafka-txn abort --plan plan.yaml --skip-refused
  kafka-txn abort --topic orders --partition 3 --producer-id 2000 \\
      --producer-epoch 3 --coordinator-epoch 7   (legacy form)

Required: --topic and --partition with --start-offset, or with --producer-id,
--producer-epoch and --coordinator-epoch (legacy form); or --plan alone.
--producer-id, --producer-epoch and --coordinator-epoch given with
--start-offset are checked too. Every identifier must match the open
transaction on the leader, or nothing is written. --force overrides only the
coordinator's "live" verdict and what the cluster cannot check. A plan is
applied all or nothing: one refused entry and none is written (exit 1),
unless --skip-refused (exit 7 when some were refused); a plan made on another
cluster is refused.
"""


def result_row(item: AbortItem) -> dict[str, Any]:
    check, outcome, t = item.check, item.outcome, item.target
    spec = check.spec if check else None
    return {
        "topic": t.partition.topic, "partition": t.partition.partition, "result": str(item.result),
        "producer_id": spec.producer_id if spec else t.producer_id,
        "producer_epoch": spec.producer_epoch if spec else t.producer_epoch,
        "coordinator_epoch": spec.coordinator_epoch if spec else t.coordinator_epoch,
        "start_offset": spec.start_offset if spec else t.start_offset,
        "leader": check.leader if check else None,
        "coordinator_view": check.coordinator_view if check else None,
        "lso_before": check.before.last_stable_offset if check else None,
        "lso_after": outcome.after.last_stable_offset if outcome else None,
        "high_watermark_before": check.before.high_watermark if check else None,
        "high_watermark_after": outcome.after.high_watermark if outcome else None,
        "message": item.message,
    }


def _emit(items: Sequence[AbortItem], fmt: OutputFormat, wide: bool, plan: AbortPlan | None) -> None:
    from kafka_txn_tools.cli.render import Column, Output

    if fmt is OutputFormat.kafka:
        return  # upstream prints nothing on success; errors went to stderr
    extra = None if plan is None else {"plan": {"cluster_id": plan.cluster_id,
                                                "capture_time_ms": plan.capture_time_ms,
                                                "generated_by": plan.generated_by}}
    # Decoration goes first on a narrow terminal; which entry and why (RESULT, DETAIL) never.
    Output(kind="aborts", rows=[result_row(i) for i in items], extra=extra, columns=[
        Column("topic", "TOPIC"), Column("partition", "PART"), Column("start_offset", "START"),
        Column("producer_id", "PRODUCER ID", drop=3), Column("result", "RESULT"),
        Column("lso_before", "LSO BEFORE", drop=2), Column("lso_after", "LSO AFTER", drop=1),
        Column("high_watermark_after", "HW", drop=4), Column("message", "DETAIL", wrap=True)],
    ).emit(fmt, wide=wide)


def _targets(topic: str | None, partition: int | None, start_offset: int | None, producer_id: int | None,
             producer_epoch: int | None, coordinator_epoch: int | None, plan: Path | None,
             skip_refused: bool) -> tuple[list[AbortTarget], AbortPlan | None]:
    from kafka_txn_tools.admin.abort import AbortTarget
    from kafka_txn_tools.admin.abort_batch import targets_of
    from kafka_txn_tools.dumps.plan import PlanError, load_plan
    from kafka_txn_tools.errors import UsageError
    from kafka_txn_tools.models import TopicPartition

    if plan is not None:
        if any(v is not None for v in (topic, partition, start_offset, producer_id, producer_epoch,
                                       coordinator_epoch)):
            raise UsageError("--plan takes its transactions from the file; do not combine it with --topic/"
                             "--partition/--start-offset/--producer-id/--producer-epoch/--coordinator-epoch")
        try:
            loaded = load_plan(plan)
        except PlanError as exc:
            raise UsageError(str(exc)) from None
        return targets_of(loaded), loaded
    if skip_refused:
        raise UsageError("--skip-refused applies to --plan: a single abort is written or refused whole")
    if topic is None or partition is None:
        raise UsageError("give --topic and --partition (or --plan FILE)")
    if start_offset is None and producer_id is None:
        raise UsageError("The transaction to abort must be identified either with --start-offset (for brokers on "
                         "3.0 or above) or with --producer-id, --producer-epoch, and --coordinator-epoch (for older "
                         "brokers)")
    if start_offset is None:
        if producer_epoch is None:
            raise UsageError("Missing required argument --producer-epoch")
        if coordinator_epoch is None:
            raise UsageError("Missing required argument --coordinator-epoch")
    return [AbortTarget(TopicPartition(topic, partition), start_offset, producer_id, producer_epoch,
                        coordinator_epoch)], None


def entry_label(index: int, total: int, item: AbortItem) -> str:
    """How a plan entry is named in messages: `entry 2 of 3 (orders-1 at offset 116)`."""
    t = item.target
    at = f"at offset {t.start_offset}" if t.start_offset is not None else f"producer {t.producer_id}"
    return f"entry {index + 1} of {total} ({t.partition} {at})"


def _show_checks(items: Sequence[AbortItem], dry_run: bool) -> None:
    """The exact markers and the coordinator's view, on stderr (stdout is the result)."""
    for item in items:
        check = item.check
        if check is None:
            continue
        for text in check.notes:
            warn(text)
        if dry_run or item.pending:
            say(f"{check.marker_text()}; coordinator view: {check.coordinator_view}")
            for why in check.unverifiable:
                warn(f"not validated: {why}")


def _show_refusals(items: Sequence[AbortItem]) -> list[str]:
    """Each plan entry validation stopped, with its whole reason, on stderr; the same lines for the prompt."""
    from kafka_txn_tools.admin.abort_batch import blocked

    lines = [f"{i.result}: {entry_label(n, len(items), i)}: {i.message}"
             for n, i in enumerate(items) if i in blocked(items)]
    for line in lines:
        say(line)
    return lines


def _confirm(client: AdminClient, items: Sequence[AbortItem], yes: bool, force: bool, refused: list[str]) -> bool:
    """Ask before writing; False when the person said no. --force on live transactions warns first."""
    from kafka_txn_tools.admin.abort_batch import forced_live, pending, unverifiable
    from kafka_txn_tools.cli.prompt import Confirmation, NoTerminal, ask
    from kafka_txn_tools.errors import Refused, UsageError

    warnings = [f"--force: aborting {i.target.partition} although {i.check.refusal}"  # type: ignore[union-attr]
                for i in forced_live(items)]
    for w in warnings:
        warn(w)
    unchecked = unverifiable(items)
    if unchecked and force:
        for why in unchecked:
            warn(f"--force: not validated: {why}")
    needs_person = bool(unchecked) and not force
    if yes and not needs_person:
        return True
    writes = [i.check.marker_text() for i in pending(items)]  # type: ignore[union-attr]
    try:
        return ask(Confirmation(client.cluster_name, writes, [*warnings, *(f"not validated: {w}" for w in unchecked)],
                                action="write", left_out=refused))
    except NoTerminal:
        if needs_person:
            raise Refused(f"cannot be validated: {'; '.join(unchecked)}",
                          "confirm on a terminal, or pass --force to write it unvalidated") from None
        raise UsageError("refusing to write without confirmation: not a terminal", "pass --yes") from None


def _target_fields(t: AbortTarget) -> dict[str, Any]:
    return {"topic": t.partition.topic, "partition": t.partition.partition, "start_offset": t.start_offset,
            "producer_id": t.producer_id, "producer_epoch": t.producer_epoch, "coordinator_epoch": t.coordinator_epoch}


def _audit(log: AuditLog, cluster: str, items: Sequence[AbortItem]) -> None:
    from kafka_txn_tools.admin.audit import AuditRecord

    for item in items:
        row = result_row(item)
        target = {k: row[k] for k in ("topic", "partition", "start_offset", "producer_id", "producer_epoch",
                                      "coordinator_epoch")}
        log.append(AuditRecord(cluster, "kafka-txn abort", target, row["result"], item.message))


def _exit_code(items: Sequence[AbortItem], single: bool) -> int:
    """One meaning per code: 0 all written (or already done), 1 nothing written, 4 all already done (with
    evidence), 7 a plan applied in part. --dry-run exits as the write would."""
    from kafka_txn_tools.admin.abort_batch import AbortResult

    results = {i.result for i in items}
    if single and items and items[0].error is not None and items[0].result is AbortResult.FAILED:
        return exit_code_for(items[0].error)  # a usage error stays 2, a missing API 6
    written = results & {AbortResult.ABORTED, AbortResult.DRY_RUN}
    unwritten = results & {AbortResult.FAILED, AbortResult.REFUSED, AbortResult.CANCELLED, AbortResult.NOT_WRITTEN}
    if written and unwritten:
        return exit_codes.PARTLY_APPLIED
    if unwritten:
        return exit_codes.ERROR
    if items and results == {AbortResult.ALREADY_DONE}:
        return exit_codes.ALREADY_DONE
    return exit_codes.OK


def _check_origin(client: AdminClient, plan: AbortPlan) -> str | None:
    """Stop a plan made on another cluster; say where and when it was made; the check a person (or --force)
    must make when the cluster cannot be identified (None: nothing to add)."""
    from kafka_txn_tools.admin.abort_batch import check_origin
    from kafka_txn_tools.cli.session import now_ms
    from kafka_txn_tools.errors import Refused
    from kafka_txn_tools.timestamps import with_age

    origin = check_origin(plan, client.metadata([]).cluster_id)
    if origin.refusal is not None:
        raise Refused(f"{origin.refusal}; nothing was written",
                      "make the plan on this cluster (`kafka-txn find-hanging --all -o plan`), or apply it to the "
                      "cluster it was made on")
    captured = with_age(plan.capture_time_ms, now_ms())
    if plan.cluster_id is not None:
        note(f"plan made by {plan.generated_by or 'hand'} on cluster {plan.cluster_id}"
             + (f", captured {captured}" if captured else ""))
    if origin.warning is not None:
        warn(origin.warning)
    return origin.unverifiable


def _run(client: AdminClient, targets: list[AbortTarget], plan: AbortPlan | None, force: bool, dry_run: bool,
         yes: bool, skip_refused: bool, log: AuditLog) -> list[AbortItem]:
    from kafka_txn_tools.admin.abort_batch import (
        AbortItem,
        AbortResult,
        blocked,
        hold_back,
        pending,
        prepare,
        settle_all,
        write,
    )
    from kafka_txn_tools.cli.prompt import CANCELLED
    from kafka_txn_tools.errors import KafkaTxnError

    items = [AbortItem(t) for t in targets]
    try:
        unverified_origin = _check_origin(client, plan) if plan is not None else None
        items = prepare(client, targets, force)
        for item in pending(items):
            if unverified_origin is not None:
                item.check.unverifiable.append(unverified_origin)  # type: ignore[union-attr]
        held = plan is not None and bool(blocked(items)) and not skip_refused
        if not held:  # the markers that will be written (a plan held back writes none)
            _show_checks(items, dry_run)
        refused = _show_refusals(items) if plan is not None else []
        if held:
            hold_back(items)  # a plan is written all or nothing
        elif dry_run:
            settle_all(items, AbortResult.DRY_RUN, "validated; nothing written (--dry-run)")
        elif pending(items):
            if _confirm(client, items, yes, force, refused):
                write(client, items)
            else:
                say(CANCELLED)
                settle_all(items, AbortResult.CANCELLED, CANCELLED)
        if plan is not None and blocked(items) and not skip_refused:
            valid = sum(1 for i in items if i.result is AbortResult.NOT_WRITTEN)
            hint = (f"; --skip-refused writes the {valid} valid {'entry' if valid == 1 else 'entries'}" if valid
                    else "")
            say(f"error: {len(blocked(items))} of the plan's {len(items)} entries were refused: nothing was written "
                f"(a plan is applied all or nothing{hint})")
    except KafkaTxnError as exc:
        for item in items:
            if item.result is None:
                item.settle(AbortResult.REFUSED, f"{exc}; nothing was written")
        raise
    finally:
        _audit(log, client.cluster_name, items)
    return items


@cluster_options
def abort_command(
    topic: Annotated[str | None, typer.Option("--topic", metavar="TOPIC", help="topic of the transaction")] = None,
    partition: Annotated[int | None, typer.Option("--partition", metavar="N", help="partition number")] = None,
    start_offset: Annotated[int | None, typer.Option(
        "--start-offset", metavar="OFFSET", help="first offset of the open transaction to abort")] = None,
    producer_id: Annotated[int | None, typer.Option(
        "--producer-id", metavar="ID", help="its producer id (legacy form; checked with --start-offset)")] = None,
    producer_epoch: Annotated[int | None, typer.Option(
        "--producer-epoch", metavar="N", help="its producer epoch (required with --producer-id alone)")] = None,
    coordinator_epoch: Annotated[int | None, typer.Option(
        "--coordinator-epoch", metavar="N", help="its coordinator epoch (required with --producer-id alone)")] = None,
    plan: Annotated[Path | None, typer.Option(
        "--plan", metavar="FILE", help="abort every entry of an abort plan (find-hanging -o plan, sweep), all or "
                                       "nothing")] = None,
    skip_refused: Annotated[bool, typer.Option(
        "--skip-refused", rich_help_panel=SAFETY,
        help="--plan: write the valid entries even if some are refused (exit 7 when some were)")] = False,
    force: Annotated[bool, typer.Option(
        "--force", rich_help_panel=SAFETY,
        help="abort even if the coordinator holds the transaction as live, or it cannot be checked")] = False,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", rich_help_panel=SAFETY, help="validate and print the exact marker; write nothing")] = False,
    yes: YesOpt = False,
    audit_log: AuditLogOpt = None,
    conn: Connection = CLUSTER,
    output: OutputOpt = None,
    wide: WideOpt = False,
) -> None:
    """Abort a hanging transaction: every identifier checked against the leader's producer state and the
    coordinator's view, confirmed on the terminal (or --yes), recorded in the audit log, LSO before/after."""
    from kafka_txn_tools.admin.abort_batch import AbortResult
    from kafka_txn_tools.admin.audit import AuditLog

    log = AuditLog(audit_log)
    try:
        with user_errors():
            targets, loaded = _targets(topic, partition, start_offset, producer_id, producer_epoch,
                                       coordinator_epoch, plan, skip_refused)
            with connect_or_audit(conn, log, "kafka-txn abort", [_target_fields(t) for t in targets]) as client:
                items = _run(client, targets, loaded, force, dry_run, yes, skip_refused, log)
    finally:
        if log.problem:
            warn(f"{log.problem}; the command's result stands")
    single = plan is None  # one target: its failure is the command's error, as upstream
    code = _exit_code(items, single)
    if single and items[0].result in (AbortResult.FAILED, AbortResult.REFUSED):
        fail(items[0].message, code)
    if single and items[0].result is AbortResult.ALREADY_DONE:
        say(f"nothing to do: {items[0].message}")
    _emit(items, output or OutputFormat.table, wide, loaded)
    if code != exit_codes.OK:
        raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    app.command("abort", cls=KafkaTxnCommand, epilog=EXAMPLES + "\n" + exit_codes.HELP_TEXT)(abort_command)
