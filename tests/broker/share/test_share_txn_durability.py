"""KIP-1289 staged acknowledgements made durable: the share coordinator writes them in the producer's
transaction and holds them until its marker; a share-partition loaded meanwhile gets them back pending.
Expected values follow how Kafka resolves transactional records in a coordinator's log (the group
coordinator's transactional offset commits: held per producer, applied by COMMIT, dropped by ABORT)."""

from __future__ import annotations

import pytest

from kafka_txn_broker.clock import ManualClock
from kafka_txn_broker.coordinator.loader import replay_chunk
from kafka_txn_broker.formats.record_batch import BatchHeader, iter_batches
from kafka_txn_broker.formats.share_coordinator_records import StateBatch
from kafka_txn_broker.share.record_state import AcknowledgeType as A
from kafka_txn_broker.share.record_state import RecordState as S
from kafka_txn_broker.share.share_coordinator_shard import ShareCoordinatorShard
from kafka_txn_broker.share.share_partition import AckBatch, AcquiredRange, PersistedState, SharePartition
from tests.broker.group.fakes import FakeLog
from tests.broker.share.share_fakes import KEY, FakePersister, Limits, batches

PID, EPOCH, OTHER_PID = 1000, 3, 2000
ACKED, ARCHIVED = int(S.ACKNOWLEDGED), int(S.ARCHIVED)


def shard(log: FakeLog) -> ShareCoordinatorShard:
    s = ShareCoordinatorShard(3, log, ManualClock())
    s.finish_load()
    return s


def replayed(log: FakeLog) -> ShareCoordinatorShard:
    s = ShareCoordinatorShard(3, FakeLog(), ManualClock())
    replay_chunk(s, log.data(), 0)
    s.finish_load()
    return s


def staged_on(log: FakeLog) -> ShareCoordinatorShard:
    s = shard(log)
    s.write_state(KEY, 0, 1, 0, [StateBatch(0, 9, 0, 1)])
    s.stage_state(KEY, 1, PID, EPOCH, [StateBatch(0, 3, ACKED, 1), StateBatch(4, 4, ARCHIVED, 1)])
    return s


# ---- the share coordinator shard ------------------------------------------------------------------------
def test_staging_writes_a_transactional_batch_of_the_producer_and_changes_no_state():
    log = FakeLog()
    s = staged_on(log)
    header = BatchHeader.parse(log.batches[-1])
    assert (header.producer_id, header.producer_epoch, header.is_transactional) == (PID, EPOCH, True)
    assert s.states[KEY].batches == [StateBatch(0, 9, 0, 1)]
    assert s.staged_of(KEY) == [(PID, [StateBatch(0, 3, ACKED, 1), StateBatch(4, 4, ARCHIVED, 1)])]


def test_commit_applies_what_was_staged_and_abort_drops_it():
    committed, aborted = staged_on(FakeLog()), staged_on(FakeLog())
    assert committed.complete_transaction(PID, True) == 1
    assert aborted.complete_transaction(PID, False) == 1
    assert committed.states[KEY].batches == [StateBatch(0, 3, ACKED, 1), StateBatch(4, 4, ARCHIVED, 1),
                                             StateBatch(5, 9, 0, 1)]
    assert aborted.states[KEY].batches == [StateBatch(0, 9, 0, 1)]
    assert committed.staged_of(KEY) == aborted.staged_of(KEY) == []
    assert committed.complete_transaction(PID, True) == 0  # a repeated marker finds nothing


def test_another_producers_marker_leaves_the_staged_acknowledgements_alone():
    s = staged_on(FakeLog())
    assert s.complete_transaction(OTHER_PID, True) == 0
    assert [pid for pid, _ in s.staged_of(KEY)] == [PID]


def test_a_snapshot_written_while_pending_does_not_lose_the_commit():
    log = FakeLog()
    s = ShareCoordinatorShard(3, log, ManualClock(), updates_per_snapshot=1)
    s.finish_load()
    s.write_state(KEY, 0, 1, 0, [StateBatch(0, 9, 0, 1)])
    s.stage_state(KEY, 1, PID, EPOCH, [StateBatch(0, 1, ACKED, 1)])
    s.write_state(KEY, 0, 1, 0, [StateBatch(9, 9, ARCHIVED, 1)])
    s.write_state(KEY, 0, 1, 0, [StateBatch(8, 8, ARCHIVED, 1)])  # the second one is a new snapshot
    s.complete_transaction(PID, True)
    log.marker(PID, True)
    for after in (s, replayed(log)):
        assert after.states[KEY].batches[0] == StateBatch(0, 1, ACKED, 1)


