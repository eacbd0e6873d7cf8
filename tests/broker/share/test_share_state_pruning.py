"""Pruning `__share_group_state` (Kafka's ShareCoordinatorOffsetsManager and performRecordPruning): the shard
says below which offset no record is needed any more, and the share coordinator moves the log start there on
its prune interval.

What Kafka specifies: replay of a share-partition starts at its latest ShareSnapshot (the updates after it
are needed, the ones before are not), a deleted share-partition needs nothing, and records of an open
transaction stay (the partition's last stable offset). KIP-1289 here: staged acknowledgements are
transactional ShareUpdate records applied at their producer's COMMIT marker, so a transaction committed
after a share-partition's latest snapshot still needs its records. The key property, checked on every
scenario: replaying what is left after pruning rebuilds exactly what replaying the whole log rebuilds."""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field

import pytest

from kafka_txn_broker.clock import ManualClock
from kafka_txn_broker.coordinator.loader import replay_chunk
from kafka_txn_broker.formats.errors import NotLeaderForPartitionError
from kafka_txn_broker.formats.partitioning import SHARE_STATE_TOPIC
from kafka_txn_broker.formats.record_batch import iter_batches
from kafka_txn_broker.formats.share_coordinator_records import StateBatch
from kafka_txn_broker.formats.share_state import StateKey
from kafka_txn_broker.share.replica_state_pruner import ReplicaStatePruner
from kafka_txn_broker.share.share_coordinator import ShareCoordinator
from kafka_txn_broker.share.share_coordinator_shard import ShareCoordinatorShard
from tests.broker.coordinator.fakes import FakeCoordinatorLog
from tests.broker.group.fakes import FakeLog

A: StateKey = ("g", uuid.UUID(int=1), 0)
B: StateKey = ("g", uuid.UUID(int=1), 1)
C: StateKey = ("h", uuid.UUID(int=2), 0)
PID, EPOCH = 4000, 0
ACKED = 2


def live(log: FakeLog, per_snapshot: int = 2) -> ShareCoordinatorShard:
    s = ShareCoordinatorShard(3, log, ManualClock(), per_snapshot)
    s.finish_load()
    return s


def from_start(log: FakeLog, start: int) -> bytes:
    """What the log holds once its start offset is `start`: the batches from the one holding it (a reader
    of the log gets whole batches, as the replica's read from the log start offset gives them)."""
    data = log.data()
    return b"".join(data[pos:pos + h.size] for pos, h in iter_batches(data) if h.last_offset >= start)


def replay(data: bytes) -> ShareCoordinatorShard:
    s = ShareCoordinatorShard(3, FakeLog(), ManualClock())
    replay_chunk(s, data, 0)
    s.finish_load()
    return s


def assert_pruning_loses_nothing(log: FakeLog, shard: ShareCoordinatorShard) -> None:
    """Replaying from the prunable offset rebuilds the states and open staged updates of a full replay."""
    whole = replay(log.data())
    bound = shard.prunable_offset()
    remaining = from_start(log, bound if bound is not None else 0)
    rest = replay(remaining)
    assert shard.states == whole.states  # (the live shard and a full replay agree to begin with)
    assert rest.states == whole.states
    assert rest.staged.by_producer == whole.staged.by_producer
    # A shard loaded from the whole log, or from what pruning left, has the same bound (nothing is left to
    # prune when pruning left nothing).
    assert whole.prunable_offset() == bound
    assert rest.prunable_offset() == (bound if remaining else None)


def write(s: ShareCoordinatorShard, key: StateKey, first: int) -> None:
    s.write_state(key, 0, 1, -1, [StateBatch(first, first, ACKED, 1)])


# ---- the bound ---------------------------------------------------------------------------------------
def test_nothing_to_prune_in_an_empty_partition() -> None:
    assert live(FakeLog()).prunable_offset() is None
    assert replay(b"").prunable_offset() is None


def test_nothing_to_prune_while_the_first_record_is_the_only_snapshot() -> None:
    log = FakeLog()
    s = live(log)
    s.initialize_state(A, 0, 0)  # offset 0: a snapshot
    write(s, A, 1)  # 1: an update of it
    assert s.prunable_offset() is None
    assert_pruning_loses_nothing(log, s)


def test_the_bound_is_the_latest_snapshot_of_the_key() -> None:
    log = FakeLog()
    s = live(log, per_snapshot=2)
    s.initialize_state(A, 0, 0)  # 0: snapshot
    for i in range(4):
        write(s, A, i)  # 1, 2: updates; 3: snapshot (2 updates since the last); 4: update
    assert s.prunable_offset() == 3
    assert_pruning_loses_nothing(log, s)


