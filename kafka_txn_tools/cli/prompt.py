"""Confirmation before a write: on the terminal itself, naming the cluster and everything to be written.

The question goes to /dev/tty, never to stdout (which may be redirected into a JSON file) nor stderr
(which may be a log): a person sees it, a pipe does not. Without a terminal nothing is asked and
nothing is written unless --yes says so; writes that could not be fully checked need a person's
answer or --force, since --yes is what scripts pass by habit.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import TextIO

from kafka_txn_tools.cli.terminal import bold

CANCELLED = "cancelled: nothing was written"


@dataclass
class Confirmation:
    cluster: str
    writes: Sequence[str]  # one line per marker or fence
    warnings: list[str] = field(default_factory=list)  # shown above the question
    action: str = "write"
    left_out: list[str] = field(default_factory=list)  # refused, so not written (abort --plan --skip-refused)


class NoTerminal(Exception):
    """A confirmation was needed but no person can be asked."""


class Terminal:
    """/dev/tty for reading and writing (a text stream opened "r+" on a terminal is refused as unseekable)."""

    def __init__(self) -> None:
        self._in = open("/dev/tty", encoding="utf-8")  # noqa: SIM115 - closed in close()
        try:
            self._out = open("/dev/tty", "w", encoding="utf-8")  # noqa: SIM115
        except OSError:
            self._in.close()
            raise

    def write(self, text: str) -> int:
        return self._out.write(text)

    def flush(self) -> None:
        self._out.flush()

    def readline(self) -> str:
        return self._in.readline()

    def isatty(self) -> bool:
        return True

    def close(self) -> None:
        self._out.close()
        self._in.close()


def open_terminal() -> TextIO | Terminal | None:
    """The controlling terminal when a person is at it (stdin is a terminal too), else None."""
    if not sys.stdin.isatty():
        return None
    try:
        return Terminal()
    except OSError:
        return None


def ask(confirmation: Confirmation, terminal: TextIO | Terminal | None = None) -> bool:
    """Show the writes on the terminal and read y/N; raise NoTerminal when there is none."""
    tty = terminal if terminal is not None else open_terminal()
    if tty is None:
        raise NoTerminal()
    try:
        count = len(confirmation.writes)
        lines = [f"Cluster: {bold(confirmation.cluster, tty)}",
                 f"About to {confirmation.action} {count} {'change' if count == 1 else 'changes'}:",
                 *(f"  {w}" for w in confirmation.writes),
                 *([f"Left out, {len(confirmation.left_out)} refused (not written):"] if confirmation.left_out else []),
                 *(f"  {w}" for w in confirmation.left_out),
                 *(f"{bold('WARNING', tty)}: {w}" for w in confirmation.warnings)]
        tty.write("\n".join(lines) + f"\nProceed on {confirmation.cluster}? [y/N] ")
        tty.flush()
        answer = tty.readline().strip().lower()
    finally:
        if terminal is None:
            with suppress(OSError):
                tty.close()
    return answer in ("y", "yes")
