"""The KIP-848 consumer group records of `__consumer_offsets`: byte layout of keys (int16 type, then the
classic encoding) and values (int16 version 0, then the flexible encoding), and round trips."""

from __future__ import annotations

import uuid

import pytest

from kafka_txn_broker.formats import consumer_group_records as r

T = uuid.UUID(int=5)


def test_keys_are_type_then_group_then_member() -> None:
    assert r.encode_key(r.GROUP_METADATA, "g") == b"\x00\x03\x00\x01g"
    assert r.encode_key(r.CURRENT_MEMBER_ASSIGNMENT, "g", "m") == b"\x00\x08\x00\x01g\x00\x01m"
    assert r.decode_key(b"\x00\x05\x00\x01g\x00\x01m") == r.ConsumerGroupKey(5, "g", "m")
    assert r.decode_key(b"\x00\x01\x00\x01g") is None  # an offset commit key
    with pytest.raises(r.RecordFormatError):
        r.encode_key(r.MEMBER_METADATA, "g")


def test_group_epoch_value_layout() -> None:
    # version 0, epoch 7, empty tagged fields
    assert r.encode_group_metadata(r.GroupMetadataValue(7)) == b"\x00\x00\x00\x00\x00\x07\x00"
    assert r.decode_group_metadata(b"\x00\x00\x00\x00\x00\x07\x00") == r.GroupMetadataValue(7)


def test_values_round_trip() -> None:
    member = r.MemberMetadataValue("inst", None, "client", "/1.2.3.4", ("a", "b"), "x.*", 30_000, "range")
    assert r.decode_member_metadata(r.encode_member_metadata(member)) == member
    current = r.CurrentAssignmentValue(4, 3, 1, {T: frozenset({0, 2})}, {T: frozenset({1})})
    assert r.decode_current_assignment(r.encode_current_assignment(current)) == current
    assert r.decode_target_assignment(r.encode_target_assignment({T: frozenset({3})})) == {T: frozenset({3})}
    assert r.decode_assignment_epoch(r.encode_assignment_epoch(9)) == 9
