"""SharePartition with plain data: a fake log read, a fake persister and a manual clock.

Expected values follow KIP-932 / Kafka's SharePartition: whole batches are acquired, a record is held
by one member at a time, acknowledgements are written before they take effect, and the start offset
moves past completed records only."""

from __future__ import annotations

import pytest

from kafka_txn_broker.clock import ManualClock
from kafka_txn_broker.formats.errors import CoordinatorNotAvailableError, InvalidRecordStateError, InvalidRequestError
from kafka_txn_broker.formats.share_coordinator_records import StateBatch
from kafka_txn_broker.share.record_state import AcknowledgeType as A
from kafka_txn_broker.share.record_state import RecordState as S
from kafka_txn_broker.share.share_partition import AckBatch, AcquiredRange, SharePartition
from tests.broker.share.share_fakes import KEY, Batch, FakePersister, Limits, batches


def make(persister: FakePersister | None = None, clock: ManualClock | None = None, start: int = 0,
         **limits: int) -> tuple[SharePartition, FakePersister, ManualClock]:
    persister = persister or FakePersister()
    clock = clock or ManualClock()
    sp = SharePartition(KEY, 0, persister, clock, Limits(**limits))
    sp.initialize(lambda: start)
    return sp, persister, clock


def ack(first: int, last: int, *types: A) -> AckBatch:
    return AckBatch(first, last, [int(t) for t in types])


def test_a_new_share_partition_starts_at_the_reset_offset_and_writes_it():
    sp, persister, _ = make(start=42)
    assert (sp.start_offset, sp.next_fetch_offset()) == (42, 42)
    assert persister.writes == [(42, [])]


def test_whole_batches_are_acquired_up_to_the_soft_record_limit():
    sp, _, _ = make()
    got = sp.acquire("m1", batches((0, 4), (5, 9), (10, 14)), 7, fetch_offset=0)
    # 7 records asked: the second batch is taken whole, the third not at all.
    assert got == [AcquiredRange(0, 9, 1)]
    assert sp.next_fetch_offset() == 10
    assert sp.end_offset == 9


def test_a_record_is_held_by_one_member_at_a_time():
    sp, _, _ = make()
    assert sp.acquire("m1", batches((0, 4)), 100, fetch_offset=0) == [AcquiredRange(0, 4, 1)]
    # m2 reads the same batch from the log: nothing of it is available.
    assert sp.acquire("m2", batches((0, 4)), 100, fetch_offset=0) == []
    sp.acknowledge("m1", [ack(0, 4, A.RELEASE)])
    assert sp.acquire("m2", batches((0, 4)), 100, fetch_offset=0) == [AcquiredRange(0, 4, 2)]


def test_accept_moves_the_start_offset_and_is_written_first():
    sp, persister, _ = make()
    sp.acquire("m1", batches((0, 9)), 100, fetch_offset=0)
    sp.acknowledge("m1", [ack(0, 3, A.ACCEPT)])
    assert sp.start_offset == 4
    assert persister.writes[-1] == (4, [])  # below the start offset nothing needs a batch
    sp.acknowledge("m1", [ack(6, 9, A.ACCEPT)])
    assert sp.start_offset == 4  # 4-5 are still acquired
    assert persister.writes[-1] == (4, [StateBatch(6, 9, 2, 1)])
    sp.acknowledge("m1", [ack(4, 5, A.REJECT)])
    assert (sp.start_offset, sp.in_flight()) == (10, [])


def test_per_offset_acknowledge_types():
    sp, persister, _ = make()
    sp.acquire("m1", batches((0, 3)), 100, fetch_offset=0)
    sp.acknowledge("m1", [ack(0, 3, A.ACCEPT, A.RELEASE, A.REJECT, A.GAP)])
    assert sp.start_offset == 1
    states = {(r.first, r.last): (r.state, r.delivery_count) for r in sp.in_flight()}
    assert states == {(1, 1): (S.AVAILABLE, 1), (2, 3): (S.ARCHIVED, 1)}
    assert persister.writes[-1] == (1, [StateBatch(1, 1, 0, 1), StateBatch(2, 3, 4, 1)])
    assert sp.next_fetch_offset() == 1


