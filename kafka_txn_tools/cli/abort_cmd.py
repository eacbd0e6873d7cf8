"""`kafka-txn abort`: abort one hanging transaction (or each entry of an abort plan), safely.

Validation and the marker are in admin/abort.py; this module is the conversation: refuse or ask,
print the exact marker for --dry-run, then before/after.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kafka_txn_tools.cli import exit_codes
from kafka_txn_tools.cli.app import app
from kafka_txn_tools.cli.common import (
    DEFAULT_TIMEOUT,
    BootstrapOpt,
    CommandConfigOpt,
    Connection,
    OutputFormat,
    OutputOpt,
    ProfileOpt,
    TimeoutOpt,
    YesOpt,
    confirm_or_exit,
    connect,
    fail,
    resolve_output,
    user_errors,
    warn,
)
from kafka_txn_tools.models import TopicPartition

if TYPE_CHECKING:
    from kafka_txn_tools.admin.abort import AbortCheck, AbortOutcome
    from kafka_txn_tools.admin.client import AdminClient

ABORTED, ALREADY, REFUSED, FAILED, DRY_RUN = "aborted", "already-done", "refused", "failed", "dry-run"


def result_row(tp: TopicPartition, result: str, check: AbortCheck | None = None,
               outcome: AbortOutcome | None = None, message: str = "") -> dict[str, Any]:
    spec = check.spec if check else None
    return {
        "topic": tp.topic, "partition": tp.partition, "result": result,
        "producer_id": spec.producer_id if spec else None,
        "producer_epoch": spec.producer_epoch if spec else None,
        "coordinator_epoch": spec.coordinator_epoch if spec else None,
        "start_offset": spec.start_offset if spec else None,
        "leader": check.leader if check else None,
        "coordinator_view": check.coordinator_view if check else None,
        "lso_before": check.before.last_stable_offset if check else None,
        "lso_after": outcome.after.last_stable_offset if outcome else None,
        "high_watermark_before": check.before.high_watermark if check else None,
        "high_watermark_after": outcome.after.high_watermark if outcome else None,
        "message": message,
    }


def describe_marker(check: AbortCheck) -> str:
    spec = check.spec
    assert spec is not None
    tag = (f", TxnStartOffset={spec.start_offset} (tag 0)" if spec.start_offset is not None
           else " (legacy form: no TxnStartOffset)")
    return (f"WriteTxnMarkers to broker {check.leader} (leader of {spec.partition}): ABORT producer_id="
            f"{spec.producer_id} producer_epoch={spec.producer_epoch} coordinator_epoch={spec.coordinator_epoch} "
            f"partition={spec.partition}{tag}")


def _emit(rows: list[dict[str, Any]], fmt: OutputFormat) -> None:
    from kafka_txn_tools.cli.render import Column, Output, none_as_dash

    if fmt is OutputFormat.kafka:
        return  # upstream prints nothing on success; errors went to stderr
    Output(kind="aborts", rows=rows, columns=[
        Column("topic", "TOPIC"), Column("partition", "PART"), Column("start_offset", "START", none_as_dash),
        Column("producer_id", "PRODUCER ID", none_as_dash), Column("result", "RESULT"),
        Column("lso_before", "LSO BEFORE", none_as_dash), Column("lso_after", "LSO AFTER", none_as_dash),
        Column("high_watermark_after", "HW", none_as_dash), Column("message", "DETAIL")]).emit(fmt)


Legacy = tuple[int, int, int]  # producer id, producer epoch, coordinator epoch


def _validate(client: AdminClient, tp: TopicPartition, start_offset: int | None, legacy: Legacy | None) -> AbortCheck:
    from kafka_txn_tools.admin.abort import check_by_start_offset, check_legacy

    if start_offset is not None:
        return check_by_start_offset(client, tp, start_offset)
    assert legacy is not None
    return check_legacy(client, tp, *legacy)


def _abort_one(client: AdminClient, check: AbortCheck, force: bool, dry_run: bool, yes: bool,
               expected_producer: int | None = None) -> dict[str, Any]:
    """Refuse, dry-run, confirm, or abort; the result row. Raises nothing for a refusal."""
    from kafka_txn_tools.admin.abort import execute

    tp = check.partition
    for note in check.notes:
        warn(note)
    if expected_producer is not None and check.spec is not None and check.spec.producer_id != expected_producer:
        return result_row(tp, REFUSED, check, message=(
            f"plan is stale: the transaction at offset {check.spec.start_offset} belongs to producer "
            f"{check.spec.producer_id}, not {expected_producer}"))
    if dry_run or not check.refusal or force:
        typer.echo(describe_marker(check), err=True)
        typer.echo(f"coordinator view: {check.coordinator_view}", err=True)
    if check.refusal and not force:
        return result_row(tp, REFUSED, check, message=f"{check.refusal}; pass --force to abort anyway")
    if dry_run:
        return result_row(tp, DRY_RUN, check, message=describe_marker(check))
    confirm_or_exit(f"Abort this transaction on {tp}?", yes)
    outcome = execute(client, check)
    message = "marker written" + ("; the transaction still shows as open" if outcome.still_open else "")
    return result_row(tp, ABORTED, check, outcome, message)


def _single(client: AdminClient, tp: TopicPartition, start_offset: int | None, legacy: Legacy | None,
            force: bool, dry_run: bool, yes: bool) -> dict[str, Any]:
    check = _validate(client, tp, start_offset, legacy)
    return _abort_one(client, check, force, dry_run, yes)


def _run_plan(client: AdminClient, plan_path: Path, force: bool, dry_run: bool, yes: bool) -> list[dict[str, Any]]:
    from kafka_txn_tools.admin.errors import KafkaTxnError, NothingToDo, UsageError
    from kafka_txn_tools.dumps.plan import PlanError, load_plan

    try:
        plan = load_plan(plan_path)
    except PlanError as exc:
        raise UsageError(str(exc)) from None
    typer.echo(f"abort plan {plan_path}: {len(plan.entries)} entries (generated by {plan.generated_by})", err=True)
    if not dry_run and plan.entries:
        confirm_or_exit(f"Abort up to {len(plan.entries)} transactions, re-validating each first?", yes)
    rows = []
    for entry in plan.entries:
        tp = TopicPartition(entry.topic, entry.partition)
        try:
            check = _validate(client, tp, entry.start_offset, None)
            # Confirmed once for the whole plan above; each entry still refuses on its own checks.
            rows.append(_abort_one(client, check, force, dry_run, yes=True, expected_producer=entry.producer_id))
        except NothingToDo as exc:
            rows.append(result_row(tp, ALREADY, message=exc.message))
        except KafkaTxnError as exc:
            rows.append(result_row(tp, FAILED, message=str(exc)))
        typer.echo(f"{tp} offset {entry.start_offset}: {rows[-1]['result']} {rows[-1]['message']}", err=True)
    return rows


def _plan_exit_code(rows: list[dict[str, Any]]) -> int:
    results = {r["result"] for r in rows}
    if results & {FAILED, REFUSED}:
        return exit_codes.ERROR
    if rows and results == {ALREADY}:
        return exit_codes.ALREADY_DONE
    return exit_codes.OK


def _check_args(
    topic: str | None, partition: int | None, start_offset: int | None, producer_id: int | None,
    producer_epoch: int | None, coordinator_epoch: int | None, plan: Path | None,
) -> Legacy | None:
    if plan is not None:
        if any(v is not None for v in (topic, partition, start_offset, producer_id)):
            fail("--plan takes its transactions from the file; do not combine it with --topic/--partition/"
                 "--start-offset/--producer-id", exit_codes.USAGE)
        return None
    if topic is None or partition is None:
        fail("give --topic and --partition (or --plan FILE)", exit_codes.USAGE)
    if start_offset is None and producer_id is None:
        fail("The transaction to abort must be identified either with --start-offset (for brokers on 3.0 or "
             "above) or with --producer-id, --producer-epoch, and --coordinator-epoch (for older brokers)",
             exit_codes.USAGE)
    if start_offset is not None:
        return None
    if producer_epoch is None:
        fail("Missing required argument --producer-epoch", exit_codes.USAGE)
    if coordinator_epoch is None:
        fail("Missing required argument --coordinator-epoch", exit_codes.USAGE)
    assert producer_id is not None
    return producer_id, producer_epoch, coordinator_epoch


@app.command("abort", epilog=exit_codes.HELP_TEXT)
def abort_command(
    topic: Annotated[str | None, typer.Option("--topic", metavar="TOPIC", help="topic of the transaction")] = None,
    partition: Annotated[int | None, typer.Option("--partition", metavar="N", help="partition number")] = None,
    start_offset: Annotated[int | None, typer.Option(
        "--start-offset", metavar="OFFSET", help="first offset of the open transaction to abort")] = None,
    producer_id: Annotated[int | None, typer.Option(
        "--producer-id", metavar="ID", help="legacy form (brokers < 3.0): producer id")] = None,
    producer_epoch: Annotated[int | None, typer.Option(
        "--producer-epoch", metavar="N", help="legacy form: producer epoch")] = None,
    coordinator_epoch: Annotated[int | None, typer.Option(
        "--coordinator-epoch", metavar="N", help="legacy form: coordinator epoch")] = None,
    plan: Annotated[Path | None, typer.Option(
        "--plan", metavar="FILE", help="abort every entry of an abort plan (find-hanging -o plan, sweep)")] = None,
    force: Annotated[bool, typer.Option(
        "--force", help="abort even if the coordinator still holds the transaction as live")] = False,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="validate and print the exact marker; write nothing")] = False,
    yes: YesOpt = False,
    bootstrap_server: BootstrapOpt = None,
    command_config: CommandConfigOpt = None,
    profile: ProfileOpt = None,
    timeout: TimeoutOpt = DEFAULT_TIMEOUT,
    output: OutputOpt = None,
) -> None:
    """Abort a hanging transaction: validated with the leader's producer state and the coordinator's
    view, confirmed (or --yes), then the LSO before and after."""
    legacy = _check_args(topic, partition, start_offset, producer_id, producer_epoch, coordinator_epoch, plan)
    fmt = resolve_output(output)
    with user_errors(), connect(Connection(bootstrap_server, command_config, profile, timeout)) as client:
        if plan is not None:
            rows = _run_plan(client, plan, force, dry_run, yes)
            code = _plan_exit_code(rows)
        else:
            assert topic is not None and partition is not None
            rows = [_single(client, TopicPartition(topic, partition), start_offset, legacy, force, dry_run, yes)]
            code = exit_codes.ERROR if rows[0]["result"] == REFUSED else exit_codes.OK
    if plan is None and rows[0]["result"] == REFUSED:
        fail(rows[0]["message"], code)
    _emit(rows, fmt)
    if code != exit_codes.OK:
        raise typer.Exit(code)
