"""Segment walking over Kafka's record batch format: strict errors, torn tails, markers, codecs.

The format itself (varints, building, decoding) is tested with the formats: tests/broker/formats/test_record_batch.py.
"""

from __future__ import annotations

import struct

import pytest

from kafka_txn_broker.formats.record_batch import build_batch, build_control_batch
from kafka_txn_tools.dumps import segments as rb
from tests.tools.dumps.batches import gzip_batch

T0 = 1_700_000_000_000


@pytest.mark.parametrize("gzip", [False, True])
def test_batch_roundtrip(gzip):
    records = [(T0, b"k1", b"v1" * 40), (T0 + 250, None, b"v2" * 40), (T0 + 100, b"k3", None)]
    if gzip:
        data = gzip_batch(records, base_offset=40, producer_id=7, producer_epoch=2, base_sequence=11,
                          transactional=True)
    else:
        data = build_batch([(k, v, None, ts) for ts, k, v in records], timestamp_ms=T0, base_offset=40,
                           producer_id=7, producer_epoch=2, base_sequence=11, transactional=True)
    [(header, batch)] = list(rb.iter_batches(data))
    assert (header.base_offset, header.last_offset, header.record_count) == (40, 42, 3)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (7, 2, 11)
    assert header.max_timestamp == T0 + 250
    assert header.is_transactional and not header.is_control
    assert header.compression == (1 if gzip else 0)
    decoded = rb.decode_records(batch)
    assert [(r.offset, r.timestamp, r.key, r.value) for r in decoded] == [
        (40, T0, b"k1", b"v1" * 40),
        (41, T0 + 250, None, b"v2" * 40),
        (42, T0 + 100, b"k3", None),
    ]


def test_control_batch_marker_fields():
    data = build_control_batch(2000, 3, False, 7, T0 + 9_000, base_offset=120)
    [(header, batch)] = list(rb.iter_batches(data))
    assert header.attributes == 0x30 and header.base_sequence == -1
    [record] = rb.decode_records(batch)
    assert struct.unpack(">hh", record.key) == (0, 0)  # version 0, ABORT
    assert struct.unpack(">hi", record.value) == (0, 7)


def test_crc_mismatch_names_the_offset():
    data = bytearray(build_batch([(b"k", b"v")], timestamp_ms=1, base_offset=5))
    data[-1] ^= 0xFF
    with pytest.raises(rb.SegmentError, match="offset 5"):
        list(rb.iter_batches(bytes(data), "seg.log"))


def test_torn_tail_and_preallocated_zeros_end_the_walk(tmp_path):
    good = build_batch([(None, b"a")], timestamp_ms=1) + build_batch([(None, b"b")], timestamp_ms=2, base_offset=1)
    torn = good + build_batch([(None, b"c")], timestamp_ms=3, base_offset=2)[:30]
    assert [h.base_offset for h, _ in rb.iter_batches(torn)] == [0, 1]
    assert [h.base_offset for h, _ in rb.iter_batches(good + bytes(200))] == [0, 1]
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(torn)
    assert [h.base_offset for h, _ in rb.scan_segment(seg)] == [0, 1]


def test_old_magic_is_refused():
    data = bytearray(build_batch([(None, b"a")], timestamp_ms=1))
    data[16] = 1
    with pytest.raises(rb.SegmentError, match="magic 1"):
        list(rb.iter_batches(bytes(data), verify_crc=False))


@pytest.mark.parametrize(("codec", "message"), [
    (2, r"seg\.log: a snappy-compressed batch needs the python-snappy package: pip install python-snappy"),
    (5, r"seg\.log: unknown compression codec 5"),
])
def test_undecodable_codecs_say_what_to_install(codec, message):
    data = bytearray(build_batch([(None, b"a")], timestamp_ms=1))
    data[22] = (data[22] & ~0x07) | codec  # the low byte of the attributes (outside what is read here: the CRC)
    with pytest.raises(rb.SegmentError, match=message):
        rb.decode_records(bytes(data), "seg.log")


def test_corrupt_records_are_segment_errors():
    data = bytearray(build_batch([(b"key", b"value")], timestamp_ms=1))
    data[61] = 0x7E  # the record's length varint now claims far more than the batch holds
    with pytest.raises(rb.SegmentError, match="seg.log"):
        rb.decode_records(bytes(data), "seg.log")


def test_a_batch_shorter_than_its_header_is_a_segment_error():
    data = bytearray(build_batch([(None, b"a")], timestamp_ms=1, base_offset=9))
    data[8:12] = (25).to_bytes(4, "big")  # batch length 25: 37 bytes in all, less than a 61-byte header
    with pytest.raises(rb.SegmentError, match="offset 9"):
        list(rb.iter_batches(bytes(data), "seg.log"))  # the CRC cannot match
    [(_header, batch)] = list(rb.iter_batches(bytes(data), "seg.log", verify_crc=False))
    with pytest.raises(rb.SegmentError, match="seg.log: batch shorter than its header"):
        rb.decode_records(batch, "seg.log")


def test_scan_segment_skips_earlier_batches_and_reads_only_marker_bodies(tmp_path):
    seg = tmp_path / "00000000000000000010.log"
    seg.write_bytes(
        build_batch([(None, b"x")] * 3, timestamp_ms=1, base_offset=10, producer_id=4, producer_epoch=0,
                    base_sequence=0)
        + build_batch([(None, b"y")], timestamp_ms=2, base_offset=13, producer_id=4, producer_epoch=0, base_sequence=3)
        + build_control_batch(4, 0, True, 1, 3, base_offset=14)
    )
    scanned = list(rb.scan_segment(seg, min_last_offset=13))
    assert [(h.base_offset, body is None) for h, body in scanned] == [(13, True), (14, False)]


def test_segment_files_in_offset_order(tmp_path):
    for name in ("00000000000000000200.log", "00000000000000000000.log", "00000000000000000100.log.deleted",
                 "00000000000000000100.index", "00000000000000000300.log.swap"):
        (tmp_path / name).write_bytes(b"")
    assert [p.name for p in rb.segment_files(tmp_path)] == ["00000000000000000000.log", "00000000000000000200.log"]
