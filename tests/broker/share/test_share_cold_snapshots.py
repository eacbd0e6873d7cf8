"""Cold-partition snapshots (Kafka's ShareCoordinatorShard.snapshotColdPartitions, run by the
ShareCoordinatorService every `share.coordinator.cold.partition.snapshot.interval.ms`, default 5 min).

Kafka's rule, which these tests check:
- a share-partition whose latest snapshot's write timestamp is at least the interval old gets a new
  ShareSnapshot: the same state (start offset, state and leader epochs, batches, create timestamp), the next
  snapshot epoch, written now. A ShareUpdate carries no time, so updates since the snapshot do not make it
  younger;
- a snapshot written for a write (or an initialization) has equal create and write timestamps, a cold one
  keeps the older create timestamp; when every share-partition's latest snapshot is a cold one, nothing is
  written (the partition is quiet and would otherwise get a snapshot per key every interval for ever).
KIP-1289 here: acknowledgements staged by an open transaction are not in the state, so not in the snapshot;
the prune bound stays at the transaction's first offset until its marker, and a COMMIT after the snapshot
makes replay start at the transaction again, so that share-partition counts as not snapshotted yet.
"""

from __future__ import annotations

import random

import pytest

from kafka_txn_broker.clock import ManualClock
from kafka_txn_broker.formats.record_batch import iter_batches, iter_records
from kafka_txn_broker.formats.share_coordinator_records import (
    SHARE_SNAPSHOT,
    ShareSnapshotValue,
    StateBatch,
    decode_key,
    decode_snapshot_value,
)
from kafka_txn_broker.formats.share_state import StateKey
from kafka_txn_broker.share.share_coordinator import ShareCoordinator
from kafka_txn_broker.share.share_coordinator_shard import ShareCoordinatorShard
from tests.broker.group.fakes import FakeLog
from tests.broker.share.test_share_state_pruning import (
    ACKED,
    EPOCH,
    PID,
    A,
    B,
    FakeStateLogs,
    History,
    OneNodeMetadata,
    RecordingPruner,
    assert_pruning_loses_nothing,
    from_start,
    replay,
    write,
)

INTERVAL = 300_000  # Kafka's default share.coordinator.cold.partition.snapshot.interval.ms


def live(log: FakeLog, per_snapshot: int = 500) -> tuple[ShareCoordinatorShard, ManualClock]:
    clock = ManualClock()
    s = ShareCoordinatorShard(3, log, clock, per_snapshot)
    s.finish_load()
    return s, clock


def snapshots_in(log: FakeLog) -> list[tuple[int, StateKey, ShareSnapshotValue]]:
    """(offset, key, value) of every ShareSnapshot record in the log."""
    found = []
    for pos, header in iter_batches(log.data()):
        if header.is_control:
            continue
        for rec in iter_records(log.data()[pos:pos + header.size]):
            if rec.key is None or rec.value is None:
                continue
            k = decode_key(rec.key)
            if k.record_type == SHARE_SNAPSHOT:
                found.append((rec.offset, (k.group_id, k.topic_id, k.partition), decode_snapshot_value(rec.value)))
    return found


def cold_key_and_hot_key(log: FakeLog) -> tuple[ShareCoordinatorShard, ManualClock]:
    """A: initialized at T0 (offset 0), two updates (1, 2), then nobody writes it. B: initialized at
    T0 + 200 s (3) and written on (snapshot every 2 updates): 4, 5 updates, 6 snapshot, 7 update."""
    s, clock = live(log, per_snapshot=2)
    s.initialize_state(A, 0, 0)
    write(s, A, 0)
    write(s, A, 1)
    clock.advance(200_000)
    s.initialize_state(B, 0, 0)
    for i in range(4):
        write(s, B, i)
    return s, clock


