from __future__ import annotations

import struct

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from kafka_txn_broker.formats import record_batch as rb
from kafka_txn_broker.formats.errors import (
    CorruptRecordError,
    InvalidRecordError,
    MessageTooLargeError,
    UnsupportedForMessageFormatError,
)

TS = 1_700_000_000_000


def kafka_python_batch(n: int = 3, *, codec: int = 0, pid: int = 5, epoch: int = 1, seq: int = 0,
                       transactional: bool = False, value_size: int = 1) -> bytes:
    """A batch from kafka-python's producer-side builder: an independent writer of the format."""
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=transactional,
                                        producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                                        batch_size=1 << 20)
    for i in range(n):
        builder.append(i, timestamp=TS + i, key=b"k%d" % i, value=b"v" * (i + value_size), headers=[("h", b"x")])
    return bytes(builder.build())


def test_header_fields_of_kafka_python_batch() -> None:
    raw = kafka_python_batch(3, pid=42, epoch=7, seq=10, transactional=True)
    h = rb.BatchHeader.parse(raw)
    assert (h.magic, h.record_count, h.last_offset_delta) == (2, 3, 2)
    assert (h.producer_id, h.producer_epoch, h.base_sequence, h.last_sequence) == (42, 7, 10, 12)
    assert h.is_transactional and not h.is_control and h.compression == 0
    assert h.size == len(raw) and h.base_timestamp == TS and h.max_timestamp == TS + 2
    assert rb.validate_client_batch(raw, 1 << 20) == h


def test_build_batch_is_read_by_kafka_python() -> None:
    raw = rb.build_batch([(b"a", b"1", [("h", b"x")]), (None, None), (b"c", b"3", None, TS + 5)],
                         timestamp_ms=TS, base_offset=100, producer_id=9, producer_epoch=2, base_sequence=4,
                         transactional=True, partition_leader_epoch=3)
    batch = DefaultRecordBatch(bytearray(raw))
    assert batch.validate_crc()
    recs = list(batch)
    assert [(r.offset, r.key, r.value) for r in recs] == [(100, b"a", b"1"), (101, None, None), (102, b"c", b"3")]
    assert recs[0].headers == [("h", b"x")] and recs[2].timestamp == TS + 5
    h = rb.BatchHeader.parse(raw)
    assert (h.partition_leader_epoch, h.max_timestamp, h.is_transactional) == (3, TS + 5, True)


def test_control_batch_layout() -> None:
    raw = rb.build_control_batch(11, 4, True, 17, TS, base_offset=50, partition_leader_epoch=2)
    assert len(raw) == rb.CONTROL_BATCH_SIZE == 78
    h = rb.BatchHeader.parse(raw)
    assert h.is_control and h.is_transactional and h.base_sequence == -1 and h.record_count == 1
    assert rb.parse_control_record(raw) == (True, 17)
    assert rb.parse_control_record(rb.build_control_batch(11, 4, False, 3, TS)) == (False, 3)
    batch = DefaultRecordBatch(bytearray(raw))
    assert batch.is_control_batch and batch.validate_crc()
    record = next(iter(batch))
    assert record.key == struct.pack(">hh", 0, 1) and record.value == struct.pack(">hi", 0, 17)


@given(st.booleans(), st.integers(-(2**31), 2**31 - 1), st.integers(0, 2**63 - 1), st.integers(0, 2**15 - 1),
       st.integers(0, 2**62))
