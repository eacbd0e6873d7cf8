"""`kafka-txn describe`: the coordinator's state of one, several, or all transactional ids."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from kafka_txn_tools.cli import exit_codes
from kafka_txn_tools.cli.errors import KafkaTxnCommand, fail, report_errors, user_errors
from kafka_txn_tools.cli.options import (
    OutputFormat,
    OutputOpt,
    WideOpt,
)
from kafka_txn_tools.cli.session import CLUSTER, Connection, cluster_options, connect, invocation_of, now_ms

if TYPE_CHECKING:
    from collections.abc import Iterable

    from kafka_txn_tools.admin.share_pending import ShareHold
    from kafka_txn_tools.models import ScanError, StuckTransaction

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
    return ", ".join(f"{p['topic']}-{p['partition']} ({p['reason'] or 'reason unknown'})" for p in pending)


def _share_cell(held: list[dict[str, object]] | None) -> str:
    """`orders-0 workers: 10` for each share-partition where the transaction holds records TX_PENDING."""
    if not held:
        return "-"
    return ",".join(f"{h['topic']}-{h['partition']} {h['group']}: {h['records']}" for h in held)


@cluster_options
def describe_command(
    transactional_id: Annotated[list[str] | None, typer.Option(
        "--transactional-id", "-t", metavar="ID", help="transactional id (repeatable; more ids may follow)")] = None,
    more_ids: Annotated[list[str] | None, typer.Argument(metavar="[ID ...]", show_default=False)] = None,
    describe_all: Annotated[bool, typer.Option("--all", help="describe every transactional id in the cluster")] = False,
    conn: Connection = CLUSTER,
    output: OutputOpt = None,
    wide: WideOpt = False,
    metrics_url: Annotated[list[str] | None, typer.Option(
        "--metrics-url", metavar="URL",
        help="a broker's Prometheus metrics endpoint (repeat for each broker): also list the share-group records "
             "each transaction holds TX_PENDING (KIP-1289); no Kafka API lists them")] = None,
) -> None:
    """Describe transactions: state, producer id/epoch, timeout, start time, duration and partitions; in a
    Prepare state, the partitions still waiting for their marker and why."""
    from kafka_txn_tools.admin.advice import is_command_line
    from kafka_txn_tools.admin.describe import advise, describe_transactions
    from kafka_txn_tools.admin.emulation import with_upgrades
    from kafka_txn_tools.admin.share_pending import hold_row, of_transaction
    from kafka_txn_tools.cli.render import Column, Output, human_duration, nothing_found
    from kafka_txn_tools.cli.upstream.format import DESCRIBE_HEADERS, describe_row

    ids = [*(transactional_id or []), *(more_ids or [])]
    if not ids and not describe_all:
        fail("give --transactional-id ID (one or more) or --all", exit_codes.USAGE)
    if ids and describe_all:
        fail("--all describes every id; do not combine it with ids", exit_codes.USAGE)
    with user_errors(), connect(conn) as client:
        described = describe_transactions(client, ids, describe_all)
        now = now_ms()
        invocation = invocation_of(client, conn)
        advise(client, described, now, invocation)
        upgraded = with_upgrades(client, list(described.stuck.values()), invocation)  # as find-hanging's rows
        described.stuck.update((r.transactional_id, r) for r in upgraded)
    held = _share_holds(metrics_url, conn.timeout, described.errors)
    report_errors(described.errors)
    pending = described.pending
    rows = [{**d.to_row(now), "pending_partitions": [p.to_row() for p in pending[d.transactional_id]]
             if d.transactional_id in pending else None,
             "share_pending": None if held is None else [
                 hold_row(h) for h in of_transaction(held, d.producer_id, d.transactional_id)],
             **_advice(described.stuck.get(d.transactional_id))}
            for d in described.descriptions]
    Output(
        kind="transactions",
        rows=rows,
        # Decoration goes first on a narrow terminal; what a transaction waits for (the reasons) never.
        columns=[Column("transactional_id", "TRANSACTIONAL ID"), Column("coordinator_id", "COORD", drop=7),
                 Column("producer_id", "PRODUCER ID", drop=5), Column("producer_epoch", "EPOCH", drop=6),
                 Column("state", "STATE"), Column("timeout_ms", "TIMEOUT", human_duration, drop=4),
                 Column("duration_ms", "DURATION", human_duration, drop=2),
                 Column("partitions", "PARTITIONS", drop=3),
                 *([Column("share_pending", "SHARE TX_PENDING", _share_cell)] if held is not None else []),
                 Column("pending_partitions", "WAITING FOR MARKERS", _pending_cell, wrap=True)],
        kafka_headers=DESCRIBE_HEADERS, kafka_rows=[describe_row(d, now) for d in described.descriptions],
        errors=[e.to_row() for e in described.errors], extra={"partial": bool(described.errors)},
        empty_message=nothing_found("transactions"), footer=_next_steps(described.stuck.values()),
        verbatim=is_command_line,
    ).emit(output or OutputFormat.table, wide=wide)
    if described.errors:
        # Never 0 with errors: some ids (or coordinators) are missing from the answer.
        raise typer.Exit(exit_codes.PARTIAL if described.descriptions else exit_codes.ERROR)
    if not described.descriptions and not describe_all:
        raise typer.Exit(exit_codes.ERROR)


def _advice(row: StuckTransaction | None) -> dict[str, object]:
    """A stuck transaction's verdict, what ends it and the commands that do (None for the others)."""
    if row is None:
        return {"stuck_reason": None, "action": None, "commands": []}
    return {"stuck_reason": row.reason.value, "action": row.action, "commands": list(row.commands)}


def _next_steps(rows: Iterable[StuckTransaction]) -> str:
    """After the table, for each stuck transaction: why, what to do, and the commands (kept whole)."""
    lines = []
    for r in rows:
        lines += [f"{r.transactional_id!r} ({r.state}): {r.detail}", f"  do: {r.action}",
                  *(["  run:"] if r.commands else []), *(f"    {c}" for c in r.commands)]
    return "\n" + "\n".join(lines) + "\n" if lines else ""


def _share_holds(urls: list[str] | None, timeout: str | None, errors: list[ScanError]) -> list[ShareHold] | None:
    """Every TX_PENDING hold the endpoints report; None without --metrics-url (the column is left out)."""
    if not urls:
        return None
    from kafka_txn_tools.admin.share_pending import read_metrics
    from kafka_txn_tools.cli.options import duration_ms

    found, unread = read_metrics(urls, duration_ms(timeout, "--timeout", bare_unit="s") / 1000 if timeout else 10.0)
    errors.extend(unread)
    return found


def register(app: typer.Typer) -> None:
    app.command("describe", cls=KafkaTxnCommand, epilog=EXAMPLES + "\n" + exit_codes.HELP_TEXT)(describe_command)
