"""`__consumer_offsets` record formats: offset commits and group metadata, every version read."""

from __future__ import annotations

import struct

import pytest

from kafka_txn_broker.formats.group_records import (
    GroupKey,
    GroupValue,
    MemberValue,
    OffsetKey,
    OffsetValue,
    RecordFormatError,
    decode_group_value,
    decode_key,
    decode_offset_value,
    encode_group_key,
    encode_group_value,
    encode_offset_key,
    encode_offset_value,
)


def _compact(s: bytes) -> bytes:
    return bytes([len(s) + 1]) + s  # short strings only: a one-byte unsigned varint


def test_offset_key_and_value_bytes() -> None:
    assert encode_offset_key("g", "t", 3).hex() == "0001" + "0001" + "67" + "0001" + "74" + "00000003"
    assert decode_key(encode_offset_key("g", "t", 3)) == OffsetKey("g", "t", 3)
    value = encode_offset_value(OffsetValue(5, 1, "m", 1000))
    assert value.hex() == "0003" + "0000000000000005" + "00000001" + "0001" + "6d" + "00000000000003e8"
    assert decode_offset_value(value) == OffsetValue(5, 1, "m", 1000)


def test_older_and_flexible_offset_values() -> None:
    v1 = struct.pack(">hqh1sqq", 1, 7, 1, b"x", 100, 200)
    assert decode_offset_value(v1) == OffsetValue(7, -1, "x", 100, 200)
    v0 = struct.pack(">hqh", 0, 7, 0) + struct.pack(">q", 100)
    assert decode_offset_value(v0) == OffsetValue(7, -1, "", 100)
    v4 = struct.pack(">hqi", 4, 9, 2) + _compact(b"meta") + struct.pack(">q", 300) + b"\x01\x05\x02ab"
    assert decode_offset_value(v4) == OffsetValue(9, 2, "meta", 300)
    with pytest.raises(RecordFormatError):
        decode_offset_value(struct.pack(">h", 9))


def test_group_value_round_trip_and_layout() -> None:
    member = MemberValue("m-1", None, "cli", "/127.0.0.1", 30000, 10000, b"sub", b"asg")
    value = GroupValue("consumer", 4, "range", "m-1", 1234, [member])
    raw = encode_group_value(value)
    assert raw[:2] == b"\x00\x03" and raw[2:12] == b"\x00\x08consumer"
    assert decode_group_value(raw) == value
    assert decode_key(encode_group_key("g")) == GroupKey("g")
    empty = GroupValue("consumer", 5, None, None, 99, [])
    assert decode_group_value(encode_group_value(empty)) == empty


def test_flexible_group_value() -> None:
    member = (_compact(b"m") + b"\x00" + _compact(b"c") + _compact(b"/h") + struct.pack(">ii", 5, 6)
              + _compact(b"s") + _compact(b"a") + b"\x00")
    raw = (struct.pack(">h", 4) + _compact(b"consumer") + struct.pack(">i", 2) + _compact(b"range")
           + _compact(b"m") + struct.pack(">q", 7) + bytes([2]) + member + b"\x00")
    v = decode_group_value(raw)
    assert (v.generation, v.protocol, v.leader, v.current_state_timestamp) == (2, "range", "m", 7)
    assert v.members == [MemberValue("m", None, "c", "/h", 5, 6, b"s", b"a")]


def test_unknown_record_types_are_ignored() -> None:
    assert decode_key(struct.pack(">h", 3) + b"\x00\x01g") is None
