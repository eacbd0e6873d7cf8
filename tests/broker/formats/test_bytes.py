"""Varints and the reader/writer of internal-topic keys and values, against the encodings Kafka specifies."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_txn_broker.formats.bytes import (
    Reader,
    Writer,
    decode_uvarint,
    decode_varint,
    encode_uvarint,
    encode_varint,
)
from kafka_txn_broker.formats.errors import CorruptRecordError

# Zigzag + LEB128 as the record format defines it (the protobuf sint encoding): 0, -1, 1, -2 ... map
# to 0, 1, 2, 3 ..., seven bits a byte, least significant group first.
SIGNED = [(0, "00"), (-1, "01"), (1, "02"), (-2, "03"), (63, "7e"), (-64, "7f"), (64, "8001"),
          (-(2**31), "ffffffff0f"), (2**31 - 1, "feffffff0f"), (-(2**63), "ffffffffffffffffff01")]
UNSIGNED = [(0, "00"), (1, "01"), (127, "7f"), (128, "8001"), (300, "ac02"), (2**32 - 1, "ffffffff0f")]


@pytest.mark.parametrize(("value", "hex_bytes"), SIGNED)
def test_signed_varint_vectors(value: int, hex_bytes: str) -> None:
    raw = bytes.fromhex(hex_bytes)
    assert encode_varint(value) == raw
    assert decode_varint(raw + b"\xaa", 0) == (value, len(raw))


@pytest.mark.parametrize(("value", "hex_bytes"), UNSIGNED)
def test_unsigned_varint_vectors(value: int, hex_bytes: str) -> None:
    raw = bytes.fromhex(hex_bytes)
    assert encode_uvarint(value) == raw
    assert decode_uvarint(b"\xaa" + raw, 1) == (value, len(raw) + 1)


@given(st.integers(-(2**63), 2**63 - 1))
def test_signed_round_trip(value: int) -> None:
    raw = encode_varint(value)
    assert decode_varint(raw, 0) == (value, len(raw))


@pytest.mark.parametrize("raw", [b"", b"\x80", b"\xff\xff", b"\xff" * 11])
def test_truncated_or_overlong_varints_are_corrupt_records(raw: bytes) -> None:
    with pytest.raises(CorruptRecordError):
        decode_uvarint(raw, 0)
    with pytest.raises(CorruptRecordError):
        decode_varint(raw, 0)


@pytest.mark.parametrize("flexible", [False, True])
def test_writer_and_reader_agree(flexible: bool) -> None:
    raw = (Writer(flexible=flexible).int16(7).string("grp").string(None).blob(b"\x01\x02").blob(None)
           .array_length(3).int64(-5).tags([(0, b"\x09"), (5, b"")]).to_bytes())
    r = Reader(raw, flexible=flexible)
    assert (r.int16("a"), r.string("b"), r.string("c"), r.blob("d"), r.blob("e")) == (7, "grp", None, b"\x01\x02", None)
    assert (r.array_length("f"), r.int64("g")) == (3, -5)
    assert r.tags() == ({0: b"\x09", 5: b""} if flexible else {})
    assert r.pos == len(raw)


def test_classic_and_flexible_layouts() -> None:
    # Classic: int16 length strings, int32 length bytes and arrays, -1 = null.
    assert Writer().string("ab").blob(None).array_length(2).to_bytes() == bytes.fromhex("0002 6162 ffffffff 00000002")
    # Flexible: unsigned varint length + 1 (0 = null), then the tag count.
    assert Writer(flexible=True).string("ab").blob(None).array_length(2).tags().to_bytes() == bytes.fromhex(
        "03 6162 00 03 00")


def test_reader_errors_name_the_field() -> None:
    class Bad(ValueError):
        pass

    with pytest.raises(Bad, match="value ends inside ProducerId"):
        Reader(b"\x00\x01", error=Bad).int64("ProducerId")
    with pytest.raises(Bad, match="topic is not UTF-8"):
        Reader(b"\x00\x01\xff", error=Bad).string("topic")
    with pytest.raises(Bad, match="tag count"):
        Reader(b"\x80", flexible=True, error=Bad).uvarint("tag count")
