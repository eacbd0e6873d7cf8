"""`kafka-txn sweep INPUT... --out DIR`: cluster-wide late and hanging transactions, on Spark.

INPUT is any mix of `kafka-txn dump` dirs, copied Kafka log-dir trees and kafka-dump-log.sh text
files. pyspark is imported inside the command only: `kafka-txn --help` must stay fast.
"""

from __future__ import annotations

import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from kafka_txn_tools.cli import exit_codes
from kafka_txn_tools.cli.errors import KafkaTxnCommand, fail, say
from kafka_txn_tools.cli.options import CONNECTION, CommandConfigOpt, ProfileOpt


class SweepOutput(StrEnum):
    table = "table"
    json = "json"


# The table in the tools' one format (kafka-txn's titles, ages as durations, `-` for empty cells);
# the JSON and the files in --out keep every column.
_COLUMNS = [
    ("topic", "TOPIC", 0),
    ("partition", "PART", 0),
    ("producer_id", "PRODUCER ID", 4),
    ("producer_epoch", "EPOCH", 6),
    ("start_offset", "START OFFSET", 0),
    ("age_ms", "AGE", 3),
    ("verdict", "VERDICT", 0),
    ("transactional_id", "TRANSACTIONAL ID", 5),
    ("leader_broker_id", "LEADER", 7),
    ("divergence", "DIVERGENCE", 2),
    ("reason", "REASON", 0),
]


def _parse_timeout(text: str) -> int:
    from kafka_txn_tools.durations import parse_duration_ms

    try:
        return parse_duration_ms(text, bare_unit="m")
    except ValueError as exc:
        fail(f"--max-transaction-timeout: {exc}", exit_codes.USAGE)


def _run(inputs: list[Path], out: Path, master: str, timeout_ms: int, as_of: int | None,
         include_late: bool, max_prepare_ms: int, executor_python: str | None, invocation: Any,
         history: Path | None = None, env_bootstrap: str | None = None) -> Any:
    from kafka_txn_tools.dumps.dump_log_text import DumpLogTextError
    from kafka_txn_tools.dumps.logdir import LogDirError
    from kafka_txn_tools.dumps.schema import DumpFormatError
    from kafka_txn_tools.spark.executors import ExecutorPythonError
    from kafka_txn_tools.spark.history import HistoryInputError
    from kafka_txn_tools.spark.ingest import InputError
    from kafka_txn_tools.spark.job import SweepError, run_sweep
    from kafka_txn_tools.spark.session import JavaNotFoundError

    try:
        return run_sweep([str(p) for p in inputs], out, master, timeout_ms, as_of, include_late,
                         max_prepare_ms=max_prepare_ms, executor_python=executor_python, invocation=invocation,
                         history=history, env_bootstrap=env_bootstrap)
    except (InputError, DumpFormatError, LogDirError, DumpLogTextError, HistoryInputError) as exc:
        fail(str(exc), exit_codes.USAGE)
    except (JavaNotFoundError, SweepError, ExecutorPythonError) as exc:
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
    executor_python: Annotated[str | None, typer.Option(
        "--executor-python", metavar="PATH",
        help="the Python a cluster's executors run, with kafka-txn-tools[spark] installed on every worker "
             "(default: $PYSPARK_PYTHON, else this Python's path); local[...] workers run this Python")] = None,
    output: Annotated[SweepOutput, typer.Option("--output", "-o", help="table or json")] = SweepOutput.table,
    bootstrap_server: Annotated[str | None, typer.Option(
        "--bootstrap-server", "-b", metavar="HOST:PORT[,...]", rich_help_panel=CONNECTION,
        help="the cluster the inputs were captured from: the printed commands reach it with this (default: "
             "--profile, then what a kafka-txn dump recorded, then $KAFKA_BOOTSTRAP_SERVERS); the sweep itself "
             "connects to nothing")] = None,
    command_config: CommandConfigOpt = None,
    profile: ProfileOpt = None,
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
    if executor_python is not None and master.startswith("local"):
        fail(f"--executor-python names the Python of a cluster's executors; {master} runs its workers with this "
             f"Python ({sys.executable}): drop the option, or pass --master spark://HOST:PORT", exit_codes.USAGE)
    from kafka_txn_tools.admin.advice import Invocation

    # Given options override what a dump recorded; the environment comes last (spark/origin.py).
    given = Invocation.of(bootstrap_server, profile, command_config)
    result = _run(inputs, out, master, timeout_ms, as_of, include_late, max_prepare_ms, executor_python,
                  given if given.options() else None, history, os.environ.get("KAFKA_BOOTSTRAP_SERVERS") or None)
    _print(result, output)


