"""Kafka record batch v2 (magic 2): header views, validation, building and decoding.

The broker stores batches exactly as clients send them (only base offset and partition leader epoch,
both outside the CRC, are rewritten), so most of this module works on header fields alone and never
decompresses. Layout: see shared/reference/formats.md.
"""

from __future__ import annotations

import gzip
import struct
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple

# The extension module itself, which crc32c's __init__ re-exports: that __init__ also reads the package's version
# from its installed metadata (importlib.metadata, 11-15 ms), which kafka-txn's entry points skip.
from crc32c._crc32c import crc32c as _crc32c

from kafka_txn_broker.formats.bytes import Buffer, decode_uvarint, decode_varint, encode_varint
from kafka_txn_broker.formats.errors import (
    CorruptRecordError,
    InvalidRecordError,
    MessageTooLargeError,
    UnsupportedForMessageFormatError,
)
from kafka_txn_broker.formats.transactions import NO_PRODUCER_EPOCH, NO_PRODUCER_ID

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
LOG_OVERHEAD = 12  # baseOffset + batchLength: bytes not counted by batchLength
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD  # 49
CRC_START = 21
MAGIC_OFFSET = 16
CONTROL_BATCH_SIZE = 78

COMPRESSION_MASK = 0x07
LOG_APPEND_TIME_FLAG = 0x08
TRANSACTIONAL_FLAG = 0x10
CONTROL_FLAG = 0x20
CODEC_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}

NO_SEQUENCE = -1
INT32_MAX = 2**31 - 1

_BASE_OFFSET_AND_LENGTH = struct.Struct(">qi")
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_CONTROL_KEY = struct.Struct(">hh")
_CONTROL_VALUE = struct.Struct(">hi")
_MIN_RECORD_BODY = 6  # attributes, timestamp delta, offset delta, key length, value length, header count


def crc32c(data: Buffer) -> int:
    return int(_crc32c(data))


class BatchHeader(NamedTuple):
    """The 61 fixed header bytes of one batch (a tuple: cheap to build, no per-instance dict)."""

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

    @classmethod
    def parse(cls, buf: Buffer, pos: int = 0) -> BatchHeader:
        return cls._make(HEADER.unpack_from(buf, pos))

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG)

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id >= 0

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def last_sequence(self) -> int:
        """Sequence of the last record, wrapping past int32 max like the producer does."""
        if self.base_sequence < 0:
            return NO_SEQUENCE
        return increment_sequence(self.base_sequence, self.last_offset_delta)

    @property
    def size(self) -> int:
        return self.batch_length + LOG_OVERHEAD


def increment_sequence(seq: int, delta: int) -> int:
    if seq > INT32_MAX - delta:
        return delta - (INT32_MAX - seq) - 1
    return seq + delta


def decrement_sequence(seq: int, delta: int) -> int:
    if seq - delta < 0:
        return INT32_MAX - (delta - seq) + 1
    return seq - delta


def iter_batches(buf: Buffer, start: int = 0) -> Iterator[tuple[int, BatchHeader]]:
    """Yield (position, header) of each whole batch; stop silently at a torn or implausible tail."""
    end = len(buf)
    pos = start
    while end - pos >= HEADER_SIZE:
        header = BatchHeader.parse(buf, pos)
        if header.batch_length < MIN_BATCH_LENGTH or pos + header.size > end:
            return
        yield pos, header
        pos += header.size


def batch_crc_ok(buf: Buffer, pos: int, header: BatchHeader) -> bool:
    view = memoryview(buf)[pos + CRC_START: pos + header.size]
    return crc32c(view) == header.crc


# ---------------------------------------------------------------------------------------------
# Validation of batches arriving from clients (Produce) and coordinators
# ---------------------------------------------------------------------------------------------


def validate_client_batch(buf: Buffer, max_bytes: int) -> BatchHeader:
    """Validate a Produce payload for one partition: exactly one magic-2 batch. Returns its header."""
    batches = validate_batches(buf, max_bytes, from_client=True)
    return batches[0][1]


