"""`kafka-txn list`: transactions known to the coordinators, filtered on the brokers where possible."""

from __future__ import annotations

from typing import Annotated

import typer

from kafka_txn_tools.cli import exit_codes
from kafka_txn_tools.cli.errors import KafkaTxnCommand, report_errors, user_errors, warn
from kafka_txn_tools.cli.options import (
    OutputFormat,
    OutputOpt,
    WideOpt,
    duration_ms,
)
from kafka_txn_tools.cli.session import CLUSTER, Connection, cluster_options, connect, now_ms

EXAMPLES = """\b
Examples:
  kafka-txn list -b kafka-1:9092
  kafka-txn list --state Ongoing --min-duration 15m
  kafka-txn list --transactional-id-pattern 'orders-.*' -o json

No option is required: filters combine, and without them every transaction is
listed.
"""


def _duration(duration_filter: int | None, min_duration: str | None) -> int | None:
    if duration_filter is not None and min_duration is not None:
        raise typer.BadParameter("give --duration-filter (milliseconds) or --min-duration, not both",
                                 param_hint="--min-duration")
    if min_duration is not None:
        return duration_ms(min_duration, "--min-duration", bare_unit="s")
    if duration_filter is not None and duration_filter >= 0:
        return duration_filter
    return None  # upstream: a negative --duration-filter lists everything


@cluster_options
def list_command(
    state: Annotated[list[str] | None, typer.Option(
        "--state", metavar="STATE", help="only these states, e.g. Ongoing (repeatable)")] = None,
    producer_id: Annotated[list[int] | None, typer.Option(
        "--producer-id", metavar="ID", help="only these producer ids (repeatable)")] = None,
    duration_filter: Annotated[int | None, typer.Option(
        "--duration-filter", metavar="MS",
        help="only transactions running longer than MS milliseconds (<0: all), as upstream")] = None,
    min_duration: Annotated[str | None, typer.Option(
        "--min-duration", metavar="DURATION",
        help="the same as a duration: 15m, 900s (a bare number means seconds)")] = None,
    pattern: Annotated[str | None, typer.Option(
        "--transactional-id-pattern", metavar="REGEX", help="only ids fully matching REGEX (KIP-1152)")] = None,
    broker_id: Annotated[list[int] | None, typer.Option(
        "--broker-id", metavar="ID", help="ask only these brokers (default: all; repeatable)")] = None,
    conn: Connection = CLUSTER,
    output: OutputOpt = None,
    wide: WideOpt = False,
) -> None:
    """List transactions from every broker's coordinator (TransactionalId, Coordinator, ProducerId, State)."""
    from kafka_txn_tools.admin.listing import ListFilters, list_transactions, normalize_states
    from kafka_txn_tools.cli.render import Column, Output, nothing_found
    from kafka_txn_tools.cli.upstream.format import LIST_HEADERS, list_rows

    with user_errors():
        filters = ListFilters(normalize_states(state or []), tuple(producer_id or ()),
                              _duration(duration_filter, min_duration), pattern, tuple(broker_id or ()))
        with connect(conn) as client:
            listed = list_transactions(client, filters, now_ms)
    for message in listed.warnings:
        warn(message)
    report_errors(listed.errors)
    Output(
        kind="transactions",
        rows=[t.to_row() for t in listed.listings],
        columns=[Column("transactional_id", "TRANSACTIONAL ID"), Column("coordinator_id", "COORDINATOR", drop=2),
                 Column("producer_id", "PRODUCER ID", drop=1), Column("state", "STATE")],
        kafka_headers=LIST_HEADERS, kafka_rows=list_rows(listed.listings),
        errors=[e.to_row() for e in listed.errors], extra={"partial": bool(listed.errors)},
        empty_message=nothing_found("transactions"),
    ).emit(output or OutputFormat.table, wide=wide)
    if listed.errors:
        raise typer.Exit(exit_codes.PARTIAL)


def register(app: typer.Typer) -> None:
    app.command("list", cls=KafkaTxnCommand, epilog=EXAMPLES + "\n" + exit_codes.HELP_TEXT)(list_command)
