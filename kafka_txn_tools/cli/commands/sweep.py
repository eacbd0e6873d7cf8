"""`kafka-txn sweep INPUT... --out DIR`: cluster-wide late and hanging transactions, on Spark.

INPUT is any mix of `kafka-txn dump` dirs, copied Kafka log-dir trees and kafka-dump-log.sh text
files. pyspark is imported inside the command only: `kafka-txn --help` must stay fast.
"""

from __future__ import annotations

import os
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from kafka_txn_tools.cli import exit_codes
from kafka_txn_tools.cli.errors import KafkaTxnCommand, fail


class SweepOutput(StrEnum):
    table = "table"
    json = "json"


_COLUMNS = [
    ("topic", "Topic"),
    ("partition", "Partition"),
    ("producer_id", "ProducerId"),
    ("producer_epoch", "ProducerEpoch"),
    ("start_offset", "StartOffset"),
    ("duration_min", "Duration(min)"),
    ("verdict", "Verdict"),
    ("reason", "Reason"),
    ("transactional_id", "TransactionalId"),
    ("leader_broker_id", "Leader"),
    ("divergence", "Divergence"),
]


def _parse_timeout(text: str) -> int:
    from kafka_txn_tools.durations import parse_duration_ms

    try:
        return parse_duration_ms(text, bare_unit="m")
    except ValueError as exc:
        fail(f"--max-transaction-timeout: {exc}", exit_codes.USAGE)


def _run(inputs: list[Path], out: Path, master: str, timeout_ms: int, as_of: int | None,
         include_late: bool, max_prepare_ms: int, history: Path | None = None) -> Any:
    from kafka_txn_tools.dumps.dump_log_text import DumpLogTextError
    from kafka_txn_tools.dumps.logdir import LogDirError
    from kafka_txn_tools.dumps.schema import DumpFormatError
    from kafka_txn_tools.spark.history import HistoryInputError
    from kafka_txn_tools.spark.ingest import InputError
    from kafka_txn_tools.spark.job import SweepError, run_sweep
    from kafka_txn_tools.spark.session import JavaNotFoundError

    try:
        return run_sweep([str(p) for p in inputs], out, master, timeout_ms, as_of, include_late,
                         max_prepare_ms=max_prepare_ms, history=history)
    except (InputError, DumpFormatError, LogDirError, DumpLogTextError, HistoryInputError) as exc:
        fail(str(exc), exit_codes.USAGE)
    except (JavaNotFoundError, SweepError) as exc:
        fail(str(exc), exit_codes.ERROR)
    except Exception as exc:
        module = type(exc).__module__
        if os.environ.get("KAFKA_TXN_DEBUG") or not module.startswith(("pyspark", "py4j")):
            raise
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        fail(f"the Spark job failed: {first} (set KAFKA_TXN_DEBUG=1 for the full trace)")


def sweep_command(
    inputs: Annotated[list[Path], typer.Argument(
        metavar="INPUT...", help="kafka-txn dump dirs, Kafka log-dir trees, kafka-dump-log.sh text files")],
    out: Annotated[Path, typer.Option("--out", metavar="DIR", help="where to write the results")],
    master: Annotated[str, typer.Option(
        "--master", metavar="local[*]|spark://HOST:PORT", help="Spark master")] = "local[*]",
    max_transaction_timeout: Annotated[str, typer.Option(
        "--max-transaction-timeout", metavar="DURATION",
        help="late after this long without a write (15m, 900s; a bare number means minutes)")] = "15m",
    as_of: Annotated[int | None, typer.Option(
        "--as-of", metavar="MS", help="judge ages at this epoch ms (default: the inputs' capture time)")] = None,
    include_late: Annotated[bool, typer.Option(
        "--include-late", help="also report late transactions the coordinator confirms live")] = False,
    max_prepare: Annotated[str, typer.Option(
        "--max-prepare-time", metavar="DURATION",
        help="stuck when held in a Prepare state longer than this (1m, 90s; a bare number means seconds)")] = "1m",
    output: Annotated[SweepOutput, typer.Option("--output", "-o", help="table or json")] = SweepOutput.table,
    history: Annotated[Path | None, typer.Option(
        "--history", metavar="DIR",
        help="a `kafka-txn history --export` directory: the report adds incident trends per cluster and topic")
    ] = None,
) -> None:
    """Sweep captured state for late and hanging transactions; write a report and an abort plan.

    Outputs in DIR: late_transactions/ (Parquet), late_transactions.csv, replica_divergence.csv,
    stuck_transactions.json (stuck at the coordinator), summary.json, abort-plan.yaml (for
    `kafka-txn abort --plan`), report.html.
    """
    timeout_ms = _parse_timeout(max_transaction_timeout)
    from kafka_txn_tools.cli.options import duration_ms

    max_prepare_ms = duration_ms(max_prepare, "--max-prepare-time", bare_unit="s")
    result = _run(inputs, out, master, timeout_ms, as_of, include_late, max_prepare_ms, history)
    _print(result, output)


def _print(result: Any, output: SweepOutput) -> None:
    from kafka_txn_tools.cli.options import OutputFormat
    from kafka_txn_tools.cli.render import Column, Output

    columns = [Column(key, title) for key, title in _COLUMNS]
    summary = result.summary
    doc = Output(
        kind="transactions", rows=result.rows, columns=columns, extra={"stuck": result.stuck, "summary": summary},
        empty_message="no hanging transactions",
    )
    if output is SweepOutput.json:
        doc.emit(OutputFormat.json)
        return
    doc.emit(OutputFormat.table)
    per_broker = ", ".join(f"{b}: {n}" for b, n in summary["late_partitions_by_broker"].items()) or "none"
    typer.echo(
        f"{summary['hanging']} hanging, {summary['stuck']} stuck at their coordinator, "
        f"{summary['late_live']} late but live, {summary['unverified']} unverified "
        f"(as of {summary['as_of_ms']} ms); late partitions per broker: {per_broker}; "
        f"report: {Path(summary['outputs']['report.html'])}",
        err=True,
    )


def register(app: typer.Typer) -> None:
    app.command("sweep", cls=KafkaTxnCommand, epilog=exit_codes.HELP_TEXT)(sweep_command)
