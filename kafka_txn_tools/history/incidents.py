"""Incident history: the life of every finding, kept between scans.

A scan (the monitor's, or `find-hanging --history`) hands over its findings as find-hanging's JSON rows
(`to_row()` dicts). `record` turns them into incidents in the history store (history/store.py,
one SQLite file):

- a finding not open in the store starts an incident (first seen = this scan);
- one already open is seen again (last seen, its latest row);
- an open incident the scan could have seen but did not is resolved, at this scan's time. How: by an
  audited write of this tool (`kafka-txn abort` or `kafka-txn commit` of its partition and start offset,
  `kafka-txn force-terminate` of its transactional id) whose audit-log line falls between its first sighting and its
  resolution, naming who and what; else "by itself" (its producer or coordinator ended it, or the
  partition went away).

A partial scan (a broker down, a refusal) may simply not have read what is missing: it resolves only a
partition finding that none of its errors could hide (`Unread`), and a complete scan everything it covered.
Only what the scan covered: `find-hanging --topic orders --history` never resolves an incident on another
topic (`covers`).

A finding's identity (`finding_key`) is what Kafka identifies it by: a partition row by its partition,
producer id, epoch and start offset; a coordinator row by its transactional id, producer id and epoch; a
share row by its group, partition and producer id. A new transaction on the same partition is a new
incident.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from kafka_txn_tools.models import HangingReason, RowKind, ScanError

if TYPE_CHECKING:
    from kafka_txn_tools.admin.scan import Scope

ENV_HISTORY = "KAFKA_TXN_HISTORY"
BY_ITSELF = "by itself"
AUDITED_WRITE = "audited write"
# Audit lines are stamped by the writer's clock, scans by the scanner's: allow this much skew.
CLOCK_SLACK_MS = 60_000
# The audit results that mean the write happened (the rest wrote nothing).
WRITES = {"kafka-txn abort": "aborted", "kafka-txn commit": "committed", "kafka-txn force-terminate": "fenced",
          "kafka-txn move-coordinator": "moved"}

Row = Mapping[str, Any]


class HistoryStore(Protocol):
    """What the flows need of the history's storage (history/store.py's SQLite store). A protocol, so
    the flows do not import the monitor package that also runs them (the tools' layers)."""

    def open_incidents(self, cluster: str) -> Sequence[Any]: ...

    def record_scan(self, cluster: str, time_ms: int, seen: Sequence[Sighting],
                    resolutions: Sequence[tuple[int, AuditedWrite | None]],
                    scan: tuple[int, str, int | None, str]) -> None: ...

    def incidents(self, since_ms: int, cluster: str | None = None) -> Sequence[Any]: ...

    def all_scans(self) -> list[tuple[Any, ...]]: ...


def default_path(env: Mapping[str, str] | None = None) -> Path:
    """$KAFKA_TXN_HISTORY, else $XDG_STATE_HOME/kafka-txn/history.db (by default under ~/.local/state)."""
    env = os.environ if env is None else env
    if env.get(ENV_HISTORY):
        return Path(env[ENV_HISTORY]).expanduser()
    base = Path(env["XDG_STATE_HOME"]) if env.get("XDG_STATE_HOME") else Path.home() / ".local" / "state"
    return base / "kafka-txn" / "history.db"


# ---- a finding, as the history knows it ---------------------------------------------------------------
def incident_rows(rows: Iterable[Row]) -> list[Row]:
    """The rows that are incidents: everything find-hanging reports but the partitions a live transaction holds
    (late, or prepared 2PC), which its coordinator or transaction manager will end (shown, never counted)."""
    live = {r.value for r in HangingReason if not r.is_hanging}
    return [r for r in rows if not (r.get("kind") == RowKind.PARTITION.value and r.get("reason") in live)]


def finding_key(row: Row) -> str:
    """The finding's identity across scans (module docstring)."""
    kind = row.get("kind")
    if kind == "partition":
        parts: Sequence[Any] = (row["topic"], row["partition"], row["producer_id"], row["producer_epoch"],
                                row["start_offset"])
    elif kind == "coordinator":
        parts = (row["transactional_id"], row["producer_id"], row["producer_epoch"])
    elif kind == "share":
        parts = (row["group"], row["topic"], row["partition"], row["producer_id"])
    else:  # a kind this version does not know: its whole row is its identity
        parts = (json.dumps(dict(row), sort_keys=True, default=str),)
    return "/".join(map(str, (kind, *parts)))


@dataclass(frozen=True)
class Sighting:
    """One finding of one scan, reduced to what the history and the metrics show."""

    key: str
    kind: str
    reason: str
    topic: str | None
    partition: int | None
    producer_id: int | None
    transactional_id: str | None  # the coordinator's, else the last one known from `__transaction_state`
    age_ms: int | None  # how long it has been as it is: since its last write, in its state, pending
    lso_lag: int | None  # high watermark - LSO of a partition row's partition
    held_groups: tuple[str, ...]
    row: Row

    @property
    def where(self) -> str:
        if self.topic is not None and self.partition is not None:
            return f"{self.topic}-{self.partition}"
        return self.transactional_id or self.key


def sighting(row: Row) -> Sighting:
    kind = str(row.get("kind"))
    topic, partition = row.get("topic"), row.get("partition")
    if kind == "coordinator" and row.get("pending_partitions"):
        first = row["pending_partitions"][0]
        topic, partition = first.get("topic"), first.get("partition")
    lso, hw = row.get("lso"), row.get("high_watermark")
    groups = row.get("stalled_groups") or []
    return Sighting(
        key=finding_key(row), kind=kind, reason=str(row.get("reason")), topic=topic, partition=partition,
        producer_id=row.get("producer_id"),
        transactional_id=row.get("transactional_id") or row.get("last_known_transactional_id"),
        age_ms=_first(row, "duration_ms", "time_in_state_ms", "oldest_age_ms"),
        lso_lag=hw - lso if isinstance(lso, int) and isinstance(hw, int) else None,
        held_groups=tuple(sorted({g if isinstance(g, str) else str(g.get("group_id")) for g in groups})),
        row=row)


def _first(row: Row, *keys: str) -> int | None:
    for key in keys:
        if isinstance(row.get(key), int):
            return int(row[key])
    return None


def held_count(rows: Iterable[Row]) -> int:
    """Partitions whose LSO the findings hold (partition rows; a coordinator row's pending partitions whose
    leader still shows the transaction open)."""
    held = set()
    for row in rows:
        if row.get("kind") == "partition":
            held.add((row.get("topic"), row.get("partition")))
        for p in row.get("pending_partitions") or () if row.get("kind") == "coordinator" else ():
            if p.get("reason") == "open-transaction":
                held.add((p.get("topic"), p.get("partition")))
    return len(held)


# ---- what a scan covered --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Unread:
    """What a partial scan could not read, from its errors: where an earlier finding it did not see again may
    still be. The default is the cautious one (anything may be unseen)."""

    partitions: frozenset[tuple[str, int]] = frozenset()  # partitions an error names
    brokers: frozenset[int] = frozenset()  # brokers an error names without a partition
    anywhere: bool = True  # an error naming neither (or nothing known): anything may be unseen

    @classmethod
    def of(cls, errors: Iterable[ScanError]) -> Unread:
        partitions, brokers, anywhere = set(), set(), False
        for e in errors:
            if e.partition is not None:
                partitions.add((e.partition.topic, e.partition.partition))
            elif e.broker_id is not None:
                brokers.add(e.broker_id)
            else:
                anywhere = True
        return cls(frozenset(partitions), frozenset(brokers), anywhere)

    def may_hide(self, row: Row) -> bool:
        """Whether the finding `row` may still be there though the scan did not see it. Only a partition finding
        is ever known gone from a partial scan: one whose partition no error names, and whose replicas seen
        holding it (`brokers`) were all read - where the transaction is no longer open, or the partition gone.
        A coordinator or share finding depends on more than its row names: kept."""
        if self.anywhere or row.get("kind") != "partition":
            return True
        if (row.get("topic"), row.get("partition")) in self.partitions:
            return True
        brokers = row.get("brokers") or ()
        return not brokers or any(b in self.brokers for b in brokers)


def scope_covers(scope: Scope) -> Callable[[Row], bool]:
    """Which earlier findings a find-hanging scan of `scope` would have seen again, were they still there."""
    if scope.all:
        return lambda row: True

    def partitions(row: Row) -> list[tuple[Any, Any]]:
        pending = row.get("pending_partitions") or []
        return [(row.get("topic"), row.get("partition")), *((p.get("topic"), p.get("partition")) for p in pending)]

    def covers(row: Row) -> bool:
        if scope.topic is not None and not any(
                t == scope.topic and scope.partition in (None, p) for t, p in partitions(row)):
            return False
        if scope.broker_id is not None:
            brokers = set(row.get("brokers") or ())
            brokers |= {p.get("leader") for p in row.get("pending_partitions") or ()}
            return scope.broker_id in brokers or row.get("coordinator_id") == scope.broker_id
        return True

    return covers


# ---- how it was resolved: the audit log -----------------------------------------------------------------
@dataclass(frozen=True)
class AuditedWrite:
    """One audit-log line of a write that happened (admin/audit.py's format)."""

    time_ms: int
    user: str
    cluster: str
    command: str
    target: Mapping[str, Any]

    def command_line(self) -> str:
        """The write, spelled as the command that made it."""
        t = self.target
        if self.command in ("kafka-txn force-terminate", "kafka-txn move-coordinator"):
            return f"{self.command} --transactional-id {t.get('transactional_id')}"
        return (f"{self.command} --topic {t.get('topic')} --partition {t.get('partition')} --start-offset "
                f"{t.get('start_offset')}")


def read_audit(path: Path | None, since_ms: int) -> list[AuditedWrite]:
    """The writes the audit log records from `since_ms` on; a missing or unreadable log records none, and
    a line that is not the log's format is skipped. Read a line at a time: the log only grows (every write of
    every run of the tool), and a monitor reads it whenever an incident ends."""
    if path is None:
        return []
    found = []
    try:
        with path.open(encoding="utf-8", errors="replace") as lines:
            for line in lines:
                write = _parse_audit_line(line)
                if write is not None and write.time_ms >= since_ms:
                    found.append(write)
    except OSError:
        return []
    return found


def _parse_audit_line(line: str) -> AuditedWrite | None:
    try:
        doc = json.loads(line)
        command = doc["command"]
        if WRITES.get(command) != doc["result"] or not isinstance(doc.get("target"), dict):
            return None
        when = dt.datetime.fromisoformat(str(doc["time"]).replace("Z", "+00:00"))
        return AuditedWrite(int(when.timestamp() * 1000), str(doc.get("user", "")), str(doc.get("cluster", "")),
                            command, doc["target"])
    except (ValueError, KeyError, TypeError):
        return None


def same_cluster(a: str, b: str) -> bool:
    """Whether two cluster names (a profile `name (servers)`, or the bootstrap servers) name one cluster:
    they share a bootstrap address."""
    return bool(_servers(a) & _servers(b))


def _servers(name: str) -> set[str]:
    inner = name[name.find("(") + 1:name.rfind(")")] if name.endswith(")") and "(" in name else name
    return {s.strip().lower() for s in inner.split(",") if s.strip()}


def resolving_write(row: Row, cluster: str, first_seen_ms: int, resolved_ms: int,
                    writes: Iterable[AuditedWrite]) -> AuditedWrite | None:
    """The audited write that ended this finding, if one did: the last matching write between its first
    sighting and its resolution (within the clocks' slack)."""
    found = [w for w in writes if first_seen_ms - CLOCK_SLACK_MS <= w.time_ms <= resolved_ms + CLOCK_SLACK_MS
             and same_cluster(w.cluster, cluster) and _ends(w, row)]
    return max(found, key=lambda w: w.time_ms) if found else None


def _ends(write: AuditedWrite, row: Row) -> bool:
    t, kind = write.target, row.get("kind")
    if write.command == "kafka-txn force-terminate":
        return kind in ("coordinator", "share") and t.get("transactional_id") == row.get("transactional_id")
    if write.command == "kafka-txn move-coordinator":  # a new coordinator re-sends a stuck one's markers
        return kind == "coordinator" and t.get("transactional_id") == row.get("transactional_id")
    if kind == "partition":
        return ((t.get("topic"), t.get("partition"), t.get("start_offset")) ==
                (row.get("topic"), row.get("partition"), row.get("start_offset"))
                and t.get("producer_id") in (None, row.get("producer_id")))
    pending = row.get("pending_partitions") or []  # epoch exhaustion: each partition aborted by hand
    return t.get("producer_id") == row.get("producer_id") and any(
        (t.get("topic"), t.get("partition")) == (p.get("topic"), p.get("partition")) for p in pending)


# ---- the flow -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ScanRecord:
    """One scan as the history records it."""

    cluster: str
    time_ms: int
    duration_ms: int
    complete: bool  # no errors: what it covered and did not see is gone
    rows: Sequence[Row]
    covers: Callable[[Row], bool] = lambda row: True
    source: str = "monitor"  # or "find-hanging"
    unread: Unread = Unread()  # a partial scan's: what it did not see may still be there (`Unread.may_hide`)

    def saw_gone(self, row: Row) -> bool:
        """Whether this scan, not seeing the finding `row` again, shows it gone."""
        return self.covers(row) and (self.complete or not self.unread.may_hide(row))


@dataclass(frozen=True)
class Recorded:
    started: list[str]  # keys of the incidents this scan opened
    resolved: list[tuple[str, str]]  # (key, how) of those it resolved


def record(store: HistoryStore, scan: ScanRecord, audit_log: Path | None) -> Recorded:
    """Record one scan's findings (module docstring)."""
    seen = {s.key: s for s in map(sighting, scan.rows)}
    open_now = store.open_incidents(scan.cluster)
    gone = [i for i in open_now if i.key not in seen and scan.saw_gone(i.finding)]
    writes = read_audit(audit_log, min(i.first_seen_ms for i in gone) - CLOCK_SLACK_MS) if gone else []
    resolutions = []
    for incident in gone:
        write = resolving_write(incident.finding, scan.cluster, incident.first_seen_ms, scan.time_ms, writes)
        resolutions.append((incident.id, write))
    started = [k for k in seen if k not in {i.key for i in open_now}]
    store.record_scan(scan.cluster, scan.time_ms, list(seen.values()), resolutions,
                      scan=(scan.duration_ms, "complete" if scan.complete else "partial", held_count(scan.rows),
                            scan.source))
    by_id = {i.id: i.key for i in open_now}
    return Recorded(started, [(by_id[i], BY_ITSELF if w is None else w.command) for i, w in resolutions])


def record_failed_scan(store: HistoryStore, cluster: str, time_ms: int, duration_ms: int, source: str) -> None:
    """A scan that read nothing: kept in the scan log (the chart's gaps), no incident changes."""
    store.record_scan(cluster, time_ms, [], [], scan=(duration_ms, "failed", None, source))


# ---- export -------------------------------------------------------------------------------------------
INCIDENT_FILE = "incidents.parquet"
SCAN_FILE = "scans.parquet"
# The export's columns and Arrow types: the Spark sweep reads these (spark/history.py).
INCIDENT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("cluster", "string"), ("kind", "string"), ("reason", "string"), ("topic", "string"), ("partition", "int32"),
    ("producer_id", "int64"), ("transactional_id", "string"), ("started_ms", "int64"), ("first_seen_ms", "int64"),
    ("last_seen_ms", "int64"), ("resolved_ms", "int64"), ("duration_ms", "int64"), ("held_ms", "int64"),
    ("resolution", "string"), ("resolved_by", "string"), ("resolved_command", "string"), ("max_lso_lag", "int64"),
    ("held_groups", "string"), ("finding_key", "string"))
