"""Record batch v2 (magic 2): parse log segments, and build batches for the generator.

Only what the sweep needs: batch headers (producer id, epoch, offsets, timestamps, flags), records
of uncompressed and gzip batches natively, other codecs through kafka-python's `kafka.codec` when
its optional libraries are installed.
"""

from __future__ import annotations

import gzip
import os
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import crc32c

_HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = _HEADER.size  # 61
LOG_OVERHEAD = 12  # baseOffset + batchLength precede the counted bytes
_CRC_START = 21
COMPRESSION_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
TRANSACTIONAL = 0x10
CONTROL = 0x20


class SegmentError(ValueError):
    """A log segment cannot be decoded."""


@dataclass(frozen=True)
class BatchHeader:
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def compression(self) -> int:
        return self.attributes & 0x07

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def size(self) -> int:
        return self.batch_length + LOG_OVERHEAD


@dataclass(frozen=True)
class Record:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None


# --- varints (zigzag + LEB128) -------------------------------------------------------------------


def read_varint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Zigzag varint/varlong at `pos` -> (value, next position)."""
    shift = 0
    raw = 0
    while True:
        if pos >= len(buf):
            raise SegmentError("varint runs past the end of the record")
        byte = buf[pos]
        pos += 1
        raw |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7
        if shift > 63:
            raise SegmentError("varint longer than 10 bytes")


def read_uvarint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Unsigned LEB128 (the compact lengths and tags of flexible messages)."""
    shift = 0
    value = 0
    while True:
        if pos >= len(buf):
            raise SegmentError("unsigned varint runs past the end of the value")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 35:
            raise SegmentError("unsigned varint longer than 5 bytes")


def write_uvarint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def write_varint(value: int) -> bytes:
    return write_uvarint((value << 1) ^ (value >> 63))


# --- reading -------------------------------------------------------------------------------------


def _decompress(codec: int, blob: bytes, name: str) -> bytes:
    if codec == 1:
        return gzip.decompress(blob)
    try:
        from kafka import codec as kcodec
    except ImportError as exc:  # pragma: no cover - kafka-python is a hard dependency
        raise SegmentError(f"{name}: {COMPRESSION_NAMES[codec]} batch needs kafka-python") from exc
    decoders = {
        2: (kcodec.has_snappy, kcodec.snappy_decode, "python-snappy"),
        3: (kcodec.has_lz4, kcodec.lz4_decode, "lz4"),
        4: (kcodec.has_zstd, kcodec.zstd_decode, "zstandard"),
    }
    if codec not in decoders:
        raise SegmentError(f"{name}: unknown compression codec {codec}")
    available, decode, package = decoders[codec]
    if not available():
        raise SegmentError(
            f"{name}: a {COMPRESSION_NAMES[codec]}-compressed batch needs the {package} package: pip install {package}"
        )
    return bytes(decode(blob))


def parse_header(data: bytes | memoryview, pos: int = 0) -> BatchHeader:
    return BatchHeader(*_HEADER.unpack_from(data, pos))


def iter_batches(
    data: bytes, name: str = "segment", verify_crc: bool = True
) -> Iterator[tuple[BatchHeader, memoryview]]:
    """(header, whole batch bytes) for each complete batch; a torn or zero-filled tail ends the walk."""
    view = memoryview(data)
    pos = 0
    while pos + HEADER_SIZE <= len(view):
        header = parse_header(view, pos)
        if header.batch_length <= 0 or pos + header.size > len(view):
            return  # preallocated zeros or a batch torn by a crash: Kafka truncates these on recovery
        if header.magic != 2:
            raise SegmentError(
                f"{name}: batch at byte {pos} has magic {header.magic}; only record batch v2 (Kafka 0.11+) is read"
            )
        batch = view[pos : pos + header.size]
        if verify_crc and crc32c.crc32c(batch[_CRC_START:]) != header.crc:
            raise SegmentError(
                f"{name}: CRC mismatch in the batch at offset {header.base_offset}: the segment is corrupt"
            )
        yield header, batch
        pos += header.size


def decode_records(header: BatchHeader, batch: memoryview, name: str = "segment") -> list[Record]:
    body = batch[HEADER_SIZE:]
    if header.compression:
        body = memoryview(_decompress(header.compression, bytes(body), name))
    records = []
    pos = 0
    for _ in range(header.record_count):
        length, pos = read_varint(body, pos)
        end = pos + length
        pos += 1  # record attributes (unused)
        ts_delta, pos = read_varint(body, pos)
        offset_delta, pos = read_varint(body, pos)
        key, pos = _read_bytes(body, pos)
        value, pos = _read_bytes(body, pos)
        records.append(Record(header.base_offset + offset_delta, header.base_timestamp + ts_delta, key, value))
        pos = end  # headers are skipped
    return records


