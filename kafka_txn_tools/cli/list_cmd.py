"""`kafka-txn list`: transactions known to the coordinators, filtered on the brokers where possible."""

from __future__ import annotations

from typing import Annotated

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
    duration_ms,
    now_ms,
    report_errors,
    resolve_output,
    user_errors,
    warn,
)


def _duration(duration_filter: int | None, min_duration: str | None) -> int | None:
    if duration_filter is not None and min_duration is not None:
        raise typer.BadParameter("give --duration-filter (milliseconds) or --min-duration, not both",
                                 param_hint="--min-duration")
    if min_duration is not None:
        return duration_ms(min_duration, "--min-duration")
    if duration_filter is not None and duration_filter >= 0:
        return duration_filter
    return None  # upstream: a negative --duration-filter lists everything


@app.command("list", epilog=exit_codes.HELP_TEXT)
def list_command(
    state: Annotated[list[str] | None, typer.Option(
        "--state", metavar="STATE", help="only these states, e.g. Ongoing (repeatable)")] = None,
    producer_id: Annotated[list[int] | None, typer.Option(
        "--producer-id", metavar="ID", help="only these producer ids (repeatable)")] = None,
    duration_filter: Annotated[int | None, typer.Option(
        "--duration-filter", metavar="MS",
        help="only transactions running longer than MS milliseconds (<0: all), as upstream")] = None,
    min_duration: Annotated[str | None, typer.Option(
        "--min-duration", metavar="DURATION", help="same as --duration-filter, as a duration: 15m, 900s")] = None,
    pattern: Annotated[str | None, typer.Option(
        "--transactional-id-pattern", metavar="REGEX", help="only ids fully matching REGEX (KIP-1152)")] = None,
    broker_id: Annotated[list[int] | None, typer.Option(
        "--broker-id", metavar="ID", help="ask only these brokers (default: all; repeatable)")] = None,
    bootstrap_server: BootstrapOpt = None,
    command_config: CommandConfigOpt = None,
    profile: ProfileOpt = None,
    timeout: TimeoutOpt = DEFAULT_TIMEOUT,
    output: OutputOpt = None,
) -> None:
    """List transactions from every broker's coordinator (TransactionalId, Coordinator, ProducerId, State)."""
    from kafka_txn_tools.admin.listing import ListFilters, list_transactions, normalize_states
    from kafka_txn_tools.cli.render import Column, Output
    from kafka_txn_tools.cli.upstream_format import LIST_HEADERS, list_rows

    fmt = resolve_output(output)
    with user_errors():
        filters = ListFilters(normalize_states(state or []), tuple(producer_id or ()),
                              _duration(duration_filter, min_duration), pattern, tuple(broker_id or ()))
        with connect(Connection(bootstrap_server, command_config, profile, timeout)) as client:
            listed = list_transactions(client, filters, now_ms)
    for message in listed.warnings:
        warn(message)
    report_errors(listed.errors)
    Output(
        kind="transactions",
        rows=[t.to_row() for t in listed.listings],
        columns=[Column("transactional_id", "TRANSACTIONAL ID"), Column("coordinator_id", "COORDINATOR"),
                 Column("producer_id", "PRODUCER ID"), Column("state", "STATE")],
        kafka_headers=LIST_HEADERS, kafka_rows=list_rows(listed.listings),
        errors=[e.to_row() for e in listed.errors], empty_message="no transactions",
    ).emit(fmt)
    if listed.errors:
        raise typer.Exit(exit_codes.PARTIAL)
