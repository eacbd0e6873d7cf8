"""Segment files of copied log dirs: walking them, strictly, in Kafka's record batch format.

The format itself (the batch header, record decoding) is `kafka_txn_broker.formats.record_batch`, the
one implementation the broker and the tools share. What is particular to reading someone else's files:
a sweep must name what is wrong, so an old magic or a bad CRC raises SegmentError with the file and
offset (the broker's recovery instead truncates anything odd at the tail); only a batch torn by a crash
or preallocated zeros end a walk quietly, as Kafka truncates those. The strict walk itself is
`kafka_txn_tools/batches.py`, shared with the admin client's Fetch reads.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from pathlib import Path

from kafka_txn_broker.formats.errors import CorruptRecordError
from kafka_txn_broker.formats.record_batch import (
    CODEC_NAMES,
    HEADER_SIZE,
    BatchHeader,
    Record,
    UnsupportedCompressionError,
    batch_crc_ok,
    iter_records,
)
from kafka_txn_tools.batches import SegmentError, iter_batches

# The package an operator installs for a codec kafka-python only decodes with it.
_CODEC_PACKAGES = {2: "python-snappy", 3: "lz4", 4: "zstandard"}


def _codec_error(batch: memoryview | bytes, name: str) -> SegmentError:
    codec = BatchHeader.parse(batch).compression
    package = _CODEC_PACKAGES.get(codec)
    if package is None:
        return SegmentError(f"{name}: unknown compression codec {codec}")
    return SegmentError(
        f"{name}: a {CODEC_NAMES[codec]}-compressed batch needs the {package} package: pip install {package}"
    )


def decode_records(batch: memoryview | bytes, name: str = "segment") -> list[Record]:
    """The records of one whole batch (gzip natively, other codecs through kafka-python's optional ones)."""
    try:
        return list(iter_records(batch))
    except UnsupportedCompressionError:
        raise _codec_error(batch, name) from None
    except CorruptRecordError as exc:
        raise SegmentError(f"{name}: {exc.args[0] if exc.args else 'corrupt record'}") from exc
    except struct.error as exc:  # a batch length too short for a whole header (only seen with verify_crc off)
        raise SegmentError(f"{name}: batch shorter than its header: {exc}") from exc


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
            header = BatchHeader.parse(raw)
            if header.batch_length <= 0 or start + header.size > file_size:
                return  # preallocated zeros or a torn tail
            if header.magic != 2:
                raise SegmentError(f"{path}: batch at byte {start} has magic {header.magic}; only v2 batches are read")
            body: bytes | None = None
            if header.is_control and header.last_offset >= min_last_offset:
                body = raw + src.read(header.size - HEADER_SIZE)
                if not batch_crc_ok(body, 0, header):
                    raise SegmentError(f"{path}: CRC mismatch in the marker batch at offset {header.base_offset}")
            src.seek(start + header.size)
            if header.last_offset >= min_last_offset:
                yield header, body
