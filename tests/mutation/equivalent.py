"""Surviving mutants that no test can kill, each with the reason.

An entry names the file, the function (as the runner prints it) and a piece of the mutant's change (text
found in its diff's changed lines, whitespace ignored). Keep entries specific: an entry that matched a
mutant which behaves differently would hide a missing test.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Equivalent:
    path: str
    function: str
    change: str  # found in the mutant's +/- lines, whitespace ignored
    reason: str


EQUIVALENTS: tuple[Equivalent, ...] = (
    Equivalent("kafka_txn_tools/admin/hanging.py", "_view", "found=None)",
               "`found` is read only as `if not view.found` (reason_against): None and False are both false"),
    Equivalent("kafka_txn_tools/admin/hanging.py", "judge_coordinator", "coordinator_waits=None)",
               "pending_partition reads it only as `if not coordinator_waits`: None and False are both false"),
    Equivalent("kafka_txn_tools/admin/hanging.py", "last_known_owner", "key[1] <= best[1]",
               "equal time and equal id is the same key: replacing best with it changes nothing"),
)


def _squash(text: str) -> str:
    return "".join(text.split())


def reason_for(path: str, function: str, diff: str) -> str | None:
    squashed = _squash(diff)
    for e in EQUIVALENTS:
        if e.path == path and e.function == function and _squash(e.change) in squashed:
            return e.reason
    return None
