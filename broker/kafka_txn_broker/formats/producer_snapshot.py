"""Kafka's producer state snapshot file, `<20-digit offset>.snapshot` (format: formats.md).

Version 1 (unchanged since 0.11): int16 version, uint32 CRC-32C over everything after the CRC, int32
entry count, then 46-byte entries. The file name's offset is the snapshot's end offset (exclusive): a
snapshot is state as of that offset only, later batches live in the segments after it.
"""

from __future__ import annotations

import contextlib
import os
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from kafka_txn_broker.formats.record_batch import crc32c

VERSION = 1
SUFFIX = ".snapshot"
_HEADER = struct.Struct(">hIi")
_ENTRY = struct.Struct(">qhiqiqiq")
HEADER_SIZE = _HEADER.size  # 10
ENTRY_SIZE = _ENTRY.size  # 46
_CRC_FROM = 6


class CorruptSnapshotError(ValueError):
    """The snapshot cannot be trusted (the message names the file): the broker deletes it and rebuilds
    from the log, a reader of copied files reports it."""


@dataclass(frozen=True, slots=True)
class SnapshotEntry:
    producer_id: int
    producer_epoch: int
    last_sequence: int  # -1: no batch metadata
    last_offset: int  # -1: no batch metadata
    offset_delta: int
    timestamp: int
    coordinator_epoch: int  # -1: never saw a marker
    current_txn_first_offset: int  # -1: no open transaction

    @property
    def has_open_transaction(self) -> bool:
        # Kafka's readers treat any negative first offset as "no transaction".
        return self.current_txn_first_offset >= 0


def snapshot_file_name(offset: int) -> str:
    return f"{offset:020d}{SUFFIX}"


def snapshot_path(directory: Path | str, offset: int) -> Path:
    return Path(directory) / snapshot_file_name(offset)


def snapshot_offset(path: Path | str) -> int:
    """The offset a snapshot file's name gives; CorruptSnapshotError for any other name."""
    stem, dot, suffix = Path(path).name.partition(".")
    if not (dot and suffix == SUFFIX[1:] and stem.isdigit()):
        raise CorruptSnapshotError(f"{path}: not a snapshot file name (expected <20-digit offset>{SUFFIX})")
    return int(stem)


def list_snapshots(directory: Path | str) -> list[int]:
    """Offsets of the snapshot files in `directory`, ascending (`.deleted` and temp files skipped)."""
    offsets = []
    try:
        with os.scandir(directory) as it:
            for entry in it:
                stem, dot, suffix = entry.name.partition(".")
                if dot and suffix == SUFFIX[1:] and stem.isdigit() and entry.is_file():
                    offsets.append(int(stem))
    except FileNotFoundError:
        return []
    return sorted(offsets)


def latest_snapshot(directory: Path | str) -> Path | None:
    """The snapshot with the highest offset in a partition dir, or None."""
    offsets = list_snapshots(directory)
    return snapshot_path(directory, offsets[-1]) if offsets else None


def encode_snapshot(entries: Iterable[SnapshotEntry]) -> bytes:
    body = bytearray(_HEADER.size)
    count = 0
    for e in entries:
        body += _ENTRY.pack(e.producer_id, e.producer_epoch, e.last_sequence, e.last_offset, e.offset_delta,
                            e.timestamp, e.coordinator_epoch, e.current_txn_first_offset)
        count += 1
    struct.pack_into(">i", body, _CRC_FROM, count)
    _HEADER.pack_into(body, 0, VERSION, crc32c(memoryview(body)[_CRC_FROM:]), count)
    return bytes(body)


def decode_snapshot(data: bytes, name: str = "snapshot") -> list[SnapshotEntry]:
    """Entries of a snapshot; CorruptSnapshotError names the file and what is wrong."""
    if len(data) < HEADER_SIZE:
        raise CorruptSnapshotError(
            f"{name}: {len(data)} bytes is too short for a producer snapshot (needs >= {HEADER_SIZE})")
    version, crc, count = _HEADER.unpack_from(data)
    if version != VERSION:
        raise CorruptSnapshotError(f"{name}: snapshot version {version} is not supported (only version 1 exists)")
    computed = crc32c(memoryview(data)[_CRC_FROM:])
    if computed != crc:
        raise CorruptSnapshotError(
            f"{name}: CRC mismatch (stored {crc:#010x}, computed {computed:#010x}): the file is corrupt or truncated")
    if count < 0 or len(data) != HEADER_SIZE + count * ENTRY_SIZE:
        raise CorruptSnapshotError(
            f"{name}: {count} entries need {HEADER_SIZE + count * ENTRY_SIZE} bytes, the file has {len(data)}")
    return [SnapshotEntry(*fields) for fields in _ENTRY.iter_unpack(memoryview(data)[HEADER_SIZE:])]


def read_snapshot(path: Path | str) -> list[SnapshotEntry]:
    with open(path, "rb") as f:
        data = f.read()
    return decode_snapshot(data, os.fspath(path))


def write_snapshot(directory: Path | str, offset: int, entries: Iterable[SnapshotEntry]) -> Path:
    """Write atomically: a temp file, fsync, rename over the final name. (A torn or missing snapshot is
    caught by its CRC or absence and rebuilt from the log, so the directory is not fsynced: at 1 ms per
    fsync that would dominate closing tens of thousands of partitions.)"""
    path = snapshot_path(directory, offset)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(encode_snapshot(entries))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return path


def delete_snapshot(directory: Path | str, offset: int) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.remove(snapshot_path(directory, offset))