def validate_batches(buf: Buffer, max_bytes: int, *, from_client: bool) -> list[tuple[int, BatchHeader]]:
    """Validate concatenated batches; client payloads must hold exactly one (Kafka: magic >= 2)."""
    batches: list[tuple[int, BatchHeader]] = []
    pos = 0
    end = len(buf)
    if end == 0:
        raise InvalidRecordError("empty record set")
    while pos < end:
        header = _check_framing(buf, pos, max_bytes)
        _check_header(header, from_client)
        if header.compression == 0:
            _check_uncompressed_records(buf, pos, header)
        batches.append((pos, header))
        pos += header.size
    if from_client and len(batches) != 1:
        raise InvalidRecordError(
            f"a produce request must carry exactly one record batch per partition, got {len(batches)}")
    return batches


def _check_framing(buf: Buffer, pos: int, max_bytes: int) -> BatchHeader:
    remaining = len(buf) - pos
    if remaining < MAGIC_OFFSET + 1:
        raise CorruptRecordError(f"truncated record batch at byte {pos}: {remaining} bytes left")
    magic = buf[pos + MAGIC_OFFSET]
    if magic in (0, 1):
        raise UnsupportedForMessageFormatError(f"record batch magic {magic} is not supported: use magic 2")
    if magic != 2:
        raise CorruptRecordError(f"invalid record batch magic {magic} at byte {pos}")
    if remaining < HEADER_SIZE:
        raise CorruptRecordError(f"truncated record batch header at byte {pos}")
    header = BatchHeader.parse(buf, pos)
    if header.batch_length < MIN_BATCH_LENGTH:
        raise CorruptRecordError(f"record batch length {header.batch_length} is below the minimum")
    if header.size > max_bytes:
        raise MessageTooLargeError(
            f"record batch of {header.size} bytes exceeds the maximum of {max_bytes} (message.max.bytes)")
    if header.size > remaining:
        raise CorruptRecordError(f"record batch claims {header.size} bytes but only {remaining} remain")
    if not batch_crc_ok(buf, pos, header):
        raise CorruptRecordError(f"record batch at offset {header.base_offset} failed its CRC-32C check")
    return header


def _check_header(header: BatchHeader, from_client: bool) -> None:
    if header.compression not in CODEC_NAMES:
        raise CorruptRecordError(f"unknown compression codec id {header.compression}")
    if header.record_count <= 0:
        raise InvalidRecordError(f"invalid record count {header.record_count} in record batch")
    if header.last_offset_delta + 1 != header.record_count:
        raise InvalidRecordError(
            f"inconsistent record batch: lastOffsetDelta {header.last_offset_delta} "
            f"but {header.record_count} records")
    if not from_client:
        return
    if header.is_control:
        raise InvalidRecordError("clients are not allowed to write control records")
    if header.has_producer_id and header.base_sequence < 0:
        raise InvalidRecordError(f"invalid sequence {header.base_sequence} for producer {header.producer_id}")
    if header.is_transactional and not header.has_producer_id:
        raise InvalidRecordError("transactional record batch without a producer id")


def _check_uncompressed_records(buf: Buffer, pos: int, header: BatchHeader) -> None:
    """Walk record boundaries (cheap: three varints per record) so a malformed batch is refused."""
    end = pos + header.size
    p = pos + HEADER_SIZE
    for expected_delta in range(header.record_count):
        if p >= end:
            raise CorruptRecordError(f"record batch holds fewer than its {header.record_count} records")
        # Lengths of one or two varint bytes (records up to 8 KiB) are decoded inline, the rest by the
        # general decoder; zigzag by hand below: this loop runs for every record produced.
        z = buf[p]
        if z < 0x80:
            body = p + 1
        elif p + 1 < end and buf[p + 1] < 0x80:
            z, body = (z & 0x7F) | (buf[p + 1] << 7), p + 2
        else:
            z, body = decode_uvarint(buf, p)
        length = (z >> 1) ^ -(z & 1)
        p_end = body + length
        if length < _MIN_RECORD_BODY or p_end > end:
            raise CorruptRecordError(f"record length {length} does not fit its batch")
        q = body + 1  # skip the attributes byte, then the timestamp delta
        if buf[q] < 0x80:  # one-byte varints are the common case: skip the general decoder
            q += 1
        else:
            _, q = decode_uvarint(buf, q)
        if q >= p_end:  # the timestamp delta ran to the record's end: no room for the offset delta
            raise CorruptRecordError(f"record of length {length} ends inside its header")
        z = buf[q] if buf[q] < 0x80 else decode_uvarint(buf, q)[0]
        delta = (z >> 1) ^ -(z & 1)
        if delta != expected_delta:
            raise InvalidRecordError(f"record offset delta {delta}, expected {expected_delta}")
        p = p_end
    if p != end:
        raise CorruptRecordError(f"{end - p} unexpected bytes after the last record of the batch")


