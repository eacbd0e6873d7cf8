"""Kafka's producer state snapshot file, `<20-digit offset>.snapshot` (format: formats.md).

Version 1: int16 version, uint32 CRC-32C over everything after the CRC, int32 entry count, then 46-byte
entries. The file name's offset is the snapshot's end offset (exclusive).
"""

from __future__ import annotations

import contextlib
import os
import struct
from dataclasses import dataclass
from pathlib import Path

from kafka_txn_broker.log.record_batch import crc32c

VERSION = 1
SUFFIX = ".snapshot"
_HEADER = struct.Struct(">hIi")
_ENTRY = struct.Struct(">qhiqiqiq")
ENTRY_SIZE = _ENTRY.size  # 46
_CRC_FROM = 6


class CorruptSnapshotError(ValueError):
    """The snapshot cannot be trusted; the caller deletes it and rebuilds from the log."""


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


def snapshot_path(directory: Path | str, offset: int) -> Path:
    return Path(directory) / f"{offset:020d}{SUFFIX}"


def list_snapshots(directory: Path | str) -> list[int]:
    """Offsets of the snapshot files in `directory`, ascending (`.deleted` and temp files skipped)."""
    offsets = []
    try:
        with os.scandir(directory) as it:
            for entry in it:
                stem, dot, suffix = entry.name.partition(".")
                if dot and suffix == "snapshot" and stem.isdigit():
                    offsets.append(int(stem))
    except FileNotFoundError:
        return []
    return sorted(offsets)


def encode_snapshot(entries: list[SnapshotEntry]) -> bytes:
    body = bytearray(_HEADER.pack(VERSION, 0, len(entries)))
    for e in entries:
        body += _ENTRY.pack(e.producer_id, e.producer_epoch, e.last_sequence, e.last_offset, e.offset_delta,
                            e.timestamp, e.coordinator_epoch, e.current_txn_first_offset)
    struct.pack_into(">I", body, 2, crc32c(memoryview(body)[_CRC_FROM:]))
    return bytes(body)


def decode_snapshot(data: bytes, name: str = "snapshot") -> list[SnapshotEntry]:
    if len(data) < _HEADER.size:
        raise CorruptSnapshotError(f"{name}: {len(data)} bytes is shorter than the 10-byte header")
    version, crc, count = _HEADER.unpack_from(data)
    if version != VERSION:
        raise CorruptSnapshotError(f"{name}: unknown snapshot version {version} (expected {VERSION})")
    computed = crc32c(memoryview(data)[_CRC_FROM:])
    if computed != crc:
        raise CorruptSnapshotError(f"{name}: CRC mismatch (stored {crc:#010x}, computed {computed:#010x})")
    if count < 0 or len(data) != _HEADER.size + count * ENTRY_SIZE:
        raise CorruptSnapshotError(f"{name}: {count} entries do not match the file size {len(data)}")
    return [SnapshotEntry(*fields) for fields in _ENTRY.iter_unpack(memoryview(data)[_HEADER.size:])]


def read_snapshot(path: Path | str) -> list[SnapshotEntry]:
    with open(path, "rb") as f:
        data = f.read()
    return decode_snapshot(data, os.fspath(path))


def write_snapshot(directory: Path | str, offset: int, entries: list[SnapshotEntry]) -> Path:
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