# ---- which share-partitions get one ------------------------------------------------------------------
def test_a_cold_share_partition_gets_a_snapshot_of_the_same_state_after_the_interval() -> None:
    log = FakeLog()
    s, clock = cold_key_and_hot_key(log)
    t0 = clock.millis() - 200_000
    assert s.prunable_offset() is None  # A's only snapshot, at 0, holds the whole partition back
    before = s.states[A]
    clock.advance(INTERVAL - 200_000 - 1)
    assert s.snapshot_cold_partitions(INTERVAL) == 0  # one millisecond short
    clock.advance(1)
    assert s.snapshot_cold_partitions(INTERVAL) == 1  # A's snapshot is exactly the interval old: B's is not
    offset, key, value = snapshots_in(log)[-1]
    assert (offset, key) == (8, A)
    assert value == ShareSnapshotValue(1, before.state_epoch, before.leader_epoch, before.start_offset, t0,
                                       t0 + INTERVAL, before.batches, 2)
    assert before.batches == [StateBatch(0, 1, ACKED, 1)]  # the two updates are in it
    assert s.prunable_offset() == 6  # now B's latest snapshot: A's old records can go
    assert_pruning_loses_nothing(log, s)
    assert replay(from_start(log, 6)).states[A] == s.states[A]


def test_updates_after_an_old_snapshot_do_not_make_it_younger() -> None:
    """An update carries no timestamp: the age is the latest snapshot's (Kafka's
    testSnapshotColdPartitionsSnapshotUpdateNotConsidered)."""
    log = FakeLog()
    s, clock = live(log)
    s.initialize_state(A, 0, 0)  # 0
    clock.advance(INTERVAL - 1)
    write(s, A, 0)  # 1: an update, just now
    clock.advance(1)
    assert s.snapshot_cold_partitions(INTERVAL) == 1
    assert s.prunable_offset() == 2
    assert_pruning_loses_nothing(log, s)


def test_a_recent_snapshot_gets_none() -> None:
    log = FakeLog()
    s, clock = live(log, per_snapshot=1)
    s.initialize_state(A, 0, 0)  # 0
    clock.advance(INTERVAL)
    write(s, A, 0)  # 1 update
    write(s, A, 1)  # 2: a snapshot written for a write, now
    assert snapshots_in(log)[-1][2].create_timestamp == clock.millis()  # created now, not at initialization
    clock.advance(INTERVAL - 1)
    assert s.snapshot_cold_partitions(INTERVAL) == 0
    assert s.prunable_offset() == 2


def test_a_share_partition_whose_latest_snapshot_is_old_gets_one_even_without_updates_since() -> None:
    log = FakeLog()
    s, clock = live(log)
    s.initialize_state(A, 0, 5)  # 0
    s.initialize_state(B, 0, 0)  # 1
    clock.advance(INTERVAL)
    assert s.snapshot_cold_partitions(INTERVAL) == 2  # 2 (A), 3 (B): Kafka looks at the snapshot's age only
    assert [(o, k, v.snapshot_epoch, v.start_offset) for o, k, v in snapshots_in(log)[2:]] == [(2, A, 1, 5),
                                                                                              (3, B, 1, 0)]
    assert s.prunable_offset() == 2


def test_a_quiet_partition_is_not_snapshotted_for_ever() -> None:
    """Once every share-partition's latest snapshot is a cold one, nothing more is written (Kafka's
    testSnapshotColdPartitionsDoesNotPerpetuallySnapshot)."""
    log = FakeLog()
    s, clock = live(log)
    s.initialize_state(A, 0, 0)
    clock.advance(INTERVAL)
    assert s.snapshot_cold_partitions(INTERVAL) == 1
    for _ in range(3):
        clock.advance(INTERVAL)
        assert s.snapshot_cold_partitions(INTERVAL) == 0
    assert len(snapshots_in(log)) == 2


def test_an_empty_partition_gets_none() -> None:
    log = FakeLog()
    s, clock = live(log)
    clock.advance(INTERVAL)
    assert s.snapshot_cold_partitions(INTERVAL) == 0
    assert log.end == 0


