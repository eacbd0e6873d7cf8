"""`kafka-txn describe`: the coordinator's state of one, several, or all transactional ids."""

from __future__ import annotations

from typing import Annotated

import typer

from kafka_txn_tools.cli import exit_codes
from kafka_txn_tools.cli.errors import KafkaTxnCommand, fail, report_errors, user_errors
from kafka_txn_tools.cli.options import (
    BootstrapOpt,
    CommandConfigOpt,
    OutputFormat,
    OutputOpt,
    ProfileOpt,
    TimeoutOpt,
    WideOpt,
)
from kafka_txn_tools.cli.session import Connection, connect, now_ms

EXAMPLES = """\b
Examples:
  kafka-txn describe -t orders-writer-1
  kafka-txn describe -t app-1 app-2 -o json
  kafka-txn describe --all

One of --transactional-id (or ids as arguments) and --all is required.
"""


def _pending_cell(pending: list[dict[str, object]] | None) -> str:
    """`orders-1 (leader-offline)` for each partition a Prepare state still waits for; `-` otherwise."""
    if not pending:
        return "-"
    return ",".join(f"{p['topic']}-{p['partition']} ({p['reason'] or 'reason unknown'})" for p in pending)


def describe_command(
    transactional_id: Annotated[list[str] | None, typer.Option(
        "--transactional-id", "-t", metavar="ID", help="transactional id (repeatable; more ids may follow)")] = None,
    more_ids: Annotated[list[str] | None, typer.Argument(metavar="[ID ...]", show_default=False)] = None,
    describe_all: Annotated[bool, typer.Option("--all", help="describe every transactional id in the cluster")] = False,
    bootstrap_server: BootstrapOpt = None,
    command_config: CommandConfigOpt = None,
    profile: ProfileOpt = None,
    timeout: TimeoutOpt = None,
    output: OutputOpt = None,
    wide: WideOpt = False,
) -> None:
    """Describe transactions: state, producer id/epoch, timeout, start time, duration and partitions; in a
    Prepare state, the partitions still waiting for their marker and why."""
    from kafka_txn_tools.admin.describe import describe_transactions
    from kafka_txn_tools.cli.render import Column, Output, human_duration, none_as_dash
    from kafka_txn_tools.cli.upstream.format import DESCRIBE_HEADERS, describe_row

    ids = [*(transactional_id or []), *(more_ids or [])]
    if not ids and not describe_all:
        fail("give --transactional-id ID (one or more) or --all", exit_codes.USAGE)
    if ids and describe_all:
        fail("--all describes every id; do not combine it with ids", exit_codes.USAGE)
    with user_errors(), connect(Connection(bootstrap_server, command_config, profile, timeout)) as client:
        described = describe_transactions(client, ids, describe_all)
    now = now_ms()
    report_errors(described.errors)
    pending = described.pending
    rows = [{**d.to_row(now), "pending_partitions": [p.to_row() for p in pending[d.transactional_id]]
             if d.transactional_id in pending else None} for d in described.descriptions]
    Output(
        kind="transactions",
        rows=rows,
        columns=[Column("transactional_id", "TRANSACTIONAL ID"), Column("coordinator_id", "COORD", drop=3),
                 Column("producer_id", "PRODUCER ID", drop=2), Column("producer_epoch", "EPOCH", drop=2),
                 Column("state", "STATE"), Column("timeout_ms", "TIMEOUT", human_duration, drop=4),
                 Column("duration_ms", "DURATION", human_duration, drop=1),
                 Column("partitions", "PARTITIONS", none_as_dash, drop=5),
                 Column("pending_partitions", "WAITING FOR MARKERS", _pending_cell, drop=6)],
        kafka_headers=DESCRIBE_HEADERS, kafka_rows=[describe_row(d, now) for d in described.descriptions],
        errors=[e.to_row() for e in described.errors], extra={"partial": bool(described.errors)},
        empty_message="no transactions",
    ).emit(output or OutputFormat.table, wide=wide)
    if described.errors:
        # Never 0 with errors: some ids (or coordinators) are missing from the answer.
        raise typer.Exit(exit_codes.PARTIAL if described.descriptions else exit_codes.ERROR)
    if not described.descriptions and not describe_all:
        raise typer.Exit(exit_codes.ERROR)


def register(app: typer.Typer) -> None:
    app.command("describe", cls=KafkaTxnCommand, epilog=EXAMPLES + "\n" + exit_codes.HELP_TEXT)(describe_command)
