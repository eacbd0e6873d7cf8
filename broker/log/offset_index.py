"""`.index`: sparse map from offset to byte position in the segment (8-byte entries).

Each entry is (offset - base offset: int32, position: int32) for the LAST offset of an indexed batch;
a lookup returns the position of a batch at or before the one holding the target offset.
"""

from __future__ import annotations

import bisect
import struct

from kafka_txn_broker.log._entry_file import EntryFile


class OffsetIndex(EntryFile[tuple[int, int]]):
    """Entries are (absolute offset, position) in memory."""

    __slots__ = ("base_offset",)
    ENTRY = struct.Struct(">ii")

    def __init__(self, path: str, base_offset: int) -> None:
        super().__init__(path)
        self.base_offset = base_offset

    def _decode(self, fields: tuple[int, ...]) -> tuple[int, int]:
        return self.base_offset + fields[0], fields[1]

    def _encode(self, entry: tuple[int, int]) -> bytes:
        return self.ENTRY.pack(entry[0] - self.base_offset, entry[1])

    def append(self, offset: int, position: int) -> None:
        entries = self.entries()
        if entries and (offset <= entries[-1][0] or position <= entries[-1][1]):
            raise ValueError(f"index entry ({offset}, {position}) does not follow {entries[-1]} "
                             f"in {self.path}")
        self._append((offset, position))

    def lookup(self, offset: int) -> int:
        """Byte position from which a forward scan finds `offset` (0 when no entry is at or below it)."""
        entries = self.entries()
        i = bisect.bisect_right(entries, (offset, 2**31))
        return entries[i - 1][1] if i else 0

    def last_entry(self) -> tuple[int, int] | None:
        entries = self.entries()
        return entries[-1] if entries else None

    def is_sane(self, log_size: int) -> bool:
        """Strictly increasing offsets and positions, all inside the log (else rebuild it)."""
        prev_off, prev_pos = self.base_offset - 1, -1
        for off, pos in self.entries():
            if off <= prev_off or pos <= prev_pos or pos >= log_size:
                return False
            prev_off, prev_pos = off, pos
        return True

    def truncate_to(self, offset: int) -> None:
        """Drop entries for offsets >= `offset`."""
        entries = self.entries()
        self._keep_first(bisect.bisect_left(entries, (offset, -1)))

    def truncate_to_position(self, position: int) -> None:
        """Drop entries pointing at or past `position` (the log was cut there)."""
        entries = self.entries()
        keep = sum(1 for _, pos in entries if pos < position)
        self._keep_first(keep)
