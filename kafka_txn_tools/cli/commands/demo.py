"""`kafka-txn demo`: the end-to-end demo on an embedded cluster."""

from __future__ import annotations

from pathlib import Path

import typer

from kafka_txn_tools.cli import exit_codes


def demo(
    data_dir: Path | None = typer.Option(None, "--data-dir", help="keep the cluster's data, dump and sweep here"),
    config: Path | None = typer.Option(
        None, "--config", metavar="FILE",
        help="broker properties (YAML, as `broker start --config`) that secure the demo's cluster with SASL, e.g. "
             "Kerberos or OAuth; needs --command-config"),
    command_config: Path | None = typer.Option(
        None, "--command-config", metavar="FILE",
        help="the operator's client .properties for that cluster: every kafka-txn command of the demo uses it"),
    no_sweep: bool = typer.Option(False, "--no-sweep", help="skip the Spark sweep of the dump (needs no JRE)"),
) -> None:
    """Rehearse a hanging-transaction incident on a 3-node embedded cluster, each step narrated:
    real clients, a stalled read_committed consumer, find-hanging, abort, dump, sweep."""
    from kafka_txn_tools.demo import Security, run

    if (config is None) != (command_config is None):
        typer.echo("error: --config and --command-config go together: the cluster's security settings and the "
                   "client properties that match them (docs/security-auth.md)", err=True)
        raise typer.Exit(exit_codes.USAGE)
    security = None
    if config is not None and command_config is not None:
        try:
            security = Security.load(config, command_config)
        except ValueError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(exit_codes.USAGE) from None
    try:
        ok = run(typer.echo, data_dir, security, sweep=not no_sweep)
    except ValueError as exc:  # e.g. a keytab without the broker's key: the cluster cannot start
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(exit_codes.USAGE) from None
    if not ok:
        raise typer.Exit(exit_codes.ERROR)


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)
