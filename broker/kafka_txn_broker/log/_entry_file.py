"""Append-only files of fixed-size entries (the shared machinery of .index, .timeindex, .txnindex).

The file is written as entries are added (never preallocated), so an idle segment costs no memory and
no open file for its indexes. An index is read in one of two ways:
- mirrored: `load()` reads the file into columns, one `array` per field of the entry, holding exactly
  the numbers the file holds, so an entry costs in memory what it costs on disk (8 bytes in `.index`,
  12 in `.timeindex`; Kafka's memory-mapped indexes cost the same). The segment being appended to
  mirrors its offset and time indexes: every append looks at the last entry.
- from the file: otherwise every lookup reads the entries it needs with pread (a binary search reads
  about log2(n) entries), so rolled segments cost no memory however often they are read, as Kafka's
  indexes cost no heap.
Sorted columns (offsets, positions, timestamps) are searched with `bisect` in both ways.

Threading: like the segment that owns it, an index is used from the broker's event loop only.
"""

from __future__ import annotations

import os
import struct
from array import array
from collections.abc import Iterator, Sequence
from typing import Any, Generic, TypeVar, overload

from kafka_txn_broker.log import file_cache

T = TypeVar("T")
Row = tuple[int, ...]
_READ_CHUNK = 64 * 1024


class EntryFile(Generic[T]):
    """Entries of type T; subclasses define ENTRY (the big-endian struct of one entry, fields of type
    h, i or q) and the conversion to and from T."""

    __slots__ = ("path", "_cols", "_count", "_dirty")
    ENTRY: struct.Struct

    def __init__(self, path: str) -> None:
        self.path = path
        self._cols: tuple[array[int], ...] | None = None  # the mirror, when loaded
        self._count: int | None = None  # entries in the file, when not mirrored (None: not read yet)
        self._dirty = False  # written since the last fsync

    # -- codec -----------------------------------------------------------------------------
    def _decode(self, row: Row) -> T:
        raise NotImplementedError

    def _encode(self, entry: T) -> Row:
        raise NotImplementedError

    # -- mirroring -------------------------------------------------------------------------
    def load(self) -> None:
        """Mirror the file in memory (for the segment being appended to)."""
        if self._cols is None:
            self._cols = self._read_columns()

    def unload(self) -> None:
        """Forget the mirror; lookups read the file from now on."""
        if self._cols is not None:
            self._count = len(self._cols[0])
            self._cols = None

    @property
    def loaded(self) -> bool:
        return self._cols is not None

    def _empty_columns(self) -> tuple[array[int], ...]:
        # The struct's codes (h, i, q) are array type codes of the same widths.
        return tuple(array(code) for code in self.ENTRY.format.lstrip(">"))

    def _read_columns(self) -> tuple[array[int], ...]:
        cols = self._empty_columns()
        fields = zip(*self.rows(), strict=True)  # one tuple per field
        for col, values in zip(cols, fields, strict=False):  # no entries: no fields, columns stay empty
            col.extend(values)
        return cols

    # -- reading ---------------------------------------------------------------------------
    def __len__(self) -> int:
        if self._cols is not None:
            return len(self._cols[0])
        if self._count is None:
            self._count = self._file_size() // self.ENTRY.size  # a torn last entry is ignored
        return self._count

    def column(self, field: int) -> Sequence[int]:
        """One field of every entry, indexable and bisectable."""
        if self._cols is not None:
            return self._cols[field]
        return _FileColumn(self, field, len(self))

    def row(self, index: int) -> Row:
        """Entry `index` (negative: from the end) as stored."""
        if self._cols is not None:
            return tuple([col[index] for col in self._cols])
        n = len(self)
        i = index + n if index < 0 else index
        if not 0 <= i < n:
            raise IndexError(f"entry {index} of {n} in {self.path}")
        size = self.ENTRY.size
        return self.ENTRY.unpack(file_cache.read_at(self.path, size, i * size))

    def last_row(self) -> Row | None:
        return self.row(-1) if len(self) else None

    def rows(self, start: int = 0) -> Iterator[Row]:
        """Entries from `start` on, as stored (the file is read in chunks when not mirrored)."""
        if self._cols is not None:
            yield from zip(*(col[start:] for col in self._cols), strict=True)
            return
        size, end = self.ENTRY.size, len(self) * self.ENTRY.size
        pos = start * size
        per_chunk = max(1, _READ_CHUNK // size) * size
        while pos < end:
            try:
                data = file_cache.read_at(self.path, min(per_chunk, end - pos), pos)
            except FileNotFoundError:
                return
            usable = len(data) - len(data) % size
            if not usable:
                return
            yield from self.ENTRY.iter_unpack(memoryview(data)[:usable])
            pos += usable

    def entries(self) -> list[T]:
        """Every entry, decoded (a copy: for scans, checks and tests, not for the hot paths)."""
        return [self._decode(row) for row in self.rows()]

    # -- mutation --------------------------------------------------------------------------
    def _append(self, entry: T) -> None:
        self._append_row(self._encode(entry))

    def _append_row(self, row: Row) -> None:
        """Append one entry as stored (the offset and time indexes call this directly: the segment being
        appended to adds an entry every log.index.interval.bytes, on every replica)."""
        cols = self._cols
        n = len(cols[0]) if cols is not None else len(self)
        entry = self.ENTRY
        file_cache.write_at(self.path, entry.pack(*row), n * entry.size)
        if cols is not None:
            for col, value in zip(cols, row, strict=True):
                col.append(value)
        else:
            self._count = n + 1
        self._dirty = True

    def _keep_first(self, count: int) -> None:
        count = min(count, len(self))
        if count == len(self) and self._file_size() == count * self.ENTRY.size:
            return  # nothing to drop (a torn last entry is cut below)
        if self._cols is not None:
            for col in self._cols:
                del col[count:]
        else:
            self._count = count
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
        """Drop every entry and the file (before a rebuild); a mirrored index stays mirrored."""
        if self._cols is not None:
            self._cols = self._empty_columns()
        self.delete_file()

    def delete_file(self) -> None:
        file_cache.remove(self.path)
        if self._cols is None:
            self._count = 0

    def flush(self) -> None:
        if self._dirty:
            file_cache.fsync(self.path)
            self._dirty = False


class _FileColumn(Sequence[int]):
    """One field of an index file's entries, read on demand (for bisect over an unmirrored index)."""

    __slots__ = ("_file", "_field", "_len")

    def __init__(self, file: EntryFile[Any], field: int, length: int) -> None:
        self._file = file
        self._field = field
        self._len = length

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, index: int) -> int: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[int]: ...

    def __getitem__(self, index: int | slice) -> int | Sequence[int]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._len))]
        return self._file.row(index)[self._field]