@pytest.mark.parametrize("marker", [None, True, False])
def test_replay_resolves_staged_acknowledgements_by_the_marker_in_the_log(marker):
    log = FakeLog()
    staged_on(log)
    if marker is not None:
        log.marker(PID, marker)
    s = replayed(log)
    if marker is None:  # still open: held, for the share-partition to load pending
        assert s.staged_of(KEY) == [(PID, [StateBatch(0, 3, ACKED, 1), StateBatch(4, 4, ARCHIVED, 1)])]
        assert s.states[KEY].batches == [StateBatch(0, 9, 0, 1)]
    else:
        assert s.staged_of(KEY) == []
        first = s.states[KEY].batches[0]
        assert first == (StateBatch(0, 3, ACKED, 1) if marker else StateBatch(0, 9, 0, 1))


def test_staging_on_a_share_partition_without_state_or_from_an_old_leader_is_refused():
    from kafka_txn_broker.formats.errors import FencedLeaderEpochError, InvalidRequestError

    log = FakeLog()
    s = shard(log)
    with pytest.raises(InvalidRequestError):
        s.stage_state(KEY, 1, PID, EPOCH, [StateBatch(0, 0, ACKED, 1)])
    s.write_state(KEY, 0, 5, 0, [])
    before = log.end
    with pytest.raises(FencedLeaderEpochError):
        s.stage_state(KEY, 4, PID, EPOCH, [StateBatch(0, 0, ACKED, 1)])
    assert log.end == before  # nothing written
    assert sum(1 for _ in iter_batches(log.data())) == 1


# ---- the share-partition ---------------------------------------------------------------------------------
class StagedPersister(FakePersister):
    """A persister whose state holds acknowledgements an open transaction staged before a restart."""

    def __init__(self, staged: list[tuple[int, list[StateBatch]]]) -> None:
        super().__init__(start=0, offsets={o: (0, 1) for o in range(10)})
        self.staged = staged

    def read_state(self, key, leader_epoch):  # type: ignore[no-untyped-def]
        base = super().read_state(key, leader_epoch)
        return PersistedState(base.state_epoch, base.start_offset, base.batches, self.staged)


def loaded(staged: list[tuple[int, list[StateBatch]]], limit: int = 5) -> tuple[SharePartition, StagedPersister]:
    persister = StagedPersister(staged)
    sp = SharePartition(KEY, 1, persister, ManualClock(), Limits(delivery_limit=limit))
    sp.initialize(lambda: 0)
    return sp, persister


def spans(sp: SharePartition) -> list[tuple[int, int, S, int, str]]:
    return [(r.first, r.last, r.state, r.delivery_count, r.member_id) for r in sp.in_flight()]


def test_a_loaded_share_partition_holds_the_staged_records_pending_and_hands_out_the_rest():
    sp, _ = loaded([(PID, [StateBatch(2, 4, ACKED, 1)])])
    assert spans(sp)[1] == (2, 4, S.TX_PENDING, 1, "")
    assert sp.acquire("m2", batches((0, 9)), 100, fetch_offset=0) == [
        AcquiredRange(0, 1, 2), AcquiredRange(5, 9, 2)]
    assert [(p.producer_id, p.records) for p in sp.pending_transactions()] == [(PID, 3)]


def test_staged_records_beyond_the_persisted_end_are_restored_too():
    # Acquisitions are not written: the persisted state may end before the staged offsets.
    persister = StagedPersister([(PID, [StateBatch(12, 13, ARCHIVED, 2)])])
    sp = SharePartition(KEY, 1, persister, ManualClock(), Limits())
    sp.initialize(lambda: 0)
    assert spans(sp)[-2:] == [(10, 11, S.AVAILABLE, 0, ""), (12, 13, S.TX_PENDING, 2, "")]


def test_commit_of_restored_records_applies_and_writes_their_states():
    sp, persister = loaded([(PID, [StateBatch(0, 1, ACKED, 1), StateBatch(2, 2, ARCHIVED, 1)])])
    assert sp.complete_transaction(PID, True) == 3
    assert sp.start_offset == 3
    assert persister.writes[-1] == (3, [])  # all three complete: the start offset moves past them


def test_abort_of_restored_records_releases_them_having_no_owner():
    sp, persister = loaded([(PID, [StateBatch(0, 1, ACKED, 1)])])
    assert sp.complete_transaction(PID, False) == 2
    assert spans(sp)[0] == (0, 9, S.AVAILABLE, 1, "")  # deliverable again; the delivery counted
    assert persister.writes[-1] == (0, [StateBatch(0, 1, 0, 1)])  # written, as an expired lock is


def test_abort_of_restored_records_at_the_delivery_limit_archives_them():
    sp, persister = loaded([(PID, [StateBatch(0, 1, ACKED, 3)])], limit=3)
    sp.complete_transaction(PID, False)
    assert sp.start_offset == 2
    assert persister.writes[-1] == (2, [])


