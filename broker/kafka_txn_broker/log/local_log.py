"""`LocalLog` (Kafka's name): the ordered segments of one partition directory.

Durability model: the active segment is fsynced per the flush policy (log.flush.interval.messages /
.ms) and always at close; a segment is fsynced when it is rolled. So after a crash only the last
segment can hold a torn or corrupt tail, and recovery re-validates just that segment. A clean close
leaves `.kafka_cleanshutdown`; opening removes it, so its absence at open means "recover".

Storage errors: a failed append is rolled back by the segment and surfaces as KafkaStorageError (the
Produce response's KAFKA_STORAGE_ERROR for that partition); the log stays usable once the disk
recovers. When the on-disk state is no longer known (the rollback failed, an fsync failed, or a
caller reports a failure after a write via `mark_offline`), the log goes offline like a Kafka log dir:
every read and write fails with KafkaStorageError until the node restarts, and close leaves no
clean-shutdown marker, so the next open recovers the last segment.
"""

from __future__ import annotations

import bisect
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kafka_txn_broker.clock import Clock
from kafka_txn_broker.configs.broker_config import BrokerConfig
from kafka_txn_broker.formats.errors import CorruptRecordError, KafkaStorageError, OffsetOutOfRangeError
from kafka_txn_broker.formats.record_batch import INT32_MAX, BatchHeader, iter_records
from kafka_txn_broker.log import cleaner, file_cache
from kafka_txn_broker.log.segment import LogSegment, SegmentStateUnknown

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
_NEVER = 2**62  # log.flush.interval.ms at or above this (Kafka's default, Long.MAX_VALUE): no timed flush


@dataclass
class DirListing:
    """What one scandir of a partition directory tells us (no file is read)."""

    segments: dict[int, int] = field(default_factory=dict)  # base offset -> .log size
    snapshots: list[int] = field(default_factory=list)
    clean_shutdown: bool = False
    cleaning_leftovers: bool = False  # `.cleaned` / `.swap` files of an interrupted cleaner run


def scan_dir(directory: str) -> DirListing:
    listing = DirListing()
    with os.scandir(directory) as it:
        for entry in it:
            name = entry.name
            stem, _, suffix = name.partition(".")
            if name == CLEAN_SHUTDOWN_FILE:
                listing.clean_shutdown = True
            elif suffix == "log" and stem.isdigit():
                listing.segments[int(stem)] = entry.stat().st_size
            elif suffix == "snapshot" and stem.isdigit():  # "x.snapshot.deleted" has another suffix
                listing.snapshots.append(int(stem))
            elif name.endswith((cleaner.CLEANED_SUFFIX, cleaner.SWAP_SUFFIX)):
                listing.cleaning_leftovers = True
    listing.snapshots.sort()
    return listing


