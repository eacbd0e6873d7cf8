"""Kafka producer-state snapshots (`<partition dir>/<offset>.snapshot`), read and written.

Layout (version 1, unchanged since 0.11): int16 version, uint32 CRC-32C over the rest of the file,
int32 entry count, then 46-byte entries. A snapshot is state as of its offset only: later batches
live in the segments after it (see logdir.py, which replays them).
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import crc32c

SNAPSHOT_VERSION = 1
_HEADER = struct.Struct(">hIi")
_ENTRY = struct.Struct(">qhiqiqiq")
ENTRY_SIZE = _ENTRY.size  # 46
HEADER_SIZE = _HEADER.size  # 10
_SNAPSHOT_NAME = re.compile(r"^(\d+)\.snapshot$")
# Kafka renames partition dirs it is deleting or moving; their state is not the replica's state.
SKIPPED_DIR_SUFFIXES = ("-delete", "-future", "-stray")


class SnapshotError(ValueError):
    """A `.snapshot` file is corrupt or not a producer-state snapshot."""


@dataclass(frozen=True)
class SnapshotEntry:
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int

    @property
    def has_open_transaction(self) -> bool:
        # Kafka readers treat any negative first offset as "no transaction".
        return self.current_txn_first_offset >= 0


def encode_snapshot(entries: Iterable[SnapshotEntry]) -> bytes:
    body = bytearray()
    count = 0
    for e in entries:
        body += _ENTRY.pack(
            e.producer_id,
            e.producer_epoch,
            e.last_sequence,
            e.last_offset,
            e.offset_delta,
            e.timestamp,
            e.coordinator_epoch,
            e.current_txn_first_offset,
        )
        count += 1
    rest = struct.pack(">i", count) + bytes(body)
    return struct.pack(">hI", SNAPSHOT_VERSION, crc32c.crc32c(rest)) + rest


def decode_snapshot(data: bytes, name: str = "snapshot") -> list[SnapshotEntry]:
    """Entries of a snapshot; SnapshotError names the file and what is wrong."""
    if len(data) < HEADER_SIZE:
        raise SnapshotError(f"{name}: {len(data)} bytes is too short for a producer snapshot (needs >= 10)")
    version, crc, count = _HEADER.unpack_from(data)
    if version != SNAPSHOT_VERSION:
        raise SnapshotError(f"{name}: snapshot version {version} is not supported (only version 1 exists)")
    actual = crc32c.crc32c(memoryview(data)[6:])
    if actual != crc:
        raise SnapshotError(
            f"{name}: CRC mismatch (stored {crc:#010x}, computed {actual:#010x}): the file is corrupt or "
            "truncated; copy it again from the broker"
        )
    if count < 0 or len(data) != HEADER_SIZE + count * ENTRY_SIZE:
        raise SnapshotError(
            f"{name}: {count} entries need {HEADER_SIZE + count * ENTRY_SIZE} bytes, file has {len(data)}"
        )
    return [SnapshotEntry(*fields) for fields in _ENTRY.iter_unpack(memoryview(data)[HEADER_SIZE:])]


def read_snapshot(path: str | os.PathLike[str]) -> list[SnapshotEntry]:
    return decode_snapshot(Path(path).read_bytes(), str(path))


def write_snapshot(path: str | os.PathLike[str], entries: Iterable[SnapshotEntry]) -> None:
    Path(path).write_bytes(encode_snapshot(entries))


def snapshot_file_name(offset: int) -> str:
    return f"{offset:020d}.snapshot"


def snapshot_offset(path: str | os.PathLike[str]) -> int:
    match = _SNAPSHOT_NAME.match(Path(path).name)
    if match is None:
        raise SnapshotError(f"{path}: not a snapshot file name (expected <20-digit offset>.snapshot)")
    return int(match.group(1))


def latest_snapshot(partition_dir: str | os.PathLike[str]) -> Path | None:
    """The snapshot with the highest offset in a partition dir (`.snapshot.deleted` files are ignored)."""
    best: tuple[int, Path] | None = None
    for child in Path(partition_dir).iterdir():
        match = _SNAPSHOT_NAME.match(child.name)
        if match and child.is_file():
            offset = int(match.group(1))
            if best is None or offset > best[0]:
                best = (offset, child)
    return None if best is None else best[1]


def parse_partition_dir(name: str) -> tuple[str, int] | None:
    """'orders-3' -> ('orders', 3); None for dirs that are not live partition dirs."""
    if name.endswith(SKIPPED_DIR_SUFFIXES):
        return None
    topic, sep, index = name.rpartition("-")
    if not sep or not topic or not index.isdigit():
        return None
    return topic, int(index)
