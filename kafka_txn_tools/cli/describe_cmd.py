"""`kafka-txn describe`: the coordinator's state of one, several, or all transactional ids."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from kafka_txn_tools.cli import exit_codes
from kafka_txn_tools.cli.app import app
from kafka_txn_tools.cli.common import (
    DEFAULT_TIMEOUT,
    BootstrapOpt,
    CommandConfigOpt,
    Connection,
    OutputOpt,
    ProfileOpt,
    TimeoutOpt,
    connect,
    fail,
    now_ms,
    report_errors,
    resolve_output,
    user_errors,
)
from kafka_txn_tools.models import ScanError

if TYPE_CHECKING:
    from kafka_txn_tools.admin.client import AdminClient, DescribeResult


def _ids_to_describe(client: AdminClient, ids: list[str], describe_all: bool) -> list[str]:
    if not describe_all:
        return ids
    listed = client.list_transactions(client.metadata([]).broker_ids())
    report_errors(listed.errors)
    return sorted({t.transactional_id for t in listed.listings})


def _exit_code(result: DescribeResult, asked: list[str]) -> int:
    if result.not_found or result.errors:
        return exit_codes.PARTIAL if result.descriptions else exit_codes.ERROR
    return exit_codes.OK if result.descriptions or not asked else exit_codes.ERROR


@app.command("describe", epilog=exit_codes.HELP_TEXT)
def describe_command(
    transactional_id: Annotated[list[str] | None, typer.Option(
        "--transactional-id", "-t", metavar="ID", help="transactional id (repeatable; more ids may follow)")] = None,
    more_ids: Annotated[list[str] | None, typer.Argument(metavar="[ID ...]", show_default=False)] = None,
    describe_all: Annotated[bool, typer.Option("--all", help="describe every transactional id in the cluster")] = False,
    bootstrap_server: BootstrapOpt = None,
    command_config: CommandConfigOpt = None,
    profile: ProfileOpt = None,
    timeout: TimeoutOpt = DEFAULT_TIMEOUT,
    output: OutputOpt = None,
) -> None:
    """Describe transactions: state, producer id/epoch, timeout, start time, duration and partitions."""
    from kafka_txn_tools.cli.render import Column, Output, human_duration, none_as_dash
    from kafka_txn_tools.cli.upstream_format import DESCRIBE_HEADERS, describe_row

    ids = [*(transactional_id or []), *(more_ids or [])]
    if not ids and not describe_all:
        fail("give --transactional-id ID (one or more) or --all", exit_codes.USAGE)
    if ids and describe_all:
        fail("--all describes every id; do not combine it with ids", exit_codes.USAGE)
    fmt = resolve_output(output)
    with user_errors(), connect(Connection(bootstrap_server, command_config, profile, timeout)) as client:
        ids = _ids_to_describe(client, ids, describe_all)
        result = client.describe_transactions(ids)
    now = now_ms()
    descriptions = [result.descriptions[i] for i in sorted(result.descriptions)]
    not_found = [ScanError("TRANSACTIONAL_ID_NOT_FOUND", f"transactional id {i!r} is not known to its coordinator",
                           transactional_id=i, api="DescribeTransactions", code=105) for i in sorted(result.not_found)]
    errors = [e.to_row() for e in [*result.errors, *not_found]]
    report_errors(result.errors)
    for err in not_found:
        typer.echo(f"error: {err.message}", err=True)
    Output(
        kind="transactions",
        rows=[d.to_row(now) for d in descriptions],
        columns=[Column("transactional_id", "TRANSACTIONAL ID"), Column("coordinator_id", "COORD"),
                 Column("producer_id", "PRODUCER ID"), Column("producer_epoch", "EPOCH"), Column("state", "STATE"),
                 Column("timeout_ms", "TIMEOUT", human_duration), Column("duration_ms", "DURATION", human_duration),
                 Column("partitions", "PARTITIONS", none_as_dash)],
        kafka_headers=DESCRIBE_HEADERS, kafka_rows=[describe_row(d, now) for d in descriptions],
        errors=errors, empty_message="no transactions",
    ).emit(fmt)
    code = _exit_code(result, ids)
    if code != exit_codes.OK:
        raise typer.Exit(code)