def _read_bytes(buf: memoryview, pos: int) -> tuple[bytes | None, int]:
    length, pos = read_varint(buf, pos)
    if length < 0:
        return None, pos
    return bytes(buf[pos : pos + length]), pos + length


def iter_segment(path: str | os.PathLike[str], verify_crc: bool = True) -> Iterator[tuple[BatchHeader, memoryview]]:
    yield from iter_batches(Path(path).read_bytes(), str(path), verify_crc)


def segment_base_offset(path: str | os.PathLike[str]) -> int:
    stem = Path(path).name.split(".")[0]
    if not stem.isdigit():
        raise SegmentError(f"{path}: not a segment name (expected <20-digit offset>.log)")
    return int(stem)


def segment_files(partition_dir: str | os.PathLike[str]) -> list[Path]:
    """The `.log` segments of a partition dir, in offset order (`.deleted`/`.cleaned`/`.swap` skipped)."""
    logs = [p for p in Path(partition_dir).glob("*.log") if p.name.split(".")[0].isdigit()]
    return sorted(logs, key=segment_base_offset)


# --- writing (generator and tests) ---------------------------------------------------------------


def encode_record(offset_delta: int, timestamp_delta: int, key: bytes | None, value: bytes | None) -> bytes:
    body = bytearray(b"\x00")
    body += write_varint(timestamp_delta)
    body += write_varint(offset_delta)
    for part in (key, value):
        if part is None:
            body += write_varint(-1)
        else:
            body += write_varint(len(part)) + part
    body += write_varint(0)  # no headers
    return write_varint(len(body)) + bytes(body)


def encode_batch(
    base_offset: int,
    records: Sequence[tuple[int, bytes | None, bytes | None]],
    *,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    attributes: int = 0,
    partition_leader_epoch: int = 0,
    compress_gzip: bool = False,
) -> bytes:
    """One v2 batch from (timestamp, key, value) records at consecutive offsets."""
    if not records:
        raise ValueError("a record batch needs at least one record")
    base_ts = records[0][0]
    max_ts = max(r[0] for r in records)
    body = b"".join(encode_record(i, ts - base_ts, k, v) for i, (ts, k, v) in enumerate(records))
    if compress_gzip:
        body = gzip.compress(body, mtime=0)
        attributes = (attributes & ~0x07) | 1
    after_crc = (
        struct.pack(
            ">hiqqqhii",
            attributes,
            len(records) - 1,
            base_ts,
            max_ts,
            producer_id,
            producer_epoch,
            base_sequence,
            len(records),
        )
        + body
    )
    batch_length = 4 + 1 + 4 + len(after_crc)  # leader epoch + magic + crc + rest
    return (
        struct.pack(">qiib", base_offset, batch_length, partition_leader_epoch, 2)
        + struct.pack(">I", crc32c.crc32c(after_crc))
        + after_crc
    )


def encode_control_batch(
    offset: int, timestamp: int, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int
) -> bytes:
    """A transaction marker: key = version 0 + type (0 ABORT, 1 COMMIT); value = version 0 + coord epoch."""
    key = struct.pack(">hh", 0, 1 if commit else 0)
    value = struct.pack(">hi", 0, coordinator_epoch)
    return encode_batch(
        offset,
        [(timestamp, key, value)],
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        attributes=TRANSACTIONAL | CONTROL,
    )


def scan_segment(path: str | os.PathLike[str], min_last_offset: int = 0) -> Iterator[tuple[BatchHeader, bytes | None]]:
    """Batch headers of a segment by seeking, without reading data batches' bodies.

    Control batches (transaction markers) come with their bytes, since the marker's coordinator
    epoch is in the record. Batches wholly before `min_last_offset` are skipped. CRCs of data
    batches are not checked: replay only needs their headers, and reading them all would cost I/O.
    """
    with open(path, "rb") as src:
        file_size = os.fstat(src.fileno()).st_size
        while True:
            start = src.tell()
            raw = src.read(HEADER_SIZE)
            if len(raw) < HEADER_SIZE:
                return
            header = parse_header(raw)
            if header.batch_length <= 0 or start + header.size > file_size:
                return  # preallocated zeros or a torn tail
            if header.magic != 2:
                raise SegmentError(f"{path}: batch at byte {start} has magic {header.magic}; only v2 batches are read")
            body: bytes | None = None
            if header.is_control and header.last_offset >= min_last_offset:
                body = raw + src.read(header.size - HEADER_SIZE)
                if crc32c.crc32c(body[_CRC_START:]) != header.crc:
                    raise SegmentError(f"{path}: CRC mismatch in the marker batch at offset {header.base_offset}")
            src.seek(start + header.size)
            if header.last_offset >= min_last_offset:
                yield header, body
