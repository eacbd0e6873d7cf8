"""`find-hanging --watch [INTERVAL]`: scan again and again until nothing is left to resolve.

Each round says what appeared since the last scan (with what to do about it and its commands) and what
was resolved; once no row is left that `--exit-code` would count (hanging partition rows, stuck
coordinator rows, share holds; with `--count-held` the live ones too) and the scan was complete, it says
so and the command exits 0. On a terminal it prints lines for a person; otherwise (a pipe, a file, or
`-o json`) one JSON object per event (JSON lines): `appeared` and `resolved` with the row, `scan` per
round with the counts, and `clear` at the end.

Time comes in through `clock` (ms) and `sleep` (seconds): tests drive rounds without waiting, and a
test's `sleep` can resolve the finding between two scans.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from kafka_txn_tools.admin.scan import ScanReport

Key = tuple[object, ...]


@dataclass(frozen=True)
class Finding:
    key: Key
    row: dict[str, Any]
    counted: bool  # what --exit-code counts: it needs someone to act
    summary: str  # one line for a person


def findings(report: ScanReport, count_held: bool = False) -> dict[Key, Finding]:
    """Every row of a scan by a key that stays the same from one scan to the next while the finding lasts."""
    from kafka_txn_tools.admin.dependent_rows import grouped
    from kafka_txn_tools.admin.share_pending import ShareHold
    from kafka_txn_tools.models import HangingTransaction, StuckTransaction

    out: dict[Key, Finding] = {}
    # The order their commands run in (find-hanging linked the rows of one transaction: admin/dependent_rows.py).
    for row in grouped([*report.results, *report.stuck, *report.share]):
        if isinstance(row, HangingTransaction):
            h, p = row, row.producer
            txn = h.transactional_id or h.last_known_transactional_id
            key: Key = ("partition", h.partition.topic, h.partition.partition, p.producer_id,
                        p.current_txn_start_offset)
            out[key] = Finding(key, h.to_row(), h.reason.is_hanging or count_held,
                               f"{h.partition} producer {p.producer_id} from offset {p.current_txn_start_offset}: "
                               f"{h.reason.value}" + (f" ({txn})" if txn else ""))
        elif isinstance(row, StuckTransaction):
            s = row
            key = ("coordinator", s.transactional_id, s.producer_id, s.producer_epoch, s.state)
            out[key] = Finding(key, s.to_row(), True, f"{s.transactional_id!r} {s.state}: {s.reason.value}")
        elif isinstance(row, ShareHold):
            held = row
            key = ("share", held.group, held.topic, held.partition, held.producer_id, held.node)
            who = held.transactional_id or f"producer {held.producer_id}"
            out[key] = Finding(key, held.to_row(), True,
                               f"{held.topic}-{held.partition} share group {held.group}: {held.records} records "
                               f"TX_PENDING by {who}")
    return out


def iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


@dataclass
class Watch:
    """The loop; `scan` runs one find-hanging scan (with the share holds, when asked)."""

    scan: Callable[[], ScanReport]
    interval_s: float
    out: TextIO
    json_lines: bool
    count_held: bool = False
    clock: Callable[[], int] = field(default=lambda: time.time_ns() // 1_000_000)
    sleep: Callable[[float], None] = time.sleep
    width: int | None = None  # a terminal's: prose wraps to it, commands stay whole
    rounds: int = 0
    resolved: int = 0

    def run(self) -> int:
        """Scan until clear; the exit code (0)."""
        previous: dict[Key, Finding] = {}
        while True:
            report = self.scan()
            self.rounds += 1
            current = findings(report, self.count_held)
            appeared = [f for k, f in current.items() if k not in previous]
            gone = [f for k, f in previous.items() if k not in current]
            self.resolved += sum(1 for f in gone if f.counted)
            open_ = sum(1 for f in current.values() if f.counted)
            held = len(current) - open_
            self._round(appeared, gone, open_, held, report.partial)
            if open_ == 0 and not report.partial:
                self._clear(held)
                return 0
            previous = current
            self.sleep(self.interval_s)

    # ---- output ----------------------------------------------------------------------------------
    def _event(self, event: str, **fields: Any) -> None:
        line = {"time": iso(self.clock()), "round": self.rounds, "event": event, **fields}
        self.out.write(json.dumps(line) + "\n")
        self.out.flush()

    def _round(self, appeared: list[Finding], gone: list[Finding], open_: int, held: int, partial: bool) -> None:
        if self.json_lines:
            for f in appeared:
                self._event("appeared", row=f.row)
            for f in gone:
                self._event("resolved", row=f.row)
            self._event("scan", to_resolve=open_, held_by_live_transactions=held, partial=partial)
            return
        stamp = iso(self.clock())
        counts = f"{open_} to resolve" + (f", {held} held by live transactions" if held else "")
        lines = [f"{stamp}  scan {self.rounds}: {counts}" + (" (partial: some brokers did not answer)"
                                                              if partial else "")]
        for f in appeared:
            lines.append(f"  + {f.summary}")
            lines += _advice_lines(f.row)
        lines += [f"  - resolved: {f.summary}" for f in gone]
        from kafka_txn_tools.admin.advice import is_command_line
        from kafka_txn_tools.cli.render import wrap_footer

        self.out.write(wrap_footer("\n".join(lines), self.width, is_command_line) + "\n")
        self.out.flush()

    def _clear(self, held: int) -> None:
        left = f"; {held} held by live transactions remain (not counted)" if held else ""
        if self.json_lines:
            self._event("clear", scans=self.rounds, resolved=self.resolved, held_by_live_transactions=held)
            return
        from kafka_txn_tools.cli.render import wrap_lines

        self.out.write(wrap_lines(f"{iso(self.clock())}  clear: nothing left to resolve after {self.rounds} "
                                  f"{'scan' if self.rounds == 1 else 'scans'} ({self.resolved} resolved){left}",
                                  self.width) + "\n")
        self.out.flush()


def _advice_lines(row: Mapping[str, Any]) -> list[str]:
    lines = [f"    do: {row.get('action') or '-'}"]
    commands = row.get("commands") or []
    lines += [*(["    run:"] if commands else []), *(f"      {c}" for c in commands)]
    return lines
