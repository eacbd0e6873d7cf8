"""`__consumer_offsets` record formats and rebuilding a shard from its log."""

from __future__ import annotations

import struct

import pytest

from kafka_txn_broker.clock import ManualClock
from kafka_txn_broker.config import BrokerConfig
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
from kafka_txn_broker.formats.record_batch import build_batch
from kafka_txn_broker.group_commits import CommitRequest, commit, fetch
from kafka_txn_broker.group_model import GroupState
from kafka_txn_broker.group_shard import GroupShard
from tests.broker.groups_fakes import FakeLog, join_new_member, make_shard, sync


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


def _replayed(log: FakeLog, clock: ManualClock | None = None) -> GroupShard:
    shard = GroupShard(0, BrokerConfig(), clock or ManualClock(), FakeLog())
    assert shard.replay(log.data(), 0) == log.end
    shard.finish_load()
    return shard


def test_a_new_leader_rebuilds_groups_and_offsets_from_the_log() -> None:
    log = FakeLog()
    shard = make_shard(log=log)
    a, a_join = join_new_member(shard)
    gen = a_join.last_join.generation
    sync(shard, a, gen, {a: b"assignment"})
    commit(shard, CommitRequest("g", gen, a, None, {("t", 0): OffsetValue(42, 3, "md")}))
    commit(shard, CommitRequest("simple", -1, "", None, {("u", 1): OffsetValue(7)}))
    commit(shard, CommitRequest("g", -1, "", None, {("t", 1): OffsetValue(100)}, producer=(5, 0)))
    commit(shard, CommitRequest("g", -1, "", None, {("t", 2): OffsetValue(200)}, producer=(6, 0)))
    log.marker(5, commit=True)
    log.marker(6, commit=False)

    loaded = _replayed(log)
    group = loaded.groups["g"]
    assert (group.state, group.generation, group.leader_id, group.protocol_name) == (
        GroupState.STABLE, gen, a, "range")
    assert group.members[a].assignment == b"assignment"
    offsets = fetch(loaded, "g", [("t", 0), ("t", 1), ("t", 2)], True)
    assert [(o.offset, o.leader_epoch, o.metadata) for o in offsets.values()] == [
        (42, 3, "md"), (100, -1, ""), (-1, -1, "")]
    assert loaded.groups["simple"].state is GroupState.EMPTY
    # the restored member keeps going without a rebalance
    assert loaded.membership.heartbeat("g", a, None, gen) == 0


def test_replay_keeps_an_open_transaction_pending() -> None:
    log = FakeLog()
    shard = make_shard(log=log)
    commit(shard, CommitRequest("g", -1, "", None, {("t", 0): OffsetValue(9)}, producer=(5, 0)))
    loaded = _replayed(log)
    assert fetch(loaded, "g", [("t", 0)], True)[("t", 0)].error == 88
    loaded.on_marker(5, commit=True)
    assert fetch(loaded, "g", [("t", 0)], True)[("t", 0)].offset == 9


def test_tombstones_delete_offsets_and_groups() -> None:
    log = FakeLog()
    shard = make_shard(log=log)
    commit(shard, CommitRequest("g", -1, "", None, {("t", 0): OffsetValue(9)}))
    log.append(build_batch([(encode_offset_key("g", "t", 0), None), (encode_group_key("g"), None)],
                           timestamp_ms=0))
    loaded = _replayed(log)
    assert fetch(loaded, "g", [("t", 0)], False)[("t", 0)].offset == -1
    assert "g" not in loaded.groups


def test_replay_from_the_middle_skips_earlier_batches() -> None:
    log = FakeLog()
    shard = make_shard(log=log)
    commit(shard, CommitRequest("g", -1, "", None, {("t", 0): OffsetValue(1)}))
    commit(shard, CommitRequest("g", -1, "", None, {("t", 1): OffsetValue(2)}))
    fresh = GroupShard(0, BrokerConfig(), ManualClock(), FakeLog())
    assert fresh.replay(log.data(), 1) == 2
    assert fresh.offsets.get("g", ("t", 0)) is None and fresh.offsets.get("g", ("t", 1)) is not None
