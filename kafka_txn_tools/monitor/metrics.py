"""The monitor's snapshot as Prometheus text (exposition format 0.0.4).

Names follow Prometheus's conventions: a `kafka_txn_` prefix, base units in the name (`_seconds`,
`_records`), counters ending in `_total`. Label values are bounded: the `top` oldest findings, the `top`
held partitions with the largest LSO lag and the `top` held-back groups with the largest lag get a series
each; the rest are only counted (`*_not_detailed`) and summed into the aggregates, which always cover
everything. No offset or timestamp is ever a label.

The table of every metric is in docs/monitor.md; `METRICS` below is its source of truth (name, type, help).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from kafka_txn_tools import __version__
from kafka_txn_tools.history.incidents import Sighting
from kafka_txn_tools.models import HANGING_REASONS, SHARE_ACKS_PENDING, StuckReason
from kafka_txn_tools.monitor.state import RESULTS, Snapshot, held_groups, held_partitions

DEFAULT_TOP = 50
# Every kind and reason a monitor scan can report, so their series exist (at 0) before anything happens.
KNOWN_REASONS: dict[str, tuple[str, ...]] = {
    "partition": HANGING_REASONS,
    "coordinator": tuple(r.value for r in StuckReason),
    "share": (SHARE_ACKS_PENDING,),
}

GAUGE, COUNTER = "gauge", "counter"
METRICS: dict[str, tuple[str, str]] = {
    "kafka_txn_monitor_info": (GAUGE, "The monitor's version and the cluster it watches (always 1)."),
    "kafka_txn_findings": (GAUGE, "Findings of find-hanging now, by kind and reason (all of them)."),
    "kafka_txn_finding_age_seconds": (GAUGE, "Age of each detailed finding: since its producer's last write "
                                             "(partition), in its state (coordinator), or held (share)."),
    "kafka_txn_findings_not_detailed": (GAUGE, "Findings counted in kafka_txn_findings but beyond the detail "
                                               "limit (no kafka_txn_finding_age_seconds series)."),
    "kafka_txn_oldest_finding_age_seconds": (GAUGE, "The oldest finding's age, by kind (all of them)."),
    "kafka_txn_held_partitions": (GAUGE, "Partitions whose last stable offset a finding holds."),
    "kafka_txn_held_lso_lag_records": (GAUGE, "Records held back from read_committed consumers, summed over the "
                                              "held partitions (high watermark - LSO)."),
    "kafka_txn_partition_lso_lag_records": (GAUGE, "High watermark - LSO of each detailed held partition."),
    "kafka_txn_partition_held_seconds": (GAUGE, "How long each detailed held partition has been held, at least "
                                                "(the holding transaction's age)."),
    "kafka_txn_held_partitions_not_detailed": (GAUGE, "Held partitions beyond the detail limit."),
    "kafka_txn_held_groups": (GAUGE, "Consumer and share groups held back on a partition by a finding "
                                     "(group-partition pairs)."),
    "kafka_txn_group_held_lag_records": (GAUGE, "Lag of each detailed held-back group on its partition, and the "
                                                "producer that holds it."),
    "kafka_txn_held_groups_not_detailed": (GAUGE, "Held-back group-partition pairs beyond the detail limit."),
    "kafka_txn_scans_total": (COUNTER, "Scans since the monitor started, by result (complete, partial, failed)."),
    "kafka_txn_scan_errors_total": (COUNTER, "Scan errors since the monitor started, by cause (Kafka's error name, "
                                             "or BROKER_UNREACHABLE, SASL_AUTHENTICATION_FAILED, ...)."),
    "kafka_txn_scan_duration_seconds": (GAUGE, "How long the last scan took."),
    "kafka_txn_scan_success": (GAUGE, "1 if the last scan read the cluster (complete or partial), 0 if it failed."),
    "kafka_txn_scan_partial": (GAUGE, "1 if the last scan missed part of the cluster (a broker down, a refusal)."),
    "kafka_txn_scan_stale": (GAUGE, "1 if the findings shown are not all from a complete scan just now."),
    "kafka_txn_stale_findings": (GAUGE, "Findings kept from an earlier scan because the last one could not see "
                                        "them."),
    "kafka_txn_scan_replicas": (GAUGE, "Partition replicas the last scan asked about."),
    "kafka_txn_scan_unread_replicas": (GAUGE, "Partition replicas the last scan could not read."),
    "kafka_txn_last_scan_timestamp_seconds": (GAUGE, "When the last scan ended (Unix time)."),
    "kafka_txn_last_good_scan_timestamp_seconds": (GAUGE, "When the last complete scan ended (Unix time)."),
    "kafka_txn_scan_interval_seconds": (GAUGE, "The monitor's --interval."),
    "kafka_txn_history_write_errors_total": (COUNTER, "Scans the history file could not record (a full disk, a "
                                                      "lock held too long, ...); scanning goes on."),
    "process_resident_memory_bytes": (GAUGE, "Resident memory of the monitor process."),
}


def escape(value: object) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(labels: Mapping[str, object]) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{k}="{escape("" if v is None else v)}"' for k, v in labels.items()) + "}"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


class _Text:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def family(self, name: str, samples: Iterable[tuple[Mapping[str, object], float]]) -> None:
        kind, help_text = METRICS[name]
        self.lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]
        self.lines += [f"{name}{_labels(labels)} {_number(value)}" for labels, value in samples]

    def one(self, name: str, value: float | None) -> None:
        self.family(name, [] if value is None else [({}, value)])


def render(snapshot: Snapshot, top: int = DEFAULT_TOP, rss_bytes: int | None = None) -> str:
    out = _Text()
    out.family("kafka_txn_monitor_info", [({"cluster": snapshot.cluster, "version": __version__}, 1)])
    _findings(out, snapshot.findings, top)
    _partitions(out, snapshot, top)
    _groups(out, snapshot, top)
    _health(out, snapshot)
    out.one("process_resident_memory_bytes", rss_bytes)
    return "\n".join(out.lines) + "\n"


def _findings(out: _Text, findings: Sequence[Sighting], top: int) -> None:
    counts = {(kind, reason): 0 for kind, reasons in KNOWN_REASONS.items() for reason in reasons}
    for f in findings:
        counts[(f.kind, f.reason)] = counts.get((f.kind, f.reason), 0) + 1
    out.family("kafka_txn_findings", (({"kind": k, "reason": r}, n) for (k, r), n in sorted(counts.items())))
    detailed = sorted(findings, key=lambda f: (-(f.age_ms or 0), f.key))[:top]
    out.family("kafka_txn_finding_age_seconds", ((_finding_labels(f), (f.age_ms or 0) / 1000) for f in detailed))
    out.one("kafka_txn_findings_not_detailed", len(findings) - len(detailed))
    oldest: dict[str, int] = {}
    for f in findings:
        oldest[f.kind] = max(oldest.get(f.kind, 0), f.age_ms or 0)
    out.family("kafka_txn_oldest_finding_age_seconds", (({"kind": k}, ms / 1000) for k, ms in sorted(oldest.items())))


def _finding_labels(f: Sighting) -> dict[str, object]:
    row = f.row
    return {"kind": f.kind, "reason": f.reason, "topic": f.topic, "partition": f.partition,
            "producer_id": f.producer_id, "transactional_id": row.get("transactional_id"),
            "last_known_transactional_id": row.get("last_known_transactional_id")}


def _partitions(out: _Text, snapshot: Snapshot, top: int) -> None:
    held = held_partitions(snapshot.findings)
    out.one("kafka_txn_held_partitions", len(held))
    out.one("kafka_txn_held_lso_lag_records", sum(h.lso_lag or 0 for h in held))
    detailed = held[:top]
    where = [{"topic": h.topic, "partition": h.partition} for h in detailed]
    out.family("kafka_txn_partition_lso_lag_records",
               ((w, h.lso_lag) for w, h in zip(where, detailed, strict=True) if h.lso_lag is not None))
    out.family("kafka_txn_partition_held_seconds",
               ((w, h.held_ms / 1000) for w, h in zip(where, detailed, strict=True) if h.held_ms is not None))
    out.one("kafka_txn_held_partitions_not_detailed", len(held) - len(detailed))


def _groups(out: _Text, snapshot: Snapshot, top: int) -> None:
    groups = held_groups(snapshot.findings)
    out.one("kafka_txn_held_groups", len(groups))
    detailed = groups[:top]
    out.family("kafka_txn_group_held_lag_records", (
        ({"group": g.group, "group_type": g.group_type, "topic": g.topic, "partition": g.partition,
          "producer_id": g.producer_id, "transactional_id": g.transactional_id}, g.lag)
        for g in detailed if g.lag is not None))
    out.one("kafka_txn_held_groups_not_detailed", len(groups) - len(detailed))


def _health(out: _Text, snapshot: Snapshot) -> None:
    last = snapshot.last
    out.family("kafka_txn_scans_total", (({"result": r}, snapshot.scans.get(r, 0)) for r in RESULTS))
    out.family("kafka_txn_scan_errors_total", (({"cause": c}, n) for c, n in sorted(snapshot.errors.items())))
    out.one("kafka_txn_scan_duration_seconds", last.duration_s if last else None)
    out.one("kafka_txn_scan_success", None if last is None else int(last.result != "failed"))
    out.one("kafka_txn_scan_partial", None if last is None else int(last.result == "partial"))
    out.one("kafka_txn_scan_stale", int(snapshot.stale))
    out.one("kafka_txn_stale_findings", len(snapshot.stale_keys))
    out.one("kafka_txn_scan_replicas", last.scanned_replicas if last and last.result != "failed" else None)
    out.one("kafka_txn_scan_unread_replicas", last.unread_replicas if last and last.result != "failed" else None)
    out.one("kafka_txn_last_scan_timestamp_seconds", last.time_ms / 1000 if last else None)
    good = snapshot.last_good_ms
    out.one("kafka_txn_last_good_scan_timestamp_seconds", good / 1000 if good is not None else None)
    out.one("kafka_txn_scan_interval_seconds", snapshot.interval_s)
    out.one("kafka_txn_history_write_errors_total", snapshot.history_write_errors)


def resident_memory_bytes() -> int | None:
    """This process's RSS from /proc (Linux); None elsewhere."""
    import os

    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return None
