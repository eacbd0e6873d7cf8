"""Leader epoch -> start offset map of one partition (Kafka's LeaderEpochFileCache), in memory.

Built lazily from the partition leader epoch stamped on each batch (so nothing is read at open),
kept current on append and truncation. Answers OffsetForLeaderEpoch: where did an epoch end?
"""

from __future__ import annotations

import bisect

UNDEFINED = -1


class LeaderEpochCache:
    __slots__ = ("entries",)

    def __init__(self) -> None:
        self.entries: list[tuple[int, int]] = []  # (epoch, start offset), both increasing

    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that `epoch` starts at `start_offset` (ignored unless it is a newer epoch)."""
        if epoch < 0:
            return
        if self.entries and epoch <= self.entries[-1][0]:
            return
        # An epoch that wrote nothing is superseded by one starting at the same offset.
        while self.entries and self.entries[-1][1] >= start_offset:
            self.entries.pop()
        self.entries.append((epoch, start_offset))

    def truncate_from_end(self, end_offset: int) -> None:
        """The log now ends at `end_offset`: epochs starting at or after it are gone."""
        while self.entries and self.entries[-1][1] >= end_offset:
            self.entries.pop()

    def truncate_from_start(self, start_offset: int) -> None:
        """The log now starts at `start_offset` (DeleteRecords): the epoch holding it starts there, older
        ones are gone."""
        i = bisect.bisect_right([start for _e, start in self.entries], start_offset)
        if i == 0:
            return
        epoch, start = self.entries[i - 1]
        self.entries[:i] = [(epoch, max(start, start_offset))]

    def epoch_for(self, offset: int) -> int:
        """The epoch the record at `offset` was written in (-1 when unknown)."""
        i = bisect.bisect_right([start for _e, start in self.entries], offset)
        return self.entries[i - 1][0] if i else UNDEFINED

    @property
    def latest_epoch(self) -> int:
        return self.entries[-1][0] if self.entries else UNDEFINED

    def end_offset_for(self, requested: int, log_end_offset: int) -> tuple[int, int]:
        """(largest epoch <= requested, the offset where it ended); (-1, -1) when unknown."""
        if requested < 0 or not self.entries:
            return UNDEFINED, UNDEFINED
        if requested == self.entries[-1][0]:
            return requested, log_end_offset
        i = bisect.bisect_right(self.entries, (requested, 2**63))
        if i == len(self.entries):
            return UNDEFINED, UNDEFINED  # newer than any epoch we know
        higher_start = self.entries[i][1]
        if i == 0:
            return requested, higher_start
        return self.entries[i - 1][0], higher_start