def test_acknowledging_records_the_member_does_not_hold_writes_nothing():
    sp, persister, _ = make()
    sp.acquire("m1", batches((0, 4)), 100, fetch_offset=0)
    writes = len(persister.writes)
    with pytest.raises(InvalidRecordStateError):
        sp.acknowledge("m2", [ack(0, 4, A.ACCEPT)])
    with pytest.raises(InvalidRecordStateError):
        sp.acknowledge("m1", [ack(3, 7, A.ACCEPT)])  # 5-7 were never fetched
    with pytest.raises(InvalidRecordStateError):  # the last batch fails: the others are not applied either
        sp.acknowledge("m1", [ack(0, 1, A.ACCEPT), ack(2, 3, A.ACCEPT), ack(9, 9, A.ACCEPT)])
    with pytest.raises(InvalidRequestError):  # the same records twice in one request: refused whole
        sp.acknowledge("m1", [ack(0, 1, A.ACCEPT), ack(0, 1, A.ACCEPT)])
    with pytest.raises(InvalidRequestError):
        sp.acknowledge("m1", [AckBatch(0, 4, [1, 1])])  # neither one type nor one per offset
    assert len(persister.writes) == writes
    assert [(r.state, r.member_id) for r in sp.in_flight()] == [(S.ACQUIRED, "m1")]


def test_a_failed_write_leaves_the_state_as_it_was():
    sp, persister, _ = make()
    sp.acquire("m1", batches((0, 4)), 100, fetch_offset=0)
    persister.unavailable()
    with pytest.raises(CoordinatorNotAvailableError):
        sp.acknowledge("m1", [ack(0, 4, A.ACCEPT)])
    assert sp.start_offset == 0
    assert [(r.state, r.member_id) for r in sp.in_flight()] == [(S.ACQUIRED, "m1")]
    persister.fail = None
    sp.acknowledge("m1", [ack(0, 4, A.ACCEPT)])
    assert sp.start_offset == 5


def test_an_expired_lock_makes_records_available_again():
    sp, persister, clock = make(lock_ms=1000)
    sp.acquire("m1", batches((0, 4)), 100, fetch_offset=0)
    clock.advance(999)
    assert sp.expire_locks() == 0
    clock.advance(1)
    assert sp.expire_locks() == 5
    assert [(r.state, r.delivery_count) for r in sp.in_flight()] == [(S.AVAILABLE, 1)]
    assert persister.writes[-1] == (0, [StateBatch(0, 4, 0, 1)])
    # The member that let its lock expire can no longer acknowledge them.
    with pytest.raises(InvalidRecordStateError):
        sp.acknowledge("m1", [ack(0, 4, A.ACCEPT)])


def test_renew_restarts_the_lock_without_a_write():
    sp, persister, clock = make(lock_ms=1000)
    sp.acquire("m1", batches((0, 0)), 100, fetch_offset=0)
    clock.advance(900)
    writes = len(persister.writes)
    sp.acknowledge("m1", [ack(0, 0, A.RENEW)])
    clock.advance(900)
    assert sp.expire_locks() == 0
    assert len(persister.writes) == writes
    clock.advance(100)
    assert sp.expire_locks() == 1


def test_a_record_delivered_up_to_the_limit_is_archived():
    sp, persister, clock = make(lock_ms=1000, delivery_limit=3)
    for delivery in (1, 2, 3):
        assert sp.acquire("m1", batches((0, 1)), 100, fetch_offset=0) == [AcquiredRange(0, 1, delivery)]
        clock.advance(1000)
        sp.expire_locks()
    # The third expiry reached the limit: archived, the start offset moves past them.
    assert sp.start_offset == 2
    assert sp.acquire("m1", batches((0, 1)), 100, fetch_offset=0) == []
    assert persister.start == 2


def test_release_at_the_limit_archives_too():
    sp, _, _ = make(delivery_limit=2)
    sp.acquire("m1", batches((0, 0)), 100, fetch_offset=0)
    sp.acknowledge("m1", [ack(0, 0, A.RELEASE)])
    sp.acquire("m1", batches((0, 0)), 100, fetch_offset=0)
    sp.acknowledge("m1", [ack(0, 0, A.RELEASE)])
    assert sp.start_offset == 1


def test_a_leaving_member_gives_its_records_back_without_using_a_delivery():
    sp, persister, _ = make()
    sp.acquire("m1", batches((0, 4)), 100, fetch_offset=0)
    sp.acquire("m2", batches((5, 9)), 100, fetch_offset=5)
    assert sp.release_member("m1") == 5
    assert [(r.first, r.state, r.delivery_count, r.member_id) for r in sp.in_flight()] == [
        (0, S.AVAILABLE, 0, ""), (5, S.ACQUIRED, 1, "m2")]
    assert persister.writes[-1] == (0, [StateBatch(0, 4, 0, 0)])
    assert sp.acquire("m2", batches((0, 4), (5, 9)), 100, fetch_offset=0) == [AcquiredRange(0, 4, 1)]


