"""`kafka-txn dump --all --out DIR`: capture the cluster's transactional state for a sweep.

Rows and layout are defined in kafka_txn_tools/dumps/schema.py (the sweep reads the same);
collection is admin/dump.py. A failed broker or partition becomes an error row, not a failed dump.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from kafka_txn_tools.cli import exit_codes
from kafka_txn_tools.cli.errors import KafkaTxnCommand, fail, user_errors, warn
from kafka_txn_tools.cli.session import CLUSTER, Connection, cluster_options, connect, invocation_of, now_ms

EXAMPLES = """\b
Examples:
  kafka-txn dump --all --out /var/tmp/dump-$(date +%F) -b kafka-1:9092
  kafka-txn sweep /var/tmp/dump-2024-05-01 --out /var/tmp/sweep
--all is required; --out must be a new or empty directory.
"""


class DumpFormat(StrEnum):
    parquet = "parquet"
    jsonl = "jsonl"


def check_out_dir(out: Path) -> None:
    """--out must be creatable: new or empty, and not under a regular file (usage errors, before connecting)."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        fail(f"--out {out} exists and is not an empty directory: pick a new one", exit_codes.USAGE)
    for parent in out.parents:
        if parent.exists():
            if not parent.is_dir():
                fail(f"--out {out} cannot be created: {parent} is a file, not a directory", exit_codes.USAGE)
            break


@cluster_options
def dump_command(
    out: Annotated[Path, typer.Option("--out", metavar="DIR", help="directory to write (must be empty or new)")],
    dump_all: Annotated[bool, typer.Option("--all", help="every replica and every coordinator (required)")] = False,
    fmt: Annotated[DumpFormat, typer.Option("--format", help="file format of the rows")] = DumpFormat.parquet,
    conn: Connection = CLUSTER,
) -> None:
    """Dump producer state of every replica and every coordinator's transactions (input of `sweep`)."""
    from kafka_txn_tools.admin.dump import collect, connection_record, write_dump
    from kafka_txn_tools.cli.progress import progress_bar

    if not dump_all:
        fail("dump needs --all (the whole cluster is the only scope so far)", exit_codes.USAGE)
    check_out_dir(out)
    with user_errors():
        with connect(conn) as client, \
                progress_bar("dumping producer state") as (advance, set_total):
            rows = collect(client, now_ms, progress=advance, on_total=set_total)
            # The sweep's commands reach the cluster with the options this dump was given (no secret).
            rows.connection = connection_record(
                client, invocation_of(client, conn))
        from kafka_txn_tools.dumps.schema import ERRORS, PRODUCERS, TRANSACTIONS

        try:
            manifest = write_dump(rows, out, fmt.value, now_ms())
        except ImportError as exc:  # Parquet needs pyarrow (refused before any file is written); JSONL does not
            fail(f"dump --format parquet needs pyarrow ({exc}): pip install pyarrow, or use --format jsonl")
    for err in rows.errors[:20]:
        warn(str(err["message"]))
    typer.echo(f"wrote {out}: {manifest.counts[PRODUCERS]} producer rows, {manifest.counts[TRANSACTIONS]} "
               f"transaction rows, {manifest.counts[ERRORS]} error rows ({fmt.value})")
    if rows.errors:
        raise typer.Exit(exit_codes.PARTIAL)


def register(app: typer.Typer) -> None:
    app.command("dump", cls=KafkaTxnCommand, epilog=EXAMPLES + "\n" + exit_codes.HELP_TEXT)(dump_command)
