"""ShareCoordinatorShard over a fake log: writes, fencing, snapshots, replay."""

from __future__ import annotations

import uuid

import pytest

from kafka_txn_broker.clock import ManualClock
from kafka_txn_broker.coordinator.loader import replay_chunk
from kafka_txn_broker.formats.errors import FencedLeaderEpochError, FencedStateEpochError
from kafka_txn_broker.formats.record_batch import iter_batches, iter_records
from kafka_txn_broker.formats.share_coordinator_records import StateBatch, decode_key
from kafka_txn_broker.share.share_coordinator_shard import ShareCoordinatorShard
from tests.broker.group.fakes import FakeLog

KEY = ("g", uuid.UUID(int=5), 0)


def shard(log: FakeLog | None = None, per_snapshot: int = 500) -> ShareCoordinatorShard:
    s = ShareCoordinatorShard(3, log or FakeLog(), ManualClock(), per_snapshot)
    s.finish_load()
    return s


def record_types(log: FakeLog) -> list[int]:
    data = log.data()
    out = []
    for pos, h in iter_batches(data):
        for rec in iter_records(data[pos:pos + h.size]):
            out.append(decode_key(rec.key).record_type)
    return out


def replayed(log: FakeLog) -> ShareCoordinatorShard:
    s = ShareCoordinatorShard(3, FakeLog(), ManualClock())
    replay_chunk(s, log.data(), 0)
    s.finish_load()
    return s


def test_the_first_write_is_a_snapshot_then_updates():
    log = FakeLog()
    s = shard(log)
    s.write_state(KEY, 0, 1, 0, [])
    s.write_state(KEY, 0, 1, 0, [StateBatch(0, 4, 2, 1)])
    s.write_state(KEY, 0, 1, 3, [StateBatch(5, 9, 0, 2)])
    assert record_types(log) == [0, 1, 1]
    state = s.states[KEY]
    assert (state.start_offset, state.batches) == (3, [StateBatch(3, 4, 2, 1), StateBatch(5, 9, 0, 2)])
    assert state.delivery_complete_count() == 2


def test_a_snapshot_every_n_updates():
    log = FakeLog()
    s = shard(log, per_snapshot=2)
    for i in range(6):
        s.write_state(KEY, 0, 1, i, [])
    assert record_types(log) == [0, 1, 1, 0, 1, 1]
    assert s.states[KEY].snapshot_epoch == 1


def test_replay_rebuilds_the_same_state():
    log = FakeLog()
    s = shard(log, per_snapshot=2)
    s.write_state(KEY, 0, 1, 0, [StateBatch(0, 9, 0, 1)])
    s.write_state(KEY, 0, 1, 2, [StateBatch(3, 4, 2, 1)])
    s.write_state(KEY, 0, 1, -1, [StateBatch(5, 5, 4, 5)])
    s.write_state(KEY, 0, 2, -1, [StateBatch(6, 6, 2, 1)])  # the snapshot
    s.write_state(KEY, 0, 2, -1, [StateBatch(7, 7, 2, 1)])
    again = replayed(log)
    assert again.states[KEY].batches == s.states[KEY].batches
    assert (again.states[KEY].start_offset, again.states[KEY].leader_epoch) == (2, 2)
    assert again.states[KEY].batches[0] == StateBatch(2, 2, 0, 1)


def test_an_older_leader_epoch_is_fenced_after_a_newer_read():
    s = shard()
    s.write_state(KEY, 0, 1, 0, [])
    assert s.read_state(KEY, 2) is not None  # the new share-partition leader reads first
    with pytest.raises(FencedLeaderEpochError):
        s.write_state(KEY, 0, 1, 5, [])
    with pytest.raises(FencedLeaderEpochError):
        s.read_state(KEY, 1)
    s.write_state(KEY, 0, 2, 5, [])
    assert s.states[KEY].start_offset == 5


def test_an_older_state_epoch_is_fenced_after_a_reset():
    log = FakeLog()
    s = shard(log)
    s.write_state(KEY, 0, 1, 0, [StateBatch(0, 4, 2, 1)])
    s.initialize_state(KEY, 1, 100)  # AlterShareGroupOffsets
    with pytest.raises(FencedStateEpochError):
        s.write_state(KEY, 0, 1, 5, [])
    assert s.states[KEY].start_offset == 100
    assert replayed(log).states[KEY].state_epoch == 1


def test_delete_writes_tombstones():
    log = FakeLog()
    s = shard(log)
    s.write_state(KEY, 0, 1, 0, [])
    s.delete_state(KEY)
    assert KEY not in s.states
    assert KEY not in replayed(log).states


def test_unknown_state_reads_as_none():
    assert shard().read_state(KEY, 0) is None