def test_while_one_share_partition_is_active_an_old_cold_snapshot_is_renewed() -> None:
    """Kafka skips only when every latest snapshot is a cold one; otherwise each old enough one gets another."""
    log = FakeLog()
    s, clock = live(log, per_snapshot=1)
    s.initialize_state(A, 0, 0)  # 0
    s.initialize_state(B, 0, 0)  # 1
    clock.advance(INTERVAL)
    assert s.snapshot_cold_partitions(INTERVAL) == 2  # 2, 3: both cold ones now
    clock.advance(100_000)
    write(s, B, 0)  # 4 update
    write(s, B, 1)  # 5: B's snapshot for a write (create == write timestamp)
    clock.advance(INTERVAL - 100_000)
    assert s.snapshot_cold_partitions(INTERVAL) == 1  # A's cold snapshot is old again; B's is not
    assert [(o, k, v.snapshot_epoch) for o, k, v in snapshots_in(log)[-1:]] == [(6, A, 2)]
    assert s.prunable_offset() == 5
    assert_pruning_loses_nothing(log, s)


def test_a_deleted_share_partition_gets_none() -> None:
    log = FakeLog()
    s, clock = live(log)
    s.initialize_state(A, 0, 0)  # 0
    s.delete_state(A)  # 1, 2
    clock.advance(INTERVAL)
    assert s.snapshot_cold_partitions(INTERVAL) == 0
    assert log.end == 3


# ---- staged transactions (KIP-1289) -----------------------------------------------------------------
def cold_with_open_transaction(log: FakeLog) -> tuple[ShareCoordinatorShard, ManualClock]:
    """A: snapshot 0; PID stages (7, 8) on A at 1; an update at 2; the interval passes; A's cold snapshot 3."""
    s, clock = live(log)
    s.initialize_state(A, 0, 0)
    s.stage_state(A, 1, PID, EPOCH, [StateBatch(7, 8, ACKED, 1)])
    write(s, A, 0)
    clock.advance(INTERVAL)
    assert s.snapshot_cold_partitions(INTERVAL) == 1
    return s, clock


def test_a_cold_snapshot_leaves_staged_acknowledgements_out_and_the_bound_at_the_open_transaction() -> None:
    log = FakeLog()
    s, _clock = cold_with_open_transaction(log)
    assert snapshots_in(log)[-1][2].state_batches == [StateBatch(0, 0, ACKED, 1)]  # not the staged (7, 8)
    assert s.staged_of(A) == [(PID, [StateBatch(7, 8, ACKED, 1)])]  # still pending, apart
    assert s.prunable_offset() == 1  # the transaction may still commit
    assert_pruning_loses_nothing(log, s)


def test_after_an_abort_the_bound_moves_to_the_cold_snapshot() -> None:
    log = FakeLog()
    s, _clock = cold_with_open_transaction(log)
    log.marker(PID, False)  # 4
    s.complete_transaction(PID, False)
    assert s.prunable_offset() == 3
    assert_pruning_loses_nothing(log, s)


def test_after_a_commit_the_next_interval_snapshots_the_committed_state() -> None:
    log = FakeLog()
    s, clock = cold_with_open_transaction(log)
    log.marker(PID, True)  # 4: (7, 8) applies on top of the cold snapshot at 3
    s.complete_transaction(PID, True)
    assert s.prunable_offset() == 1  # replay needs the staged records again
    assert_pruning_loses_nothing(log, s)
    clock.advance(INTERVAL - 1)
    assert s.snapshot_cold_partitions(INTERVAL) == 0
    clock.advance(1)
    # A's latest snapshot is a cold one, yet replay starts before it: it gets another, holding the commit.
    assert s.snapshot_cold_partitions(INTERVAL) == 1
    assert StateBatch(7, 8, ACKED, 1) in snapshots_in(log)[-1][2].state_batches
    assert s.prunable_offset() == 5
    assert_pruning_loses_nothing(log, s)


