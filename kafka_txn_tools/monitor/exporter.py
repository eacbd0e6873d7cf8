"""The monitor's scan loop: every interval, find-hanging over the whole cluster (admin/scan.py's flow,
read-only), then a new snapshot (state.py) and a history record (history/incidents.py).

The loop never dies of a scan: a cluster that cannot be reached, a refused login or a broker down makes
a failed or partial scan, counted by cause, and the next scan tries again on a fresh connection. Before each
scan the connection's OAuth token or Kerberos ticket is renewed if it nears its end (connection/client.py); one
that has expired and cannot be renewed fails the scan as LOGIN_FAILED, naming why. It never writes to the
cluster: it sends only the reads find-hanging sends (docs/monitor.md lists their ACLs).

Threading: `run` is the scan thread (one scan at a time, one client it alone uses); the HTTP threads call
`snapshot`, `healthy`, `incidents` and `scan_points`, which read an immutable snapshot, a deque the scan
thread appends to, and the history store (which has its own lock).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
import traceback
from collections import Counter, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from kafka_txn_tools.errors import BrokerError, ConnectionFailed, KafkaTxnError, MissingApi
from kafka_txn_tools.history.store import HistoryStore, Incident, ScanPoint
from kafka_txn_tools.monitor.state import COMPLETE, FAILED, PARTIAL, ScanOutcome, Snapshot, after_scan

if TYPE_CHECKING:
    from kafka_txn_tools.admin.api import ClusterApi
    from kafka_txn_tools.admin.scan import ScanOptions, ScanReport
    from kafka_txn_tools.monitor.server import Source

CHART_WINDOW_MS = 86_400_000
# The chart keeps a point per scan only when something changed (result, held partitions) or CHART_STEP_MS
# has passed since the last point it kept: what it draws is the same step line, and a short --interval
# no longer fills it with identical points. Bounded at CHART_POINTS (the step's points over the window,
# twice: room for the changes), about 0.6 MB of ScanPoints.
CHART_STEP_MS = 30_000
CHART_POINTS = 2 * CHART_WINDOW_MS // CHART_STEP_MS
INCIDENT_WINDOW_MS = 7 * 86_400_000
RECENT_INCIDENTS = 25
RECONNECT_ON = frozenset({"BROKER_UNREACHABLE", "REQUEST_TIMED_OUT"})


class MonitorClient(Protocol):
    """What the loop needs of a connection: find-hanging's reads, and closing."""

    def close(self) -> None: ...


@dataclass(frozen=True)
class MonitorConfig:
    interval_s: float
    options: ScanOptions
    top: int
    audit_log: Path | None = None  # where `kafka-txn abort` / `force-terminate` record their writes


def cause_of(exc: BaseException) -> str:
    """Why a whole scan failed, as the metrics count it."""
    if isinstance(exc, ConnectionFailed):
        return exc.cause
    if isinstance(exc, BrokerError):
        return exc.error
    if isinstance(exc, MissingApi):
        return "UNSUPPORTED_VERSION"
    if isinstance(exc, KafkaTxnError):
        return "CONFIGURATION"
    return "INTERNAL_ERROR"


def _wall_clock_ms() -> int:
    """The tool's clock (Kafka's `time.milliseconds()`), as the CLI's: findings' ages and durations use it."""
    return time.time_ns() // 1_000_000


def _scan_loop() -> Any:
    from kafka_txn_tools.admin.scan_loop import ScanLoop

    return ScanLoop()


