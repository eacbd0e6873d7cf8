"""Log compaction of one log (Kafka's Cleaner inside LogCleaner): offset map, segment groups, rewrite, swap.

Which logs are due, and how far each may be cleaned, is cleaner_manager.py's business; this module
cleans the first `count` segments of one log it is handed (all below the first uncleanable offset).

What is kept: for every key, the record with the highest offset in the cleaned range; tombstones (null
value) until their delete horizon. As in Kafka the offset map is built over the dirty part only (from
the cleaner checkpoint on): the part below it was cleaned before and holds one record per key already.
A wrong checkpoint can only leave some superseded records in place, never drop a live one: a record is
dropped only for a later record of the same key that the map saw. Records are never re-offset, so
removed records leave gaps, and a batch that lost some records keeps its base offset and last offset
delta (it still spans the same offsets).

SCOPE LIMIT (conservative on purpose): only the records of batches WITHOUT a producer id (neither
idempotent nor transactional) are candidates for removal. Batches with a producer id, and control
batches (transaction markers), are always kept exactly as written and take no part in the offset map.
So producer state, the aborted-transaction index (.txnindex) and markers stay untouched; Kafka's
rules for removing aborted records and markers are not implemented. Further limits: records with a
null key are always kept (the produce path rejects them for compacted topics, as Kafka does); a
compressed batch is kept whole unless none of its records survives (it is never recompressed); a
batch whose codec this process cannot decode is kept whole.

Crash safety ("a crash never corrupts a log"): a group of old segments [base, end) is replaced by
one new segment named after the group's first base offset, in these steps:
  1. write `<base>.log.cleaned` with `.index`, `.timeindex`, `.txnindex` `.cleaned` files, and
     `<base>.end.cleaned` holding `end` (which old segments the new one replaces); fsync all, and the dir;
  2. rename the index and end files to `.swap`, then the log to `<base>.log.swap`: the commit point;
  3. delete the other old segments of the group (indexes first, then their `.log`);
  4. replace the first old segment's files by the `.swap` files (indexes first, the log last), then
     remove the end file.
At open (`recover_interrupted_swaps`), a `<base>.log.swap` means "committed": steps 3-4 are
finished; every other `.cleaned` or `.swap` file is deleted (rolled back: the old segments were
never touched before the commit). Each group is swapped atomically in this sense; a crash between two
groups leaves the earlier groups cleaned and the later ones not, which is a valid compacted log.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafka_txn_broker.formats.errors import CorruptRecordError
from kafka_txn_broker.formats.record_batch import (
    INT32_MAX,
    BatchHeader,
    UnsupportedCompressionError,
    iter_record_spans,
    iter_records,
    rebuild_batch,
)
from kafka_txn_broker.log import file_cache
from kafka_txn_broker.log.segment import LogSegment, segment_name

if TYPE_CHECKING:
    from kafka_txn_broker.log.local_log import LocalLog

log = logging.getLogger(__name__)

CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
_INDEX_SUFFIXES = (".index", ".timeindex", ".txnindex")
_END = ".end"  # `<base>.end.cleaned|.swap`: the exclusive end offset of the old segments being replaced
_FILE_SUFFIXES = (".log", *_INDEX_SUFFIXES)

OffsetMap = dict[bytes, int]


class SwapIncomplete(OSError):
    """An I/O error after a swap was committed: the files no longer match the log in memory (the log
    must go offline; the next open finishes the swap)."""


@dataclass
class CleanStats:
    segments_before: int
    segments_after: int
    bytes_before: int
    bytes_after: int
    records_removed: int
    first_kept_tombstone: int | None  # lowest offset of a tombstone still in the cleaned range


def _after_step(step: str) -> None:
    """Test hook between the swap steps ("cleaned": staged files written; "swap": committed). Tests
    replace it with a function that raises, to stop the cleaner as a crash would there."""


# -- which segments ------------------------------------------------------------------------------
def cleanable_segment_count(log_: LocalLog, first_uncleanable: int) -> int:
    """How many leading segments lie wholly below `first_uncleanable` (never the active one)."""
    segments = log_.segments
    count = 0
    while count + 1 < len(segments) and segments[count + 1].base_offset <= first_uncleanable:
        count += 1
    return count


def group_segments(segments: list[LogSegment], count: int, max_bytes: int) -> list[list[LogSegment]]:
    """Consecutive runs of the first `count` segments whose sizes add up to at most `max_bytes` and
    whose offsets fit one segment's int32 relative offsets. Sizes before cleaning bound the output."""
    groups: list[list[LogSegment]] = []
    current: list[LogSegment] = []
    size = 0
    for i in range(count):
        seg = segments[i]
        last_offset = segments[i + 1].base_offset - 1  # the next segment exists: count excludes the active one
        fits = size + seg.size <= max_bytes and (not current or last_offset - current[0].base_offset <= INT32_MAX)
        if current and not fits:
            groups.append(current)
            current, size = [], 0
        current.append(seg)
        size += seg.size
    if current:
        groups.append(current)
    return groups


