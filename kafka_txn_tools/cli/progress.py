"""A progress bar on stderr for long scans, only when stderr is a terminal (silent in scripts and pipes)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

Advance = Callable[[int], None]


@contextmanager
def progress_bar(label: str) -> Iterator[tuple[Advance | None, Advance | None]]:
    """(advance, set_total) callbacks drawing a bar on stderr when it is a terminal; (None, None) otherwise."""
    if not sys.stderr.isatty():
        yield None, None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(label, total=None)
        yield (lambda n: bar.advance(task, n)), (lambda total: bar.update(task, total=total))
