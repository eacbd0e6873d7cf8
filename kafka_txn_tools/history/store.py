"""The history store: incidents and the scan log in one SQLite file (the standard library's sqlite3).

The file is opened in WAL mode, so the monitor's scan thread writes while `kafka-txn history`, a
`find-hanging --history` run from cron, or the status page read it. Two tables:

- `incidents`: one row per finding's life (history/incidents.py says when one starts and ends): first seen,
  last seen, resolved at, how (`by itself`, or an audited write: who and which command), its latest
  find-hanging row as JSON. At most one open incident per (cluster, finding key).
- `scans`: one row per scan (time, duration, complete / partial / failed, held partitions): the status
  page's chart and the gaps in it. Rows older than `SCAN_RETENTION_MS` are dropped as new ones come.

The file's schema version is SQLite's `user_version`. An older file is migrated when opened (each step in
`MIGRATIONS`, in one transaction with the new version); a newer one is refused, never rewritten. A file that
is not a SQLite database, or (with `check=True`, as the monitor opens it) fails SQLite's quick_check, is
refused with what to do, and left as it is.

Threading: one connection, shared by the threads of one process under a lock (the monitor's scan thread
and its HTTP threads); other processes open their own, and SQLite's locking (busy timeout) orders them.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kafka_txn_tools.history.incidents import AuditedWrite, Sighting

SCHEMA_VERSION = 2
SCAN_RETENTION_MS = 35 * 86_400_000
BUSY_TIMEOUT_S = 10.0
CACHE_KIB = 2000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS incidents (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    cluster TEXT NOT NULL,
    finding_key TEXT NOT NULL,
    kind TEXT NOT NULL,
    reason TEXT NOT NULL,
    topic TEXT,
    partition INTEGER,
    producer_id INTEGER,
    transactional_id TEXT,
    started_ms INTEGER,
    first_seen_ms INTEGER NOT NULL,
    last_seen_ms INTEGER NOT NULL,
    resolved_ms INTEGER,
    resolution TEXT,
    resolved_by TEXT,
    resolved_command TEXT,
    max_lso_lag INTEGER,
    held_groups TEXT NOT NULL DEFAULT '[]',
    finding TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS incidents_open ON incidents (cluster, finding_key) WHERE resolved_ms IS NULL;
CREATE INDEX IF NOT EXISTS incidents_last_seen ON incidents (last_seen_ms);
CREATE INDEX IF NOT EXISTS incidents_recent ON incidents (cluster, first_seen_ms);
CREATE TABLE IF NOT EXISTS scans (
    cluster TEXT NOT NULL,
    time_ms INTEGER NOT NULL,
    duration_ms INTEGER NOT NULL,
    result TEXT NOT NULL,
    held_partitions INTEGER,
    source TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS scans_time ON scans (cluster, time_ms);
"""
# version -> the statements that bring a file of the version before it there.
MIGRATIONS: dict[int, tuple[str, ...]] = {
    # Version 1's files have no index for the status page's newest incidents.
    2: ("CREATE INDEX IF NOT EXISTS incidents_recent ON incidents (cluster, first_seen_ms)",),
}


class HistoryFileError(sqlite3.DatabaseError):
    """The history file cannot be used as it is; the message says why and what to do."""


@dataclass(frozen=True)
class Incident:
    id: int
    cluster: str
    key: str
    kind: str
    reason: str
    topic: str | None
    partition: int | None
    producer_id: int | None
    transactional_id: str | None
    started_ms: int | None  # when it began holding, at the latest (its age at first sight)
    first_seen_ms: int
    last_seen_ms: int
    resolved_ms: int | None
    resolution: str | None
    resolved_by: str | None
    resolved_command: str | None
    max_lso_lag: int | None
    held_groups: list[str] = field(default_factory=list)
    finding: dict[str, Any] = field(default_factory=dict)

    @property
    def end_ms(self) -> int:
        return self.resolved_ms if self.resolved_ms is not None else self.last_seen_ms

    @property
    def duration_ms(self) -> int:
        """From its first sighting to its resolution (or its last sighting, while open)."""
        return self.end_ms - self.first_seen_ms

    @property
    def held_ms(self) -> int | None:
        """How long it held its partition or group at least: from its start to its end."""
        return None if self.started_ms is None else self.end_ms - self.started_ms

    def to_row(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster, "kind": self.kind, "reason": self.reason, "topic": self.topic,
            "partition": self.partition, "producer_id": self.producer_id, "transactional_id": self.transactional_id,
            "started_ms": self.started_ms, "first_seen_ms": self.first_seen_ms, "last_seen_ms": self.last_seen_ms,
            "resolved_ms": self.resolved_ms, "duration_ms": self.duration_ms, "held_ms": self.held_ms,
            "resolution": self.resolution, "resolved_by": self.resolved_by, "resolved_command": self.resolved_command,
            "max_lso_lag": self.max_lso_lag, "held_groups": list(self.held_groups), "finding_key": self.key,
            "finding": self.finding,
        }


