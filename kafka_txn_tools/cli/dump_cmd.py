"""`kafka-txn dump --all --out DIR`: capture the cluster's transactional state for a sweep.

Rows and layout are helper-defined in kafka_txn_tools/dumps/schema.py (the sweep reads the same);
collection is admin/dump.py. A failed broker or partition becomes an error row, not a failed dump.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from kafka_txn_tools.cli import exit_codes
from kafka_txn_tools.cli.app import app
from kafka_txn_tools.cli.common import (
    DEFAULT_TIMEOUT,
    BootstrapOpt,
    CommandConfigOpt,
    Connection,
    ProfileOpt,
    TimeoutOpt,
    connect,
    fail,
    now_ms,
    user_errors,
    warn,
)


class DumpFormat(StrEnum):
    parquet = "parquet"
    jsonl = "jsonl"


@app.command("dump", epilog=exit_codes.HELP_TEXT)
def dump_command(
    out: Annotated[Path, typer.Option("--out", metavar="DIR", help="directory to write (must be empty or new)")],
    dump_all: Annotated[bool, typer.Option("--all", help="every replica and every coordinator (required)")] = False,
    fmt: Annotated[DumpFormat, typer.Option("--format", help="file format of the rows")] = DumpFormat.parquet,
    bootstrap_server: BootstrapOpt = None,
    command_config: CommandConfigOpt = None,
    profile: ProfileOpt = None,
    timeout: TimeoutOpt = DEFAULT_TIMEOUT,
) -> None:
    """Dump producer state of every replica and every coordinator's transactions (input of `sweep`)."""
    from kafka_txn_tools.admin.dump import collect
    from kafka_txn_tools.cli.progress import progress_bar

    if not dump_all:
        fail("dump needs --all (the whole cluster is the only scope so far)", exit_codes.USAGE)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        fail(f"--out {out} exists and is not an empty directory: pick a new one", exit_codes.USAGE)
    with user_errors(), connect(Connection(bootstrap_server, command_config, profile, timeout)) as client, \
            progress_bar("dumping producer state") as (advance, set_total):
        rows = collect(client, now_ms, progress=advance, on_total=set_total)
    from kafka_txn_tools.dumps.schema import ERRORS, PRODUCERS, TRANSACTIONS, DumpWriter

    try:
        writer = DumpWriter(out, fmt.value, capture_time_ms=now_ms())
    except ImportError as exc:  # Parquet needs pyarrow; JSONL does not
        fail(f"dump --format parquet needs pyarrow ({exc}): pip install pyarrow, or use --format jsonl")
    writer.add(PRODUCERS, rows.producers)
    writer.add(TRANSACTIONS, rows.transactions)
    writer.add(ERRORS, rows.errors)
    writer.brokers.update(rows.brokers)
    manifest = writer.close()
    for err in rows.errors[:20]:
        warn(str(err["message"]))
    typer.echo(f"wrote {out}: {manifest.counts[PRODUCERS]} producer rows, {manifest.counts[TRANSACTIONS]} "
               f"transaction rows, {manifest.counts[ERRORS]} error rows ({fmt.value})")
    if rows.errors:
        raise typer.Exit(exit_codes.PARTIAL)