def test_staged_batches_are_the_states_the_commit_gives():
    persister, clock = FakePersister(), ManualClock()
    sp = SharePartition(KEY, 0, persister, clock, Limits())
    sp.initialize(lambda: 0)
    sp.acquire("m1", batches((0, 9)), 100, fetch_offset=0)
    acks = [AckBatch(0, 3, [int(A.ACCEPT), int(A.ACCEPT), int(A.REJECT), int(A.ACCEPT)]),
            AckBatch(5, 6, [int(A.REJECT)])]
    sp.stage("m1", PID, acks)
    assert sp.staged_batches(PID, acks) == [StateBatch(0, 1, ACKED, 1), StateBatch(2, 2, ARCHIVED, 1),
                                            StateBatch(3, 3, ACKED, 1), StateBatch(5, 6, ARCHIVED, 1)]
    assert sp.staged_batches(OTHER_PID, acks) == []


def restored(staged: list[tuple[int, list[StateBatch]]], start: int = 0, persisted: range = range(10),
             lock_ms: int = 30_000) -> tuple[SharePartition, StagedPersister, ManualClock]:
    persister, clock = StagedPersister(staged), ManualClock()
    persister.start, persister.offsets = start, {o: (0, 1) for o in persisted}
    sp = SharePartition(KEY, 1, persister, clock, Limits(lock_ms=lock_ms))
    sp.initialize(lambda: 0)
    return sp, persister, clock


def test_a_staged_batch_below_the_start_offset_does_not_stop_the_next_one():
    sp, _, _ = restored([(PID, [StateBatch(0, 1, ACKED, 1), StateBatch(6, 7, ACKED, 1)])], start=5,
                        persisted=range(5, 10))
    assert [(r.first, r.last) for r in sp.in_flight() if r.state is S.TX_PENDING] == [(6, 7)]


def test_a_staged_record_just_past_the_persisted_end_is_restored():
    sp, _, _ = restored([(PID, [StateBatch(10, 10, ACKED, 1)])])
    assert spans(sp)[-1] == (10, 10, S.TX_PENDING, 1, "")


def test_restored_records_commit_to_the_state_they_were_staged_for():
    sp, _, _ = restored([(PID, [StateBatch(2, 2, ACKED, 1), StateBatch(3, 3, ARCHIVED, 1)])])
    sp.complete_transaction(PID, True)
    assert [(r.first, r.last, r.state) for r in sp.in_flight()][:3] == [
        (0, 1, S.AVAILABLE), (2, 2, S.ACKNOWLEDGED), (3, 3, S.ARCHIVED)]


def test_a_restored_records_lock_runs_from_the_load_and_its_expiry_is_counted_once():
    # Only pending records in flight: nothing else would make the share-partition look at its locks.
    sp, _, clock = restored([(PID, [StateBatch(0, 9, ACKED, 1)])], lock_ms=1000)
    clock.advance(999)
    sp.expire_locks()
    assert sp.expired_pending_locks == 0
    clock.advance(1)
    sp.expire_locks()
    assert (sp.expired_pending_locks, spans(sp)) == (10, [(0, 9, S.TX_PENDING, 1, "")])


def test_aborting_an_owned_staging_writes_nothing_though_another_transaction_holds_ownerless_records():
    sp, persister, _ = restored([(OTHER_PID, [StateBatch(5, 6, ACKED, 1)])])
    sp.acquire("m1", batches((0, 9)), 100, fetch_offset=0)
    sp.stage("m1", PID, [AckBatch(0, 4, [int(A.ACCEPT)])])
    writes = len(persister.writes)
    assert sp.complete_transaction(PID, False) == 5
    assert len(persister.writes) == writes  # back to m1, ACQUIRED: nothing durable changed
    assert spans(sp)[0] == (0, 4, S.ACQUIRED, 2, "m1")  # delivered once before the load, once now


def test_staged_batches_stop_at_the_acknowledged_span():
    sp, _, _ = restored([], persisted=range(0))
    sp.acquire("m1", batches((0, 9)), 100, fetch_offset=0)
    sp.stage("m1", PID, [AckBatch(4, 5, [int(A.REJECT)])])
    sp.stage("m1", PID, [AckBatch(0, 3, [int(A.ACCEPT)])])
    assert sp.staged_batches(PID, [AckBatch(0, 3, [int(A.ACCEPT)])]) == [StateBatch(0, 3, ACKED, 1)]


def test_a_restored_records_lock_starts_at_the_load_not_before():
    # Another record's shorter lock (the group's duration lowered since) makes the locks looked at early.
    sp, _, clock = restored([(PID, [StateBatch(5, 9, ACKED, 1)])], lock_ms=1000)
    sp.limits.lock_ms = 100  # type: ignore[attr-defined]
    sp.acquire("m1", batches((0, 4)), 100, fetch_offset=0)
    clock.advance(100)
    assert sp.expire_locks() == 5  # m1's records released
    assert sp.expired_pending_locks == 0  # the restored ones' lock (1000 ms from the load) still runs
