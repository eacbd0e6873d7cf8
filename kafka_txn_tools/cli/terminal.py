"""What the terminal allows: its width for tables, and whether to use colour (NO_COLOR honoured)."""

from __future__ import annotations

import os
import shutil
from typing import Protocol


class Stream(Protocol):
    def isatty(self) -> bool: ...


def table_width(out: Stream) -> int | None:
    """Columns a table may use: the terminal's width, or $COLUMNS; None (unlimited) when piped."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if _isatty(out):
        return shutil.get_terminal_size((80, 24)).columns
    return None


def use_color(out: Stream) -> bool:
    """ANSI colour only on a terminal, never with NO_COLOR set (https://no-color.org) or TERM=dumb."""
    if "NO_COLOR" in os.environ and os.environ["NO_COLOR"] != "":
        return False
    return _isatty(out) and os.environ.get("TERM") != "dumb"


def bold(text: str, out: Stream) -> str:
    return f"\033[1m{text}\033[0m" if use_color(out) else text


def _isatty(out: Stream) -> bool:
    try:
        return out.isatty()
    except (AttributeError, ValueError):
        return False