class LocalLog:
    __slots__ = ("dir", "config", "clock", "segments", "_next_offset", "_unflushed_messages",
                 "_last_flush_ms", "recovered_bytes", "was_clean", "offline", "segment_bytes",
                 "max_message_bytes", "_policy_at", "_flush_messages", "_flush_ms", "_roll_ms")

    def __init__(self, directory: str, config: BrokerConfig, clock: Clock, segments: list[LogSegment],
                 next_offset: int | None, was_clean: bool, segment_bytes: int | None = None) -> None:
        self.dir = directory
        self.config = config
        # The topic's segment.bytes (or the internal topics' own setting); log.segment.bytes otherwise.
        self.segment_bytes: int = segment_bytes if segment_bytes is not None else config["log.segment.bytes"]
        # The topic's max.message.bytes; None: the broker's message.max.bytes. Both are set again by the
        # replica manager when the topic's or the broker's configs change.
        self.max_message_bytes: int | None = None
        self.clock = clock
        self.segments = segments
        self._next_offset = next_offset  # None: not known yet (read lazily from the last segment)
        self._unflushed_messages = 0
        self._last_flush_ms = clock.millis()
        self.recovered_bytes = 0
        self.was_clean = was_clean
        self.offline: str | None = None  # why the log stopped serving (see the module docstring)
        # log.flush.interval.messages, log.flush.interval.ms and log.roll.ms as last read: every append
        # consults them, and they are read again once any broker config changed (BrokerConfig.changes).
        self._policy_at = -1
        self._flush_messages = self._flush_ms = self._roll_ms = 0

    # -- opening ---------------------------------------------------------------------------
    @classmethod
    def open(cls, directory: Path | str, config: BrokerConfig, clock: Clock,
             listing: DirListing | None = None, next_offset_hint: int | None = None,
             segment_bytes: int | None = None) -> LocalLog:
        """Create or load the log in `directory`; recover the last segment after an unclean stop, and
        finish (or roll back) a segment swap the log cleaner was making when the process stopped.

        `next_offset_hint` (the log end offset, known from the snapshot written at clean close) saves
        reading the last segment; it is ignored unless the previous shutdown was clean."""
        path = os.fspath(directory)
        try:
            os.makedirs(path, exist_ok=True)
            if listing is None:
                listing = scan_dir(path)
            if listing.cleaning_leftovers:
                cleaner.recover_interrupted_swaps(path)
                listing = scan_dir(path)
            interval = config["log.index.interval.bytes"]
            segments = [LogSegment(path, base, size, interval)
                        for base, size in sorted(listing.segments.items())]
            if listing.clean_shutdown:
                os.remove(os.path.join(path, CLEAN_SHUTDOWN_FILE))
            if not segments:
                segments = [LogSegment.create(path, 0, interval)]
            log = cls(path, config, clock, segments, None, listing.clean_shutdown, segment_bytes)
            active = segments[-1]
            if active.size == 0:
                log._next_offset = active.base_offset
            elif not listing.clean_shutdown:
                log.recovered_bytes, log._next_offset = active.recover()
            elif next_offset_hint is not None and next_offset_hint > active.base_offset:
                log._next_offset = next_offset_hint
            if active.size:
                active.first_append_ms = clock.millis()  # unknown after a restart: count from now
            return log
        except OSError as exc:
            raise KafkaStorageError(f"cannot open log directory {path}: {exc}") from exc

    # -- offsets ---------------------------------------------------------------------------
    @property
    def log_start_offset(self) -> int:
        return self.segments[0].base_offset

    @property
    def log_end_offset(self) -> int:
        if self._next_offset is None:
            self._next_offset = self.active.read_next_offset()
        return self._next_offset

    @property
    def active(self) -> LogSegment:
        return self.segments[-1]

    def segment_for(self, offset: int) -> int:
        """Index of the segment whose range holds `offset` (0 if before the first)."""
        return max(0, bisect.bisect_right(self.segments, offset, key=lambda s: s.base_offset) - 1)

    # -- writing ---------------------------------------------------------------------------
    def maybe_roll(self, size: int, last_offset: int) -> LogSegment | None:
        """Start a new segment if this append would not fit the active one. Returns the new segment."""
        active = self.segments[-1]
        if active.size == 0:
            return None
        too_big = active.size + size > self.segment_bytes
        overflow = last_offset - active.base_offset > INT32_MAX  # relative index offsets are int32
        if not (too_big or overflow):  # then only its age can roll it: the clock is read only here
            started = active.first_append_ms
            if started is None:
                return None
            if self._policy_at != BrokerConfig.changes:
                self._read_policy()
            if self.clock.millis() - started < self._roll_ms:
                return None
        return self.roll()

    def _read_policy(self) -> None:
        config = self.config
        self._flush_messages = config["log.flush.interval.messages"]
        self._flush_ms = config["log.flush.interval.ms"]
        self._roll_ms = config["log.roll.ms"]
        self._policy_at = BrokerConfig.changes

    def roll(self) -> LogSegment:
        self.check_online()
        active = self.active
        new_base = self.log_end_offset
        if active.size == 0:
            return active
        try:
            active.on_become_inactive()
            active.flush()  # a rolled segment is durable: recovery only ever looks at the last one
            active.release_indexes()
        except OSError as exc:
            self.mark_offline(exc)
            raise KafkaStorageError(f"cannot roll {active.log_path}: {exc}") from exc
        try:
            segment = LogSegment.create(self.dir, new_base, self.config["log.index.interval.bytes"])
        except OSError as exc:  # the old segment is intact and stays active; a stray empty file is harmless
            raise KafkaStorageError(f"cannot create a segment at offset {new_base} in {self.dir}: {exc}") from exc
        self.segments.append(segment)
        self._unflushed_messages = 0
        self._last_flush_ms = self.clock.millis()
        return segment

    def append(self, data: bytes | bytearray | memoryview, batches: list[tuple[int, BatchHeader]],
               record_count: int) -> None:
        """Append batches that already carry their offsets (the first must be the log end offset)."""
        if self.offline is not None:
            self.check_online()
        active = self.segments[-1]
        position, first_offset = active.size, batches[0][1].base_offset
        try:
            active.append(data, batches, self.clock)
        except SegmentStateUnknown as exc:
            self.mark_offline(exc)
            raise KafkaStorageError(f"cannot append to {active.log_path}: {exc}") from exc
        except OSError as exc:  # rolled back by the segment: nothing was appended
            raise KafkaStorageError(f"cannot append to {active.log_path}: {exc}") from exc
        last = batches[-1][1]
        self._next_offset = last.base_offset + last.last_offset_delta + 1
        self._unflushed_messages += record_count
        if self._policy_at != BrokerConfig.changes:
            self._read_policy()
        if self._unflushed_messages < self._flush_messages and self._flush_ms >= _NEVER:
            return  # the default policy (the OS flushes): nothing to decide
        try:
            self._maybe_flush()
        except KafkaStorageError:
            # The writer is told KAFKA_STORAGE_ERROR, which clients read as "not persisted" (librdkafka
            # may resend the batch under a new producer epoch): take the batch back out so a restart
            # does not find it as well. The log stays offline either way.
            try:
                active.truncate_to(position, first_offset)
                self._next_offset = first_offset
            except OSError:
                pass  # the disk refuses that too: recovery at the next start keeps what it finds
            raise

    def _maybe_flush(self) -> None:
        if self._policy_at != BrokerConfig.changes:
            self._read_policy()
        if self._unflushed_messages >= self._flush_messages:
            self.flush()
        elif self._flush_ms < _NEVER:  # the default (never) needs no clock read
            self.flush_if_due()

    def flush_if_due(self) -> bool:
        if self._unflushed_messages and \
                self.clock.millis() - self._last_flush_ms >= self.config["log.flush.interval.ms"]:
            self.flush()
            return True
        return False

    def flush(self) -> None:
        self.check_online()
        try:
            self.active.flush()
        except OSError as exc:
            # After a failed fsync the page cache may have dropped the dirty pages (Linux marks them
            # clean): retrying would report success for data that is gone. Stop, as Kafka does.
            self.mark_offline(exc)
            raise KafkaStorageError(f"cannot flush {self.active.log_path}: {exc}") from exc
        self._unflushed_messages = 0
        self._last_flush_ms = self.clock.millis()

    @property
    def unflushed_messages(self) -> int:
        return self._unflushed_messages

    # -- reading ---------------------------------------------------------------------------
    def check_offset(self, offset: int) -> None:
        if offset < self.log_start_offset or offset > self.log_end_offset:
            raise OffsetOutOfRangeError(
                f"offset {offset} is outside the log range [{self.log_start_offset}, {self.log_end_offset}] "
                f"of {self.dir}")

    def read(self, fetch_offset: int, max_bytes: int, max_offset_exclusive: int,
             min_one_batch: bool = True) -> bytes:
        """Whole batches from the one holding `fetch_offset`, within one segment, stopping before
        max_bytes (unless min_one_batch and nothing fit yet) and before any batch whose base offset
        reaches max_offset_exclusive."""
        self.check_online()
        self.check_offset(fetch_offset)
        try:
            return self._read(fetch_offset, max_bytes, max_offset_exclusive, min_one_batch)
        except OSError as exc:
            raise KafkaStorageError(f"cannot read {self.dir} at offset {fetch_offset}: {exc}") from exc

    def _read(self, fetch_offset: int, max_bytes: int, max_offset_exclusive: int, min_one_batch: bool) -> bytes:
        if fetch_offset >= self.log_end_offset or fetch_offset >= max_offset_exclusive:
            return b""
        for segment in self.segments[self.segment_for(fetch_offset):]:
            found = segment.find(fetch_offset)
            if found is None:
                continue
            start, _ = found
            end = start
            for pos, header in segment.iter_headers(start):
                if header.base_offset >= max_offset_exclusive:
                    break
                if pos + header.size - start > max_bytes and not (min_one_batch and end == start):
                    break
                end = pos + header.size
            return segment.read(start, end) if end > start else b""
        return b""

    def iter_batches(self, from_offset: int) -> Iterator[tuple[LogSegment, BatchHeader, memoryview]]:
        """Every batch whose last offset is >= from_offset, in order (for replay and rebuilds)."""
        for segment in self.segments[self.segment_for(from_offset):]:
            found = segment.find(from_offset)
            if found is None:
                continue
            for _pos, header, raw in segment.iter_batches(found[0]):
                yield segment, header, raw

    def offset_for_timestamp(self, timestamp: int, min_offset: int = 0) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record at or above `min_offset` (the log start offset) with
        timestamp >= `timestamp`, or None."""
        for segment in self.segments[self.segment_for(min_offset):]:
            if segment.size == 0:
                continue
            start_offset = segment.time_index.offset_before(timestamp)
            start = segment.offset_index.lookup(start_offset) if start_offset is not None else 0
            for pos, header in segment.iter_headers(start):
                if header.max_timestamp >= timestamp and header.last_offset >= min_offset:
                    found = _first_record_at_or_after(segment, pos, header, timestamp, min_offset)
                    if found is not None:
                        return found
        return None

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        best: tuple[LogSegment, int, BatchHeader] | None = None
        for segment in self.segments:
            for pos, header in segment.iter_headers(0):
                if best is None or header.max_timestamp > best[2].max_timestamp:
                    best = (segment, pos, header)
        if best is None:
            return None
        return _first_record_at_or_after(best[0], best[1], best[2], best[2].max_timestamp) or \
            (best[2].base_offset, best[2].max_timestamp)

    # -- truncation and removal ------------------------------------------------------------
    def truncate_to(self, offset: int) -> None:
        """Remove every batch holding an offset >= `offset` (the log ends at a batch boundary)."""
        self.check_online()
        if offset >= self.log_end_offset:
            return
        if offset <= self.log_start_offset:
            self.truncate_fully_and_start_at(offset)
            return
        while self.active.base_offset >= offset:
            self.segments.pop().delete()
        active = self.active
        found = active.find(offset)
        if found is not None:
            pos, header = found
            active.truncate_to(pos, header.base_offset)
            self._next_offset = header.base_offset
        else:
            self._next_offset = active.read_next_offset()
            active.txn_index.truncate_to(offset)
        self._unflushed_messages = 0

    def delete_first_segments(self, count: int) -> None:
        """Remove the `count` oldest segments (never the active one) and their files."""
        assert 0 < count < len(self.segments)
        doomed, self.segments = self.segments[:count], self.segments[count:]
        for segment in doomed:
            segment.delete()

    def truncate_fully_and_start_at(self, offset: int) -> None:
        for segment in self.segments:
            segment.delete()
        self.segments = [LogSegment.create(self.dir, offset, self.config["log.index.interval.bytes"])]
        self._next_offset = offset
        self._unflushed_messages = 0

    # -- storage failures ------------------------------------------------------------------
    def check_online(self) -> None:
        if self.offline is not None:
            raise KafkaStorageError(f"log {self.dir} is offline after a storage error ({self.offline}); "
                                    "restart the node to recover it")

    def mark_offline(self, cause: BaseException) -> None:
        """Stop serving this log until a restart: its files no longer match what is in memory."""
        if self.offline is None:
            self.offline = f"{type(cause).__name__}: {cause}"

    def close(self, *, clean: bool = True) -> None:
        """Flush, release file handles, and (clean) leave the clean-shutdown marker. An offline log is
        only released: no marker, so the next open recovers it."""
        if self.offline is not None:
            for segment in self.segments:
                segment.close()
            return
        self.flush()
        for segment in self.segments:
            segment.close()
        if clean:
            marker = os.path.join(self.dir, CLEAN_SHUTDOWN_FILE)
            with open(marker, "wb"):
                pass

    def delete(self) -> None:
        for segment in self.segments:
            segment.close()
        file_cache.FILE_CACHE.close_under(self.dir)
        shutil.rmtree(self.dir, ignore_errors=True)


def _first_record_at_or_after(segment: LogSegment, pos: int, header: BatchHeader, timestamp: int,
                              min_offset: int = 0) -> tuple[int, int] | None:
    """Kafka answers with the record, not the batch; compressed batches we cannot decode fall back to
    the batch's base offset (or `min_offset` within it) and max timestamp. None: no record qualifies."""
    raw = segment.read(pos, pos + header.size)
    try:
        for record in iter_records(raw):
            if record.timestamp >= timestamp and record.offset >= min_offset:
                return record.offset, record.timestamp
        return None
    except (ValueError, CorruptRecordError):
        pass
    return max(header.base_offset, min_offset), header.max_timestamp