# ---- the property, over a long random history with cold snapshots -------------------------------------
@pytest.mark.parametrize("seed", range(6))
def test_replaying_what_pruning_leaves_after_cold_snapshots_rebuilds_the_same_states(seed: int) -> None:
    rng = random.Random(seed)
    history = History()
    s, clock = live(history.log, per_snapshot=50)  # rare write snapshots: the cold ones move the bound
    pruned_to = 0
    for n in range(400):
        if rng.random() < 0.8:
            history.step(s, rng)
        clock.advance(rng.randrange(30_000))
        if n % 10 == 9:
            s.snapshot_cold_partitions(INTERVAL)
        if n % 25 == 24:
            assert_pruning_loses_nothing(history.log, s)
            bound = s.prunable_offset()
            assert bound is None or bound >= pruned_to
            pruned_to = bound if bound is not None else pruned_to
    assert pruned_to > 0
    again = replay(from_start(history.log, pruned_to))
    assert again.states == s.states
    assert again.staged.by_producer == s.staged.by_producer


# ---- the share coordinator's timer ------------------------------------------------------------------
def coordinator(clock: ManualClock, pruner: RecordingPruner, prune_ms: int, cold_ms: int) -> ShareCoordinator:
    return ShareCoordinator(1, FakeStateLogs(), OneNodeMetadata(), clock, 500, pruner,
                            prune_interval_ms=prune_ms, cold_snapshot_interval_ms=cold_ms)


def test_the_coordinator_snapshots_cold_partitions_every_interval_before_pruning() -> None:
    clock, pruner = ManualClock(), RecordingPruner()
    c = coordinator(clock, pruner, prune_ms=INTERVAL, cold_ms=INTERVAL)
    s = c.shard(0)
    s.initialize_state(A, 0, 0)  # 0
    write(s, A, 0)  # 1
    clock.advance(INTERVAL - 1)
    c.tick(clock.millis())
    assert log_end(c, 0) == 2 and pruner.calls == []
    clock.advance(1)
    c.tick(clock.millis())  # the cold snapshot (2), then the prune up to it
    assert log_end(c, 0) == 3
    assert pruner.calls == [(0, 2)]


def test_the_cold_snapshot_timer_runs_on_its_own_interval() -> None:
    clock, pruner = ManualClock(), RecordingPruner()
    c = coordinator(clock, pruner, prune_ms=10**9, cold_ms=60_000)
    s = c.shard(1)
    s.initialize_state(A, 0, 0)  # 0
    clock.advance(59_999)
    c.tick(clock.millis())
    assert log_end(c, 1) == 1
    clock.advance(1)
    c.tick(clock.millis())  # 60 s: A's snapshot is 60 s old
    assert log_end(c, 1) == 2 and pruner.calls == []
    clock.advance(30_000)
    s.initialize_state(B, 0, 0)  # 2: a snapshot for a write, so the partition is not quiet
    clock.advance(29_999)
    c.tick(clock.millis())  # not a whole interval since the last run
    assert log_end(c, 1) == 3
    clock.advance(1)
    c.tick(clock.millis())  # A's cold snapshot is 60 s old again; B's snapshot is not
    assert log_end(c, 1) == 4


def test_a_failed_cold_snapshot_is_logged_and_the_prune_still_runs() -> None:
    clock, pruner = ManualClock(), RecordingPruner()
    c = coordinator(clock, pruner, prune_ms=INTERVAL, cold_ms=INTERVAL)
    s = c.shard(0)
    s.initialize_state(A, 0, 0)  # 0
    s.initialize_state(B, 0, 0)  # 1
    clock.advance(100_000)
    write(s, A, 0)  # 2 update
    assert isinstance(c.log, FakeStateLogs)
    c.log.of(0).fail_with = RuntimeError("not enough replicas")
    clock.advance(INTERVAL - 100_000)
    c.tick(clock.millis())  # not raised: the node's other periodic work goes on
    assert pruner.calls == []  # nothing to prune: the snapshots at 0 and 1 are still the latest
    c.log.of(0).fail_with = None
    clock.advance(INTERVAL)
    c.tick(clock.millis())
    assert pruner.calls == [(0, 3)]  # A's cold snapshot at 3 (B's at 4)


def log_end(c: ShareCoordinator, partition: int) -> int:
    assert isinstance(c.log, FakeStateLogs)
    return c.log.of(partition).end
