"""Record batches someone else's broker wrote, walked strictly: a log segment copied from a broker, or what a
Fetch answered. A reader of another's data must name what is wrong, so an old magic or a bad CRC raises
SegmentError with the source and the offset; only a batch torn at the end (a crash, or a Fetch cut at its
size limit) or preallocated zeros end a walk quietly, as Kafka truncates those on recovery.

The format itself is `kafka_txn_broker.formats.record_batch`, the one implementation the broker and the tools
share. The sweep's segment files (dumps/segments.py), the admin client's Fetch reads (connection/client.py)
and the flows that read `__transaction_state` use this walk; it imports nothing else of the tools.
"""

from __future__ import annotations

from collections.abc import Iterator

from kafka_txn_broker.formats.record_batch import HEADER_SIZE, BatchHeader, batch_crc_ok


class SegmentError(ValueError):
    """Record batches (a log segment, or what a Fetch answered) cannot be decoded."""


def _check_batch(view: memoryview, pos: int, header: BatchHeader, name: str, verify_crc: bool) -> None:
    if header.magic != 2:
        raise SegmentError(
            f"{name}: batch at byte {pos} has magic {header.magic}; only record batch v2 (Kafka 0.11+) is read"
        )
    if verify_crc and not batch_crc_ok(view, pos, header):
        raise SegmentError(f"{name}: CRC mismatch in the batch at offset {header.base_offset}: the segment is corrupt")


def iter_batches(
    data: bytes, name: str = "segment", verify_crc: bool = True
) -> Iterator[tuple[BatchHeader, memoryview]]:
    """(header, whole batch bytes) for each complete batch; a torn or zero-filled tail ends the walk."""
    view = memoryview(data)
    pos = 0
    while pos + HEADER_SIZE <= len(view):
        header = BatchHeader.parse(view, pos)
        if header.batch_length <= 0 or pos + header.size > len(view):
            return  # preallocated zeros or a batch torn by a crash: Kafka truncates these on recovery
        _check_batch(view, pos, header, name, verify_crc)
        yield header, view[pos : pos + header.size]
        pos += header.size
