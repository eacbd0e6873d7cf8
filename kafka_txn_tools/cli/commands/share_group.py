"""`kafka-txn describe-share-group`: per share-partition of a share group, its start offset and its records
in flight by state, and whether a transaction holds it at the LSO (flow: admin/share_groups.py)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from kafka_txn_tools.cli import exit_codes
from kafka_txn_tools.cli.errors import KafkaTxnCommand, report_errors, user_errors
from kafka_txn_tools.cli.options import (
    OutputFormat,
    OutputOpt,
    WideOpt,
)
from kafka_txn_tools.cli.session import CLUSTER, Connection, cluster_options, connect, invocation_of

EXAMPLES = """\b
Examples:
  kafka-txn describe-share-group --group orders-workers
  kafka-txn describe-share-group --group orders-workers -o json

--group is required. The records by state are read from __share_group_state
(READ on that topic); DESCRIBE on the group and its topics does the rest.
"""


@cluster_options
def describe_share_group_command(
    group: Annotated[str, typer.Option("--group", metavar="GROUP", help="the share group")],
    conn: Connection = CLUSTER,
    output: OutputOpt = None,
    wide: WideOpt = False,
    metrics_url: Annotated[list[str] | None, typer.Option(
        "--metrics-url", metavar="URL",
        help="a broker's Prometheus metrics endpoint (repeat for each broker): also list, per share-partition, "
             "the transactions holding records TX_PENDING (KIP-1289); no Kafka API lists them")] = None,
) -> None:
    """Show a share group's partitions: start offset, LSO and high watermark, records acknowledged,
    archived, released for redelivery and not yet acknowledged, and HELD when a read_committed group
    waits at the LSO for a transaction."""
    from kafka_txn_tools.admin.advice import is_command_line
    from kafka_txn_tools.admin.share_groups import describe_share_group
    from kafka_txn_tools.admin.share_pending import of_share_partition, read_metrics
    from kafka_txn_tools.cli.render import Column, Output, nothing_found

    with user_errors(), connect(conn) as client:
        view = describe_share_group(client, group)
        held, unread = read_metrics(metrics_url, _timeout_s(conn.timeout)) if metrics_url else (None, [])
        inv = invocation_of(client, conn)
        advice = _advice(client, view, held or [], inv)
    report_errors(unread)
    stalled = {(p.topic, p.partition) for p in view.stalled_partitions}
    rows = [{"group": view.group, "topic": p.topic, "partition": p.partition, "start_offset": p.start_offset,
             "last_stable_offset": p.last_stable_offset, "high_watermark": p.high_watermark, "lag": p.lag,
             "acknowledged": p.acknowledged, "archived": p.archived, "available": p.available,
             "unacknowledged": p.unacknowledged, "max_delivery_count": p.max_delivery_count,
             "held_at_lso": (p.topic, p.partition) in stalled, "error": p.error,
             "tx_pending": None if held is None else of_share_partition(held, view.group, p.topic, p.partition),
             **advice.get((p.topic, p.partition), {"action": None, "commands": []})}
            for p in view.partitions]
    Output(
        kind="share_group", rows=rows,
        # Decoration goes first on a narrow terminal; why records wait (HELD, TX_PENDING) never.
        columns=[Column("topic", "TOPIC"), Column("partition", "PART"), Column("start_offset", "START", drop=4),
                 Column("last_stable_offset", "LSO", drop=2),
                 Column("high_watermark", "HW", drop=5), Column("lag", "LAG", drop=3),
                 Column("acknowledged", "ACKED", drop=7), Column("archived", "ARCHIVED", drop=8),
                 Column("available", "RELEASED", drop=6), Column("unacknowledged", "NOT ACKED", drop=1),
                 Column("max_delivery_count", "MAX DELIV", drop=9),
                 Column("held_at_lso", "HELD", lambda held: "yes" if held else ""),
                 *([Column("tx_pending", "TX_PENDING", _pending_cell, wrap=True)] if held is not None else [])],
        extra={"group": view.group, "state": view.state, "members": view.members,
               "isolation_level": view.isolation_level, "partial": bool(unread)},
        empty_message=nothing_found("share-partition state", f"share group {view.group}, {view.state}"),
        footer=_next_steps(advice), verbatim=is_command_line,
    ).emit(output or OutputFormat.table, wide=wide)
    if unread:
        raise typer.Exit(exit_codes.PARTIAL)  # the TX_PENDING column is missing what an endpoint would say


def _advice(client: Any, view: Any, held: list[Any], inv: Any) -> dict[tuple[str, int], dict[str, Any]]:
    """What ends each hold on the group: per share-partition held at the LSO, the verdict find-hanging gives the
    transaction there (scoped to that partition); per share-partition whose records a transaction holds
    TX_PENDING (from the metrics), what ends that transaction. Each with its action and commands."""
    from kafka_txn_tools.admin import share_pending
    from kafka_txn_tools.admin.scan import ScanOptions, Scope, find_hanging
    from kafka_txn_tools.cli.session import now_ms

    out: dict[tuple[str, int], dict[str, Any]] = {}
    for p in view.stalled_partitions:
        report = find_hanging(client, Scope(topic=p.topic, partition=p.partition), now_ms,
                              ScanOptions(include_late=True, invocation=inv))
        rows = [r for r in report.results if (r.partition.topic, r.partition.partition) == (p.topic, p.partition)]
        if rows:
            out[(p.topic, p.partition)] = {"action": rows[0].action, "commands": list(rows[0].commands)}
        else:
            out[(p.topic, p.partition)] = {"action": (
                f"held at the LSO by a transaction open for less than the max transaction timeout: it is live and "
                f"its producer or coordinator ends it (find-hanging on {p.topic} follows it)"),
                "commands": []}
    mine = [h for h in held if h.group == view.group]
    ids = sorted({h.transactional_id for h in mine if h.transactional_id})
    described = client.describe_transactions(ids) if ids else None
    for h in mine:
        d = described.descriptions.get(h.transactional_id) if described and h.transactional_id else None
        judged = share_pending.advise(h, d, bool(described and h.transactional_id in described.not_found), now_ms(),
                                      inv)
        entry = out.setdefault((h.topic, h.partition), {"action": judged.action, "commands": []})
        entry["commands"] = list(dict.fromkeys([*entry["commands"], *judged.commands]))
    return out


def _next_steps(advice: dict[tuple[str, int], dict[str, Any]]) -> str:
    lines = []
    for (topic, partition), a in sorted(advice.items()):
        lines += [f"{topic}-{partition}: {a['action']}", *(["  run:"] if a["commands"] else []),
                  *(f"    {c}" for c in a["commands"])]
    return "\n" + "\n".join(lines) + "\n" if lines else ""


def _pending_cell(holders: list[dict[str, object]] | None) -> str:
    """`10 by etl-1 (16m)` per transaction holding records of the share-partition TX_PENDING; `-` for none."""
    from kafka_txn_tools.cli.render import human_duration

    if not holders:
        return "-"
    return ", ".join(f"{h['records']} by {h['transactional_id'] or h['producer_id']} "
                    f"({human_duration(h['oldest_age_ms'])})" for h in holders)


def _timeout_s(timeout: str | None) -> float:
    from kafka_txn_tools.cli.options import duration_ms

    return duration_ms(timeout, "--timeout", bare_unit="s") / 1000 if timeout else 10.0


def register(app: typer.Typer) -> None:
    app.command("describe-share-group", cls=KafkaTxnCommand,
                epilog=EXAMPLES + "\n" + exit_codes.HELP_TEXT)(describe_share_group_command)
