"""A newcomer's way through a rehearsal (`kafka-txn broker scenario`), for tests/e2e/test_runbook.py.

They know nothing but what the tool prints: the scan the scenario names (`find-hanging --all`, default
thresholds), then every command it prints, verbatim and in the printed order (plus `--yes` where a prompt
would come: not on a terminal), each within a time limit; a printed scan is run too and its printed commands
followed in turn. Then the scan again, until it prints nothing more to run. A command that blocks past its
limit, exits non-zero, or a scan that keeps printing commands after `rounds` scans, fails the test.

The commands run in this process (as `invoke_printed` does; a process each would cost seconds apiece on a
loaded machine), each in a thread of its own so that one that never returns is caught at its limit.
"""

from __future__ import annotations

import shlex
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from kafka_txn_tools.admin.advice import is_command_line
from tests.e2e.cli_support import Result, invoke_printed

# Generous: a loaded 2-core machine. A --watch waits 10 s between its scans.
LIMIT_S = 90.0


@dataclass
class Trail:
    """What the newcomer ran, in order, and what each printed."""

    ran: list[str] = field(default_factory=list)
    outputs: list[Result] = field(default_factory=list)

    def __str__(self) -> str:
        return "\n".join(f"$ {c}\n{r.out}{r.err}" for c, r in zip(self.ran, self.outputs, strict=False))


def printed_commands(text: str) -> list[str]:
    """The command lines a table output prints, in order (rows' `run:` blocks and the summary's)."""
    return [line.strip() for line in text.splitlines() if is_command_line(line)]


def _is_scan(argv: list[str]) -> bool:
    return argv[1] == "find-hanging" and "--watch" not in argv


def run_as_printed(command: str, trail: Trail, limit_s: float = LIMIT_S) -> Result:
    """One printed command, verbatim (plus --yes for a command that would ask), within `limit_s`."""
    argv = shlex.split(command)
    assert argv[0] == "kafka-txn", command
    extra = () if argv[1] == "find-hanging" else ("--yes",)
    got: list[Result] = []
    worker = threading.Thread(target=lambda: got.append(invoke_printed(command, *extra)), daemon=True)
    worker.start()
    worker.join(limit_s)
    trail.ran.append(command)
    assert got, f"{command} did not return within {limit_s:.0f} s; the newcomer's trail:\n{trail}"
    trail.outputs.append(got[0])
    assert got[0].code == 0, f"{command} exited {got[0].code}; the newcomer's trail:\n{trail}"
    return got[0]


def _follow(commands: list[str], trail: Trail, before: Callable[[str], None], depth: int) -> None:
    for command in commands:
        before(command)
        out = run_as_printed(command, trail)
        if _is_scan(shlex.split(command)) and depth < 3:
            _follow(printed_commands(out.out), trail, before, depth + 1)


def clear(first_scan: str, before: Callable[[str], None] = lambda _c: None, rounds: int = 4) -> Trail:
    """Scan with `first_scan` (what the scenario printed), follow what it prints, and scan again until nothing
    is printed to run; `before(command)` is called before each printed command (where the world acts: an
    external transaction manager deciding while its watch waits). The trail of what was run."""
    trail = Trail()
    for _ in range(rounds):
        out = run_as_printed(first_scan, trail)
        todo = printed_commands(out.out)
        if not todo:
            return trail
        _follow(todo, trail, before, 1)
    raise AssertionError(f"{first_scan} still prints commands after {rounds} rounds; the trail:\n{trail}")
