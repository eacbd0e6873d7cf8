"""`kafka-txn demo`: the end-to-end demo on an embedded cluster."""

from __future__ import annotations

from pathlib import Path

import typer

from kafka_txn_tools.cli import exit_codes
from kafka_txn_tools.cli.app import app


@app.command("demo")
def demo(
    data_dir: Path | None = typer.Option(None, "--data-dir", help="keep the cluster's data here"),
    records: int = typer.Option(10_000, "--records", min=1, help="records to produce"),
) -> None:
    """Run a 3-node embedded cluster with real clients and narrate each step."""
    from kafka_txn_tools.demo import run

    if not run(typer.echo, data_dir, records):
        raise typer.Exit(exit_codes.ERROR)
