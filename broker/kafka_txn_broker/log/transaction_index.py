"""`.txnindex`: the aborted transactions whose ABORT marker lies in this segment (34-byte entries).

Entry: version int16 (0), producerId, firstOffset, lastOffset (the marker), lastStableOffset (the LSO
when the abort was written), all int64. Entries are appended in increasing lastOffset order; a
read_committed fetch uses them to tell the consumer which producers' batches to drop.
"""

from __future__ import annotations

import bisect
import struct
from dataclasses import dataclass

from kafka_txn_broker.log._entry_file import EntryFile, Row


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class TransactionIndex(EntryFile[AbortedTxn]):
    """Fields: version, producer id, first offset, last offset (increasing), last stable offset. Never
    mirrored in memory: an aborted transaction costs 34 bytes on disk and none in memory, as in Kafka,
    and a fetch reads only the entries from its offset on."""

    __slots__ = ()
    ENTRY = struct.Struct(">hqqqq")
    VERSION = 0

    def _decode(self, row: Row) -> AbortedTxn:
        return AbortedTxn(row[1], row[2], row[3], row[4])

    def _encode(self, entry: AbortedTxn) -> Row:
        return self.VERSION, entry.producer_id, entry.first_offset, entry.last_offset, entry.last_stable_offset

    def append(self, txn: AbortedTxn) -> None:
        last = self.last_row()
        if last is not None and txn.last_offset <= last[3]:
            raise ValueError(f"aborted txn {txn} does not follow {self._decode(last)} in {self.path}")
        self._append(txn)

    def collect(self, fetch_offset: int, upper_bound_offset: int) -> tuple[list[AbortedTxn], bool]:
        """Aborted txns overlapping [fetch_offset, upper_bound_offset); `True` once no later segment can
        hold more (an entry's LSO reached the bound: every txn open before it is already listed)."""
        found: list[AbortedTxn] = []
        for row in self.rows(self._first_possible(fetch_offset, upper_bound_offset)):
            txn = self._decode(row)
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound_offset:
                found.append(txn)
            if txn.last_stable_offset >= upper_bound_offset:
                return found, True
        return found, False

    def _first_possible(self, fetch_offset: int, upper_bound_offset: int) -> int:
        """Where Kafka's scan from the first entry can first find something. An entry whose marker lies
        before fetch_offset is never returned, and never ends the scan either: its LSO is at most one
        past its marker (Kafka records the first offset of another open transaction, which precedes
        the marker, or the marker + 1), so at most fetch_offset, below the bound."""
        if upper_bound_offset <= fetch_offset:
            return 0
        return bisect.bisect_left(self.column(3), fetch_offset)

    def truncate_to(self, offset: int) -> None:
        """Drop aborted txns whose marker is at or beyond `offset`."""
        self._keep_first(bisect.bisect_left(self.column(3), offset))
