"""`kafka-txn monitor`: find-hanging every --interval, served over HTTP to Prometheus and people
(kafka_txn_tools/monitor/). Read-only: it sends find-hanging's reads and nothing else."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from kafka_txn_tools.cli import exit_codes
from kafka_txn_tools.cli.errors import KafkaTxnCommand, fail, note, user_errors, warn
from kafka_txn_tools.cli.options import duration_ms
from kafka_txn_tools.cli.session import CLUSTER, Connection, cluster_options

DEFAULT_PORT = 8797
DEFAULT_LISTEN = f"0.0.0.0:{DEFAULT_PORT}"

EXAMPLES = f"""\b
Examples:
  kafka-txn monitor -b kafka-1:9092
  kafka-txn monitor --profile prod --listen 127.0.0.1:{DEFAULT_PORT} --interval 1m
Then scrape http://HOST:{DEFAULT_PORT}/metrics with Prometheus (deploy/prometheus has
the alert rules), or open http://HOST:{DEFAULT_PORT}/ in a browser.

\b
Endpoints: /metrics (Prometheus), /healthz, /api/findings (find-hanging's
JSON), / (status page). No option is required; the default port is
{DEFAULT_PORT}. --web-config FILE adds TLS and basic auth (Prometheus
exporter-toolkit's format); without it, a warning says when the findings
are served beyond loopback. It only reads: a principal with DESCRIBE and
READ is enough (docs/monitor.md lists the ACLs). SIGTERM or Ctrl-C stops it.
"""


def parse_listen(text: str) -> tuple[str, int]:
    """HOST:PORT (HOST may be empty for every interface, [v6] in brackets; PORT 0 picks a free one)."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) < 65536:
        raise typer.BadParameter(f"{text!r} is not HOST:PORT, e.g. 0.0.0.0:{DEFAULT_PORT}", param_hint="--listen")
    return host.strip("[]") or "0.0.0.0", int(port)  # noqa: S104 - an exporter listens for its scraper


@cluster_options
def monitor_command(
    listen: Annotated[str, typer.Option(
        "--listen", metavar="HOST:PORT", help=f"where to serve HTTP (default {DEFAULT_LISTEN}; port 0: any free)")
    ] = DEFAULT_LISTEN,
    interval: Annotated[str, typer.Option(
        "--interval", metavar="DURATION", help="time between scans: 30s, 1m (a bare number means seconds)")] = "30s",
    max_timeout: Annotated[str, typer.Option(
        "--max-transaction-timeout", metavar="DURATION",
        help="the brokers' transaction.max.timeout.ms, as find-hanging (a bare number means minutes)")] = "15m",
    max_prepare: Annotated[str, typer.Option(
        "--max-prepare-time", metavar="DURATION",
        help="report a transaction held in a Prepare state longer than this, as find-hanging")] = "1m",
    top: Annotated[int, typer.Option(
        "--top", metavar="N", min=1,
        help="findings, held partitions and held-back groups given a /metrics series each; the rest are "
             "counted")] = 50,
    history: Annotated[Path | None, typer.Option(
        "--history", metavar="FILE",
        help="the incident history file (default $KAFKA_TXN_HISTORY, else "
             "~/.local/state/kafka-txn/history.db)")] = None,
    no_history: Annotated[bool, typer.Option("--no-history", help="keep no incident history")] = False,
    audit_log: Annotated[Path | None, typer.Option(
        "--audit-log", metavar="FILE",
        help="the audit log whose writes explain resolutions (default as `abort`'s: $KAFKA_TXN_AUDIT_LOG, "
             "else ~/.local/state/kafka-txn/audit.log)")] = None,
    web_config: Annotated[Path | None, typer.Option(
        "--web-config", metavar="FILE",
        help="TLS and basic auth for every endpoint, in Prometheus exporter-toolkit's web config format "
             "(tls_server_config, basic_auth_users with bcrypt hashes); docs/monitor.md#securing-the-endpoints"
    )] = None,
    open_healthz: Annotated[bool, typer.Option(
        "--open-healthz",
        help="serve /healthz without basic auth, for liveness probes (TLS and a required client certificate "
             "still apply: they are the connection's)")] = False,
    conn: Connection = CLUSTER,
) -> None:
    """Watch the cluster: run find-hanging every --interval and serve the result to Prometheus (/metrics),
    scripts (/api/findings) and people (a status page), with the incident history. Read-only."""
    host, port = parse_listen(listen)
    web = _web_config(web_config, open_healthz)
    interval_ms = duration_ms(interval, "--interval", bare_unit="s", allow_zero=False)
    max_timeout_ms = duration_ms(max_timeout, "--max-transaction-timeout", bare_unit="m")
    max_prepare_ms = duration_ms(max_prepare, "--max-prepare-time", bare_unit="s")
    with user_errors():
        _run(Listening(host, port, web, frozenset({"/healthz"}) if open_healthz else frozenset()), interval_ms,
             max_timeout_ms, max_prepare_ms, top, None if no_history else history, no_history, audit_log,
             conn.bootstrap_server, conn.command_config, conn.profile, conn.timeout)


@dataclass(frozen=True)
class Listening:
    """Where and how the endpoints are served."""

    host: str
    port: int
    web: Any  # web_config.WebConfig | None
    open_paths: frozenset[str]


LOOPBACK = ("127.", "::1", "localhost")


def _web_config(path: Path | None, open_healthz: bool) -> Any:
    """The checked web config (a bad one is a usage error naming the key, before anything starts)."""
    if path is None:
        return None
    from kafka_txn_tools.errors import UsageError
    from kafka_txn_tools.monitor.web_config import load

    try:
        web = load(path)
    except UsageError as exc:
        fail(str(exc), exit_codes.USAGE)
    if open_healthz and web.auth is None:
        warn("--open-healthz has no effect: the web config asks for no basic auth")
    return web


def _exposure_warning(listening: Listening) -> None:
    """Exporters listen on every interface by default, and so does the monitor; but what it serves names
    topics, transactional ids and the commands to run, so say so when nothing protects it."""
    if listening.host.startswith(LOOPBACK):
        return
    if listening.web is not None:
        if listening.web.tls is None and listening.web.auth is not None:
            warn(f"basic auth without TLS on {listening.host}:{listening.port}: passwords cross the network in "
                 "clear; add tls_server_config to the web config")
        return
    warn(f"serving findings (topics, transactional ids, commands) on {listening.host}:{listening.port} "
         "without TLS or authentication; protect them with --web-config FILE "
         "(docs/monitor.md#securing-the-endpoints) or listen on loopback only with --listen "
         f"127.0.0.1:{listening.port}")


def _run(listening: Listening, interval_ms: int, max_timeout_ms: int, max_prepare_ms: int, top: int,
         history: Path | None, no_history: bool, audit_log: Path | None, *connection: Any) -> None:
    import threading
    import time

    from kafka_txn_tools.admin import audit
    from kafka_txn_tools.admin.scan import ScanOptions
    from kafka_txn_tools.cli.render import render_json
    from kafka_txn_tools.history.incidents import default_path
    from kafka_txn_tools.monitor.exporter import Monitor, MonitorConfig

    conn, cluster, invocation = _connection(*connection)  # a bad profile or properties file: a usage error, at once
    # As find-hanging: what holds an LSO is never hidden, and the findings' commands repeat the connection options.
    options = ScanOptions(max_timeout_ms, True, max_prepare_ms=max_prepare_ms, invocation=invocation,
                          explain_unreported=False)  # no summary to explain: one request a broker less a pass
    config = MonitorConfig(interval_ms / 1000, options, top, audit_log or audit.default_path())
    claim, store = (None, None) if no_history else _open_history(history or default_path())
    monitor = Monitor(cluster, lambda: _connect(conn), lambda report: _document(report, max_timeout_ms,
                                                                               max_prepare_ms), config, store)
    server = _listen(listening, monitor.source(render_json))
    _exposure_warning(listening)
    stop = threading.Event()
    asked, restore = _on_signals()
    try:
        server.start()
        bound_host, bound_port = server.address
        scheme = listening.web.scheme if listening.web is not None else "http"
        secured = f"; {', '.join(listening.web.summary)}" if listening.web is not None else ""
        typer.echo(f"kafka-txn monitor: watching {cluster} every {interval_ms / 1000:g}s; serving "
                   f"{scheme}://{bound_host}:{bound_port}/ (/metrics, /healthz, /api/findings){secured}", err=True)
        monitor.start(stop)
        while not asked and not stop.is_set():
            time.sleep(0.2)  # a signal's handler runs here, between two sleeps
        typer.echo("kafka-txn monitor: stopping", err=True)
    finally:
        stop.set()
        server.stop()
        monitor.join(timeout=10)
        if store is not None:
            store.close()  # waits for a history write under way: it commits whole or not at all
        if claim is not None:
            claim.release()
        restore()  # last: a second SIGTERM during the shutdown must not cut a history write short


def _connection(bootstrap: str | None, command_config: Path | None, profile: str | None, timeout: str | None
                ) -> tuple[Any, str, Any]:
    from kafka_txn_tools.admin.advice import Invocation
    from kafka_txn_tools.cli.session import Connection
    from kafka_txn_tools.connection.profiles import resolve_settings

    conn = Connection(bootstrap, command_config, profile, timeout)
    conn.timeout_ms(None)  # a bad --timeout first
    settings = resolve_settings(bootstrap, command_config, profile)
    for message in settings.warnings:
        warn(message)
    invocation = Invocation.of(bootstrap, profile or settings.profile, command_config, settings.bootstrap_servers)
    return conn, settings.cluster_name, invocation


def _connect(conn: Any) -> Any:
    from kafka_txn_tools.cli.session import connect

    return connect(conn)


def _document(report: Any, max_timeout_ms: int, max_prepare_ms: int) -> dict[str, Any]:
    from kafka_txn_tools.admin.findings import findings_document

    return findings_document(report, max_timeout_ms, max_prepare_ms)


def _open_history(path: Path) -> tuple[Any, Any]:
    """The monitor's claim on its history file and the store: a second monitor on the file, a damaged file
    or one from a newer version stop it at start, before it serves."""
    import sqlite3

    from kafka_txn_tools.history.lock import HistoryInUse, MonitorClaim
    from kafka_txn_tools.history.store import HistoryFileError, HistoryStore

    claim = MonitorClaim(path)
    try:
        claim.acquire()
    except HistoryInUse as exc:
        fail(f"the history file {path} is in use by another kafka-txn monitor ({exc}); one monitor per history "
             "file: stop that one, or give this one its own --history FILE (or --no-history)")
    except OSError as exc:
        fail(f"cannot open the history file {path}: {exc.strerror or exc}; pass --history FILE, or --no-history")
    try:
        store = HistoryStore(path, check=True)
    except HistoryFileError as exc:
        claim.release()
        fail(f"the history file {exc}")
    except (sqlite3.Error, OSError) as exc:
        claim.release()
        fail(f"cannot open the history file {path}: {exc}; pass --history FILE, or --no-history")
    if store.migrated_from is not None:
        note(f"the history file {path} was migrated from schema {store.migrated_from} to the current one")
    return claim, store


def _listen(listening: Listening, source: Any) -> Any:
    from kafka_txn_tools.monitor.server import MonitorServer

    host, port = listening.host, listening.port
    try:
        return MonitorServer(host, port, source, listening.web, listening.open_paths)
    except OSError as exc:
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}; pick another with --listen HOST:PORT")


def _on_signals() -> tuple[list[int], Callable[[], None]]:
    """SIGTERM and SIGINT end the loop: returns the list the handlers append the signal to, and what puts the
    previous handlers back.

    The handlers only append: a handler runs in the main thread between two bytecodes, and `Event.set()` there
    deadlocks when the main thread was inside that event's `wait()`, holding its lock (seen: the monitor never
    exited after a SIGTERM, about once in 150 stops)."""
    import signal

    asked: list[int] = []
    handlers = {}
    for sig in (signal.SIGTERM, signal.SIGINT):
        handlers[sig] = signal.signal(sig, lambda number, _frame: asked.append(number))

    def restore() -> None:
        for sig, old in handlers.items():
            signal.signal(sig, old)

    return asked, restore


def register(app: typer.Typer) -> None:
    app.command("monitor", cls=KafkaTxnCommand, epilog=EXAMPLES + "\n" + exit_codes.HELP_TEXT)(monitor_command)
