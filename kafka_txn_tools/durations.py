"""Parse human durations ("15m", "900s", "2h", "1500ms") into milliseconds.

A bare number means minutes, because upstream `kafka-transactions.sh find-hanging
--max-transaction-timeout` takes minutes: `--max-transaction-timeout 15` must mean the same here.
"""

from __future__ import annotations

import re

_UNIT_MS = {
    "ms": 1,
    "s": 1_000,
    "sec": 1_000,
    "m": 60_000,
    "min": 60_000,
    "h": 3_600_000,
    "d": 86_400_000,
}
_PATTERN = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$")


def parse_duration_ms(text: str) -> int:
    """Return the duration `text` in whole milliseconds; raise ValueError naming the fix."""
    match = _PATTERN.match(str(text).lower())
    if match is None:
        raise ValueError(
            f"invalid duration {text!r}: use a number with a unit, e.g. 1500ms, 900s, 15m, 2h, 1d "
            "(a bare number means minutes)"
        )
    number, unit = match.groups()
    unit = unit or "m"
    if unit not in _UNIT_MS:
        raise ValueError(f"invalid duration {text!r}: unknown unit {unit!r}; use one of ms, s, m, h, d")
    return int(round(float(number) * _UNIT_MS[unit]))


def format_duration_ms(ms: int) -> str:
    """Shortest exact spelling of `ms` in the units parse_duration_ms reads (for messages)."""
    for unit in ("d", "h", "m", "s"):
        size = _UNIT_MS[unit]
        if ms and ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"
