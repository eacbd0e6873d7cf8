"""`kafka-transactions`: upstream kafka-transactions.sh's syntax, output, error texts and exit codes.

Existing runbooks keep working: `kafka-transactions --bootstrap-server X [--command-config F] COMMAND`
with list, describe, describe-producers, abort, find-hanging and forceTerminateTransaction. Tables
use upstream's tab-padded columns (format.py); failures print `<what>: <cause>. Enable debug logging
for additional detail.` on stderr and exit 1; argument errors print the usage and exit 1, as
argparse4j (parser.py); `--help` too exits 1, as upstream's (its help screen is an argparse4j exception).
Runbooks written for upstream test `$?`: every error is 1 here, never kafka-txn's 2.

The commands (commands.py) call the same flows in kafka_txn_tools/admin/ as `kafka-txn` (version
fallbacks, concurrent scans, the find-hanging re-check, validated aborts with KIP-664's
TxnStartOffset), without prompts. Where upstream would write blindly - a live transaction, or one
the cluster cannot validate - they refuse in upstream's style and name the `kafka-txn` override.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import IO, NoReturn

from kafka_txn_tools.cli.upstream.parser import PROG, build_parser

# Upstream's TransactionsCommand exits 1 on every error, malformed input included (kafka-txn's own table, in
# cli/exit_codes.py, gives that 2): the front end promising upstream's syntax keeps upstream's codes.
USAGE = 1


class UpstreamExit(Exception):
    """Stop with upstream's message; `code` 1, upstream's for every failure, refusal or malformed input."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def run(argv: Sequence[str], out: IO[str], err: IO[str]) -> int:
    """Parse and execute; the exit status."""
    if "-v" in argv or "--version" in argv:
        from importlib.metadata import version

        out.write(f"{version('kafka-txn-tools')} (kafka-txn-tools)\n")
        return 0
    try:
        ns = build_parser().parse_args(list(argv))
    except SystemExit:
        # Argument errors (parser.py) and the help screen: argparse4j ends both with an exception, which
        # TransactionsCommand turns into exit 1.
        return USAGE
    if ns.command is None:
        build_parser().print_usage(err)
        err.write(f"{PROG}: error: too few arguments\n")
        return USAGE
    from kafka_txn_tools.cli.upstream.commands import execute

    try:
        execute(ns, out, err)
    except UpstreamExit as exc:
        err.write(f"{exc}\n")
        return exc.code
    return 0


def main(argv: Sequence[str] | None = None) -> NoReturn:
    sys.exit(run(sys.argv[1:] if argv is None else argv, sys.stdout, sys.stderr))
