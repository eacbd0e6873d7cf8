"""Durations: parse human ones ("15m", "900s", "2h", "1500ms") into milliseconds, and print them one way.

What a bare number means depends on the option, and its help says so: `--max-transaction-timeout`
takes minutes, as upstream `kafka-transactions.sh find-hanging --max-transaction-timeout 15` does
(the default here, for the sweep's compatibility), while connection timeouts take seconds.
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
_NAMES = {"ms": "milliseconds", "s": "seconds", "m": "minutes", "h": "hours", "d": "days"}
_PATTERN = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$")


def parse_duration_ms(text: str, bare_unit: str = "m") -> int:
    """Return the duration `text` in whole milliseconds; raise ValueError naming the fix."""
    match = _PATTERN.match(str(text).lower())
    if match is None:
        raise ValueError(
            f"invalid duration {text!r}: use a number with a unit, e.g. 1500ms, 900s, 15m, 2h, 1d "
            f"(a bare number means {_NAMES[bare_unit]})"
        )
    number, unit = match.groups()
    unit = unit or bare_unit
    if unit not in _UNIT_MS:
        raise ValueError(f"invalid duration {text!r}: unknown unit {unit!r}; use one of ms, s, m, h, d")
    return int(round(float(number) * _UNIT_MS[unit]))


def format_duration_ms(ms: int) -> str:
    """The one spelling of a duration the tools print: its two largest units, the second left out when
    zero (`15m`, `1h 5m`, `24d 20h`, `1s 500ms`, `0ms`). Each part is a unit parse_duration_ms reads.

    Tables, messages and prompts all use it, so the same value always reads the same (Integer.MAX_VALUE
    ms is `24d 20h` everywhere, never `596h 31m` in one place and `24d 20h` in another).
    """
    if ms < 0:
        return "-" + format_duration_ms(-ms)
    parts: list[str] = []
    rest = int(ms)
    for unit in ("d", "h", "m", "s", "ms"):
        size = _UNIT_MS[unit]
        count, rest = divmod(rest, size)
        if count or parts:
            parts.append(f"{count}{unit}" if count else "")
        if len(parts) == 2:
            break
    shown = [p for p in parts if p]
    return " ".join(shown) or "0ms"
