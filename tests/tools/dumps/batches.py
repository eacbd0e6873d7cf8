"""Gzip record batches for the dumps tests: the broker builds uncompressed batches only, so these come
from kafka-python's producer-side builder, an independent writer of the format."""

from __future__ import annotations

from collections.abc import Sequence

from kafka.record.default_records import DefaultRecordBatchBuilder

from kafka_txn_broker.formats.record_batch import NO_SEQUENCE, with_base_offset
from kafka_txn_broker.formats.transactions import NO_PRODUCER_EPOCH, NO_PRODUCER_ID

GZIP = 1


def gzip_batch(records: Sequence[tuple[int, bytes | None, bytes | None]], *, base_offset: int = 0,
               producer_id: int = NO_PRODUCER_ID, producer_epoch: int = NO_PRODUCER_EPOCH,
               base_sequence: int = NO_SEQUENCE, transactional: bool = False) -> bytes:
    """One gzip batch of (timestamp, key, value) records at consecutive offsets from `base_offset`. The
    records must compress: the builder keeps a batch uncompressed when gzip would not make it smaller."""
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=GZIP, is_transactional=transactional,
                                        producer_id=producer_id, producer_epoch=producer_epoch,
                                        base_sequence=base_sequence, batch_size=1 << 20)
    for delta, (timestamp, key, value) in enumerate(records):
        builder.append(delta, timestamp=timestamp, key=key, value=value, headers=[])
    raw = bytearray(builder.build())
    assert raw[22] & 0x07 == GZIP, "the records did not compress, so the builder left the batch uncompressed"
    with_base_offset(raw, base_offset, 0)  # outside the CRC, where the broker stamps it too
    return bytes(raw)
