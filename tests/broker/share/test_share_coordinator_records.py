"""The `__share_group_state` record formats, byte for byte, and the batch combiner."""

from __future__ import annotations

import uuid

import pytest

from kafka_txn_broker.formats.share_coordinator_records import (
    RecordFormatError,
    ShareSnapshotValue,
    ShareUpdateValue,
    StateBatch,
    decode_key,
    decode_snapshot_value,
    decode_update_value,
    encode_key,
    encode_snapshot_value,
    encode_update_value,
)
from kafka_txn_broker.formats.share_state import combine

TOPIC = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")


def test_key_bytes():
    # int16 type, int16-length group id, 16 bytes of topic id, int32 partition.
    raw = encode_key(1, "g", TOPIC, 3)
    assert raw.hex() == "0001" "0001" "67" "00112233445566778899aabbccddeeff" "00000003"
    k = decode_key(raw)
    assert (k.record_type, k.group_id, k.topic_id, k.partition) == (1, "g", TOPIC, 3)


def test_snapshot_value_bytes():
    v = ShareSnapshotValue(1, 0, 2, 10, 1000, 2000, [StateBatch(10, 12, 2, 1)], delivery_complete_count=3)
    expected = ("0000" "00000001" "00000000" "00000002" "000000000000000a" "00000000000003e8" "00000000000007d0"
                "02" "000000000000000a" "000000000000000c" "02" "0001" "00"  # compact array of 1 + batch tags
                "01" "00" "04" "00000003")  # one tagged field: tag 0, 4 bytes, DeliveryCompleteCount
    assert encode_snapshot_value(v).hex() == expected
    assert decode_snapshot_value(bytes.fromhex(expected)) == v


def test_update_value_bytes_without_tags():
    v = ShareUpdateValue(4, 7, -1, [StateBatch(5, 5, 4, 3), StateBatch(6, 9, 0, 1)])
    raw = encode_update_value(v)
    assert raw.hex() == ("0000" "00000004" "00000007" "ffffffffffffffff" "03"
                         "0000000000000005" "0000000000000005" "04" "0003" "00"
                         "0000000000000006" "0000000000000009" "00" "0001" "00" "00")
    assert decode_update_value(raw) == v


def test_unknown_tags_are_skipped():
    raw = encode_update_value(ShareUpdateValue(1, 1, 0, []))
    with_tag = raw[:-1] + bytes.fromhex("01" "05" "02" "abcd")  # tag 5, 2 bytes
    assert decode_update_value(with_tag) == ShareUpdateValue(1, 1, 0, [])


@pytest.mark.parametrize("raw", ["0002" "0001" "67", "0000", "0000" "0005" "67", "0001" "00000004"])
def test_garbage_is_a_format_error(raw):
    with pytest.raises(RecordFormatError):
        if len(raw) > 8:
            decode_key(bytes.fromhex(raw))
        else:
            decode_update_value(bytes.fromhex(raw))


def test_newer_batches_override_and_neighbours_merge():
    base = [StateBatch(0, 9, 0, 1)]
    assert combine(base, [StateBatch(3, 4, 2, 1)], 0) == [
        StateBatch(0, 2, 0, 1), StateBatch(3, 4, 2, 1), StateBatch(5, 9, 0, 1)]
    assert combine(base, [StateBatch(3, 4, 0, 1)], 0) == [StateBatch(0, 9, 0, 1)]
    # Below the start offset everything goes; a batch across it is cut.
    assert combine(base, [StateBatch(12, 14, 4, 2)], 5) == [StateBatch(5, 9, 0, 1), StateBatch(12, 14, 4, 2)]
    assert combine([StateBatch(0, 3, 2, 1), StateBatch(6, 8, 0, 2)], [StateBatch(2, 7, 4, 5)], 0) == [
        StateBatch(0, 1, 2, 1), StateBatch(2, 7, 4, 5), StateBatch(8, 8, 0, 2)]