def _print(result: Any, output: SweepOutput) -> None:
    from kafka_txn_tools.admin.advice import is_command_line
    from kafka_txn_tools.cli.options import OutputFormat
    from kafka_txn_tools.cli.render import Column, Output, human_duration, nothing_found
    from kafka_txn_tools.timestamps import iso_utc

    columns = [Column(key, title, human_duration if key == "age_ms" else None, drop=drop)
               for key, title, drop in _COLUMNS]
    summary = result.summary
    doc = Output(
        kind="transactions", rows=result.rows, columns=columns, extra={"stuck": result.stuck, "summary": summary},
        empty_message=nothing_found("hanging transactions"), footer=_next_steps(result), verbatim=is_command_line,
    )
    note = no_cluster_note(result)
    if output is SweepOutput.json:
        doc.emit(OutputFormat.json)
        if note:
            say(note)
        return
    doc.emit(OutputFormat.table)
    if note:
        say(note)
    per_broker = ", ".join(f"{b}: {n}" for b, n in summary["late_partitions_by_broker"].items()) or "none"
    say(
        f"{summary['hanging']} hanging, {summary['stuck']} stuck at their coordinator, "
        f"{summary['late_live']} late but live, {summary['unverified']} unverified "
        f"(as of {iso_utc(summary['as_of_ms'])}); late partitions per broker: {per_broker}; "
        f"report: {Path(summary['outputs']['report.html'])}")


def _next_steps(result: Any) -> str:
    """After the table: for each row, what to do and the commands (each whole on its own line)."""
    lines = []
    for r in result.rows:
        commands = r.get("commands") or []
        lines += [f"{r['topic']}-{r['partition']} producer {r['producer_id']} ({r['reason']}): {r['action']}",
                  *(["  run:"] if commands else []), *(f"    {c}" for c in commands)]
    for s in result.stuck:
        lines += [f"{s['transactional_id']!r} ({s['state']}): {s['action']}",
                  *(["  run:"] if s["commands"] else []), *(f"    {c}" for c in s["commands"])]
    if result.summary["apply_plan"]:
        # The plan's commands end what the rows' commands end: one way or the other, never both.
        lines += ["or instead, all at once by the abort plan (checked first, all or nothing):", "  run:",
                  *(f"    {c}" for c in result.summary["apply_plan"])]
    for left in result.summary.get("left_out_of_plan") or []:
        lines += [f"not in the abort plan: {left['topic']}-{left['partition']} producer {left['producer_id']}: "
                  f"{left['why']}", *(["  run:"] if left["commands"] else []), *(f"    {c}" for c in left["commands"])]
    return "\n" + "\n".join(lines) + "\n" if lines else ""


def no_cluster_note(result: Any) -> str | None:
    """Said once when the inputs do not tell how to reach their cluster: a command line without one would be
    refused as printed, so none is printed, and this says in prose what to add."""
    summary = result.summary
    if summary["cluster"]["reaches_cluster"] or not (result.rows or result.stuck):
        return None
    plan = summary["outputs"]["abort-plan.yaml"]
    return ("no command is printed: these inputs do not record the cluster they came from (a kafka-txn dump "
            "does). Sweep again with -b/--bootstrap-server, --profile or --command-config to have them printed, "
            f"or check the plan with abort --plan {plan} --dry-run plus your cluster's connection options, then "
            "apply it without --dry-run")


def register(app: typer.Typer) -> None:
    app.command("sweep", cls=KafkaTxnCommand, epilog=exit_codes.HELP_TEXT)(sweep_command)
