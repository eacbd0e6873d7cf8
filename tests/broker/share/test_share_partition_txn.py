"""SharePartition's transactional acknowledgements (KIP-1289) with a fake persister and a manual clock:
staging is in memory and all or nothing, the marker of the staging producer resolves it (COMMIT written
like an acknowledgement, ABORT back to the owner under the same lock), anything else leaves it alone."""

from __future__ import annotations

import pytest

from kafka_txn_broker.clock import ManualClock
from kafka_txn_broker.formats.errors import CoordinatorNotAvailableError, InvalidRecordStateError, InvalidRequestError
from kafka_txn_broker.formats.share_coordinator_records import StateBatch
from kafka_txn_broker.share.record_state import AcknowledgeType as A
from kafka_txn_broker.share.record_state import RecordState as S
from kafka_txn_broker.share.share_partition import AckBatch, AcquiredRange, PendingTxn, SharePartition
from tests.broker.share.share_fakes import KEY, FakePersister, Limits, batches

PID, OTHER_PID = 1000, 2000


def acquired_0_9(lock_ms: int = 30_000) -> tuple[SharePartition, FakePersister, ManualClock]:
    persister, clock = FakePersister(), ManualClock()
    sp = SharePartition(KEY, 0, persister, clock, Limits(lock_ms=lock_ms))
    sp.initialize(lambda: 0)
    assert sp.acquire("m1", batches((0, 9)), 100, fetch_offset=0) == [AcquiredRange(0, 9, 1)]
    persister.writes.clear()
    return sp, persister, clock


def ack(first: int, last: int, *types: A) -> AckBatch:
    return AckBatch(first, last, [int(t) for t in types])


def states(sp: SharePartition) -> list[tuple[int, int, S]]:
    return [(r.first, r.last, r.state) for r in sp.in_flight()]


def test_staging_holds_records_pending_without_writing():
    sp, persister, _ = acquired_0_9()
    assert sp.stage("m1", PID, [ack(0, 3, A.ACCEPT)]) == 4
    assert states(sp) == [(0, 3, S.TX_PENDING), (4, 9, S.ACQUIRED)]
    assert persister.writes == []  # in memory only until the marker
    assert sp.start_offset == 0
    assert sp.pending_transactions() == [PendingTxn(PID, 4, 0)]


def test_commit_acknowledges_accept_archives_reject_and_writes_before_returning():
    sp, persister, _ = acquired_0_9()
    sp.stage("m1", PID, [AckBatch(0, 3, [A.ACCEPT, A.REJECT, A.REJECT, A.ACCEPT])])
    assert sp.complete_transaction(PID, commit=True) == 4
    assert sp.start_offset == 4
    assert persister.writes == [(4, [])]  # all four completed: the start offset covers them
    assert states(sp) == [(4, 9, S.ACQUIRED)]
    sp.stage("m1", PID, [ack(5, 6, A.REJECT)])
    sp.complete_transaction(PID, commit=True)
    assert persister.writes[-1] == (4, [StateBatch(5, 6, int(S.ARCHIVED), 1)])


def test_abort_gives_the_records_back_to_their_owner_who_may_acknowledge_again():
    sp, persister, _ = acquired_0_9()
    sp.stage("m1", PID, [ack(0, 9, A.ACCEPT)])
    assert sp.complete_transaction(PID, commit=False) == 10
    assert states(sp) == [(0, 9, S.ACQUIRED)]
    assert sp.acquired_by("m1") == 10 and persister.writes == []
    sp.acknowledge("m1", [ack(0, 9, A.RELEASE)])  # still m1's, as before staging
    assert states(sp) == [(0, 9, S.AVAILABLE)]


def test_a_marker_of_another_producer_or_a_repeated_marker_changes_nothing():
    sp, persister, _ = acquired_0_9()
    sp.stage("m1", PID, [ack(0, 4, A.ACCEPT)])
    assert sp.complete_transaction(OTHER_PID, commit=True) == 0
    assert states(sp)[0] == (0, 4, S.TX_PENDING)
    assert sp.complete_transaction(PID, commit=True) == 5
    assert sp.complete_transaction(PID, commit=True) == 0  # the duplicate WriteTxnMarkers
    assert sp.complete_transaction(PID, commit=False) == 0
    assert len(persister.writes) == 1 and sp.start_offset == 5


def test_two_producers_stage_disjoint_records_and_each_marker_resolves_only_its_own():
    sp, _, _ = acquired_0_9()
    sp.stage("m1", PID, [ack(0, 4, A.ACCEPT)])
    sp.stage("m1", OTHER_PID, [ack(5, 9, A.ACCEPT)])
    sp.complete_transaction(OTHER_PID, commit=False)
    assert states(sp) == [(0, 4, S.TX_PENDING), (5, 9, S.ACQUIRED)]