def test_the_oldest_latest_snapshot_of_several_keys_holds_the_bound() -> None:
    log = FakeLog()
    s = live(log, per_snapshot=2)
    s.initialize_state(A, 0, 0)  # 0
    s.initialize_state(B, 0, 0)  # 1: B's only snapshot so far
    for i in range(6):
        write(s, A, i)  # 2, 3 updates; 4 snapshot; 5, 6 updates; 7 snapshot
    assert s.prunable_offset() == 1
    assert_pruning_loses_nothing(log, s)
    for i in range(3):
        write(s, B, i)  # 8, 9 updates; 10 snapshot of B
    assert s.prunable_offset() == 7  # now A's latest snapshot is the older one
    assert_pruning_loses_nothing(log, s)


def test_a_deleted_key_needs_nothing() -> None:
    log = FakeLog()
    s = live(log, per_snapshot=2)
    s.initialize_state(C, 0, 0)  # 0: C's snapshot, the oldest
    s.initialize_state(A, 0, 0)  # 1
    write(s, A, 0)  # 2
    s.delete_state(C)  # 3, 4: tombstones of both record keys of C
    assert s.prunable_offset() == 1
    assert_pruning_loses_nothing(log, s)
    s.delete_state(A)  # 5, 6
    assert s.prunable_offset() == 7  # no share-partition left: everything can go
    assert_pruning_loses_nothing(log, s)
    assert replay(from_start(log, 7)).states == {}


def test_a_key_initialized_again_after_its_deletion_starts_at_its_new_snapshot() -> None:
    log = FakeLog()
    s = live(log, per_snapshot=2)
    s.initialize_state(A, 0, 0)  # 0
    s.delete_state(A)  # 1, 2
    s.initialize_state(A, 0, 5)  # 3
    write(s, A, 6)  # 4
    assert s.prunable_offset() == 3
    assert_pruning_loses_nothing(log, s)


# ---- staged transactions (KIP-1289) -------------------------------------------------------------------
def staged_then_snapshot(log: FakeLog) -> ShareCoordinatorShard:
    """A: snapshot 0; PID stages on A at 1; A's own writes go on: 2, 3 updates, 4 snapshot, 5 update."""
    s = live(log, per_snapshot=2)
    s.initialize_state(A, 0, 0)
    s.stage_state(A, 1, PID, EPOCH, [StateBatch(7, 8, ACKED, 1)])
    for i in range(4):
        write(s, A, i)
    return s


def test_an_open_staged_transaction_holds_the_bound_at_its_first_offset() -> None:
    log = FakeLog()
    s = staged_then_snapshot(log)
    assert s.prunable_offset() == 1  # not A's snapshot at 4: the transaction may still commit
    assert_pruning_loses_nothing(log, s)
    assert replay(from_start(log, 1)).staged_of(A) == [(PID, [StateBatch(7, 8, ACKED, 1)])]


def test_an_abort_releases_the_bound() -> None:
    log = FakeLog()
    s = staged_then_snapshot(log)
    log.marker(PID, False)  # 6
    s.complete_transaction(PID, False)
    assert s.prunable_offset() == 4
    assert_pruning_loses_nothing(log, s)


def test_a_commit_after_the_latest_snapshot_still_needs_the_staged_records() -> None:
    log = FakeLog()
    s = staged_then_snapshot(log)
    log.marker(PID, True)  # 6: applies the staged batches on top of the snapshot at 4
    s.complete_transaction(PID, True)
    assert s.states[A].batches[-1] == StateBatch(7, 8, ACKED, 1)
    assert s.prunable_offset() == 1
    assert_pruning_loses_nothing(log, s)
    for i in range(3):
        write(s, A, 10 + i)  # 7 snapshot (the update at 5 and the commit were two), holding the commit; 8, 9
    assert s.prunable_offset() == 7
    assert_pruning_loses_nothing(log, s)
    assert StateBatch(7, 8, ACKED, 1) in replay(from_start(log, 7)).states[A].batches


def test_a_commit_only_holds_back_the_keys_it_staged_on() -> None:
    log = FakeLog()
    s = live(log, per_snapshot=1)
    s.initialize_state(A, 0, 0)  # 0
    s.initialize_state(B, 0, 0)  # 1
    s.stage_state(A, 1, PID, EPOCH, [StateBatch(3, 3, ACKED, 1)])  # 2
    write(s, A, 0)  # 3 update
    write(s, A, 1)  # 4 snapshot
    write(s, B, 0)  # 5 update
    write(s, B, 1)  # 6 snapshot
    log.marker(PID, True)  # 7
    s.complete_transaction(PID, True)
    write(s, A, 2)  # 8 update
    write(s, A, 3)  # 9 snapshot, after the commit
    assert s.prunable_offset() == 6  # B's snapshot: the transaction staged nothing on B
    assert_pruning_loses_nothing(log, s)


