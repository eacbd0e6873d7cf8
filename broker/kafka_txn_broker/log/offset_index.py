"""`.index`: sparse map from offset to byte position in the segment (8-byte entries).

Each entry is (offset - base offset: int32, position: int32) for the LAST offset of an indexed batch;
a lookup returns the position of a batch at or before the one holding the target offset.
"""

from __future__ import annotations

import bisect
import struct

from kafka_txn_broker.log._entry_file import EntryFile, Row


class OffsetIndex(EntryFile[tuple[int, int]]):
    """Entries are (absolute offset, position) to callers; columns hold relative offsets and positions,
    both strictly increasing."""

    __slots__ = ("base_offset",)
    ENTRY = struct.Struct(">ii")

    def __init__(self, path: str, base_offset: int) -> None:
        super().__init__(path)
        self.base_offset = base_offset

    def _decode(self, row: Row) -> tuple[int, int]:
        return self.base_offset + row[0], row[1]

    def _encode(self, entry: tuple[int, int]) -> Row:
        return entry[0] - self.base_offset, entry[1]

    def append(self, offset: int, position: int) -> None:
        relative = offset - self.base_offset
        cols = self._cols
        if cols is not None:  # mirrored (the active segment): compare with the last entry in place
            offsets, positions = cols
            bad = len(offsets) > 0 and (relative <= offsets[-1] or position <= positions[-1])
        else:
            last = self.last_row()
            bad = last is not None and (relative <= last[0] or position <= last[1])
        if bad:
            raise ValueError(f"index entry ({offset}, {position}) does not follow {self.last_entry()} in {self.path}")
        self._append_row((relative, position))

    def lookup(self, offset: int) -> int:
        """Byte position from which a forward scan finds `offset` (0 when no entry is at or below it)."""
        i = bisect.bisect_right(self.column(0), offset - self.base_offset)
        return self.row(i - 1)[1] if i else 0

    def last_entry(self) -> tuple[int, int] | None:
        last = self.last_row()
        return (self.base_offset + last[0], last[1]) if last is not None else None

    def is_sane(self, log_size: int) -> bool:
        """Strictly increasing offsets and positions, all inside the log (else rebuild it)."""
        prev_rel, prev_pos = -1, -1
        for rel, pos in self.rows():
            if rel <= prev_rel or pos <= prev_pos or pos >= log_size:
                return False
            prev_rel, prev_pos = rel, pos
        return True

    def truncate_to(self, offset: int) -> None:
        """Drop entries for offsets >= `offset`."""
        self._keep_first(bisect.bisect_left(self.column(0), offset - self.base_offset))

    def truncate_to_position(self, position: int) -> None:
        """Drop entries pointing at or past `position` (the log was cut there)."""
        self._keep_first(bisect.bisect_left(self.column(1), position))