def with_base_offset(buf: bytearray | memoryview, offset: int, leader_epoch: int, pos: int = 0) -> None:
    """Stamp base offset and partition leader epoch in place (both lie outside the CRC)."""
    _INT64.pack_into(buf, pos, offset)
    _INT32.pack_into(buf, pos + 12, leader_epoch)


# ---------------------------------------------------------------------------------------------
# Building batches
# ---------------------------------------------------------------------------------------------

HeaderList = Sequence[tuple[str | bytes, bytes | None]]


def _encode_bytes(data: bytes | None) -> bytes:
    if data is None:
        return encode_varint(-1)
    return encode_varint(len(data)) + data


def _encode_record(offset_delta: int, ts_delta: int, key: bytes | None, value: bytes | None,
                   headers: HeaderList) -> bytes:
    parts = [b"\x00", encode_varint(ts_delta), encode_varint(offset_delta), _encode_bytes(key),
             _encode_bytes(value), encode_varint(len(headers))]
    for hkey, hvalue in headers:
        raw_key = hkey.encode() if isinstance(hkey, str) else hkey
        parts.append(_encode_bytes(raw_key))
        parts.append(_encode_bytes(hvalue))
    body = b"".join(parts)
    return encode_varint(len(body)) + body


def _assemble(body: bytes, *, attributes: int, last_offset_delta: int, base_timestamp: int,
              max_timestamp: int, producer_id: int, producer_epoch: int, base_sequence: int,
              record_count: int, base_offset: int, partition_leader_epoch: int) -> bytes:
    after_crc = struct.pack(">hiqqqhii", attributes, last_offset_delta, base_timestamp, max_timestamp,
                            producer_id, producer_epoch, base_sequence, record_count) + body
    crc = crc32c(after_crc)
    length = HEADER_SIZE - LOG_OVERHEAD + len(body)
    return struct.pack(">qiibI", base_offset, length, partition_leader_epoch, 2, crc) + after_crc


def build_batch(records: Iterable[Sequence[Any]], *, timestamp_ms: int, base_offset: int = 0,
                producer_id: int = NO_PRODUCER_ID, producer_epoch: int = NO_PRODUCER_EPOCH,
                base_sequence: int = NO_SEQUENCE, transactional: bool = False,
                partition_leader_epoch: int = 0) -> bytes:
    """Build an uncompressed batch. Each record: (key, value[, headers[, timestamp_ms]])."""
    encoded: list[bytes] = []
    timestamps: list[int] = []
    for i, rec in enumerate(records):
        key, value = rec[0], rec[1]
        headers: HeaderList = rec[2] if len(rec) > 2 and rec[2] is not None else ()
        ts = rec[3] if len(rec) > 3 else timestamp_ms
        timestamps.append(ts)
        encoded.append(_encode_record(i, ts - timestamp_ms, key, value, headers))
    if not encoded:
        raise ValueError("a record batch needs at least one record")
    return _assemble(b"".join(encoded), attributes=TRANSACTIONAL_FLAG if transactional else 0,
                     last_offset_delta=len(encoded) - 1, base_timestamp=timestamp_ms,
                     max_timestamp=max(timestamps), producer_id=producer_id, producer_epoch=producer_epoch,
                     base_sequence=base_sequence, record_count=len(encoded), base_offset=base_offset,
                     partition_leader_epoch=partition_leader_epoch)


