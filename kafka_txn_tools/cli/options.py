"""The options commands share, declared once (typer Annotated types), and their parsing.

Light imports only (typer, stdlib): `kafka-txn --help` must not load kafka-python.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

CONNECTION = "Connection"
OUTPUT = "Output"
SAFETY = "Safety"


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
    help="Java client .properties: security.protocol, sasl.* (PLAIN, SCRAM, OAUTHBEARER, GSSAPI), ssl.* (PEM or "
         "PKCS12)")]
ProfileOpt = Annotated[str | None, typer.Option(
    "--profile", "-p", metavar="NAME", envvar="KAFKA_TXN_PROFILE", rich_help_panel=CONNECTION,
    help="named cluster from ~/.config/kafka-txn/profiles.yaml or $KAFKA_TXN_PROFILES (format: kafka-txn --help)")]
TimeoutOpt = Annotated[str | None, typer.Option(
    "--timeout", metavar="DURATION", rich_help_panel=CONNECTION,
    help="connect and request timeout, e.g. 30s, 2m (a bare number means seconds; default 30s, or "
         "default.api.timeout.ms of --command-config)")]
OutputOpt = Annotated[OutputFormat | None, typer.Option(
    "--output", "-o", rich_help_panel=OUTPUT,
    help="table (default), json, yaml, csv, tsv, or kafka (upstream kafka-transactions.sh's columns)")]
WideOpt = Annotated[bool, typer.Option(
    "--wide", rich_help_panel=OUTPUT,
    help="table: show every column even if the terminal is narrower (default: drop the least important)")]
YesOpt = Annotated[bool, typer.Option(
    "--yes", "-y", rich_help_panel=SAFETY, help="do not ask for confirmation (scripts; needed without a terminal)")]
AuditLogOpt = Annotated[Path | None, typer.Option(
    "--audit-log", metavar="FILE", rich_help_panel=SAFETY,
    help="append the record of this write here (default $KAFKA_TXN_AUDIT_LOG, else "
         "~/.local/state/kafka-txn/audit.log)")]

DEFAULT_TIMEOUT_MS = 30_000


def duration_ms(text: str, option: str, bare_unit: str = "s", allow_zero: bool = True) -> int:
    """Parse a duration option with the project's one parser; errors name the option (usage errors)."""
    from kafka_txn_tools.durations import parse_duration_ms

    try:
        value = parse_duration_ms(text, bare_unit)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint=option) from None
    if value == 0 and not allow_zero:
        raise typer.BadParameter(f"{text!r} is no time at all: give a positive duration, e.g. 30s", param_hint=option)
    return value
