"""The `kafka-txn` application: global options and help; commands come from cli/commands (one registry).

Nothing heavy is imported here or by the command modules at import time (kafka_txn_broker,
kafka-python protocol classes, pyspark, confluent_kafka load inside the commands), so
`kafka-txn --help` starts fast.
"""

from __future__ import annotations

import copy
import os
import sys
from collections.abc import Sequence
from typing import Annotated

import typer

from kafka_txn_tools.cli import coercion, exit_codes
from kafka_txn_tools.cli.commands import register_all
from kafka_txn_tools.cli.completion import COMPLETE_VAR, enable_if_requested
from kafka_txn_tools.cli.errors import PROG, KafkaTxnGroup

coercion.install()  # typer's coercion without pydantic for plain values: cli/coercion.py
enable_if_requested()  # tab completion calls back into kafka-txn; see cli/completion.py

HELP = """Find, explain and safely abort hanging Kafka transactions.

\b
The runbook, when a read_committed consumer stalls (the LSO does not move):
  1. kafka-txn find-hanging --all -b kafka-1:9092
     what holds the LSO, why, what it holds back, and the commands that end it
  2. run each printed command as printed (an abort, a commit, a fence, a
     coordinator move): it checks the live state, asks on the terminal (or
     --yes), and prints what it changed
  3. kafka-txn find-hanging --all -b kafka-1:9092 --watch
     scans again until nothing is left to resolve
  Several at once: find-hanging --all -o plan > plan.yaml, then
  abort --plan plan.yaml --dry-run, then abort --plan plan.yaml.
"""

EPILOG = """\b
Clusters: -b HOST:PORT, $KAFKA_BOOTSTRAP_SERVERS, or --profile NAME from the
profiles file ~/.config/kafka-txn/profiles.yaml ($KAFKA_TXN_PROFILES moves
it):
  default: staging              # optional: used when no cluster is given
  profiles:
    staging:
      bootstrap_servers: kafka-1.staging:9092
    prod:
      bootstrap_servers: kafka-1.prod:9093,kafka-2.prod:9093
      command_config: prod-admin.properties   # relative to this file
      properties:                             # Java client properties
        security.protocol: SASL_SSL
        sasl.mechanism: SCRAM-SHA-512
        sasl.jaas.config: >-
          org.apache.kafka.common.security.scram.ScramLoginModule
          required username="ops" password="${OPS_PASSWORD}";
  ${VAR} is read from the environment.

\b
Writes (abort, commit, force-terminate, move-coordinator) ask on the terminal
and are appended to the
audit log ~/.local/state/kafka-txn/audit.log ($KAFKA_TXN_AUDIT_LOG or
--audit-log move it). NO_COLOR turns colour off; KAFKA_TXN_DEBUG=1 shows
tracebacks. The Kafka protocol classes are cached in ~/.cache/kafka-txn
($KAFKA_TXN_CACHE_DIR moves it; safe to delete).

""" + exit_codes.HELP_TEXT

app = typer.Typer(
    name=PROG,
    cls=KafkaTxnGroup,
    help=HELP,
    epilog=EPILOG,
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        from kafka_txn_tools import __version__

        typer.echo(f"{PROG} {__version__}")
        raise typer.Exit()


@app.callback()
def _global(
    version: Annotated[bool, typer.Option("--version", is_eager=True, callback=_version,
                                          help="print the version and exit")] = False,
) -> None:
    """Global options (the commands take the rest)."""


register_all(app)


def main() -> None:
    """Run the command line (the process is set up by cli/entry.py, the console script)."""
    narrowed(sys.argv[1:])(prog_name=PROG)


def narrowed(args: Sequence[str]) -> typer.Typer:
    """The app with only the command the command line starts with. Typer builds a click command of every command
    registered, on every run (about 12 ms of a command's start; measured 2026-12-07), and a run uses one. Any other
    command line (options first, no command, a name that is not one, tab completion) gets the whole app, so the
    group's help, its "No such command" and completion stay as they were."""
    if not args or COMPLETE_VAR in os.environ:
        return app
    commands = [c for c in app.registered_commands if c.name == args[0]]
    groups = [g for g in app.registered_groups if g.name == args[0]]
    if len(commands) + len(groups) != 1:
        return app
    narrow = copy.copy(app)
    narrow.registered_commands, narrow.registered_groups = commands, groups
    return narrow