# A marker batch from its attributes on (what its CRC covers): the header's fields, then its one record:
# length 16, attributes 0, timestamp and offset deltas 0, a 4-byte key (version 0, control type), a 6-byte
# value (version 0, coordinator epoch), no headers. Every field but the key's and value's is a fixed byte.
_MARKER_AFTER_CRC = struct.Struct(">hiqqqhii" + "BBBBB" + "hh" + "B" + "hi" + "B")
_MARKER_HEAD = struct.Struct(">qiibI")


def build_control_batch(producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                        timestamp_ms: int, base_offset: int = 0, partition_leader_epoch: int = 0) -> bytes:
    """A transaction marker: one control record (78 bytes in all), packed at once (a leader writes one per
    partition of every transaction)."""
    after_crc = _MARKER_AFTER_CRC.pack(TRANSACTIONAL_FLAG | CONTROL_FLAG, 0, timestamp_ms, timestamp_ms,
                                       producer_id, producer_epoch, NO_SEQUENCE, 1,
                                       0x20, 0, 0, 0, 0x08, 0, 1 if commit else 0, 0x0C, 0, coordinator_epoch, 0)
    return _MARKER_HEAD.pack(base_offset, CONTROL_BATCH_SIZE - LOG_OVERHEAD, partition_leader_epoch, 2,
                             crc32c(after_crc)) + after_crc


# ---------------------------------------------------------------------------------------------
# Decoding records
# ---------------------------------------------------------------------------------------------


class Record(NamedTuple):
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]


class UnsupportedCompressionError(ValueError):
    """The batch uses a codec this process cannot decompress (only the records need it)."""


def _decompress(codec: int, data: bytes) -> bytes:
    if codec == 1:
        return gzip.decompress(data)
    from kafka import codec as kcodec  # optional native codecs, if their libraries are installed

    decoders = {2: ("has_snappy", "snappy_decode"), 3: ("has_lz4", "lz4_decode"),
                4: ("has_zstd", "zstd_decode")}
    name = CODEC_NAMES.get(codec, str(codec))
    if codec in decoders:
        has, fn = decoders[codec]
        if getattr(kcodec, has)():
            return bytes(getattr(kcodec, fn)(data))
    raise UnsupportedCompressionError(f"cannot decode {name}-compressed records: install its codec library")


def _read_bytes(buf: Buffer, pos: int) -> tuple[bytes | None, int]:
    length, pos = decode_varint(buf, pos)
    if length < 0:
        return None, pos
    if pos + length > len(buf):
        raise CorruptRecordError("record field runs past the end of the record")
    return bytes(buf[pos:pos + length]), pos + length


def iter_records(batch: Buffer) -> Iterator[Record]:
    """Decode the records of one batch (uncompressed, or gzip; other codecs if kafka-python has them)."""
    header = BatchHeader.parse(batch)
    body: Buffer = memoryview(batch)[HEADER_SIZE:header.size]
    if header.compression:
        body = _decompress(header.compression, bytes(body))
    pos = 0
    for _ in range(header.record_count):
        length, pos = decode_varint(body, pos)
        end = pos + length
        ts_delta, p = decode_varint(body, pos + 1)
        offset_delta, p = decode_varint(body, p)
        key, p = _read_bytes(body, p)
        value, p = _read_bytes(body, p)
        count, p = decode_varint(body, p)
        headers: list[tuple[str, bytes | None]] = []
        for _h in range(count):
            hkey, p = _read_bytes(body, p)
            hvalue, p = _read_bytes(body, p)
            headers.append(((hkey or b"").decode("utf-8", "replace"), hvalue))
        if p != end:
            raise CorruptRecordError("record length does not match its fields")
        pos = end
        yield Record(header.base_offset + offset_delta, header.base_timestamp + ts_delta, key, value, headers)


# A marker as every producer of markers writes it (build_control_batch, Kafka's): one record of 16 bytes,
# every varint one byte long: length 16, attributes, timestamp delta, offset delta 0, a 4-byte key, a 6-byte
# value, no headers. Byte positions within the batch of that layout's fixed parts.
_MARKER_BATCH_SIZE = HEADER_SIZE + 17
_MARKER_KEY_AT, _MARKER_VALUE_AT = HEADER_SIZE + 5, HEADER_SIZE + 10


