"""One monitor per history file: a monitor claims its history file for as long as it runs.

Two monitors recording the same cluster into one file would each judge which incidents a scan ended from
their own reading, and each scan log would interleave the other's; so the second is refused at start, with
the first one's pid. `find-hanging --history` runs (from cron) and `kafka-txn history` readers do not claim
the file: SQLite's own locking orders their short transactions with the monitor's.

The claim is an advisory `flock` on a file beside the history (FILE.monitor-lock), not on the database file
itself: SQLite holds POSIX locks on that one, and on some network file systems flock is emulated with them.
The kernel drops the lock when the process ends, however it ends (kill -9 included), so a stale lock file
never blocks the next start.

Threading: taken and released by the main thread only.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path
from typing import IO


class HistoryInUse(Exception):
    """Another live monitor holds the file."""


class MonitorClaim:
    def __init__(self, history: Path) -> None:
        self.path = history.with_name(history.name + ".monitor-lock")
        self._file: IO[str] | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        handle = open(self.path, "a+", encoding="utf-8")  # noqa: SIM115 - held open for the lock's life
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            handle.close()
            raise HistoryInUse(holder) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()} since {time.strftime('%Y-%m-%d %H:%M:%S %Z')}\n")
        handle.flush()
        self._file = handle

    def release(self) -> None:
        if self._file is not None:
            self._file.close()  # closing drops the flock; the file stays (removing it would race a new claim)
            self._file = None
