"""Copied Kafka log-dir trees: producer state per replica and the coordinators' state.

A tree holds one or more log dirs (`<logdir>/<topic>-<partition>/...`). The broker of a log dir is
`node.id=` / `broker.id=` in its `meta.properties`, else the nearest path component `node-<id>` or
`broker-<id>` (the embedded broker writes `DIR/node-<id>/<topic>-<partition>/`).

Producer state = the latest `.snapshot` of the partition, then the batches appended after it
replayed from the segments, as the broker does when it loads a log: a snapshot alone is only as
fresh as its offset (it is written at segment roll), and a transaction it shows open may have been
committed since.
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kafka_txn_broker.formats import producer_snapshot as snap
from kafka_txn_broker.formats.partitioning import TXN_TOPIC
from kafka_txn_broker.formats.record_batch import BatchHeader
from kafka_txn_tools.dumps import segments
from kafka_txn_tools.dumps import transaction_log as txlog
from kafka_txn_tools.dumps.schema import DECISIONS, Row

_NODE_COMPONENT = re.compile(r"^(?:node|broker)-(\d+)$")
# Kafka renames partition dirs it is deleting or moving; their state is not the replica's state.
SKIPPED_DIR_SUFFIXES = ("-delete", "-future", "-stray")
_ID_LINE = re.compile(r"^\s*(node\.id|broker\.id)\s*[=:]\s*(-?\d+)\s*$")


class LogDirError(ValueError):
    """A log-dir tree cannot be read as given."""


@dataclass(frozen=True)
class PartitionDir:
    path: str
    topic: str
    partition: int
    broker_id: int

    @property
    def is_transaction_log(self) -> bool:
        return self.topic == TXN_TOPIC


def parse_partition_dir(name: str) -> tuple[str, int] | None:
    """'orders-3' -> ('orders', 3); None for dirs that are not live partition dirs."""
    if name.endswith(SKIPPED_DIR_SUFFIXES):
        return None
    topic, sep, index = name.rpartition("-")
    if not sep or not topic or not index.isdigit():
        return None
    return topic, int(index)


def node_id_from_meta(log_dir: Path) -> int | None:
    meta = log_dir / "meta.properties"
    if not meta.is_file():
        return None
    ids = {}
    for line in meta.read_text(encoding="utf-8", errors="replace").splitlines():
        match = _ID_LINE.match(line)
        if match:
            ids[match.group(1)] = int(match.group(2))
    return ids.get("node.id", ids.get("broker.id"))


def cluster_ids(root: str | os.PathLike[str]) -> set[str]:
    """The `cluster.id` of every meta.properties under `root` (a log dir or a tree of them): the
    cluster the copied log dirs come from."""
    found = set()
    for meta in sorted(Path(root).rglob("meta.properties")):
        for line in meta.read_text(encoding="utf-8", errors="replace").splitlines():
            key, sep, value = line.partition("=")
            if sep and key.strip() == "cluster.id" and value.strip():
                found.add(value.strip())
    return found


def node_id_from_path(path: Path) -> int | None:
    for part in reversed(path.parts):
        match = _NODE_COMPONENT.match(part)
        if match:
            return int(match.group(1))
    return None


def broker_of(log_dir: Path, override: int | None = None) -> int:
    if override is not None:
        return override
    for found in (node_id_from_meta(log_dir), node_id_from_path(log_dir.resolve())):
        if found is not None:
            return found
    raise LogDirError(
        f"cannot tell which broker {log_dir} belongs to: it has no meta.properties with node.id/broker.id "
        "and no node-<id> or broker-<id> path component; copy meta.properties along or rename the dir "
        "node-<id>"
    )


def _holds_log_files(path: Path) -> bool:
    return any(child.suffix in (".log", ".snapshot") for child in path.iterdir())


def list_partition_dirs(root: str | os.PathLike[str], broker_id: int | None = None) -> list[PartitionDir]:
    """Every live partition dir under `root` (a log dir or a tree of them), in a stable order."""
    base = Path(root)
    if not base.is_dir():
        raise LogDirError(f"{root} is not a directory: pass a copied Kafka log dir or a tree of them")
    found = []
    for current, dirs, _files in os.walk(base):
        here = Path(current)
        keep = []
        for name in sorted(dirs):
            parsed = parse_partition_dir(name)
            child = here / name
            if parsed and _holds_log_files(child):
                found.append(PartitionDir(str(child), parsed[0], parsed[1], broker_of(here, broker_id)))
            elif not name.endswith(SKIPPED_DIR_SUFFIXES):
                keep.append(name)
        dirs[:] = keep  # do not descend into partition dirs or dirs Kafka is deleting
    return found


def _mtime_ms(path: Path) -> int:
    return path.stat().st_mtime_ns // 1_000_000


class _Replay:
    """Producer state as the broker rebuilds it: a snapshot, then batches appended after it."""

    def __init__(self, entries: list[snap.SnapshotEntry]) -> None:
        self.state: dict[int, list[int]] = {
            e.producer_id: [
                e.producer_epoch,
                e.last_sequence,
                e.timestamp,
                e.coordinator_epoch,
                e.current_txn_first_offset,
            ]
            for e in entries
        }

    def apply(self, header: BatchHeader, body: bytes | None) -> None:
        if header.producer_id < 0:
            return  # not an idempotent or transactional producer
        entry = self.state.setdefault(header.producer_id, [header.producer_epoch, -1, -1, -1, -1])
        if header.is_control:
            self._marker(entry, header, body)
            return
        entry[0] = header.producer_epoch
        if header.base_sequence >= 0:
            entry[1] = header.base_sequence + header.last_offset_delta
        entry[2] = header.max_timestamp
        if header.is_transactional and entry[4] < 0:
            entry[4] = header.base_offset

    @staticmethod
    def _marker(entry: list[int], header: BatchHeader, body: bytes | None) -> None:
        if body is None:
            return
        records = segments.decode_records(body)
        if not records or records[0].key is None or len(records[0].key) < 4:
            return
        control_type = struct.unpack(">hh", records[0].key[:4])[1]
        if control_type not in (0, 1):
            return  # not a transaction marker (KRaft control records)
        value = records[0].value or b""
        entry[0] = header.producer_epoch
        entry[2] = header.max_timestamp
        entry[3] = struct.unpack(">hi", value[:6])[1] if len(value) >= 6 else entry[3]
        entry[4] = -1


def producer_rows(pdir: PartitionDir, capture_time_ms: int | None = None, replay: bool = True) -> list[Row]:
    """Producer-state rows of one replica: latest snapshot plus the segments after it."""
    path = Path(pdir.path)
    latest = snap.latest_snapshot(path)
    start = snap.snapshot_offset(latest) if latest else 0
    state = _Replay(snap.read_snapshot(latest) if latest else [])
    end = start
    mtimes = [_mtime_ms(latest)] if latest else []
    replayed = False
    if replay or latest is None:
        files = segments.segment_files(path)
        for i, segment in enumerate(files):
            next_base = segments.segment_base_offset(files[i + 1]) if i + 1 < len(files) else None
            if next_base is not None and next_base <= start:
                continue  # wholly before the snapshot
            for header, body in segments.scan_segment(segment, start):
                state.apply(header, body)
                end = max(end, header.last_offset + 1)
                replayed = True
            mtimes.append(_mtime_ms(segment))
    if latest is None and not replayed:
        return []
    source = "snapshot+log" if latest and replayed else ("snapshot" if latest else "log")
    captured = capture_time_ms if capture_time_ms is not None else max(mtimes)
    return [
        {
            "broker_id": pdir.broker_id,
            "topic": pdir.topic,
            "partition": pdir.partition,
            "is_leader": None,
            "producer_id": pid,
            "producer_epoch": epoch,
            "last_sequence": last_seq,
            "last_timestamp_ms": last_ts,
            "coordinator_epoch": coord_epoch,
            "current_txn_start_offset": txn_first if txn_first >= 0 else -1,
            "snapshot_offset": end,
            "capture_time_ms": captured,
            "source": source,
        }
        for pid, (epoch, last_seq, last_ts, coord_epoch, txn_first) in sorted(state.state.items())
    ]


def coordinator_rows(pdir: PartitionDir, capture_time_ms: int | None = None,
                     decisions: list[Row] | None = None) -> list[Row]:
    """Coordinator-state rows from one `__transaction_state-N` replica: each id's newest record. Every
    PrepareCommit / PrepareAbort record read (the coordinator's decisions, admin/decisions.py) is appended to
    `decisions` as a `decisions` row, when given: they survive in the segments until compaction."""
    path = Path(pdir.path)
    files = segments.segment_files(path)
    if not files:
        return []
    captured = capture_time_ms if capture_time_ms is not None else max(_mtime_ms(s) for s in files)
    prepares: list[txlog.TxnLogRecord] = []
    states = txlog.read_transaction_log(path, prepares=prepares)
    if decisions is not None:
        decisions += [txlog.decision_row(rec, pdir.partition, pdir.broker_id) for rec in prepares]
    return [txlog.to_row(meta, pdir.broker_id, captured, "transaction-log") for _, meta in sorted(states.items())]


def read_partition(pdir: PartitionDir, capture_time_ms: int | None = None) -> Iterator[tuple[str, Row]]:
    """('producers'|'transactions'|'decisions', row) pairs for one partition dir (what Spark tasks call)."""
    for row in producer_rows(pdir, capture_time_ms):
        yield "producers", row
    if pdir.is_transaction_log:
        decisions: list[Row] = []
        for row in coordinator_rows(pdir, capture_time_ms, decisions):
            yield "transactions", row
        for row in decisions:
            yield DECISIONS, row


def read_tree(
    root: str | os.PathLike[str], broker_id: int | None = None, capture_time_ms: int | None = None,
    decisions: list[Row] | None = None,
) -> tuple[list[Row], list[Row]]:
    """(producer rows, coordinator rows) of a whole tree, in-process (for small trees and tests); the
    decisions rows are appended to `decisions` when given."""
    producers: list[Row] = []
    coordinators: list[Row] = []
    for pdir in list_partition_dirs(root, broker_id):
        for kind, row in read_partition(pdir, capture_time_ms):
            if kind == DECISIONS:
                if decisions is not None:
                    decisions.append(row)
                continue
            (producers if kind == "producers" else coordinators).append(row)
    return producers, coordinators