def test_a_repeated_marker_changes_nothing() -> None:
    log = FakeLog()
    s = staged_then_snapshot(log)
    log.marker(PID, False)
    s.complete_transaction(PID, False)
    log.marker(PID, True)
    assert s.complete_transaction(PID, True) == 0
    assert s.prunable_offset() == 4
    assert_pruning_loses_nothing(log, s)


def test_a_staged_transaction_on_a_key_deleted_before_its_commit_holds_nothing_after_the_marker() -> None:
    log = FakeLog()
    s = live(log, per_snapshot=2)
    s.initialize_state(C, 0, 0)  # 0
    s.initialize_state(A, 0, 0)  # 1
    s.stage_state(C, 1, PID, EPOCH, [StateBatch(0, 0, ACKED, 1)])  # 2
    s.delete_state(C)  # 3, 4
    assert s.prunable_offset() == 1  # A's snapshot is older than the open transaction
    write(s, A, 0)  # 5
    write(s, A, 1)  # 6
    write(s, A, 2)  # 7: A's snapshot
    assert s.prunable_offset() == 2  # the open transaction, though C is gone
    log.marker(PID, True)  # 8
    s.complete_transaction(PID, True)
    assert s.prunable_offset() == 7
    assert_pruning_loses_nothing(log, s)


# ---- the property, over a long random history ----------------------------------------------------------
@dataclass
class History:
    """A random sequence of what the share coordinator does to a partition: writes on a few share-partitions,
    staged transactions of a few producers ending in COMMIT or ABORT, deletions and new initializations."""

    log: FakeLog = field(default_factory=FakeLog)
    open_producers: set[int] = field(default_factory=set)

    def step(self, s: ShareCoordinatorShard, rng: random.Random) -> None:
        key = rng.choice([A, B, C])
        action = rng.random()
        if key not in s.states:
            s.initialize_state(key, rng.randrange(3), rng.randrange(5))
        elif action < 0.6:
            first = rng.randrange(40)
            s.write_state(key, s.states[key].state_epoch, 1, -1,
                          [StateBatch(first, first + rng.randrange(3), rng.choice([0, 2, 4]), 1)])
        elif action < 0.75:
            pid = rng.choice([PID, PID + 1, PID + 2])
            first = rng.randrange(40)
            s.stage_state(key, 1, pid, EPOCH, [StateBatch(first, first, ACKED, 1)])
            self.open_producers.add(pid)
        elif action < 0.95 and self.open_producers:
            pid = rng.choice(sorted(self.open_producers))
            commit = rng.random() < 0.7
            self.log.marker(pid, commit)
            s.complete_transaction(pid, commit)
            self.open_producers.discard(pid)
        elif action >= 0.97:
            s.delete_state(key)


@pytest.mark.parametrize("seed", range(8))
def test_replaying_what_pruning_leaves_rebuilds_the_same_states(seed: int) -> None:
    rng = random.Random(seed)
    history = History()
    s = live(history.log, per_snapshot=3)
    pruned_to = 0
    for n in range(400):
        history.step(s, rng)
        if n % 25 == 24:
            assert_pruning_loses_nothing(history.log, s)
            bound = s.prunable_offset()
            assert bound is None or bound >= pruned_to  # the bound never goes back
            pruned_to = bound if bound is not None else pruned_to
    assert pruned_to > 0
    # A shard loaded from the pruned log carries on exactly as the live one.
    again = replay(from_start(history.log, pruned_to))
    assert again.states == s.states
    assert again.staged.by_producer == s.staged.by_producer


# ---- the share coordinator's periodic prune ----------------------------------------------------------
class OneNodeMetadata:
    """The metadata view of a node leading every `__share_group_state` partition."""

    def partition_count(self, topic: str) -> int | None:
        return 4 if topic == SHARE_STATE_TOPIC else None

    def leader(self, topic: str, partition: int) -> int | None:
        return 1


class FakeStateLogs(FakeCoordinatorLog):
    """`__share_group_state` partitions as FakeLogs (the coordinator's CoordinatorLog)."""


@dataclass
class RecordingPruner:
    calls: list[tuple[int, int]] = field(default_factory=list)
    fail: Exception | None = None

    def prune(self, partition: int, offset: int) -> int | None:
        if self.fail is not None:
            raise self.fail
        self.calls.append((partition, offset))
        return offset