def test_the_in_flight_cap_stops_new_records_not_redeliveries():
    sp, _, _ = make(max_in_flight=10)
    assert sp.acquire("m1", batches((0, 5), (6, 11)), 100, fetch_offset=0) == [AcquiredRange(0, 11, 1)]
    assert not sp.can_acquire()
    assert sp.acquire("m1", batches((12, 15)), 100, fetch_offset=12) == []
    sp.acknowledge("m1", [ack(6, 11, A.RELEASE)])
    assert sp.can_acquire()  # redelivery of 6-11 is allowed, new records still are not
    assert sp.acquire("m2", batches((6, 11), (12, 15)), 100, fetch_offset=6) == [AcquiredRange(6, 11, 2)]
    sp.acknowledge("m1", [ack(0, 5, A.ACCEPT)])
    assert sp.acquire("m2", batches((12, 15)), 100, fetch_offset=12) == [AcquiredRange(12, 15, 1)]


def test_read_committed_archives_aborted_data_and_markers():
    sp, _, _ = make()
    log = [Batch(0, 1, 7, True), Batch(2, 2, 8, True), Batch(3, 3, 7, True, True),  # 7 aborted at 3
           Batch(4, 4, 8, True, True), Batch(5, 6)]  # 8 committed at 4
    got = sp.acquire("m1", log, 100, fetch_offset=0, read_committed=True, aborted=[(7, 0)])
    assert got == [AcquiredRange(2, 2, 1), AcquiredRange(5, 6, 1)]
    sp.acknowledge("m1", [ack(2, 2, A.ACCEPT), ack(5, 6, A.ACCEPT)])
    assert (sp.start_offset, sp.in_flight()) == (7, [])


def test_read_uncommitted_hands_out_everything():
    sp, _, _ = make()
    log = [Batch(0, 1, 7, True), Batch(2, 2, 7, True, True)]
    assert sp.acquire("m1", log, 100, fetch_offset=0, aborted=[(7, 0)]) == [AcquiredRange(0, 2, 1)]


def test_offsets_missing_from_the_log_are_archived():
    sp, _, _ = make()
    sp.acquire("m1", batches((3, 4)), 100, fetch_offset=0)  # 0-2 compacted away
    sp.acknowledge("m1", [ack(3, 4, A.ACCEPT)])
    assert sp.start_offset == 5


def test_state_survives_a_new_leader():
    persister = FakePersister()
    sp, _, _ = make(persister)
    sp.acquire("m1", batches((0, 4), (5, 9), (10, 14)), 100, fetch_offset=0)
    sp.acknowledge("m1", [ack(0, 1, A.ACCEPT), ack(5, 6, A.ACCEPT), ack(7, 7, A.RELEASE)])
    # The leader moves: acquisitions are lost, acknowledgements are not.
    again = SharePartition(KEY, 1, persister, ManualClock(), Limits())
    again.initialize(lambda: pytest.fail("the persisted start offset must be used"))
    assert again.start_offset == 2
    got = again.acquire("m2", batches((0, 4), (5, 9), (10, 14)), 100, fetch_offset=again.next_fetch_offset())
    # 2-4 were only acquired (never written): delivered again, as new; 5-6 accepted: never again;
    # 7 released once: second delivery; 8-14 only acquired: delivered as new.
    assert got == [AcquiredRange(2, 4, 1), AcquiredRange(7, 7, 2), AcquiredRange(8, 14, 1)]


def test_the_log_start_moving_archives_what_is_below_it():
    sp, _, _ = make()
    sp.acquire("m1", batches((0, 9)), 100, fetch_offset=0)
    sp.archive_below(5)
    assert sp.start_offset == 5
    sp.archive_below(50)
    assert (sp.start_offset, sp.next_fetch_offset()) == (50, 50)


