"""`kafka-txn history`: the incidents `kafka-txn monitor` and `find-hanging --history` recorded, with how long
each lasted and how it ended; `--export DIR` writes them as Parquet for the Spark sweep."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from kafka_txn_tools.cli import exit_codes
from kafka_txn_tools.cli.errors import KafkaTxnCommand, fail
from kafka_txn_tools.cli.options import duration_ms

EXAMPLES = """\b
Examples:
  kafka-txn history                          the last 7 days
  kafka-txn history --since 30d -o json
  kafka-txn history --export /var/lib/kafka-txn/history
  kafka-txn sweep DUMP --history /var/lib/kafka-txn/history --out REPORT
No option is required. The file is ~/.local/state/kafka-txn/history.db
($XDG_STATE_HOME, $KAFKA_TXN_HISTORY or --history move it); `kafka-txn
monitor` and `find-hanging --history FILE` write it.
"""


class HistoryFormat(StrEnum):
    table = "table"
    json = "json"
    csv = "csv"


def history_command(
    since: Annotated[str | None, typer.Option(
        "--since", metavar="DURATION",
        help="incidents open at some time in this past period: 7d, 12h (a bare number means days; default 7d, "
             "and everything with --export)")] = None,
    history: Annotated[Path | None, typer.Option(
        "--history", metavar="FILE",
        help="the history file (default $KAFKA_TXN_HISTORY, else ~/.local/state/kafka-txn/history.db)")] = None,
    cluster: Annotated[str | None, typer.Option(
        "--cluster", metavar="NAME", help="only this cluster (as the monitor names it: a profile, or the "
                                          "bootstrap servers)")] = None,
    export: Annotated[Path | None, typer.Option(
        "--export", metavar="DIR",
        help="write incidents.parquet and scans.parquet here instead of listing (input of `sweep --history`)")
    ] = None,
    output: Annotated[HistoryFormat, typer.Option("--output", "-o", help="table, json or csv")] = HistoryFormat.table,
) -> None:
    """List incidents: each finding's life from first seen to resolved, and how it ended (by itself, or an
    audited abort or force-terminate: who, and the command)."""
    from kafka_txn_tools.cli.session import now_ms
    from kafka_txn_tools.history.incidents import default_path

    window = duration_ms(since, "--since", bare_unit="d") if since is not None else None
    path = history or default_path()
    if not path.exists():
        fail(f"no history at {path}: run `kafka-txn monitor` or `kafka-txn find-hanging --all --history {path}` "
             "first, or name the file with --history", exit_codes.ERROR)
    store = _open(path)
    try:
        if export is not None:
            _export(store, export, None if window is None else now_ms() - window)
            return
        incidents = store.incidents(now_ms() - (window if window is not None else 7 * 86_400_000), cluster)
    finally:
        store.close()
    _emit([i.to_row() for i in incidents], output, path)


def _open(path: Path) -> Any:
    import sqlite3

    from kafka_txn_tools.history.store import HistoryStore

    try:
        return HistoryStore(path)
    except (sqlite3.Error, OSError) as exc:
        fail(f"cannot open the history file {path}: {exc}")


def _export(store: Any, directory: Path, since_ms: int | None) -> None:
    from kafka_txn_tools.history.incidents import export_parquet

    if directory.exists() and not directory.is_dir():
        fail(f"--export {directory} is a file: give a directory", exit_codes.USAGE)
    try:
        counts = export_parquet(store, directory, since_ms)
    except ImportError as exc:
        fail(f"--export writes Parquet, which needs pyarrow ({exc}): pip install pyarrow")
    typer.echo(f"wrote {directory}: " + ", ".join(f"{name} ({n} rows)" for name, n in counts.items()), err=True)


def _when(ms: Any) -> str:
    import datetime as dt

    if ms is None:
        return "-"
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def _how(row: dict[str, Any]) -> str:
    if row["resolved_ms"] is None:
        return "open"
    if row["resolved_by"] is None:
        return str(row["resolution"])
    return f"{row['resolved_command']} (by {row['resolved_by']})"


def _emit(rows: list[dict[str, Any]], output: HistoryFormat, path: Path) -> None:
    from kafka_txn_tools.cli.options import OutputFormat
    from kafka_txn_tools.cli.render import Column, Output, human_duration, none_as_dash

    table = [{**r, "where": f"{r['topic']}-{r['partition']}" if r["topic"] is not None else r["transactional_id"],
              "first_seen": _when(r["first_seen_ms"]), "resolved": _when(r["resolved_ms"]), "how": _how(r)}
             for r in rows]
    flat = [{k: v for k, v in r.items() if k != "finding"} for r in rows] if output is HistoryFormat.csv else rows
    Output(
        kind="incidents", rows=flat, table_rows=table,
        columns=[Column("first_seen", "FIRST SEEN"), Column("kind", "KIND", drop=5), Column("where", "WHERE"),
                 Column("producer_id", "PRODUCER ID", drop=4),
                 Column("transactional_id", "TRANSACTIONAL ID", none_as_dash, drop=3),
                 Column("reason", "REASON", drop=6), Column("held_ms", "HELD", human_duration, drop=2),
                 Column("resolved", "RESOLVED", drop=1), Column("how", "HOW")],
        extra={"history": str(path)}, empty_message="no incidents in this period",
    ).emit(OutputFormat(output.value))


def register(app: typer.Typer) -> None:
    app.command("history", cls=KafkaTxnCommand, epilog=EXAMPLES + "\n" + exit_codes.HELP_TEXT)(history_command)
