"""Options every cluster command shares, connecting, and turning errors into messages and exit codes.

Light imports only (typer, stdlib): kafka-python and rich load inside the functions that need them.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from kafka_txn_tools.cli import exit_codes
from kafka_txn_tools.cli.completion import enable_if_requested

if TYPE_CHECKING:
    from kafka_txn_tools.admin.client import AdminClient

enable_if_requested()  # tab completion calls back into kafka-txn; see cli/completion.py

CONNECTION = "Connection"
OUTPUT = "Output"


class OutputFormat(StrEnum):
    table = "table"
    json = "json"
    yaml = "yaml"
    csv = "csv"
    tsv = "tsv"
    kafka = "kafka"


BootstrapOpt = Annotated[str | None, typer.Option(
    "--bootstrap-server", "-b", metavar="HOST:PORT[,...]", rich_help_panel=CONNECTION,
    help="brokers to bootstrap from (default: --profile, then $KAFKA_BOOTSTRAP_SERVERS)")]
CommandConfigOpt = Annotated[Path | None, typer.Option(
    "--command-config", metavar="FILE", rich_help_panel=CONNECTION,
    help="Java client .properties: security.protocol, sasl.*, ssl.* (PEM)")]
ProfileOpt = Annotated[str | None, typer.Option(
    "--profile", "-p", metavar="NAME", envvar="KAFKA_TXN_PROFILE", rich_help_panel=CONNECTION,
    help="named cluster from ~/.config/kafka-txn/profiles.yaml (or $KAFKA_TXN_PROFILES)")]
TimeoutOpt = Annotated[str | None, typer.Option(
    "--timeout", metavar="DURATION", rich_help_panel=CONNECTION,
    help="connect and request timeout (default 30s, or default.api.timeout.ms of --command-config); "
         "a bare number means minutes")]
OutputOpt = Annotated[OutputFormat | None, typer.Option(
    "--output", "-o", rich_help_panel=OUTPUT,
    help="table (default on a terminal), json, yaml, csv, tsv, or kafka (upstream's columns)")]
YesOpt = Annotated[bool, typer.Option("--yes", "-y", help="do not ask for confirmation (for scripts)")]

DEFAULT_TIMEOUT: str | None = None  # 30 s unless the properties say otherwise
DEFAULT_TIMEOUT_MS = 30_000


@dataclass(frozen=True)
class Connection:
    bootstrap_server: str | None
    command_config: Path | None
    profile: str | None
    timeout: str | None = None


def duration_ms(text: str, option: str) -> int:
    """Parse a duration option with the project's one parser; errors name the option."""
    from kafka_txn_tools.durations import parse_duration_ms

    try:
        return parse_duration_ms(text)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint=option) from None


def connect(conn: Connection) -> AdminClient:
    """Resolve settings (flags, profile, env, properties) and connect; warnings go to stderr."""
    from kafka_txn_tools.admin.client import AdminClient
    from kafka_txn_tools.admin.profiles import resolve_settings

    settings = resolve_settings(conn.bootstrap_server, conn.command_config, conn.profile)
    for warning in settings.warnings:
        warn(warning)
    timeout_ms = (duration_ms(conn.timeout, "--timeout") if conn.timeout is not None
                  else settings.timeout_ms or DEFAULT_TIMEOUT_MS)
    return AdminClient(settings, timeout_ms=timeout_ms)


def now_ms() -> int:
    """The tool's clock (Kafka's `time.milliseconds()`): candidates' ages and durations use it."""
    return time.time_ns() // 1_000_000


def warn(message: str) -> None:
    typer.echo(f"warning: {message}", err=True)


def fail(message: str, code: int = exit_codes.ERROR) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def stdout_is_tty() -> bool:
    return sys.stdout.isatty()


def interactive() -> bool:
    """A person can answer a prompt: both stdin and stderr are terminals."""
    return sys.stdin.isatty() and sys.stderr.isatty()


def confirm_or_exit(question: str, yes: bool) -> None:
    """Ask on a terminal; without one, demand --yes instead of hanging on a prompt."""
    if yes:
        return
    if not interactive():
        fail("refusing to proceed without confirmation: not a terminal, pass --yes", exit_codes.USAGE)
    if not typer.confirm(question, default=False, err=True):
        fail("aborted by the user", exit_codes.ERROR)


def _exit_code_for(exc: BaseException) -> int:
    from kafka_txn_tools.admin.errors import NothingToDo, UsageError

    if isinstance(exc, UsageError):
        return exit_codes.USAGE
    if isinstance(exc, NothingToDo):
        return exit_codes.ALREADY_DONE
    return exit_codes.ERROR


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn expected failures into `error: ...` and an exit code; KAFKA_TXN_DEBUG=1 shows tracebacks."""
    from kafka_txn_tools.admin.errors import KafkaTxnError, NothingToDo

    try:
        yield
    except NothingToDo as exc:
        # Not a failure: a re-run of something already done (scripts see exit code 4).
        typer.echo(f"nothing to do: {exc}", err=True)
        raise typer.Exit(exit_codes.ALREADY_DONE) from None
    except KafkaTxnError as exc:
        if os.environ.get("KAFKA_TXN_DEBUG"):
            raise
        fail(str(exc), _exit_code_for(exc))
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        raise typer.Exit(130) from None
    except Exception as exc:
        if os.environ.get("KAFKA_TXN_DEBUG") or not type(exc).__module__.startswith("kafka."):
            raise
        # A kafka-python error we did not translate: still a message, not a traceback.
        fail(f"Kafka request failed: {type(exc).__name__}: {exc} (set KAFKA_TXN_DEBUG=1 for details)")


def resolve_output(output: OutputFormat | None) -> OutputFormat:
    return output if output is not None else OutputFormat.table


def report_errors(errors: list[Any]) -> None:
    """Partial failures of a scan, one line each on stderr (machine formats also carry them)."""
    for err in errors[:50]:
        warn(err.message)
    if len(errors) > 50:
        warn(f"... and {len(errors) - 50} more errors (use --output json to see all)")
