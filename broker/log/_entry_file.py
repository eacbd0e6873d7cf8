"""Append-only files of fixed-size entries (the shared machinery of .index, .timeindex, .txnindex).

The file is written as entries are added (never preallocated) and read into memory only when first
needed, so an idle segment costs no memory and no open file for its indexes.
"""

from __future__ import annotations

import os
import struct
from typing import Generic, TypeVar

from kafka_txn_broker.log import file_cache

T = TypeVar("T")


class EntryFile(Generic[T]):
    """Entries of type T, mirrored in memory once loaded; subclasses define the codec."""

    __slots__ = ("path", "_entries", "_dirty")
    ENTRY: struct.Struct

    def __init__(self, path: str) -> None:
        self.path = path
        self._entries: list[T] | None = None
        self._dirty = False  # written since the last fsync

    # -- codec -----------------------------------------------------------------------------
    def _decode(self, fields: tuple[int, ...]) -> T:
        raise NotImplementedError

    def _encode(self, entry: T) -> bytes:
        raise NotImplementedError

    # -- loading ---------------------------------------------------------------------------
    def entries(self) -> list[T]:
        if self._entries is None:
            self._entries = self._read_file()
        return self._entries

    def _read_file(self) -> list[T]:
        try:
            data = file_cache.read_all(self.path)
        except FileNotFoundError:
            return []
        size = self.ENTRY.size
        usable = len(data) - len(data) % size  # a torn last entry is dropped
        return [self._decode(f) for f in self.ENTRY.iter_unpack(memoryview(data)[:usable])]

    @property
    def loaded(self) -> bool:
        return self._entries is not None

    def unload(self) -> None:
        self._entries = None

    # -- mutation --------------------------------------------------------------------------
    def _append(self, entry: T) -> None:
        entries = self.entries()
        file_cache.write_at(self.path, self._encode(entry), len(entries) * self.ENTRY.size)
        entries.append(entry)
        self._dirty = True

    def _keep_first(self, count: int) -> None:
        entries = self.entries()
        if count >= len(entries) and self._file_size() == count * self.ENTRY.size:
            return
        del entries[count:]
        if count == 0:
            self.delete_file()
        else:
            file_cache.truncate(self.path, count * self.ENTRY.size)
            self._dirty = True

    def _file_size(self) -> int:
        try:
            return os.stat(self.path).st_size
        except FileNotFoundError:
            return 0

    def reset(self) -> None:
        """Drop every entry and the file (before a rebuild)."""
        self._entries = []
        self.delete_file()

    def delete_file(self) -> None:
        file_cache.remove(self.path)

    def flush(self) -> None:
        if self._dirty:
            file_cache.fsync(self.path)
            self._dirty = False

    def __len__(self) -> int:
        return len(self.entries())