SCAN_COLUMNS: tuple[tuple[str, str], ...] = (
    ("cluster", "string"), ("time_ms", "int64"), ("duration_ms", "int64"), ("result", "string"),
    ("held_partitions", "int64"), ("source", "string"))


def export_parquet(store: HistoryStore, directory: Path, since_ms: int | None = None) -> dict[str, int]:
    """incidents.parquet and scans.parquet in `directory` (created; files of the same name replaced).
    pyarrow is imported here only: the rest of the history needs nothing beyond the standard library."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    types = {"string": pa.string(), "int32": pa.int32(), "int64": pa.int64()}
    incidents = store.incidents(since_ms if since_ms is not None else 0)
    rows = []
    for i in incidents:
        row = i.to_row()
        row["held_groups"] = ",".join(i.held_groups)
        rows.append({name: row[name] for name, _ in INCIDENT_COLUMNS})
    scans = [dict(zip((n for n, _ in SCAN_COLUMNS), s, strict=True)) for s in store.all_scans()
             if since_ms is None or s[1] >= since_ms]
    directory.mkdir(parents=True, exist_ok=True)
    for name, columns, data in ((INCIDENT_FILE, INCIDENT_COLUMNS, rows), (SCAN_FILE, SCAN_COLUMNS, scans)):
        schema = pa.schema([pa.field(n, types[t]) for n, t in columns])
        pq.write_table(pa.Table.from_pylist(data, schema=schema), directory / name, compression="snappy")
    return {INCIDENT_FILE: len(rows), SCAN_FILE: len(scans)}
