"""`kafka-txn demo`: the end-to-end demo on an embedded cluster."""

from __future__ import annotations

from pathlib import Path

import typer

from kafka_txn_tools.cli import exit_codes


def demo(
    data_dir: Path | None = typer.Option(None, "--data-dir", help="keep the cluster's data, dump and sweep here"),
) -> None:
    """Rehearse a hanging-transaction incident on a 3-node embedded cluster, each step narrated:
    real clients, a stalled read_committed consumer, find-hanging, abort, dump, sweep."""
    from kafka_txn_tools.demo import run

    if not run(typer.echo, data_dir):
        raise typer.Exit(exit_codes.ERROR)


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)
