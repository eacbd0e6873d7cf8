"""`.timeindex`: sparse map from max timestamp so far to offset (12-byte entries).

Entry (timestamp: int64, offset - base offset: int32) says: the batch holding that offset raised the
segment's max timestamp to this value; every earlier batch has a smaller max timestamp.
"""

from __future__ import annotations

import bisect
import struct

from kafka_txn_broker.log._entry_file import EntryFile


class TimeIndex(EntryFile[tuple[int, int]]):
    """Entries are (timestamp, absolute offset) in memory."""

    __slots__ = ("base_offset",)
    ENTRY = struct.Struct(">qi")

    def __init__(self, path: str, base_offset: int) -> None:
        super().__init__(path)
        self.base_offset = base_offset

    def _decode(self, fields: tuple[int, ...]) -> tuple[int, int]:
        return fields[0], self.base_offset + fields[1]

    def _encode(self, entry: tuple[int, int]) -> bytes:
        return self.ENTRY.pack(entry[0], entry[1] - self.base_offset)

    def max_timestamp(self) -> int:
        entries = self.entries()
        return entries[-1][0] if entries else -1

    def maybe_append(self, timestamp: int, offset: int) -> bool:
        """Append only when the timestamp grows (the index stays monotonic)."""
        entries = self.entries()
        if entries and (timestamp <= entries[-1][0] or offset <= entries[-1][1]):
            return False
        self._append((timestamp, offset))
        return True

    def offset_before(self, timestamp: int) -> int | None:
        """Offset of the last entry whose timestamp is below `timestamp`: a safe scan start."""
        entries = self.entries()
        i = bisect.bisect_left(entries, (timestamp, -1))
        return entries[i - 1][1] if i else None

    def is_sane(self, next_offset: int) -> bool:
        prev_ts, prev_off = -(2**63), self.base_offset - 1
        for ts, off in self.entries():
            if ts <= prev_ts or off <= prev_off or off >= next_offset:
                return False
            prev_ts, prev_off = ts, off
        return True

    def truncate_to(self, offset: int) -> None:
        entries = self.entries()
        keep = 0
        while keep < len(entries) and entries[keep][1] < offset:
            keep += 1
        self._keep_first(keep)
