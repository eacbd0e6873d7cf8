"""`.txnindex`: the aborted transactions whose ABORT marker lies in this segment (34-byte entries).

Entry: version int16 (0), producerId, firstOffset, lastOffset (the marker), lastStableOffset (the LSO
when the abort was written), all int64. Entries are appended in increasing lastOffset order; a
read_committed fetch uses them to tell the consumer which producers' batches to drop.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from kafka_txn_broker.log._entry_file import EntryFile


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class TransactionIndex(EntryFile[AbortedTxn]):
    __slots__ = ()
    ENTRY = struct.Struct(">hqqqq")
    VERSION = 0

    def _decode(self, fields: tuple[int, ...]) -> AbortedTxn:
        return AbortedTxn(fields[1], fields[2], fields[3], fields[4])

    def _encode(self, entry: AbortedTxn) -> bytes:
        return self.ENTRY.pack(self.VERSION, entry.producer_id, entry.first_offset, entry.last_offset,
                               entry.last_stable_offset)

    def append(self, txn: AbortedTxn) -> None:
        entries = self.entries()
        if entries and txn.last_offset <= entries[-1].last_offset:
            raise ValueError(f"aborted txn {txn} does not follow {entries[-1]} in {self.path}")
        self._append(txn)

    def collect(self, fetch_offset: int, upper_bound_offset: int) -> tuple[list[AbortedTxn], bool]:
        """Aborted txns overlapping [fetch_offset, upper_bound_offset); `True` once no later segment can
        hold more (an entry's LSO reached the bound: every txn open before it is already listed)."""
        found: list[AbortedTxn] = []
        for txn in self.entries():
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound_offset:
                found.append(txn)
            if txn.last_stable_offset >= upper_bound_offset:
                return found, True
        return found, False

    def truncate_to(self, offset: int) -> None:
        """Drop aborted txns whose marker is at or beyond `offset`."""
        entries = self.entries()
        keep = 0
        while keep < len(entries) and entries[keep].last_offset < offset:
            keep += 1
        self._keep_first(keep)