def test_a_marker_is_the_record_kafka_pythons_builder_writes(commit: bool, coordinator_epoch: int, pid: int,
                                                             epoch: int, ts: int) -> None:
    # Packed in one piece by the broker; byte for byte what an independent writer of the format lays out.
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=True, producer_id=pid,
                                        producer_epoch=epoch, base_sequence=-1, batch_size=1 << 20)
    builder.append(0, timestamp=ts, key=struct.pack(">hh", 0, int(commit)),
                   value=struct.pack(">hi", 0, coordinator_epoch), headers=[])
    expected = bytearray(builder.build())
    struct.pack_into(">q", expected, 0, 77)  # base offset
    struct.pack_into(">i", expected, 12, 3)  # partition leader epoch (both outside the CRC)
    struct.pack_into(">h", expected, 21, struct.unpack_from(">h", expected, 21)[0] | 0x20)  # the control bit
    built = rb.build_control_batch(pid, epoch, commit, coordinator_epoch, ts, base_offset=77, partition_leader_epoch=3)
    assert built == bytes(_recrc(expected))
    assert rb.parse_control_record(built) == (commit, coordinator_epoch)


def _marker_with(key: bytes, value: bytes, *, ts_delta: int = 0, headers: list[tuple[str, bytes]] | None = None
                 ) -> bytes:
    """A control batch of one record as any writer may lay it out (kafka-python's builder: an independent
    writer), not necessarily in the 78-byte layout the broker writes."""
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=True, producer_id=11,
                                        producer_epoch=4, base_sequence=-1, batch_size=1 << 20)
    builder.append(0, timestamp=TS + ts_delta, key=key, value=value, headers=headers or [])
    raw = bytearray(builder.build())
    struct.pack_into(">q", raw, 27, TS)  # base timestamp TS: the record's delta stays as given
    struct.pack_into(">h", raw, 21, struct.unpack_from(">h", raw, 21)[0] | 0x20)  # the control bit
    return bytes(_recrc(raw))


@pytest.mark.parametrize("layout", [
    {"ts_delta": 300},  # a two-byte timestamp delta moves every field after it
    {"headers": [("h", b"x")]},
    {"value_tail": b"\x00\x07"},  # a longer value (a newer marker version): the epoch is still its start
])
def test_markers_in_other_layouts_parse_as_the_record_says(layout: dict) -> None:
    value = struct.pack(">hi", 0, 23) + layout.pop("value_tail", b"")
    raw = _marker_with(struct.pack(">hh", 0, 1), value, **layout)
    assert rb.BatchHeader.parse(raw).is_control
    assert rb.parse_control_record(raw) == (True, 23)


def test_a_control_record_that_is_not_a_marker_is_refused_in_the_canonical_layout_too() -> None:
    raw = bytearray(rb.build_control_batch(11, 4, True, 17, TS))
    struct.pack_into(">h", raw, rb.HEADER_SIZE + 7, 5)  # control type 5 in the key, same layout
    with pytest.raises(CorruptRecordError):
        rb.parse_control_record(bytes(raw))
    abort = _marker_with(struct.pack(">hh", 0, 0), struct.pack(">hi", 0, 9), ts_delta=200)
    assert rb.parse_control_record(abort) == (False, 9)


@pytest.mark.parametrize("value_size", [1, 60, 62, 8000, 8200, 70_000])
def test_record_lengths_of_every_varint_width_validate(value_size: int) -> None:
    """One-, two- and three-byte record lengths (the walk decodes the first two inline)."""
    raw = kafka_python_batch(3, value_size=value_size)
    assert rb.validate_client_batch(raw, 1 << 20).record_count == 3
    buf = bytearray(raw)
    buf[rb.HEADER_SIZE] ^= 0x02  # the first record's length, off by one: the walk must notice
    with pytest.raises((CorruptRecordError, InvalidRecordError)):
        rb.validate_client_batch(_recrc(buf), 1 << 20)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.none(), st.binary(max_size=40)), st.one_of(st.none(), st.binary(max_size=200)),
                          st.lists(st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=8))),
                                   max_size=3)),
                min_size=1, max_size=20),
       st.integers(0, 2**40), st.integers(-1, 2**40))
