"""`.timeindex`: sparse map from max timestamp so far to offset (12-byte entries).

Entry (timestamp: int64, offset - base offset: int32) says: the batch holding that offset raised the
segment's max timestamp to this value; every earlier batch has a smaller max timestamp.
"""

from __future__ import annotations

import bisect
import struct

from kafka_txn_broker.log._entry_file import EntryFile, Row


class TimeIndex(EntryFile[tuple[int, int]]):
    """Entries are (timestamp, absolute offset) to callers; columns hold timestamps and relative
    offsets, both strictly increasing."""

    __slots__ = ("base_offset",)
    ENTRY = struct.Struct(">qi")

    def __init__(self, path: str, base_offset: int) -> None:
        super().__init__(path)
        self.base_offset = base_offset

    def _decode(self, row: Row) -> tuple[int, int]:
        return row[0], self.base_offset + row[1]

    def _encode(self, entry: tuple[int, int]) -> Row:
        return entry[0], entry[1] - self.base_offset

    def last_entry(self) -> tuple[int, int] | None:
        last = self.last_row()
        return (last[0], self.base_offset + last[1]) if last is not None else None

    def max_timestamp(self) -> int:
        last = self.last_row()
        return last[0] if last is not None else -1

    def maybe_append(self, timestamp: int, offset: int) -> bool:
        """Append only when the timestamp grows (the index stays monotonic)."""
        relative = offset - self.base_offset
        cols = self._cols
        if cols is not None:  # mirrored (the active segment): compare with the last entry in place
            timestamps, offsets = cols
            if len(timestamps) > 0 and (timestamp <= timestamps[-1] or relative <= offsets[-1]):
                return False
        else:
            last = self.last_row()
            if last is not None and (timestamp <= last[0] or relative <= last[1]):
                return False
        self._append_row((timestamp, relative))
        return True

    def offset_before(self, timestamp: int) -> int | None:
        """Offset of the last entry whose timestamp is below `timestamp`: a safe scan start."""
        i = bisect.bisect_left(self.column(0), timestamp)
        return self.base_offset + self.row(i - 1)[1] if i else None

    def is_sane(self, next_offset: int) -> bool:
        prev_ts, prev_off = -(2**63), self.base_offset - 1
        for ts, rel in self.rows():
            off = self.base_offset + rel
            if ts <= prev_ts or off <= prev_off or off >= next_offset:
                return False
            prev_ts, prev_off = ts, off
        return True

    def truncate_to(self, offset: int) -> None:
        """Drop entries for offsets >= `offset`."""
        self._keep_first(bisect.bisect_left(self.column(1), offset - self.base_offset))