# -- what to keep --------------------------------------------------------------------------------
def _is_candidate(header: BatchHeader) -> bool:
    """The scope limit (module docstring): only plain, non-idempotent data batches are filtered."""
    return not header.has_producer_id and not header.is_control


def _records(raw: memoryview, header: BatchHeader) -> list[tuple[int, bytes | None, bool]] | None:
    """(offset, key, is tombstone) of each record; None when the batch cannot be decoded (kept whole)."""
    try:
        if not header.compression:
            return [(s.offset, s.key, s.is_tombstone) for s in iter_record_spans(raw)]
        return [(r.offset, r.key, r.value is None) for r in iter_records(raw)]
    except (UnsupportedCompressionError, CorruptRecordError, ValueError):
        return None


def build_offset_map(segments: list[LogSegment]) -> OffsetMap:
    """Key -> highest offset holding it, over the candidate records of `segments`."""
    offsets: OffsetMap = {}
    for seg in segments:
        for _pos, header, raw in seg.iter_batches(0):
            if not _is_candidate(header):
                continue
            for offset, key, _tombstone in _records(raw, header) or ():
                if key is not None:
                    offsets[key] = offset
    return offsets


def _keep(offset: int, key: bytes | None, tombstone: bool, offsets: OffsetMap, tombstone_horizon: int) -> bool:
    if key is None:
        return True  # not ours to judge (see the scope limit)
    if offsets.get(key, offset) > offset:
        return False  # a later record of the same key supersedes it
    return not (tombstone and offset < tombstone_horizon)


@dataclass
class _Filtered:
    data: bytes | memoryview | None  # None: the whole batch goes
    removed: int
    first_tombstone: int | None


def filter_batch(raw: memoryview, header: BatchHeader, offsets: OffsetMap, tombstone_horizon: int) -> _Filtered:
    """The batch as it stays after cleaning: `raw` itself when nothing changes."""
    records = _records(raw, header) if _is_candidate(header) else None
    if records is None:
        return _Filtered(raw, 0, None)
    kept = [i for i, (offset, key, tomb) in enumerate(records) if _keep(offset, key, tomb, offsets, tombstone_horizon)]
    tombs = [records[i][0] for i in kept if records[i][2]]
    first_tomb = tombs[0] if tombs else None
    removed = len(records) - len(kept)
    if not removed:
        return _Filtered(raw, 0, first_tomb)
    if not kept:
        return _Filtered(None, removed, None)
    if header.compression:
        return _Filtered(raw, 0, first_tomb)  # never recompressed: kept whole while any record survives
    spans = list(iter_record_spans(raw))
    body = b"".join(bytes(raw[spans[i].start:spans[i].end]) for i in kept)
    return _Filtered(rebuild_batch(header, body, len(kept)), removed, first_tomb)


# -- cleaning one log ----------------------------------------------------------------------------
def clean_log(log_: LocalLog, count: int, tombstone_horizon: int, first_dirty: int = -1) -> CleanStats:
    """Compact the first `count` segments of `log_` (the caller holds the log's lock and checked they
    lie below the first uncleanable offset). Tombstones below `tombstone_horizon` are removed; the
    offset map covers the segments holding offsets from `first_dirty` on (-1: all of them)."""
    segments = log_.segments  # replaced group by group, in place
    upto = segments[count].base_offset
    stats = CleanStats(count, 0, sum(s.size for s in segments[:count]), 0, 0, None)
    offsets = build_offset_map([s for i, s in enumerate(segments[:count]) if segments[i + 1].base_offset > first_dirty])
    for group in group_segments(segments, count, log_.segment_bytes):
        at = segments.index(group[0])
        end = segments[at + len(group)].base_offset
        new = _clean_group(log_, group, end, offsets, tombstone_horizon, stats)
        if new is not None:
            segments[at:at + len(group)] = [new]
    cleaned = [s for s in segments if s.base_offset < upto]
    stats.segments_after = len(cleaned)
    stats.bytes_after = sum(s.size for s in cleaned)
    return stats


def _clean_group(log_: LocalLog, group: list[LogSegment], end: int, offsets: OffsetMap, tombstone_horizon: int,
                 stats: CleanStats) -> LogSegment | None:
    """Replace `group` by one cleaned segment (None: a single segment that nothing changes)."""
    base = group[0].base_offset
    interval = log_.config["log.index.interval.bytes"]
    _remove_staged(log_.dir, base)
    staged = LogSegment.create(log_.dir, base, interval, CLEANED_SUFFIX)
    try:
        changed = _write_kept(log_, group, staged, offsets, tombstone_horizon, stats)
        if not changed and len(group) == 1:
            staged.delete()
            return None
        _finish_staged(staged, end)
    except BaseException:
        _remove_staged(log_.dir, base)  # the old segments were not touched: the log stays as it was
        raise
    _after_step("cleaned")
    _commit(log_.dir, base)
    _after_step("swap")
    try:
        complete_swap(log_.dir, base)
    except OSError as exc:
        raise SwapIncomplete(f"cannot finish the segment swap at offset {base} in {log_.dir}: {exc}") from exc
    return LogSegment(log_.dir, base, staged.size, interval)


