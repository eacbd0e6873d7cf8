"""GroupShard: rebuilding a `__consumer_offsets` partition's groups and offsets from its log (a new leader)."""

from __future__ import annotations

from kafka_txn_broker.clock import ManualClock
from kafka_txn_broker.configs.broker_config import BrokerConfig
from kafka_txn_broker.coordinator.loader import replay_chunk
from kafka_txn_broker.formats.group_records import OffsetValue, encode_group_key, encode_offset_key
from kafka_txn_broker.formats.record_batch import build_batch
from kafka_txn_broker.group.classic_group import GroupState
from kafka_txn_broker.group.offset_commit import CommitRequest, commit, fetch
from kafka_txn_broker.group.shard import GroupShard
from tests.broker.group.fakes import FakeLog, join_new_member, make_shard, sync


def _replayed(log: FakeLog, clock: ManualClock | None = None) -> GroupShard:
    shard = GroupShard(0, BrokerConfig(), clock or ManualClock(), FakeLog())
    assert replay_chunk(shard, log.data(), 0) == log.end
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
    assert replay_chunk(fresh, log.data(), 1) == 2
    assert fresh.offsets.get("g", ("t", 0)) is None and fresh.offsets.get("g", ("t", 1)) is not None
