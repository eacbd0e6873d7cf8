"""One log segment: `<20-digit base offset>.log` plus its `.index`, `.timeindex` and `.txnindex`.

A segment object is small (slots, no open files); indexes are opened on first use and checked for
sanity then, and rebuilt from the `.log` when they do not fit it. Only the segment being appended to
keeps its offset and time indexes in memory (see log/_entry_file.py); other segments read theirs from
the files, and no segment holds its `.txnindex` in memory.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from kafka_txn_broker.clock import Clock
from kafka_txn_broker.formats.record_batch import HEADER_SIZE, MIN_BATCH_LENGTH, BatchHeader, batch_crc_ok
from kafka_txn_broker.log import file_cache
from kafka_txn_broker.log.offset_index import OffsetIndex
from kafka_txn_broker.log.time_index import TimeIndex
from kafka_txn_broker.log.transaction_index import TransactionIndex

_SCAN_CHUNK = 64 * 1024


class SegmentStateUnknown(OSError):
    """A failed append could not be rolled back: the segment file may hold bytes past its size."""


def segment_name(base_offset: int, suffix: str) -> str:
    return f"{base_offset:020d}{suffix}"


class LogSegment:
    __slots__ = ("dir", "base_offset", "suffix", "log_path", "size", "index_interval", "first_append_ms", "dirty",
                 "_bytes_since_index", "_max_timestamp", "_offset_of_max_timestamp",
                 "_offset_index", "_time_index", "_txn_index")

    def __init__(self, directory: str, base_offset: int, size: int, index_interval: int, suffix: str = "") -> None:
        self.dir = directory
        self.base_offset = base_offset
        # Appended to every file name: the log cleaner writes a replacement segment as `<base>.log.cleaned`
        # etc. (see log/cleaner.py), so the files being built never look like a live segment.
        self.suffix = suffix
        self.log_path = self._path(".log")  # built once: every append and read names this file
        self.size = size
        self.index_interval = index_interval
        self.first_append_ms: int | None = None
        self.dirty = False  # .log written since its last fsync (an fsync costs ~1 ms even when clean)
        self._bytes_since_index = 0
        self._max_timestamp = -1
        self._offset_of_max_timestamp = -1
        self._offset_index: OffsetIndex | None = None
        self._time_index: TimeIndex | None = None
        self._txn_index: TransactionIndex | None = None

    @classmethod
    def create(cls, directory: str, base_offset: int, index_interval: int, suffix: str = "") -> LogSegment:
        seg = cls(directory, base_offset, 0, index_interval, suffix)
        seg.dirty = True
        os.close(os.open(seg.log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))
        for stale in (seg.index_path, seg.time_index_path, seg.txn_index_path):
            file_cache.remove(stale)
        return seg

    # -- paths -----------------------------------------------------------------------------
    def _path(self, suffix: str) -> str:
        return os.path.join(self.dir, segment_name(self.base_offset, suffix) + self.suffix)

    @property
    def index_path(self) -> str:
        return self._path(".index")

    @property
    def time_index_path(self) -> str:
        return self._path(".timeindex")

    @property
    def txn_index_path(self) -> str:
        return self._path(".txnindex")

    # -- indexes (lazy) --------------------------------------------------------------------
    @property
    def offset_index(self) -> OffsetIndex:
        if self._offset_index is None:
            self._load_indexes()
        assert self._offset_index is not None
        return self._offset_index

    @property
    def time_index(self) -> TimeIndex:
        if self._time_index is None:
            self._load_indexes()
        assert self._time_index is not None
        return self._time_index

    @property
    def txn_index(self) -> TransactionIndex:
        if self._txn_index is None:
            self._txn_index = TransactionIndex(self.txn_index_path)
        return self._txn_index

    def _load_indexes(self) -> None:
        self._offset_index = OffsetIndex(self.index_path, self.base_offset)
        self._time_index = TimeIndex(self.time_index_path, self.base_offset)
        # A missing index on a big segment (e.g. files copied from elsewhere) would make every
        # lookup scan from byte 0: rebuild it once instead.
        missing = len(self._offset_index) == 0 and self.size > 4 * self.index_interval
        if missing or not self._offset_index.is_sane(self.size) or not self._time_index.is_sane(2**63):
            self.rebuild_indexes()

    def rebuild_indexes(self) -> None:
        """Recreate `.index` and `.timeindex` by scanning the `.log` (in memory while building)."""
        self._offset_index = OffsetIndex(self.index_path, self.base_offset)
        self._time_index = TimeIndex(self.time_index_path, self.base_offset)
        for index in (self._offset_index, self._time_index):
            index.reset()
            index.load()
        self._bytes_since_index = 0
        self._max_timestamp = -1
        self._offset_of_max_timestamp = -1
        for pos, header in self.iter_headers(0):
            self._index_batch(pos, header)
        self._offset_index.unload()
        self._time_index.unload()

    def _index_batch(self, pos: int, header: BatchHeader) -> None:
        """Kafka's rule: an index entry once more than index_interval bytes passed since the last."""
        if header.max_timestamp > self._max_timestamp:
            self._max_timestamp = header.max_timestamp
            self._offset_of_max_timestamp = header.last_offset
        if self._bytes_since_index > self.index_interval:
            assert self._offset_index is not None and self._time_index is not None
            self._offset_index.append(header.last_offset, pos)
            self._time_index.maybe_append(self._max_timestamp, self._offset_of_max_timestamp)
            self._bytes_since_index = 0
        self._bytes_since_index += header.size

    # -- writing ---------------------------------------------------------------------------
    def append(self, data: bytes | bytearray | memoryview, batches: list[tuple[int, BatchHeader]],
               clock: Clock) -> None:
        """Append whole batches; `batches` holds (position within data, header) of each.

        A failed write (ENOSPC, EIO...) is rolled back: the `.log` is cut back to its old size and the
        index entries of this append are dropped, so the segment is exactly as before and the OSError
        propagates. If the rollback fails too, SegmentStateUnknown says the file may hold bytes past
        `size` (the caller must stop using the log; recovery at the next start cuts them)."""
        if self._offset_index is None or not self._offset_index.loaded:
            self._load_for_append()
        start = self.size
        saved = (self._bytes_since_index, self._max_timestamp, self._offset_of_max_timestamp)
        self.dirty = True
        try:
            file_cache.write_at(self.log_path, data, start)
            for pos, header in batches:
                self._index_batch(start + pos, header)
        except OSError as exc:
            self._roll_back(start, batches[0][1].base_offset, saved, exc)
            raise
        if self.first_append_ms is None:  # read the clock once per segment, not per append
            self.first_append_ms = clock.millis()
        self.size += len(data)

    def _load_for_append(self) -> None:
        self.offset_index.load()
        self.time_index.load()

    def _roll_back(self, size: int, first_offset: int, saved: tuple[int, int, int], cause: OSError) -> None:
        # Without this a partial write would stay on disk past `size`: the next append overwrites only
        # part of it, and after a clean restart (which trusts the file size) the leftover bytes would
        # sit inside the log.
        try:
            file_cache.truncate(self.log_path, size)
            self.offset_index.truncate_to(first_offset)
            self.time_index.truncate_to(first_offset)
        except OSError as again:
            raise SegmentStateUnknown(f"{self.log_path}: append failed ({cause}) and so did its rollback "
                                      f"({again})") from cause
        self._bytes_since_index, self._max_timestamp, self._offset_of_max_timestamp = saved

    def on_become_inactive(self) -> None:
        """At roll: record the segment's max timestamp so time lookups can skip it."""
        if self._max_timestamp >= 0:
            self.time_index.maybe_append(self._max_timestamp, self._offset_of_max_timestamp)

    def release_indexes(self) -> None:
        """Forget the in-memory index entries (lookups read the files from now on). Called once a rolled
        segment is flushed: entries cost what they cost on disk (20 bytes per log.index.interval.bytes
        of data, about 0.5%), but a broker under sustained load would still grow with every byte ever
        written if rolled segments kept them."""
        for index in (self._offset_index, self._time_index):
            if index is not None:
                index.unload()

    def truncate_to(self, position: int, offset: int) -> None:
        """Cut the `.log` at `position`, where the batch starting at `offset` begins, and drop the
        index entries of the removed batches."""
        file_cache.truncate(self.log_path, position)
        self.dirty = True
        self.size = position
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        self._max_timestamp, self._offset_of_max_timestamp = self.time_index.last_entry() or (-1, -1)
        self._bytes_since_index = 0

    def flush(self) -> None:
        if self.dirty:
            file_cache.fsync(self.log_path)
            self.dirty = False
        if self._offset_index is not None:
            self._offset_index.flush()
        if self._time_index is not None:
            self._time_index.flush()
        if self._txn_index is not None:
            self._txn_index.flush()

    def close(self) -> None:
        for path in (self.log_path, self.index_path, self.time_index_path, self.txn_index_path):
            file_cache.FILE_CACHE.close(path)
        self._offset_index = self._time_index = self._txn_index = None

    @property
    def paths(self) -> tuple[str, str, str, str]:
        """The `.log` and its three index files."""
        return self.log_path, self.index_path, self.time_index_path, self.txn_index_path

    def delete(self) -> None:
        for path in self.paths:
            file_cache.remove(path)
        self._offset_index = self._time_index = self._txn_index = None

    # -- reading ---------------------------------------------------------------------------
    def read(self, start: int, end: int) -> bytes:
        return file_cache.read_at(self.log_path, end - start, start)

    def iter_headers(self, start: int) -> Iterator[tuple[int, BatchHeader]]:
        """(position, header) of each whole batch from `start` on, reading the file in chunks."""
        for pos, header, _ in self._scan(start, with_bodies=False):
            yield pos, header

    def iter_batches(self, start: int) -> Iterator[tuple[int, BatchHeader, memoryview]]:
        """(position, header, the whole batch) of each batch from `start` on."""
        for pos, header, raw in self._scan(start, with_bodies=True):
            assert raw is not None
            yield pos, header, raw

    def _scan(self, start: int, *, with_bodies: bool
              ) -> Iterator[tuple[int, BatchHeader, memoryview | None]]:
        pos = start
        chunk = memoryview(b"")
        chunk_start = pos
        while self.size - pos >= HEADER_SIZE:
            rel = pos - chunk_start
            if rel + HEADER_SIZE > len(chunk):
                chunk_start, rel = pos, 0
                chunk = memoryview(self.read(pos, min(pos + _SCAN_CHUNK, self.size)))
            header = BatchHeader.parse(chunk, rel)
            if header.batch_length < MIN_BATCH_LENGTH or pos + header.size > self.size:
                return  # torn or garbage tail: the caller sees where the good data ends
            raw: memoryview | None = None
            if with_bodies:
                if rel + header.size > len(chunk):
                    chunk_start, rel = pos, 0
                    chunk = memoryview(self.read(pos, min(pos + max(_SCAN_CHUNK, header.size), self.size)))
                raw = chunk[rel:rel + header.size]
            yield pos, header, raw
            pos += header.size

    def find(self, offset: int) -> tuple[int, BatchHeader] | None:
        """The batch holding `offset` (or the first one after it), starting from the index hint."""
        for pos, header in self.iter_headers(self.offset_index.lookup(offset)):
            if header.last_offset >= offset:
                return pos, header
        return None

    def read_next_offset(self) -> int:
        """Offset after the last batch (scans from the last index entry)."""
        last = self.offset_index.last_entry()
        next_offset = self.base_offset
        for _pos, header in self.iter_headers(last[1] if last else 0):
            next_offset = header.next_offset
        return next_offset

    def max_timestamp_hint(self) -> int:
        return max(self._max_timestamp, self.time_index.max_timestamp())

    # -- recovery --------------------------------------------------------------------------
    def recover(self) -> tuple[int, int]:
        """Re-validate every batch (CRC, framing, increasing offsets), cut the log after the last good
        one and rebuild the indexes. Returns (bytes truncated, next offset)."""
        valid_end = 0
        next_offset = self.base_offset
        for pos, header, raw in self.iter_batches(0):
            if pos != valid_end or header.magic != 2 or not batch_crc_ok(raw, 0, header):
                break
            if header.base_offset < next_offset or header.last_offset_delta < 0:
                break
            valid_end = pos + header.size
            next_offset = header.next_offset
        truncated = self.size - valid_end
        if truncated:
            file_cache.truncate(self.log_path, valid_end)
            self.size = valid_end
            self.dirty = True
        self.rebuild_indexes()
        return truncated, next_offset

