"""`kafka-txn broker ...`: run the embedded Kafka broker in the foreground."""

from __future__ import annotations

from pathlib import Path

import typer

from kafka_txn_tools.cli import exit_codes
from kafka_txn_tools.cli.app import app

broker_app = typer.Typer(help="Run the embedded pure-Python Kafka cluster (rehearse incidents, test apps).",
                         no_args_is_help=True)
app.add_typer(broker_app, name="broker")


def _ports(port: int, nodes: int) -> list[int]:
    # --port 0 lets every node pick a free port; --port P gives nodes P, P+1, ... so a restart
    # after a crash comes back on the same addresses and clients reconnect.
    return [0] * nodes if port == 0 else [port + i for i in range(nodes)]


@broker_app.command("start")
def start(
    nodes: int = typer.Option(3, "--nodes", min=1, max=64, help="broker nodes in the cluster"),
    port: int = typer.Option(0, "--port", min=0, max=65535, help="first node's port (0 = pick free ports)"),
    data_dir: Path = typer.Option(..., "--data-dir", help="log dirs go to DIR/node-<id>/"),
    config: Path | None = typer.Option(None, "--config", help="YAML file of broker properties",
                                        exists=True, dir_okay=False),
    sets: list[str] = typer.Option([], "--set", help="broker property override key=value (repeatable)"),
    metrics_port: int | None = typer.Option(None, "--metrics-port", help="serve Prometheus metrics here"),
) -> None:
    """Start N nodes in this process; print `bootstrap.servers=...` once all are ready; stop on SIGTERM/SIGINT."""
    from kafka_txn_broker.config import BrokerConfig, ConfigError
    from kafka_txn_broker.runner import run_foreground

    try:
        cfg = BrokerConfig.from_sources(config, sets)
    except ConfigError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(exit_codes.USAGE) from None
    try:
        run_foreground(nodes, data_dir, cfg, _ports(port, nodes), metrics_port)
    except OSError as exc:
        typer.echo(f"error: cannot start the broker: {exc} (is the port in use? try --port 0)", err=True)
        raise typer.Exit(exit_codes.ERROR) from None


@broker_app.command("config")
def show_config() -> None:
    """List the supported broker properties with their defaults."""
    from kafka_txn_broker.config import KEYS

    for key in KEYS.values():
        typer.echo(f"{key.name}={key.default}    # {key.doc}")