@dataclass(frozen=True, slots=True)  # the monitor keeps a day of them (its chart): small
class ScanPoint:
    time_ms: int
    result: str  # complete, partial, failed
    held_partitions: int | None


class HistoryStore:
    """One history file; use as a context manager (or `close()`)."""

    def __init__(self, path: Path, check: bool = False) -> None:
        self.path = path
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self.migrated_from: int | None = None  # the schema version the file had, when opening migrated it
        self._db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, check_same_thread=False, isolation_level=None)
        try:
            self._open(check)
        except BaseException:
            self._db.close()
            raise

    def _open(self, check: bool) -> None:
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            if check:
                self._quick_check()
        except HistoryFileError:
            raise
        except sqlite3.DatabaseError as exc:
            raise _damaged(self.path, str(exc)) from None
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(f"PRAGMA cache_size=-{CACHE_KIB}")  # SQLite's default, stated: the page cache's bound
        with self._transaction() as db:
            version = db.execute("PRAGMA user_version").fetchone()[0]
            fresh = not db.execute("SELECT 1 FROM sqlite_master WHERE name='incidents'").fetchone()
            if version > SCHEMA_VERSION:
                raise HistoryFileError(
                    f"{self.path} was written by a newer kafka-txn (history schema {version}; this one knows up "
                    f"to {SCHEMA_VERSION}); upgrade kafka-txn, or give another --history FILE (the file is left "
                    "as it is)")
            # One statement at a time: executescript() would commit on its own.
            for statement in filter(str.strip, _SCHEMA.split(";")):
                db.execute(statement)
            for step in range(SCHEMA_VERSION + 1 if fresh else max(version, 1) + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[step]:
                    db.execute(statement)
            if version != SCHEMA_VERSION:
                db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        self.migrated_from = None if fresh or version == SCHEMA_VERSION else version

    def _quick_check(self) -> None:
        rows = [r[0] for r in self._db.execute("PRAGMA quick_check(5)").fetchall()]
        if rows != ["ok"]:
            raise _damaged(self.path, "; ".join(rows))

    def __enter__(self) -> HistoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
                self._db.execute("COMMIT")
            except BaseException:
                # A failed COMMIT (a full disk) can leave the transaction open: end it, or every later
                # BEGIN would fail as nested.
                if self._db.in_transaction:
                    with suppress(sqlite3.Error):
                        self._db.execute("ROLLBACK")
                raise

    # -- writes ----------------------------------------------------------------------------------
    def record_scan(self, cluster: str, time_ms: int, seen: Sequence[Sighting],
                    resolutions: Sequence[tuple[int, AuditedWrite | None]],
                    scan: tuple[int, str, int | None, str]) -> None:
        """One scan, atomically: sightings (new incidents or seen again), resolutions, the scan log."""
        from kafka_txn_tools.history.incidents import AUDITED_WRITE, BY_ITSELF

        with self._transaction() as db:
            for s in seen:
                self._seen(db, cluster, time_ms, s)
            for incident_id, write in resolutions:
                how = (BY_ITSELF, None, None) if write is None else (AUDITED_WRITE, write.user, write.command_line())
                db.execute("UPDATE incidents SET resolved_ms=?, resolution=?, resolved_by=?, resolved_command=? "
                           "WHERE id=? AND resolved_ms IS NULL", (time_ms, *how, incident_id))
            duration_ms, result, held, source = scan
            db.execute("INSERT INTO scans VALUES (?, ?, ?, ?, ?, ?)",
                       (cluster, time_ms, duration_ms, result, held, source))
            db.execute("DELETE FROM scans WHERE cluster=? AND time_ms < ?", (cluster, time_ms - SCAN_RETENTION_MS))

    @staticmethod
    def _seen(db: sqlite3.Connection, cluster: str, time_ms: int, s: Sighting) -> None:
        row = json.dumps(dict(s.row), default=str)
        groups = json.dumps(list(s.held_groups))
        updated = db.execute(
            "UPDATE incidents SET last_seen_ms=?, reason=?, finding=?, transactional_id=COALESCE(?, transactional_id),"
            " max_lso_lag=MAX(COALESCE(max_lso_lag, ?), COALESCE(?, max_lso_lag)), held_groups=? "
            "WHERE cluster=? AND finding_key=? AND resolved_ms IS NULL",
            (time_ms, s.reason, row, s.transactional_id, s.lso_lag, s.lso_lag, groups, cluster, s.key)).rowcount
        if updated:
            return
        started = time_ms - s.age_ms if s.age_ms is not None else None
        db.execute(
            "INSERT INTO incidents (cluster, finding_key, kind, reason, topic, partition, producer_id, "
            "transactional_id, started_ms, first_seen_ms, last_seen_ms, max_lso_lag, held_groups, finding) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (cluster, s.key, s.kind, s.reason, s.topic, s.partition, s.producer_id, s.transactional_id, started,
             time_ms, time_ms, s.lso_lag, groups, row))

    # -- reads -----------------------------------------------------------------------------------
    def open_incidents(self, cluster: str) -> list[Incident]:
        return self._incidents("WHERE cluster=? AND resolved_ms IS NULL", (cluster,))

    def incidents(self, since_ms: int, cluster: str | None = None) -> list[Incident]:
        """Incidents open at some time since `since_ms` (still open, or last seen or resolved since)."""
        where = "WHERE (resolved_ms IS NULL OR resolved_ms >= ? OR last_seen_ms >= ?)"
        args: tuple[Any, ...] = (since_ms, since_ms)
        if cluster is not None:
            where += " AND cluster=?"
            args += (cluster,)
        return self._incidents(where, args)

    def latest_incidents(self, since_ms: int, cluster: str, limit: int) -> list[Incident]:
        """The `limit` incidents of `cluster` first seen last among those open at some time since `since_ms`,
        newest first. Only those are read, newest first along `incidents_recent`: a long-running reader (the
        status page) costs the same whatever the history holds."""
        where = "WHERE (resolved_ms IS NULL OR resolved_ms >= ? OR last_seen_ms >= ?) AND cluster=?"
        return self._incidents(where, (since_ms, since_ms, cluster), "first_seen_ms DESC, id DESC LIMIT ?", (limit,))

    def _incidents(self, where: str, args: tuple[Any, ...], order: str = "first_seen_ms, id",
                   order_args: tuple[Any, ...] = ()) -> list[Incident]:
        with self._lock:
            rows = self._db.execute(f"SELECT * FROM incidents {where} ORDER BY {order}", args + order_args).fetchall()
        return [_incident(r) for r in rows]

    def scans(self, cluster: str, since_ms: int) -> list[ScanPoint]:
        with self._lock:
            rows = self._db.execute("SELECT time_ms, result, held_partitions FROM scans WHERE cluster=? AND "
                                    "time_ms >= ? ORDER BY time_ms", (cluster, since_ms)).fetchall()
        return [ScanPoint(*r) for r in rows]

    def all_scans(self) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._db.execute("SELECT * FROM scans ORDER BY cluster, time_ms").fetchall()


def _damaged(path: Path, what: str) -> HistoryFileError:
    return HistoryFileError(
        f"{path} is not a usable history file ({what}); it is left as it is: move it aside to start a new "
        "history there, or restore a copy, or give another --history FILE (or --no-history)")


def _incident(r: Sequence[Any]) -> Incident:
    (id_, cluster, key, kind, reason, topic, partition, producer_id, txn_id, started, first, last, resolved,
     resolution, by, command, lag, groups, finding) = r
    return Incident(id_, cluster, key, kind, reason, topic, partition, producer_id, txn_id, started, first, last,
                    resolved, resolution, by, command, lag, json.loads(groups), json.loads(finding))
