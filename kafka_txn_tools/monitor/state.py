"""What the monitor knows: the findings of its last scans and how the scans went, as one immutable
`Snapshot` replaced after each scan (`after_scan`, a pure function). The HTTP threads read whichever
snapshot is current; only the scan thread makes new ones, so no lock is needed beyond the reference swap.

A scan ends one of three ways:
- complete: its findings replace the previous ones;
- partial (a broker down, a refusal): what it found is shown, and what an earlier scan found but this one
  did not see is kept where it may be on what could not be read (history/incidents.py `Unread`), counted as
  stale; a partition finding none of the scan's errors could hide is gone, as after a complete scan (else
  a cluster with one broker down for days would keep every finding of those days);
- failed (no connection, an authentication refusal): everything is kept, and all of it is stale.
Either way the scan health says so (`stale`), and the errors are counted by cause.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from kafka_txn_tools.history.incidents import Sighting, Unread, sighting

COMPLETE, PARTIAL, FAILED = "complete", "partial", "failed"
RESULTS = (COMPLETE, PARTIAL, FAILED)


@dataclass(frozen=True)
class ScanOutcome:
    """One scan, as the scan loop saw it end."""

    time_ms: int
    duration_s: float
    result: str  # COMPLETE, PARTIAL or FAILED
    rows: tuple[Mapping[str, Any], ...] = ()  # find-hanging's JSON rows
    document: Mapping[str, Any] | None = None  # find-hanging's whole JSON document (None: failed)
    causes: Mapping[str, int] = field(default_factory=dict)  # errors of this scan, by cause
    failure: str | None = None  # why a failed scan failed, or the first error of a partial one
    scanned_replicas: int = 0
    unread_replicas: int = 0
    unread: Unread = Unread()  # a partial scan's: where what it did not see may still be


@dataclass(frozen=True)
class Snapshot:
    cluster: str
    interval_s: float
    started_ms: int
    findings: tuple[Sighting, ...] = ()
    stale_keys: frozenset[str] = frozenset()  # findings kept from an earlier scan
    document: Mapping[str, Any] | None = None
    scans: Mapping[str, int] = field(default_factory=lambda: dict.fromkeys(RESULTS, 0))
    errors: Mapping[str, int] = field(default_factory=dict)  # since start, by cause
    last: ScanOutcome | None = None
    last_good_ms: int | None = None  # the last complete scan
    history_write_errors: int = 0  # scans the history could not record, since start

    @property
    def stale(self) -> bool:
        """The findings are not all from a complete scan just now."""
        return self.last is not None and self.last.result != COMPLETE

    def is_stale(self, finding: Sighting) -> bool:
        return finding.key in self.stale_keys


def after_scan(prev: Snapshot, outcome: ScanOutcome) -> Snapshot:
    scans = {**prev.scans, outcome.result: prev.scans.get(outcome.result, 0) + 1}
    errors = dict(prev.errors)
    for cause, count in outcome.causes.items():
        errors[cause] = errors.get(cause, 0) + count
    counted = replace(prev, scans=scans, errors=errors, last=outcome)
    if outcome.result == FAILED:
        return replace(counted, stale_keys=frozenset(f.key for f in prev.findings))
    found = tuple(sighting(r) for r in outcome.rows)
    if outcome.result == PARTIAL:
        seen = {f.key for f in found}
        kept = tuple(f for f in prev.findings if f.key not in seen and outcome.unread.may_hide(f.row))
        return replace(counted, findings=found + kept, stale_keys=frozenset(f.key for f in kept),
                       document=outcome.document)
    return replace(counted, findings=found, stale_keys=frozenset(), document=outcome.document,
                   last_good_ms=outcome.time_ms)


# ---- what the findings hold --------------------------------------------------------------------------
@dataclass(frozen=True)
class HeldPartition:
    """A partition whose LSO a finding holds."""

    topic: str
    partition: int
    lso_lag: int | None  # high watermark - LSO (None: not known)
    held_ms: int | None  # at least this long (the holding transaction's age)


@dataclass(frozen=True)
class HeldGroup:
    """A consumer or share group held back on one partition, and the producer holding it."""

    group: str
    group_type: str
    topic: str
    partition: int
    lag: int | None
    producer_id: int | None
    transactional_id: str | None


def held_partitions(findings: tuple[Sighting, ...]) -> list[HeldPartition]:
    """Partition rows hold their partition's LSO; coordinator rows hold those of their pending partitions
    where the leader still shows the transaction open. One entry per partition (largest lag and age)."""
    found: dict[tuple[str, int], HeldPartition] = {}

    def add(topic: Any, partition: Any, lag: int | None, age: int | None) -> None:
        if not isinstance(topic, str) or not isinstance(partition, int):
            return
        old = found.get((topic, partition))
        if old is not None:
            lag = _max(old.lso_lag, lag)
            age = _max(old.held_ms, age)
        found[(topic, partition)] = HeldPartition(topic, partition, lag, age)

    for f in findings:
        if f.kind == "partition":
            add(f.topic, f.partition, f.lso_lag, f.age_ms)
        elif f.kind == "coordinator":
            for p in f.row.get("pending_partitions") or ():
                if p.get("reason") == "open-transaction":
                    add(p.get("topic"), p.get("partition"), None, f.age_ms)
    return sorted(found.values(), key=lambda h: (-(h.lso_lag or 0), -(h.held_ms or 0), h.topic, h.partition))


def held_groups(findings: tuple[Sighting, ...]) -> list[HeldGroup]:
    """The groups each finding holds back: consumer and share groups at a held LSO, and share groups whose
    records a transaction holds TX_PENDING (lag: those records)."""
    found: dict[tuple[str, str, int, Any], HeldGroup] = {}
    for f in findings:
        txn = f.transactional_id
        if f.kind == "share":
            row = f.row
            g = HeldGroup(str(row.get("group")), "share", str(row.get("topic")), int(row.get("partition") or 0),
                          row.get("records"), f.producer_id, txn)
            found[(g.group, g.topic, g.partition, g.producer_id)] = g
            continue
        for s in f.row.get("stalled_groups") or ():
            g = HeldGroup(str(s.get("group_id")), str(s.get("type")), str(s.get("topic")), int(s.get("partition", 0)),
                          s.get("lag"), f.producer_id, txn)
            found[(g.group, g.topic, g.partition, g.producer_id)] = g
    return sorted(found.values(), key=lambda g: (-(g.lag or 0), g.group, g.topic, g.partition))


def _max(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)
