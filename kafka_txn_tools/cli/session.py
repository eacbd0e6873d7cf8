"""Connecting: combine --bootstrap-server, --command-config, --profile and the environment, then connect."""

from __future__ import annotations

import functools
import gc
import inspect
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from kafka_txn_tools.cli.errors import warn
from kafka_txn_tools.cli.options import (
    DEFAULT_TIMEOUT_MS,
    BootstrapOpt,
    CommandConfigOpt,
    ProfileOpt,
    TimeoutOpt,
    duration_ms,
)

if TYPE_CHECKING:
    from kafka_txn_tools.admin.advice import Invocation
    from kafka_txn_tools.admin.audit import AuditLog
    from kafka_txn_tools.connection.client import AdminClient


@dataclass(frozen=True)
class Connection:
    bootstrap_server: str | None
    command_config: Path | None
    profile: str | None
    timeout: str | None = None

    def label(self) -> str:
        """The cluster as given, before connecting: the profile or the bootstrap servers."""
        import os

        return self.profile or self.bootstrap_server or os.environ.get("KAFKA_BOOTSTRAP_SERVERS") or "unknown"

    def timeout_ms(self, configured: int | None) -> int:
        if self.timeout is not None:
            return duration_ms(self.timeout, "--timeout", bare_unit="s", allow_zero=False)
        return configured or DEFAULT_TIMEOUT_MS


# The placeholder default of a command's `conn: Connection = CLUSTER` parameter: `cluster_options` puts the
# cluster options in its place and passes the Connection they make.
CLUSTER = Connection(None, None, None)

# The cluster options every command that connects takes, declared once, in this order.
_CLUSTER_OPTIONS = (("bootstrap_server", BootstrapOpt), ("command_config", CommandConfigOpt),
                    ("profile", ProfileOpt), ("timeout", TimeoutOpt))

Command = TypeVar("Command", bound=Callable[..., Any])


def cluster_options(command: Command) -> Command:
    """A command's `conn: Connection = CLUSTER` parameter becomes --bootstrap-server, --command-config, --profile
    and --timeout at its place (so --help lists them where `conn` stands), and the command gets their Connection.
    Typer reads the parameters from the signature this sets."""
    signature = inspect.signature(command, eval_str=True)
    params: list[inspect.Parameter] = []
    for param in signature.parameters.values():
        if param.name != "conn":
            params.append(param)
            continue
        params.extend(inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None,
                                        annotation=annotation)
                      for name, annotation in _CLUSTER_OPTIONS)
    if len(params) == len(signature.parameters):
        raise TypeError(f"{command.__name__} has no `conn: Connection = CLUSTER` parameter")

    @functools.wraps(command)
    def with_connection(*args: Any, **kwargs: Any) -> Any:
        given = {name: kwargs.pop(name, None) for name, _ in _CLUSTER_OPTIONS}
        return command(*args, conn=Connection(**given), **kwargs)

    with_connection.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    with_connection.__annotations__ = {p.name: p.annotation for p in params}
    return with_connection  # type: ignore[return-value]


def connect(conn: Connection) -> AdminClient:
    """Resolve settings (flags, profile, env, properties) and connect; warnings go to stderr."""
    from kafka_txn_tools.connection.client import AdminClient
    from kafka_txn_tools.connection.profiles import resolve_settings

    freeze_again()
    timeout_ms = conn.timeout_ms(None) if conn.timeout is not None else None  # a bad --timeout first
    settings = resolve_settings(conn.bootstrap_server, conn.command_config, conn.profile)
    for message in settings.warnings:
        warn(message)
    return AdminClient(settings, timeout_ms=timeout_ms or conn.timeout_ms(settings.timeout_ms))


def freeze_again() -> None:
    """In a process that froze its imports (cli/entry.py), what is alive now, the command's modules among it,
    lives until exit too: later collections skip it. Any other process (a test running commands in-process) is
    left as it is."""
    if gc.get_freeze_count():
        gc.freeze()


@contextmanager
def connect_or_audit(conn: Connection, log: AuditLog, command: str,
                     targets: list[dict[str, Any]]) -> Iterator[AdminClient]:
    """connect(), recording a write that never reached the cluster in the audit log too."""
    from kafka_txn_tools.admin.audit import AuditRecord
    from kafka_txn_tools.errors import KafkaTxnError

    try:
        client = connect(conn)
    except KafkaTxnError as exc:
        for target in targets:
            log.append(AuditRecord(conn.label(), command, target, "failed", f"{exc}; nothing was written"))
        raise
    log.principal = client.principal
    with client:
        yield client


def invocation_of(client: AdminClient, conn: Connection) -> Invocation:
    """The connection options the printed commands repeat (admin/advice.py): the ones given, else the cluster
    the connection found (a profiles file's default, or $KAFKA_BOOTSTRAP_SERVERS)."""
    from kafka_txn_tools.admin.advice import Invocation

    settings = client.settings
    return Invocation.of(conn.bootstrap_server, conn.profile or settings.profile, conn.command_config,
                         settings.bootstrap_servers)


def now_ms() -> int:
    """The tool's clock (Kafka's `time.milliseconds()`): candidates' ages and durations use it."""
    return time.time_ns() // 1_000_000