@pytest.mark.parametrize("bad", [A.GAP, A.RELEASE, A.RENEW])
def test_only_accept_and_reject_are_staged_and_a_refusal_stages_nothing(bad):
    sp, _, _ = acquired_0_9()
    with pytest.raises(InvalidRecordStateError):
        sp.stage("m1", PID, [ack(0, 1, A.ACCEPT), ack(2, 3, bad)])
    assert states(sp) == [(0, 9, S.ACQUIRED)]


def test_only_records_the_member_holds_are_staged():
    sp, _, _ = acquired_0_9()
    with pytest.raises(InvalidRecordStateError):
        sp.stage("m2", PID, [ack(0, 1, A.ACCEPT)])
    with pytest.raises(InvalidRecordStateError):
        sp.stage("m1", PID, [ack(5, 12, A.ACCEPT)])  # 10-12 were never delivered
    with pytest.raises(InvalidRequestError):
        sp.stage("m1", PID, [ack(0, 3, A.ACCEPT), ack(3, 4, A.ACCEPT)])  # overlapping batches
    assert states(sp) == [(0, 9, S.ACQUIRED)]


def test_a_pending_record_refuses_a_second_staging_and_a_non_transactional_acknowledgement():
    sp, persister, _ = acquired_0_9()
    sp.stage("m1", PID, [ack(0, 4, A.ACCEPT)])
    with pytest.raises(InvalidRecordStateError):
        sp.acknowledge("m1", [ack(0, 0, A.ACCEPT)])
    with pytest.raises(InvalidRecordStateError):
        sp.stage("m1", OTHER_PID, [ack(4, 5, A.ACCEPT)])
    assert states(sp) == [(0, 4, S.TX_PENDING), (5, 9, S.ACQUIRED)] and persister.writes == []


def test_a_pending_record_outlives_its_lock_is_counted_and_the_abort_then_releases_it():
    sp, _, clock = acquired_0_9(lock_ms=1000)
    sp.stage("m1", PID, [ack(0, 4, A.ACCEPT)])
    clock.advance(1500)
    assert sp.expire_locks() == 5  # 5-9 were only acquired: released
    assert states(sp) == [(0, 4, S.TX_PENDING), (5, 9, S.AVAILABLE)]
    assert sp.expired_pending_locks == 5
    sp.expire_locks()
    assert sp.expired_pending_locks == 5  # counted once
    sp.complete_transaction(PID, commit=False)
    assert states(sp)[0] == (0, 4, S.ACQUIRED)  # back to m1, whose lock is over:
    assert sp.expire_locks() == 5
    assert states(sp) == [(0, 9, S.AVAILABLE)]


def test_the_member_leaving_does_not_release_its_pending_records():
    sp, _, _ = acquired_0_9()
    sp.stage("m1", PID, [ack(0, 4, A.ACCEPT)])
    assert sp.release_member("m1") == 5
    assert states(sp) == [(0, 4, S.TX_PENDING), (5, 9, S.AVAILABLE)]
    sp.complete_transaction(PID, commit=True)
    assert sp.start_offset == 5


def test_a_commit_that_cannot_be_written_stays_pending_for_a_retry():
    sp, persister, _ = acquired_0_9()
    sp.stage("m1", PID, [ack(0, 4, A.ACCEPT)])
    persister.unavailable()
    with pytest.raises(CoordinatorNotAvailableError):
        sp.complete_transaction(PID, commit=True)
    assert states(sp)[0] == (0, 4, S.TX_PENDING)
    persister.fail = None
    assert sp.complete_transaction(PID, commit=True) == 5
    assert sp.start_offset == 5


def test_unstage_rolls_back_only_the_given_batches():
    sp, _, _ = acquired_0_9()
    sp.stage("m1", PID, [ack(0, 1, A.ACCEPT)])
    sp.stage("m1", PID, [ack(2, 3, A.REJECT)])
    sp.unstage(PID, [ack(2, 3, A.REJECT)])
    assert states(sp) == [(0, 1, S.TX_PENDING), (2, 9, S.ACQUIRED)]


def test_a_restart_loses_pending_records_which_are_delivered_again():
    # A share-partition writes no staging itself (the manager writes it in the transaction; loading it back
    # is test_share_txn_durability.py): a new leader whose persister has none delivers the records again.
    sp, persister, clock = acquired_0_9()
    sp.stage("m1", PID, [ack(0, 9, A.ACCEPT)])
    again = SharePartition(KEY, 1, persister, clock, Limits())
    again.initialize(lambda: 0)
    assert again.acquire("m2", batches((0, 9)), 100, fetch_offset=0) == [AcquiredRange(0, 9, 1)]
    assert again.complete_transaction(PID, commit=True) == 0  # the late marker finds nothing