def _canonical_marker(batch: Buffer) -> tuple[int, int] | None:
    """(control type, coordinator epoch) when `batch` has the canonical marker layout, else None."""
    if len(batch) < _MARKER_BATCH_SIZE or batch[HEADER_SIZE] != 0x20 or batch[HEADER_SIZE + 3] != 0 \
            or batch[HEADER_SIZE + 4] != 0x08 or batch[HEADER_SIZE + 9] != 0x0C \
            or batch[_MARKER_BATCH_SIZE - 1] != 0 or _INT32.unpack_from(batch, 8)[0] != _MARKER_BATCH_SIZE - 12:
        return None
    return _CONTROL_KEY.unpack_from(batch, _MARKER_KEY_AT)[1], _CONTROL_VALUE.unpack_from(batch, _MARKER_VALUE_AT)[1]


def parse_control_record(batch: Buffer) -> tuple[bool, int]:
    """(commit, coordinator_epoch) of a transaction marker batch."""
    header = BatchHeader.parse(batch)
    if not header.is_control:
        raise InvalidRecordError("not a control batch")
    fast = _canonical_marker(batch) if header.record_count == 1 and not header.compression else None
    if fast is not None and fast[0] in (0, 1):  # followers parse every marker they copy: skip the decoder
        return fast[0] == 1, fast[1]
    record = next(iter_records(batch), None)
    if record is None or record.key is None or len(record.key) < 4:
        raise CorruptRecordError("control batch without a valid control record key")
    _version, kind = _CONTROL_KEY.unpack_from(record.key)
    if kind not in (0, 1):
        raise CorruptRecordError(f"control record type {kind} is not a transaction marker")
    if record.value is None or len(record.value) < 6:
        raise CorruptRecordError("transaction marker without a coordinator epoch")
    _vversion, coordinator_epoch = _CONTROL_VALUE.unpack_from(record.value)
    return kind == 1, coordinator_epoch


# ---------------------------------------------------------------------------------------------
# Filtering records (the log cleaner)
# ---------------------------------------------------------------------------------------------


class RecordSpan(NamedTuple):
    """One record of an uncompressed batch: where its bytes (length prefix included) lie in the batch."""

    offset: int
    key: bytes | None
    is_tombstone: bool  # null value
    start: int
    end: int


def iter_record_spans(batch: Buffer) -> Iterator[RecordSpan]:
    """The records of an uncompressed batch with their byte ranges, so a filtered batch can reuse them
    as they are (their offset and timestamp deltas stay valid when the batch keeps its base fields)."""
    header = BatchHeader.parse(batch)
    if header.compression:
        raise ValueError("iter_record_spans needs an uncompressed batch")
    pos, end_of_batch = HEADER_SIZE, min(len(batch), header.size)
    for _ in range(header.record_count):
        start = pos
        length, pos = decode_varint(batch, pos)
        end = pos + length
        if end > end_of_batch:
            raise CorruptRecordError("record runs past the end of its batch")
        _ts_delta, p = decode_varint(batch, pos + 1)
        offset_delta, p = decode_varint(batch, p)
        key, p = _read_bytes(batch, p)
        value_length, _p = decode_varint(batch, p)
        yield RecordSpan(header.base_offset + offset_delta, key, value_length < 0, start, end)
        pos = end


def rebuild_batch(header: BatchHeader, records: bytes, record_count: int) -> bytes:
    """A batch holding `records` (encoded records of `header`'s batch) with every other header field
    kept: the base offset and last offset delta stay, so the batch still spans the same offsets."""
    return _assemble(records, attributes=header.attributes, last_offset_delta=header.last_offset_delta,
                     base_timestamp=header.base_timestamp, max_timestamp=header.max_timestamp,
                     producer_id=header.producer_id, producer_epoch=header.producer_epoch,
                     base_sequence=header.base_sequence, record_count=record_count,
                     base_offset=header.base_offset, partition_leader_epoch=header.partition_leader_epoch)
