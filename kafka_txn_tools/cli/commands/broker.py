"""`kafka-txn broker ...`: run the embedded Kafka broker in the foreground."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from kafka_txn_tools.cli import exit_codes

broker_app = typer.Typer(help="Run the embedded pure-Python Kafka cluster (rehearse incidents, test apps).",
                         no_args_is_help=True)


def register(app: typer.Typer) -> None:
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
    sets: list[str] = typer.Option(
        [], "--set", help="broker property override key=value (repeatable). The rehearsals (`broker scenario`) need: "
                          "transaction.partition.verification.enable=false (partition side), "
                          "share.transactional.acknowledgement.enable=true (share side, KIP-1289), "
                          "transaction.two.phase.commit.enable=true (2pc-prepared)"),
    metrics_port: int | None = typer.Option(None, "--metrics-port", help="serve Prometheus metrics here"),
) -> None:
    """Start N nodes in this process; print `bootstrap.servers=...` once all are ready; stop on SIGTERM/SIGINT."""
    from kafka_txn_broker.configs.broker_config import BrokerConfig, ConfigError
    from kafka_txn_broker.embedded import run_foreground

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
    from kafka_txn_broker.configs.broker_config import DEFINITIONS

    for key in DEFINITIONS.values():
        typer.echo(f"{key.name}={key.default}    # {key.doc}")


@broker_app.command("scenario")
def scenario(
    name: str = typer.Argument(..., help="late-write-after-abort, zombie-after-timeout, "
                                         "unregistered-partition-commit (partition-side), marker-retry-rejected, "
                                         "epoch-exhaustion (coordinator-side), share-ack-producer-dies, "
                                         "share-ack-leadership-move, share-ack-stalled (share-side), 2pc-prepared, "
                                         "a group name, or all (partition- and coordinator-side); "
                                         "commit-marker-skipped stops a broker, so it runs only in the process "
                                         "of an embedded cluster (Python: ScenarioOptions(nodes=cluster))"),
    bootstrap_server: str = typer.Option(..., "--bootstrap-server", "-b", help="host:port of any broker"),
    command_config: Path | None = typer.Option(
        None, "--command-config", metavar="FILE",
        help="Java client .properties for a secured cluster: security.protocol, sasl.*, ssl.* (as kafka-txn's "
             "other commands take them)"),
    topic_prefix: str = typer.Option("scenario", "--topic-prefix", help="prefix of the new topic and ids"),
    backdate_minutes: float = typer.Option(30.0, "--backdate-minutes", min=0,
                                           help="CreateTime of the misbehaving batches this long before sending "
                                                "(a paused producer's batch is old when it lands); the default, "
                                                "past the brokers' default max transaction timeout (15m), makes "
                                                "the first `find-hanging --all` show them"),
    healthy: bool = typer.Option(True, "--healthy/--no-healthy",
                                 help="also create healthy committed, aborted and open transactions"),
    zombie_timeout_ms: int = typer.Option(1000, "--zombie-timeout-ms", min=1,
                                          help="transaction.timeout.ms of the zombie (zombie-after-timeout) and "
                                               "of the stalled producer (epoch-exhaustion)"),
    open_timeout_ms: int = typer.Option(600000, "--open-timeout-ms", min=1,
                                        help="transaction.timeout.ms of the healthy open transaction and of the "
                                             "long-lived ones (share-ack-leadership-move, share-ack-stalled); at "
                                             "most the brokers' transaction.max.timeout.ms"),
    wait_seconds: float = typer.Option(60.0, "--wait-seconds", min=1,
                                       help="how long to wait for the coordinator's timeout abort"),
    output: str = typer.Option("json", "--output", "-o", help="json or table"),
) -> None:
    """Create real hanging transactions through the protocol and print their ground truth, and the command
    that finds them.

    The partition-side ones need a broker that does not verify transactional writes (Kafka < 3.6, or
    `--set transaction.partition.verification.enable=false` on the embedded broker); the coordinator-side
    ones emulate an upstream bug (KAFKA-19999, KAFKA-20090) with the embedded broker's test-only
    `fault.injection`, switched on for their own transactional id (`kafka-txn broker upgrade` is their fix).
    The share-side ones (KIP-1289) need the brokers started with
    `kafka-txn broker start --set share.transactional.acknowledgement.enable=true`, 2pc-prepared (KIP-939)
    with `--set transaction.two.phase.commit.enable=true`.
    """
    import json

    from kafka_txn_broker.testing.raw_client import RawClientError
    from kafka_txn_broker.testing.scenarios import ScenarioError, ScenarioOptions, run_scenario

    if output not in ("json", "table"):
        typer.echo(f"error: --output {output!r}: use json or table", err=True)
        raise typer.Exit(exit_codes.USAGE)
    options = ScenarioOptions(topic_prefix=topic_prefix, backdate_ms=int(backdate_minutes * 60000), healthy=healthy,
                              zombie_timeout_ms=zombie_timeout_ms, open_timeout_ms=open_timeout_ms,
                              wait_s=wait_seconds)
    transport = _transport(bootstrap_server, command_config) if command_config is not None else None
    try:
        results = run_scenario(name, bootstrap_server, options, transport)
    except (ScenarioError, RawClientError) as exc:
        typer.echo(f"error: scenario {name}: {exc}", err=True)
        raise typer.Exit(exit_codes.ERROR) from None
    find = _find_command(bootstrap_server, command_config)
    if output == "json":
        typer.echo(json.dumps({"scenarios": [r.to_dict() for r in results], "find": find}, indent=2))
        return
    typer.echo(f"# find it: {find}")
    for r in results:
        typer.echo(f"# {r.name}: {r.incident}")
        for h in r.hanging:
            typer.echo(f"HANGING  {h.topic}-{h.partition} producerId={h.producer_id} epoch={h.producer_epoch} "
                       f"startOffset={h.start_offset} transactionalId={h.transactional_id} "
                       f"coordinator={h.coordinator_state}")
        for st in r.stuck:
            typer.echo(f"STUCK    {st.transactional_id} {st.state} producerId={st.producer_id} "
                       f"epoch={st.producer_epoch} pending={','.join(st.pending_partitions)} ({st.pending_reason}) "
                       f"reason={st.reason} emulates={st.emulates} clears: {st.clears}")
        for sh in r.share:
            typer.echo(f"SHARE    {sh.transactional_id} producerId={sh.producer_id} group={sh.group} "
                       f"pending={sh.topic}-{sh.partition}:{sh.first_offset}-{sh.last_offset} "
                       f"leader={sh.leader}->{sh.new_leader} outcome: {sh.outcome}; clears: {sh.clears}")
        for pr in r.prepared:
            typer.echo(f"PREPARED {pr.topic}-{pr.partition} producerId={pr.producer_id} epoch={pr.producer_epoch} "
                       f"startOffset={pr.start_offset} transactionalId={pr.transactional_id} "
                       f"coordinator={pr.coordinator_state} clears: {pr.clears}")
        for ok in r.healthy:
            typer.echo(f"HEALTHY  {ok.topic}-{ok.partition} producerId={ok.producer_id} {ok.state} "
                       f"transactionalId={ok.transactional_id}")


@broker_app.command("upgrade")
def upgrade(
    bootstrap_server: str | None = typer.Option(None, "--bootstrap-server", "-b", help="host:port of any broker"),
    command_config: Path | None = typer.Option(None, "--command-config", metavar="FILE",
                                               help="Java client .properties for a secured cluster"),
    profile: str | None = typer.Option(None, "--profile", help="a named connection profile"),
    yes: bool = typer.Option(False, "--yes", "-y", help="do not ask for confirmation"),
) -> None:
    """Upgrade the embedded cluster to the fixed release of the upstream bug it emulates.

    A rehearsal of KAFKA-19999 or KAFKA-20090 (`broker scenario marker-retry-rejected`, `epoch-exhaustion`)
    runs the embedded broker as Kafka before the fix (its test-only, dynamic `fault.injection`). Where
    find-hanging's remedy is a broker upgrade, this is it: the emulation goes off at the cluster default and on
    every broker (a restart keeps it: the property is kept in the cluster's metadata), so the leaders accept a
    retried marker and the coordinator fences the last epoch from then on. Refused, writing nothing, on a
    cluster that emulates no bug (any Apache Kafka: upgrade it with your release process)."""
    from kafka_txn_tools.admin import emulation
    from kafka_txn_tools.cli.errors import fail, user_errors
    from kafka_txn_tools.cli.session import Connection, connect

    with user_errors(), connect(Connection(bootstrap_server, command_config, profile, None)) as client:
        brokers = client.metadata([]).broker_ids()
        found = emulation.emulations(client, brokers)
        if not found:
            fail(f"nothing to upgrade on {client.cluster_name}: no broker emulates an upstream bug (the embedded "
                 "broker's fault.injection is empty, or this is not the embedded broker: upgrade a real cluster "
                 "with its release process)", exit_codes.ERROR)
        bugs = ", ".join(sorted({e.bug for e in found}))
        if not yes and not _confirm_upgrade(client.cluster_name, bugs, brokers):
            fail("not upgraded: nothing was written", exit_codes.ERROR)
        emulation.switch_off(client, brokers)
        left = emulation.emulations(client, brokers)
    if left:
        fail(f"broker {', '.join(str(e.broker_id) for e in left)} still emulates {left[0].bug}", exit_codes.ERROR)
    typer.echo(f"upgraded brokers {', '.join(map(str, brokers))} to the release with the {bugs} fix "
               "(fault.injection off)")


def _confirm_upgrade(cluster: str, bugs: str, brokers: list[int]) -> bool:
    from kafka_txn_tools.cli.prompt import Confirmation, NoTerminal, ask
    from kafka_txn_tools.errors import UsageError

    try:
        return ask(Confirmation(cluster, [f"switch off the emulation of {bugs} (fault.injection) on brokers "
                                          f"{', '.join(map(str, brokers))}"], action="make"))
    except NoTerminal:
        raise UsageError("refusing to upgrade without confirmation: not a terminal", "pass --yes") from None


def _find_command(bootstrap_server: str, command_config: Path | None) -> str:
    """The scan a person runs first, with the scenario's connection options."""
    from kafka_txn_tools.admin.advice import Invocation

    return Invocation.of(bootstrap_server, None, command_config).line("find-hanging", "--all")


def _transport(bootstrap_server: str, command_config: Path) -> Any:
    """The scenarios' requests through kafka-python's client stack, with the TLS and SASL settings of
    `command_config` (kafka_txn_tools/clients/network.py)."""
    from kafka_txn_tools.clients.network import Network
    from kafka_txn_tools.connection.profiles import resolve_settings
    from kafka_txn_tools.errors import KafkaTxnError

    try:
        settings = resolve_settings(bootstrap_server, command_config, None)
        return Network(bootstrap_servers=settings.bootstrap_servers, **settings.kwargs)
    except KafkaTxnError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(exit_codes.USAGE) from None
    except Exception as exc:  # kafka-python: the cluster refused us or is not there
        typer.echo(f"error: cannot connect to {bootstrap_server} with {command_config}: {type(exc).__name__}: {exc}",
                   err=True)
        raise typer.Exit(exit_codes.ERROR) from None