def test_build_and_decode_round_trip(records, base_offset, pid) -> None:
    raw = rb.build_batch(records, timestamp_ms=TS, base_offset=base_offset, producer_id=pid,
                         producer_epoch=0 if pid >= 0 else -1, base_sequence=0 if pid >= 0 else -1)
    rb.validate_batches(raw, 1 << 20, from_client=False)
    decoded = list(rb.iter_records(raw))
    assert [(r.key, r.value) for r in decoded] == [(k, v) for k, v, _ in records]
    assert [r.headers for r in decoded] == [[(hk, hv) for hk, hv in h] for _, _, h in records]
    assert [r.offset for r in decoded] == list(range(base_offset, base_offset + len(records)))


def test_gzip_batch_decodes_and_validates_without_decompressing() -> None:
    raw = kafka_python_batch(4, codec=1, value_size=500)
    h = rb.validate_client_batch(raw, 1 << 20)
    assert h.compression == 1 and h.size < 500
    assert [r.value for r in rb.iter_records(raw)] == [b"v" * (i + 500) for i in range(4)]


def test_iter_batches_stops_at_torn_tail() -> None:
    a = rb.build_batch([(b"k", b"v")], timestamp_ms=TS)
    b = rb.build_batch([(b"k", b"w")], timestamp_ms=TS, base_offset=1)
    buf = a + b
    assert [p for p, _ in rb.iter_batches(buf)] == [0, len(a)]
    for cut in range(len(a), len(buf)):
        assert [p for p, _ in rb.iter_batches(buf[:cut])] == [0]
    assert list(rb.iter_batches(b"")) == []


def test_with_base_offset_keeps_crc_valid() -> None:
    buf = bytearray(kafka_python_batch(2))
    rb.with_base_offset(buf, 1234, 9)
    h = rb.BatchHeader.parse(buf)
    assert (h.base_offset, h.partition_leader_epoch, h.last_offset) == (1234, 9, 1235)
    assert rb.batch_crc_ok(buf, 0, h)


@pytest.mark.parametrize("mutate, error", [
    (lambda b: b.__setitem__(16, 1), UnsupportedForMessageFormatError),
    (lambda b: b.__setitem__(16, 7), CorruptRecordError),
    (lambda b: b.__setitem__(len(b) - 1, b[-1] ^ 0xFF), CorruptRecordError),  # CRC
    (lambda b: struct.pack_into(">i", b, 8, 40), CorruptRecordError),  # length below minimum
    (lambda b: struct.pack_into(">i", b, 8, len(b)), CorruptRecordError),  # claims more than sent
])
def test_validate_rejects_malformed(mutate, error) -> None:
    buf = bytearray(kafka_python_batch(2))
    mutate(buf)
    with pytest.raises(error):
        rb.validate_client_batch(buf, 1 << 20)


def _recrc(buf: bytearray) -> bytearray:
    struct.pack_into(">I", buf, 17, rb.crc32c(bytes(buf[21:])))
    return buf


def test_validate_header_consistency() -> None:
    buf = bytearray(kafka_python_batch(3))
    struct.pack_into(">i", buf, 57, 2)  # record count disagrees with lastOffsetDelta
    with pytest.raises(InvalidRecordError):
        rb.validate_client_batch(_recrc(buf), 1 << 20)
    buf = bytearray(kafka_python_batch(3))
    struct.pack_into(">ii", buf, 23 + 34 - 34, 3, 0)  # lastOffsetDelta 3 (and base ts hi bits 0)
    struct.pack_into(">i", buf, 57, 4)  # 4 records claimed, 3 present
    with pytest.raises((CorruptRecordError, InvalidRecordError)):
        rb.validate_client_batch(_recrc(buf), 1 << 20)


