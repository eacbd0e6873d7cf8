"""A deliberately separate reader of `.log` segments, `.snapshot` and `.txnindex` files.

Written only from shared/reference/formats.md with struct and crc32c, importing nothing from
kafka_txn_broker, so tests can prove the broker's files are readable by any tool that follows the
documented format (and that the broker's own reader is not just agreeing with its own writer).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import crc32c


@dataclass
class Batch:
    base_offset: int
    leader_epoch: int
    attributes: int
    last_offset_delta: int
    first_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records: list[tuple[int, bytes | None, bytes | None]] = field(default_factory=list)  # (offset, key, value)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & 0x20)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & 0x10)


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    shift = raw = 0
    while True:
        byte = buf[pos]
        pos += 1
        raw |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return (raw >> 1) ^ -(raw & 1), pos


def _bytes(buf: bytes, pos: int) -> tuple[bytes | None, int]:
    n, pos = _varint(buf, pos)
    if n < 0:
        return None, pos
    return buf[pos:pos + n], pos + n


def read_log(data: bytes) -> list[Batch]:
    """Every batch of a segment; raises ValueError on anything not matching the format."""
    batches = []
    pos = 0
    while pos < len(data):
        base_offset, length = struct.unpack_from(">qi", data, pos)
        end = pos + 12 + length
        if end > len(data):
            raise ValueError(f"batch at {pos} runs past the end of the file")
        epoch, magic, crc = struct.unpack_from(">ibI", data, pos + 12)
        if magic != 2:
            raise ValueError(f"magic {magic} at {pos}")
        if crc32c.crc32c(data[pos + 21:end]) != crc:
            raise ValueError(f"bad CRC at {pos}")
        fields = struct.unpack_from(">hiqqqhii", data, pos + 21)
        attributes, last_delta, first_ts, max_ts, pid, pepoch, base_seq, count = fields
        batch = Batch(base_offset, epoch, attributes, last_delta, first_ts, max_ts, pid, pepoch, base_seq)
        if attributes & 0x07 == 0:
            p = pos + 61
            for _ in range(count):
                size, p = _varint(data, p)
                rec_end = p + size
                q = p + 1
                _ts_delta, q = _varint(data, q)
                offset_delta, q = _varint(data, q)
                key, q = _bytes(data, q)
                value, q = _bytes(data, q)
                batch.records.append((base_offset + offset_delta, key, value))
                p = rec_end
            if p != end:
                raise ValueError(f"records of batch at {pos} do not fill it")
        batches.append(batch)
        pos = end
    return batches


def read_snapshot(data: bytes) -> list[tuple[int, int, int, int, int, int, int, int]]:
    """(pid, epoch, lastSeq, lastOffset, offsetDelta, timestamp, coordinatorEpoch, txnFirstOffset) rows."""
    version, crc, count = struct.unpack_from(">hIi", data, 0)
    if version != 1:
        raise ValueError(f"snapshot version {version}")
    if crc32c.crc32c(data[6:]) != crc:
        raise ValueError("snapshot CRC mismatch")
    if len(data) != 10 + 46 * count:
        raise ValueError("snapshot size does not match its entry count")
    return [struct.unpack_from(">qhiqiqiq", data, 10 + 46 * i) for i in range(count)]


def read_txn_index(data: bytes) -> list[tuple[int, int, int, int]]:
    """(producerId, firstOffset, lastOffset, lastStableOffset) of each aborted transaction."""
    if len(data) % 34:
        raise ValueError("txnindex size is not a multiple of 34")
    rows = []
    for i in range(0, len(data), 34):
        version, pid, first, last, lso = struct.unpack_from(">hqqqq", data, i)
        if version != 0:
            raise ValueError(f"txnindex entry version {version}")
        rows.append((pid, first, last, lso))
    return rows