class Monitor:
    """Scans on its own thread every interval and keeps the last outcome (state.py's snapshot) for the HTTP
    server's threads to read; the scan loop's state and the client belong to the scan thread alone."""

    def __init__(self, cluster: str, connect: Callable[[], ClusterApi], document: Callable[[ScanReport],
                 Mapping[str, Any]], config: MonitorConfig, history: HistoryStore | None = None,
                 clock: Callable[[], int] | None = None, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._connect = connect
        self._document = document
        self.config = config
        self.history = history
        self.clock = clock or _wall_clock_ms
        self._monotonic = monotonic
        self._client: Any = None
        # What the loop keeps between its scans (admin/scan_loop.py), for its life.
        self._loop = _scan_loop()
        self._snapshot = Snapshot(cluster, config.interval_s, self.clock())
        self._started = monotonic()
        self._last_end: float | None = None
        self._thread: threading.Thread | None = None
        self._said: tuple[str, list[str]] | None = None
        self._history_problem: str | None = None
        self._points: deque[ScanPoint] = deque(maxlen=CHART_POINTS)
        if history is not None:
            for point in self._read_history(lambda: history.scans(cluster, self.clock() - CHART_WINDOW_MS), []):
                self._chart(point)

    # -- what the endpoints read ------------------------------------------------------------------
    def snapshot(self) -> Snapshot:
        return self._snapshot

    def scan_points(self) -> list[ScanPoint]:
        return list(self._points)

    def incidents(self) -> list[Incident]:
        store = self.history
        if store is None:
            return []
        return self._read_history(lambda: store.latest_incidents(self.clock() - INCIDENT_WINDOW_MS,
                                                                 self._snapshot.cluster, RECENT_INCIDENTS), [])

    def healthy(self) -> tuple[bool, dict[str, Any]]:
        """Alive: the loop runs, and its last scan ended within three intervals plus a request timeout (or
        the first one is still within that time). A failing cluster does not make the monitor unhealthy."""
        now = self._monotonic()
        grace = 3 * self.config.interval_s + 60
        alive = self._thread is None or self._thread.is_alive()
        since = now - (self._last_end if self._last_end is not None else self._started)
        last = self._snapshot.last
        detail: dict[str, Any] = {"status": "ok", "last_scan": last.result if last else None,
                                  "seconds_since_last_scan": round(since, 3), "stale": self._snapshot.stale,
                                  "history": self._history_problem or ("ok" if self.history else "off")}
        if not alive:
            detail["status"] = "the scan loop has stopped"
        elif since > grace:
            detail["status"] = f"no scan has ended for {since:.0f}s"
        return detail["status"] == "ok", detail

    def source(self, document_text: Callable[[Any], str]) -> Source:
        from kafka_txn_tools.monitor.server import Source

        return Source(self.snapshot, self.healthy, self.incidents, self.scan_points, self.clock,
                      self.config.top, document_text)

    # -- the loop ---------------------------------------------------------------------------------
    def start(self, stop: threading.Event) -> None:
        thread = threading.Thread(target=self.run, args=(stop,), name="monitor-scan", daemon=True)
        thread.start()
        # Named only once started: /healthz, served meanwhile, would see a thread not yet alive as one stopped.
        self._thread = thread

    def join(self, timeout: float) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            began = self._monotonic()
            self.scan_once()
            stop.wait(max(0.0, self.config.interval_s - (self._monotonic() - began)))
        self._drop_client()

    def scan_once(self) -> ScanOutcome:
        began = self._monotonic()
        try:
            outcome = self._scan(began)
        except Exception as exc:  # noqa: BLE001 - nothing a scan meets may stop the loop
            self._drop_client()
            cause = cause_of(exc)
            if cause == "INTERNAL_ERROR":
                traceback.print_exc(file=sys.stderr)
            message = str(exc) if isinstance(exc, KafkaTxnError) else f"{type(exc).__name__}: {exc}"
            outcome = ScanOutcome(self.clock(), self._monotonic() - began, FAILED, causes={cause: 1},
                                  failure=message)
        self._snapshot = after_scan(self._snapshot, outcome)
        self._last_end = self._monotonic()
        if not self._record(outcome):
            self._snapshot = replace(self._snapshot, history_write_errors=self._snapshot.history_write_errors + 1)
        self._say(outcome)
        return outcome

    def _scan(self, began: float) -> ScanOutcome:
        from kafka_txn_tools.admin.scan import Scope, find_hanging
        from kafka_txn_tools.history.incidents import Unread, incident_rows

        if self._client is None:
            self._client = self._connect()
        # The client's token or ticket, kept renewed for as long as the monitor runs; one that has expired and
        # cannot be renewed is this scan's failure, named (connection/client.py), and the next scan connects afresh.
        renew = getattr(self._client, "renew_credentials", None)
        if renew is not None:
            renew()
        report = find_hanging(self._client, Scope(all=True), self.clock, self.config.options, loop=self._loop)
        if any(e.error in RECONNECT_ON for e in report.errors):
            # The connection's view of the brokers is the one it bootstrapped with: a broker that was down
            # stays unknown to it when it returns. Bootstrap afresh for the next scan.
            self._drop_client()
        doc = self._document(report)
        causes = Counter(e.error for e in report.errors)
        return ScanOutcome(self.clock(), self._monotonic() - began, PARTIAL if report.partial else COMPLETE,
                           tuple(incident_rows(doc["hanging"])), doc, dict(causes),
                           report.errors[0].message if report.errors else None,
                           report.scanned_replicas, report.unread_replicas, Unread.of(report.errors))

    def _drop_client(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):  # a connection already failing: the scan's error is reported
                client.close()

    # -- history and log --------------------------------------------------------------------------
    def _record(self, outcome: ScanOutcome) -> bool:
        """The scan into the chart and the history; False if the history could not take it (the scan's
        incidents are recorded by the next scan that can write: each scan records what it sees whole)."""
        from kafka_txn_tools.history.incidents import ScanRecord, held_count, record, record_failed_scan

        cluster = self._snapshot.cluster
        held = None if outcome.result == FAILED else held_count(outcome.rows)
        self._chart(ScanPoint(outcome.time_ms, outcome.result, held))
        store = self.history
        if store is None:
            return True
        duration_ms = int(outcome.duration_s * 1000)
        if outcome.result == FAILED:
            def failed() -> bool:
                record_failed_scan(store, cluster, outcome.time_ms, duration_ms, "monitor")
                return True

            return bool(self._read_history(failed, False))
        scan = ScanRecord(cluster, outcome.time_ms, duration_ms, outcome.result == COMPLETE, outcome.rows,
                          unread=outcome.unread)
        return bool(self._read_history(lambda: record(store, scan, self.config.audit_log) or True, False))

    def _chart(self, point: ScanPoint) -> None:
        last = self._points[-1] if self._points else None
        if (last is None or point.time_ms - last.time_ms >= CHART_STEP_MS
                or (point.result, point.held_partitions) != (last.result, last.held_partitions)):
            self._points.append(point)

    def _read_history(self, call: Callable[[], Any], default: Any) -> Any:
        import sqlite3

        try:
            result = call()
        except (sqlite3.Error, OSError) as exc:
            problem = f"the history file {self.history.path if self.history else ''} could not be used: {exc}"
            if problem != self._history_problem:  # once, not every scan
                self._log(f"warning: {problem}; scanning goes on, and the next scan that can write records "
                          "what it sees")
            self._history_problem = problem
            return default
        if self._history_problem is not None:
            self._log(f"the history file {self.history.path if self.history else ''} can be used again")
        self._history_problem = None
        return result

    def _say(self, outcome: ScanOutcome) -> None:
        """One line when what the monitor sees changes (not one per scan)."""
        keys = sorted(f.key for f in self._snapshot.findings)
        text = f"scan {outcome.result}: {len(keys)} findings"
        if outcome.failure:
            text += f" ({outcome.failure})"
        if (text, keys) != self._said:
            self._said = (text, keys)
            self._log(text)

    @staticmethod
    def _log(text: str) -> None:
        print(f"kafka-txn monitor: {text}", file=sys.stderr, flush=True)