def test_validate_client_rules() -> None:
    two = kafka_python_batch(1) + kafka_python_batch(1)
    with pytest.raises(InvalidRecordError):
        rb.validate_client_batch(two, 1 << 20)
    assert len(rb.validate_batches(two, 1 << 20, from_client=False)) == 2
    with pytest.raises(InvalidRecordError):
        rb.validate_client_batch(rb.build_control_batch(1, 0, True, 0, TS), 1 << 20)
    no_seq = rb.build_batch([(b"k", b"v")], timestamp_ms=TS, producer_id=3, producer_epoch=0)
    with pytest.raises(InvalidRecordError):
        rb.validate_client_batch(no_seq, 1 << 20)
    with pytest.raises(MessageTooLargeError):
        rb.validate_client_batch(kafka_python_batch(3), 50)
    with pytest.raises(CorruptRecordError):
        rb.validate_client_batch(kafka_python_batch(3) + b"\x00\x01", 1 << 20)
    with pytest.raises(InvalidRecordError):
        rb.validate_client_batch(b"", 1 << 20)


def test_errors_carry_kafka_error_codes() -> None:
    buf = bytearray(kafka_python_batch(1))
    buf[-1] ^= 1
    with pytest.raises(CorruptRecordError) as exc:
        rb.validate_client_batch(buf, 1 << 20)
    assert exc.value.errno == 2
    buf[16] = 0
    with pytest.raises(UnsupportedForMessageFormatError) as exc2:
        rb.validate_client_batch(buf, 1 << 20)
    assert exc2.value.errno == 43


@given(st.integers(0, 2**31 - 1), st.integers(0, 1000))
def test_sequence_wrap(seq, delta) -> None:
    inc = rb.increment_sequence(seq, delta)
    assert 0 <= inc <= 2**31 - 1
    assert rb.decrement_sequence(inc, delta) == seq


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=1, max_size=120), st.integers(0, 200))
@example(b"\x0c\x00\x80\x80\x80\x80\x00", 0)  # the timestamp delta runs to the record's end (IndexError)
def test_garbage_records_with_valid_crc_raise_kafka_errors_only(garbage, count) -> None:
    """A CRC-valid batch whose records section is nonsense is refused with a Kafka error (never another
    exception), and one that is accepted really holds its records: kafka-python's reader, an independent
    one, walks exactly the declared number of them, offset deltas 0, 1, ..."""
    declared = max(count, 1)
    body = struct.pack(">hiqqqhii", 0, declared - 1, TS, TS, -1, -1, -1, declared) + garbage
    raw = struct.pack(">qiibI", 0, len(body) + 9, 0, 2, rb.crc32c(body)) + body
    try:
        rb.validate_client_batch(raw, 1 << 20)
    except (CorruptRecordError, InvalidRecordError):
        return
    offsets = [record.offset for record in DefaultRecordBatch(raw)]
    assert offsets == list(range(declared))


@pytest.mark.parametrize("edit", ["length past the end", "trailing bytes", "offset delta"])
def test_records_that_do_not_fill_their_batch_are_refused(edit: str) -> None:
    """The records section is walked: one record's length running past the batch, trailing bytes after the
    last record, and an offset delta out of order are each refused, though the CRC is valid."""
    good = bytearray(kafka_python_batch(2))
    first = rb.HEADER_SIZE  # record 0: its length, attributes, timestamp delta, offset delta (one byte each)
    raw = {"length past the end": lambda: _edited(good, first, b"\x7e"),
           "trailing bytes": lambda: _recrc(bytes(good) + b"\x00"),
           "offset delta": lambda: _edited(good, first + 3, b"\x02")}[edit]()
    with pytest.raises((CorruptRecordError, InvalidRecordError)):
        rb.validate_client_batch(raw, 1 << 20)


def _edited(batch: bytearray, at: int, new: bytes) -> bytes:
    edited = bytearray(batch)
    edited[at:at + len(new)] = new
    return _recrc(bytes(edited))


def _recrc(batch: bytes) -> bytes:
    """The batch with its length and CRC-32C made to match its bytes again."""
    body = batch[21:]
    return batch[:8] + struct.pack(">i", len(batch) - 12) + batch[12:17] + struct.pack(">I", rb.crc32c(body)) + body