def _write_kept(log_: LocalLog, group: list[LogSegment], staged: LogSegment, offsets: OffsetMap,
                tombstone_horizon: int, stats: CleanStats) -> bool:
    """Append what survives of each batch to `staged`, and the group's aborted-txn entries (their
    markers always stay). True if anything was removed."""
    changed = False
    for seg in group:
        for _pos, header, raw in seg.iter_batches(0):
            kept = filter_batch(raw, header, offsets, tombstone_horizon)
            if kept.first_tombstone is not None and stats.first_kept_tombstone is None:
                stats.first_kept_tombstone = kept.first_tombstone
            if kept.data is None or kept.data is not raw:
                changed = True
                stats.records_removed += kept.removed
            if kept.data is not None:
                out_header = header if kept.data is raw else BatchHeader.parse(kept.data)
                staged.append(kept.data, [(0, out_header)], log_.clock)
    for seg in group:
        for txn in seg.txn_index.entries():
            staged.txn_index.append(txn)
    changed = changed or len(group) > 1
    return changed


def _finish_staged(staged: LogSegment, end: int) -> None:
    """Step 1: every file of the new segment exists (empty indexes too, so the swap replaces each old
    index file: an old index must never describe the new log) and is durable."""
    staged.on_become_inactive()
    for path in staged.paths[1:]:
        if not os.path.exists(path):
            file_cache.truncate(path, 0)
    end_path = _end_path(staged.dir, staged.base_offset, CLEANED_SUFFIX)
    file_cache.write_at(end_path, str(end).encode(), 0)
    for path in (*staged.paths, end_path):
        file_cache.fsync(path)
        file_cache.FILE_CACHE.close(path)
    staged.close()
    _fsync_dir(staged.dir)


def _commit(directory: str, base: int) -> None:
    """Step 2: `.cleaned` -> `.swap`, the log last: once `<base>.log.swap` exists the swap is decided."""
    for suffix in (*_INDEX_SUFFIXES, _END):
        stem = os.path.join(directory, segment_name(base, suffix))
        os.rename(stem + CLEANED_SUFFIX, stem + SWAP_SUFFIX)
    log_stem = os.path.join(directory, segment_name(base, ".log"))
    os.rename(log_stem + CLEANED_SUFFIX, log_stem + SWAP_SUFFIX)
    _fsync_dir(directory)


def complete_swap(directory: str, base: int) -> None:
    """Steps 3 and 4 for the committed swap at `base` (idempotent: recovery may repeat them)."""
    end_path = _end_path(directory, base, SWAP_SUFFIX)
    try:
        with open(end_path, "rb") as f:
            end = int(f.read().decode().strip() or base + 1)
    except (OSError, ValueError):
        # Cannot happen by the order of step 2; replacing the first old segment alone is still safe.
        log.warning("%s: swap at offset %d has no readable end file; replacing that segment only", directory, base)
        end = base + 1
    for old in _segment_bases(directory):
        if base < old < end:
            for suffix in (*_INDEX_SUFFIXES, ".log"):  # the .log last: it says "still to delete"
                file_cache.remove(os.path.join(directory, segment_name(old, suffix)))
    for suffix in (*_INDEX_SUFFIXES, ".log"):
        final = os.path.join(directory, segment_name(base, suffix))
        if os.path.exists(final + SWAP_SUFFIX):
            file_cache.FILE_CACHE.close(final)  # a cached descriptor would still read the old file
            os.replace(final + SWAP_SUFFIX, final)
    file_cache.remove(end_path)
    _fsync_dir(directory)


def recover_interrupted_swaps(directory: str) -> None:
    """At open: finish every committed swap, delete what an uncommitted one left behind."""
    for name in sorted(os.listdir(directory)):
        stem, _, suffix = name.partition(".")
        if suffix == "log" + SWAP_SUFFIX and stem.isdigit():
            log.warning("%s: finishing the log cleaner's interrupted swap at offset %s", directory, int(stem))
            complete_swap(directory, int(stem))
    for name in os.listdir(directory):
        if name.endswith((CLEANED_SUFFIX, SWAP_SUFFIX)):
            file_cache.remove(os.path.join(directory, name))
    _fsync_dir(directory)


# -- file helpers ---------------------------------------------------------------------------------
def _end_path(directory: str, base: int, suffix: str) -> str:
    return os.path.join(directory, segment_name(base, _END) + suffix)


def _remove_staged(directory: str, base: int) -> None:
    for suffix in (*_FILE_SUFFIXES, _END):
        file_cache.remove(os.path.join(directory, segment_name(base, suffix) + CLEANED_SUFFIX))


def _segment_bases(directory: str) -> Iterator[int]:
    for name in os.listdir(directory):
        stem, _, suffix = name.partition(".")
        if suffix == "log" and stem.isdigit():
            yield int(stem)


def _fsync_dir(directory: str) -> None:
    """Renames and deletions are durable only once the directory itself is synced."""
    with suppress(OSError):  # some filesystems refuse to fsync a directory; nothing more can be done there
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
