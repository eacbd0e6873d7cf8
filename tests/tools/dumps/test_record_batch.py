"""Record batch v2: varints, batches (plain, gzip, markers), segment walking."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_txn_tools.dumps import record_batch as rb


@given(st.integers(-(2**63), 2**63 - 1))
def test_varint_roundtrip(value):
    encoded = rb.write_varint(value)
    assert rb.read_varint(encoded, 0) == (value, len(encoded))


@given(st.integers(0, 2**31 - 1))
def test_uvarint_roundtrip(value):
    encoded = rb.write_uvarint(value)
    assert rb.read_uvarint(encoded, 0) == (value, len(encoded))


def test_known_varints():
    assert rb.write_varint(0) == b"\x00"
    assert rb.write_varint(-1) == b"\x01"
    assert rb.write_varint(1) == b"\x02"
    assert rb.write_varint(300) == b"\xd8\x04"


@pytest.mark.parametrize("gzip", [False, True])
def test_batch_roundtrip(gzip):
    records = [(1_700_000_000_000, b"k1", b"v1"), (1_700_000_000_250, None, b"v2"), (1_700_000_000_100, b"k3", None)]
    data = rb.encode_batch(40, records, producer_id=7, producer_epoch=2, base_sequence=11,
                           attributes=rb.TRANSACTIONAL, compress_gzip=gzip)
    [(header, batch)] = list(rb.iter_batches(data))
    assert (header.base_offset, header.last_offset, header.record_count) == (40, 42, 3)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (7, 2, 11)
    assert header.max_timestamp == 1_700_000_000_250
    assert header.is_transactional and not header.is_control
    assert header.compression == (1 if gzip else 0)
    decoded = rb.decode_records(header, batch)
    assert [(r.offset, r.timestamp, r.key, r.value) for r in decoded] == [
        (40, 1_700_000_000_000, b"k1", b"v1"),
        (41, 1_700_000_000_250, None, b"v2"),
        (42, 1_700_000_000_100, b"k3", None),
    ]


def test_control_batch_is_78_bytes_with_marker_fields():
    data = rb.encode_control_batch(120, 1_700_000_009_000, 2000, 3, commit=False, coordinator_epoch=7)
    assert len(data) == 78
    [(header, batch)] = list(rb.iter_batches(data))
    assert header.attributes == 0x30 and header.base_sequence == -1
    [record] = rb.decode_records(header, batch)
    assert struct.unpack(">hh", record.key) == (0, 0)  # version 0, ABORT
    assert struct.unpack(">hi", record.value) == (0, 7)


def test_crc_mismatch_names_the_offset():
    data = bytearray(rb.encode_batch(5, [(1, b"k", b"v")]))
    data[-1] ^= 0xFF
    with pytest.raises(rb.SegmentError, match="offset 5"):
        list(rb.iter_batches(bytes(data), "seg.log"))


def test_torn_tail_and_preallocated_zeros_end_the_walk(tmp_path):
    good = rb.encode_batch(0, [(1, None, b"a")]) + rb.encode_batch(1, [(2, None, b"b")])
    torn = good + rb.encode_batch(2, [(3, None, b"c")])[:30]
    assert [h.base_offset for h, _ in rb.iter_batches(torn)] == [0, 1]
    assert [h.base_offset for h, _ in rb.iter_batches(good + bytes(200))] == [0, 1]
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(torn)
    assert [h.base_offset for h, _ in rb.scan_segment(seg)] == [0, 1]


def test_old_magic_is_refused():
    data = bytearray(rb.encode_batch(0, [(1, None, b"a")]))
    data[16] = 1
    with pytest.raises(rb.SegmentError, match="magic 1"):
        list(rb.iter_batches(bytes(data), verify_crc=False))


def test_scan_segment_skips_earlier_batches_and_reads_only_marker_bodies(tmp_path):
    seg = tmp_path / "00000000000000000010.log"
    seg.write_bytes(
        rb.encode_batch(10, [(1, None, b"x")] * 3, producer_id=4, producer_epoch=0, base_sequence=0)
        + rb.encode_batch(13, [(2, None, b"y")], producer_id=4, producer_epoch=0, base_sequence=3)
        + rb.encode_control_batch(14, 3, 4, 0, commit=True, coordinator_epoch=1)
    )
    scanned = list(rb.scan_segment(seg, min_last_offset=13))
    assert [(h.base_offset, body is None) for h, body in scanned] == [(13, True), (14, False)]


def test_segment_files_in_offset_order(tmp_path):
    for name in ("00000000000000000200.log", "00000000000000000000.log", "00000000000000000100.log.deleted",
                 "00000000000000000100.index", "00000000000000000300.log.swap"):
        (tmp_path / name).write_bytes(b"")
    assert [p.name for p in rb.segment_files(tmp_path)] == ["00000000000000000000.log", "00000000000000000200.log"]
