"""kafka-transactions.sh's command line, as argparse4j parses it: options, Java integer conversions and
error texts; argument errors exit 1, as TransactionsCommand's (argparse4j's exception, caught, exit 1)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import NoReturn

PROG = "kafka-transactions.sh"


def _java_int(kind: str, low: int, high: int) -> Callable[[str], int]:
    # argparse4j's conversion error text, e.g. could not convert 'x' to Integer (For input string: "x")
    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"could not convert '{text}' to {kind} (For input string: \"{text}\")") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"could not convert '{text}' to {kind} (Value out of range. Value:\"{text}\" Radix:10)")
        return value

    convert.__name__ = kind
    return convert


Integer = _java_int("Integer", -(2**31), 2**31 - 1)
Long = _java_int("Long", -(2**63), 2**63 - 1)
Short = _java_int("Short", -(2**15), 2**15 - 1)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # argparse4j wording for a missing required option; exit status 1, upstream's for every error.
        if message.startswith("the following arguments are required: "):
            first = message.split(": ", 1)[1].split(", ")[0]
            message = f"argument {first} is required"
        self.print_usage(sys.stderr)
        sys.stderr.write(f"{PROG}: error: {message}\n")
        raise SystemExit(1)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description=(
        "This tool is used to analyze the transactional state of producers in the cluster. "
        "It can be used to detect and recover from hanging transactions."))
    parser.add_argument("-v", "--version", action="store_true",
                        help="show the version of this Kafka distribution and exit")
    parser.add_argument("--command-config", metavar="FILE",
                        help="property file containing configs to be passed to admin client")
    parser.add_argument("--bootstrap-server", metavar="host:port", required=True,
                        help="hostname and port for the broker to connect to, in the form `host:port`  "
                             "(multiple comma-separated entries can be given)")
    sub = parser.add_subparsers(dest="command", title="commands", metavar="COMMAND", parser_class=_Parser)
    _add_list(sub)
    d = sub.add_parser("describe", help="describe the state of an active transactional-id",
                       description="Describe the state of an active transactional-id.")
    d.add_argument("--transactional-id", required=True, help="transactional id")
    dp = sub.add_parser("describe-producers", help="describe the states of active producers for a topic partition")
    dp.add_argument("--broker-id", type=Integer,
                    help="optional broker id to describe the producer state on a specific replica")
    dp.add_argument("--topic", required=True, help="topic name")
    dp.add_argument("--partition", type=Integer, required=True, help="partition number")
    _add_abort(sub)
    _add_find_hanging(sub)
    ft = sub.add_parser("forceTerminateTransaction",
                        help="Force abort an ongoing transaction on transactionalId")
    ft.add_argument("--transactionalId", required=True, help="transactional id")
    return parser


def _add_list(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("list", help="list transactions")
    p.add_argument("--duration-filter", type=Long, help=(
        "Duration (in millis) to filter by: if < 0, all transactions will be returned; "
        "otherwise, only transactions running longer than this duration will be returned"))
    p.add_argument("--transactional-id-pattern", help=(
        "Transactional id regular expression pattern to filter by"))


def _add_abort(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("abort", help="abort a hanging transaction (requires administrative privileges)")
    p.add_argument("--topic", required=True, help="topic name")
    p.add_argument("--partition", type=Integer, required=True, help="partition number")
    new = p.add_argument_group("Brokers on versions 3.0 and above",
                               "For newer brokers, only the start offset of the transaction to be aborted is required")
    new.add_argument("--start-offset", type=Long, help="start offset of the transaction to abort")
    old = p.add_argument_group("Brokers on versions older than 3.0",
                               "For older brokers, you must provide all of these arguments")
    old.add_argument("--producer-id", type=Long, help="producer id")
    old.add_argument("--producer-epoch", type=Short, help="producer epoch")
    old.add_argument("--coordinator-epoch", type=Integer, help="coordinator epoch")


def _add_find_hanging(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("find-hanging", help="find hanging transactions")
    p.add_argument("--broker-id", type=Integer, help="broker id to search for hanging transactions")
    p.add_argument("--max-transaction-timeout", type=Integer, default=15, help=(
        "maximum transaction timeout in minutes to limit the scope of the search (15 minutes by default)"))
    p.add_argument("--topic", help="topic name to limit search to (required if --partition is specified)")
    p.add_argument("--partition", type=Integer, help="partition number")