def coordinator(clock: ManualClock, pruner: RecordingPruner) -> ShareCoordinator:
    return ShareCoordinator(1, FakeStateLogs(), OneNodeMetadata(), clock, 2, pruner,
                            prune_interval_ms=300_000,
                            cold_snapshot_interval_ms=10**9)  # none here: test_share_cold_snapshots.py


def snapshots_on(c: ShareCoordinator, partition: int, writes: int) -> None:
    s = c.shard(partition)
    s.initialize_state(A, 0, 0)
    for i in range(writes):
        write(s, A, i)


def test_the_coordinator_prunes_each_loaded_partition_every_prune_interval() -> None:
    clock, pruner = ManualClock(), RecordingPruner()
    c = coordinator(clock, pruner)
    snapshots_on(c, 0, 3)  # snapshot at 3
    snapshots_on(c, 2, 6)  # snapshot at 6
    c.shard(3)  # loaded, nothing to prune
    clock.advance(299_999)
    c.tick(clock.millis())
    assert pruner.calls == []
    clock.advance(1)
    c.tick(clock.millis())
    assert sorted(pruner.calls) == [(0, 3), (2, 6)]
    clock.advance(299_999)  # the next prune is one whole interval later
    c.tick(clock.millis())
    assert len(pruner.calls) == 2
    clock.advance(1)
    c.tick(clock.millis())
    assert len(pruner.calls) == 4


def test_a_failed_prune_is_retried_on_the_next_interval() -> None:
    clock, pruner = ManualClock(), RecordingPruner(fail=NotLeaderForPartitionError("moved"))
    c = coordinator(clock, pruner)
    snapshots_on(c, 0, 3)
    clock.advance(300_000)
    c.tick(clock.millis())  # logged, not raised: the node's other periodic work goes on
    pruner.fail = None
    clock.advance(300_000)
    c.tick(clock.millis())
    assert pruner.calls == [(0, 3)]


# ---- DeleteRecords on the leader replica -------------------------------------------------------------
@dataclass
class FakeReplicaLog:
    log_start_offset: int = 0
    last_stable_offset: int = 100
    high_watermark: int = 100


@dataclass
class FakeReplicaPartition:
    log: FakeReplicaLog = field(default_factory=FakeReplicaLog)


@dataclass
class FakeReplicas:
    """A node's replica manager: its `__share_group_state` replicas and the DeleteRecords it was asked."""

    partitions: dict[tuple[str, int], FakeReplicaPartition] = field(default_factory=dict)
    deleted: list[tuple[str, int, int]] = field(default_factory=list)

    def get(self, topic: str, partition: int) -> FakeReplicaPartition | None:
        return self.partitions.get((topic, partition))

    def delete_records(self, topic: str, partition: int, offset: int) -> tuple[int, int]:
        self.deleted.append((topic, partition, offset))
        self.partitions[(topic, partition)].log.log_start_offset = offset
        return offset, offset


def pruner_over(log: FakeReplicaLog) -> tuple[ReplicaStatePruner, FakeReplicas]:
    replicas = FakeReplicas({(SHARE_STATE_TOPIC, 5): FakeReplicaPartition(log)})
    return ReplicaStatePruner(replicas), replicas  # type: ignore[arg-type]


def test_the_pruner_deletes_the_records_below_the_offset_on_the_state_partition() -> None:
    pruner, replicas = pruner_over(FakeReplicaLog())
    assert pruner.prune(5, 40) == 40
    assert replicas.deleted == [(SHARE_STATE_TOPIC, 5, 40)]


@pytest.mark.parametrize("lso, hw, expected", [
    (30, 100, 30),  # an open transaction's records stay (the last stable offset)
    (100, 35, 35),  # so do records not yet replicated (the high watermark)
])
def test_the_pruner_never_goes_past_the_last_stable_offset_or_the_high_watermark(lso: int, hw: int,
                                                                                 expected: int) -> None:
    pruner, replicas = pruner_over(FakeReplicaLog(0, lso, hw))
    assert pruner.prune(5, 40) == expected
    assert replicas.deleted == [(SHARE_STATE_TOPIC, 5, expected)]


def test_the_pruner_does_nothing_when_the_log_start_is_already_there_or_the_replica_is_missing() -> None:
    pruner, replicas = pruner_over(FakeReplicaLog(log_start_offset=40))
    assert pruner.prune(5, 40) is None
    assert pruner.prune(5, 12) is None  # never backwards
    assert pruner.prune(6, 40) is None  # no replica of that partition here
    assert replicas.deleted == []