def test_record_limit_mode_splits_batches_at_the_limit():
    sp, _, _ = make()
    assert sp.acquire("m1", batches((0, 4), (5, 9)), 7, fetch_offset=0, record_limit=True) == [AcquiredRange(0, 6, 1)]
    assert sp.next_fetch_offset() == 7 and sp.end_offset == 6
    sp.acknowledge("m1", [ack(2, 3, A.RELEASE)])
    # Released 2-3 first, then the rest of the batch: 3 records in all.
    got = sp.acquire("m2", batches((0, 4), (5, 9)), 3, fetch_offset=2, record_limit=True)
    assert got == [AcquiredRange(2, 3, 2), AcquiredRange(7, 7, 1)]


def states(sp: SharePartition) -> list[tuple[int, int, S, int]]:
    return [(r.first, r.last, r.state, r.delivery_count) for r in sp.in_flight()]


def test_available_records_the_log_no_longer_has_are_archived_and_acquired_ones_are_left_to_their_member():
    # Kafka's SharePartition.maybeArchiveStaleBatches: when the first batch a fetch returns starts above the
    # fetch offset, the in-flight AVAILABLE records below it were compacted away: they are archived. Records
    # acquired by a member stay with it until it acknowledges them or its lock expires.
    sp, _, _ = make()
    sp.acquire("m1", batches((0, 9)), 100, fetch_offset=0)
    sp.acknowledge("m1", [ack(0, 1, A.RELEASE), ack(4, 9, A.RELEASE)])  # m1 keeps 2-3
    got = sp.acquire("m2", batches((6, 9)), 100, fetch_offset=0)  # 0-5 compacted away
    assert got == [AcquiredRange(6, 9, 2)]
    assert sp.start_offset == 2
    assert states(sp) == [(2, 3, S.ACQUIRED, 1), (4, 5, S.ARCHIVED, 1), (6, 9, S.ACQUIRED, 2)]


def test_a_single_vanished_offset_is_archived_too():
    sp, _, _ = make()
    sp.acquire("m1", batches((0, 9)), 100, fetch_offset=0)
    sp.acknowledge("m1", [ack(0, 9, A.RELEASE)])
    assert sp.acquire("m2", batches((1, 9)), 100, fetch_offset=0) == [AcquiredRange(1, 9, 2)]  # 0 compacted away
    assert sp.start_offset == 1


def test_record_limit_mode_counts_only_the_records_it_acquires():
    # ShareFetch v2's record-limit mode: at most max_records records are acquired; records other
    # members hold are skipped without counting, and new records past the in-flight ones count as they come.
    sp, _, _ = make()
    sp.acquire("m1", batches((0, 9)), 100, fetch_offset=0)
    sp.acknowledge("m1", [ack(2, 3, A.RELEASE), ack(6, 7, A.RELEASE)])
    got = sp.acquire("m2", batches((0, 9), (10, 19)), 5, fetch_offset=0, record_limit=True)
    assert got == [AcquiredRange(2, 3, 2), AcquiredRange(6, 7, 2), AcquiredRange(10, 10, 1)]
    assert sp.end_offset == 10
    got = sp.acquire("m3", batches((0, 9), (10, 19)), 3, fetch_offset=0, record_limit=True)
    assert got == [AcquiredRange(11, 13, 1)]


def test_record_limit_mode_stops_inside_a_released_range_and_counts_every_range_before_it():
    sp, _, _ = make()
    sp.acquire("m1", batches((0, 9)), 100, fetch_offset=0)
    sp.acknowledge("m1", [ack(0, 0, A.RELEASE), ack(2, 2, A.RELEASE), ack(4, 9, A.RELEASE)])  # m1 keeps 1 and 3
    got = sp.acquire("m2", batches((0, 9)), 4, fetch_offset=0, record_limit=True)
    assert got == [AcquiredRange(0, 0, 2), AcquiredRange(2, 2, 2), AcquiredRange(4, 5, 2)]
    assert sp.acquire("m3", batches((0, 9)), 1, fetch_offset=0, record_limit=True) == [AcquiredRange(6, 6, 2)]


def test_record_limit_mode_continues_into_new_records_of_the_same_batch():
    sp, _, _ = make()
    sp.acquire("m1", batches((0, 9)), 100, fetch_offset=0)
    sp.acknowledge("m1", [ack(8, 9, A.RELEASE)])
    # The log has grown: the batch read now ends at 14; 2 released records, then 2 new ones.
    got = sp.acquire("m2", batches((0, 14)), 4, fetch_offset=0, record_limit=True)
    assert got == [AcquiredRange(8, 9, 2), AcquiredRange(10, 11, 1)]
