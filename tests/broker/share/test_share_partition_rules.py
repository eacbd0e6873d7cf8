"""SharePartition's rules at their boundaries, with plain data (fake log batches, fake persister, manual clock).

Expected values follow KIP-932 and Kafka's SharePartition: the in-flight cap (no new records once
SPEO - SPSO + 1 reaches group.share.partition.max.record.locks), ShareFetch's MaxRecords (0 acquires
nothing and changes nothing), the record-limit mode (at most MaxRecords records), lock durations read
from the group config each time they are used, the acquisition lock measured in milliseconds, records
below the start offset never acquired, the persisted state as the share coordinator returns it, and
KIP-1289's TX_PENDING records (per-offset ACCEPT / REJECT, one count per record whose lock ran out).
"""

from __future__ import annotations

import pytest

from kafka_txn_broker.clock import ManualClock
from kafka_txn_broker.formats.errors import InvalidRecordStateError
from kafka_txn_broker.formats.share_coordinator_records import StateBatch
from kafka_txn_broker.share.record_state import AcknowledgeType as A
from kafka_txn_broker.share.record_state import Event as E
from kafka_txn_broker.share.record_state import RecordState as S
from kafka_txn_broker.share.record_state import transition
from kafka_txn_broker.share.share_partition import AckBatch, AcquiredRange, PendingTxn, SharePartition
from tests.broker.share.share_fakes import KEY, Batch, FakePersister, Limits, batches

PID, OTHER_PID = 1000, 2000


def make(persister: FakePersister | None = None, limits: Limits | None = None
         ) -> tuple[SharePartition, FakePersister, ManualClock]:
    persister = persister or FakePersister()
    clock = ManualClock()
    sp = SharePartition(KEY, 0, persister, clock, limits or Limits())
    sp.initialize(lambda: 0)
    return sp, persister, clock


def ack(first: int, last: int, *types: A) -> AckBatch:
    return AckBatch(first, last, [int(t) for t in types])


def states(sp: SharePartition) -> list[tuple[int, int, S, int]]:
    return [(r.first, r.last, r.state, r.delivery_count) for r in sp.in_flight()]


# ---- acquisition ---------------------------------------------------------------------------------------
def test_new_records_stop_when_the_in_flight_records_reach_the_cap_exactly() -> None:
    # Kafka: no new records are acquired once SPEO - SPSO + 1 >= max in-flight records.
    sp, _, _ = make(limits=Limits(max_in_flight=10))
    got = sp.acquire("m1", batches((0, 4), (5, 9), (10, 14)), 100, fetch_offset=0)
    assert got == [AcquiredRange(0, 9, 1)]  # 10 in flight after the second batch: the third waits
    assert sp.end_offset == 9


def test_max_records_zero_acquires_nothing_and_changes_nothing() -> None:
    # ShareFetch MaxRecords 0: Kafka's acquire returns at once, before it archives anything.
    sp, _, _ = make()
    sp.acquire("m1", batches((0, 9)), 10, fetch_offset=0)
    sp.acknowledge("m1", [ack(0, 9, A.RELEASE)])
    before = states(sp)
    assert sp.acquire("m2", batches((5, 9)), 0, fetch_offset=0) == []  # 0-4 look compacted away
    assert states(sp) == before and sp.start_offset == 0


def test_a_read_starting_below_the_start_offset_acquires_from_the_start_offset() -> None:
    # Records below the SPSO are complete: a batch wholly below it is skipped, the next ones acquired.
    sp, _, _ = make()
    sp.acquire("m1", batches((0, 4)), 10, fetch_offset=0)
    sp.acknowledge("m1", [ack(0, 4, A.ACCEPT)])
    got = sp.acquire("m2", batches((0, 4), (5, 9)), 10, fetch_offset=0)
    assert got == [AcquiredRange(5, 9, 1)]


def test_offsets_a_compaction_removed_between_batches_are_archived_never_delivered() -> None:
    sp, _, _ = make()
    sp.acquire("m1", batches((0, 4)), 10, fetch_offset=0)
    assert sp.acquire("m2", batches((8, 9)), 10, fetch_offset=5) == [AcquiredRange(8, 9, 1)]  # 5-7 are gone
    # Never delivered: archived with a delivery count of 0, between m1's and m2's records.
    assert states(sp) == [(0, 4, S.ACQUIRED, 1), (5, 7, S.ARCHIVED, 0), (8, 9, S.ACQUIRED, 1)]
    assert sp.counts_by_state()[S.ARCHIVED] == 3
    sp.acknowledge("m1", [ack(0, 4, A.ACCEPT)])
    assert sp.start_offset == 8


def test_the_record_limit_splits_a_released_range_one_longer_than_the_budget() -> None:
    sp, _, _ = make()
    sp.acquire("m1", batches((0, 9)), 10, fetch_offset=0)
    sp.acknowledge("m1", [ack(0, 4, A.RELEASE)])
    assert sp.acquire("m2", batches((0, 9)), 4, fetch_offset=0, record_limit=True) == [AcquiredRange(0, 3, 2)]


def test_the_record_limit_skips_others_records_between_two_released_ranges() -> None:
    sp, _, _ = make()
    sp.acquire("m1", batches((0, 9)), 10, fetch_offset=0)
    sp.acknowledge("m1", [ack(0, 2, A.RELEASE), ack(5, 9, A.RELEASE)])  # m1 keeps 3-4
    got = sp.acquire("m2", batches((0, 9)), 4, fetch_offset=0, record_limit=True)
    assert got == [AcquiredRange(0, 2, 2), AcquiredRange(5, 5, 2)]


def test_the_record_limit_counts_across_a_compaction_gap_between_batches() -> None:
    # 5-9 were released; the log now holds 5-7, then 12-19 (8-11 compacted away): 5 records at most.
    sp, _, _ = make()
    sp.acquire("m1", batches((0, 9)), 10, fetch_offset=0)
    sp.acknowledge("m1", [ack(5, 9, A.RELEASE)])
    got = sp.acquire("m2", [Batch(5, 7), Batch(12, 19)], 5, fetch_offset=5, record_limit=True)
    assert got == [AcquiredRange(5, 7, 2), AcquiredRange(12, 13, 1)]
    assert sum(r.last_offset - r.first_offset + 1 for r in got) == 5


def test_acquired_by_counts_only_the_members_acquired_records() -> None:
    sp, _, _ = make()
    sp.acquire("m1", batches((0, 4)), 10, fetch_offset=0)
    sp.acquire("m2", batches((5, 11)), 10, fetch_offset=5)
    sp.stage("m1", PID, [ack(0, 1, A.ACCEPT)])  # TX_PENDING: still m1's lock, no longer ACQUIRED
    assert (sp.acquired_by("m1"), sp.acquired_by("m2"), sp.acquired_by("m3")) == (3, 7, 0)


def test_a_new_log_start_just_below_a_completed_record_moves_the_start_offset_past_it() -> None:
    # The SPSO passes every leading completed record, wherever the log start left it.
    sp, _, _ = make()
    sp.acquire("m1", batches((0, 9)), 10, fetch_offset=0)
    sp.acknowledge("m1", [ack(5, 6, A.ACCEPT)])
    sp.archive_below(5)
    assert (sp.start_offset, states(sp)) == (7, [(7, 9, S.ACQUIRED, 1)])
    sp.archive_below(5)  # below the start offset now: nothing changes
    assert (sp.start_offset, sp.end_offset) == (7, 9)


# ---- locks -----------------------------------------------------------------------------------------------
def test_a_lock_lasts_its_whole_duration_in_milliseconds() -> None:
    sp, _, clock = make(limits=Limits(lock_ms=60_000))  # the largest record.lock.duration.ms
    sp.acquire("m1", batches((0, 4)), 10, fetch_offset=0)
    clock.advance(59_950)
    assert sp.expire_locks() == 0
    clock.advance(50)
    assert sp.expire_locks() == 5


def test_a_shorter_lock_duration_set_later_does_not_delay_the_earlier_lock() -> None:
    # The group's lock duration is dynamic and read at each acquisition: a lock taken under a short duration
    # ends on time though a later acquisition, under a longer duration, ends after it.
    limits = Limits(lock_ms=1000)
    sp, _, clock = make(limits=limits)
    sp.acquire("m1", batches((0, 4)), 10, fetch_offset=0)
    limits.lock_ms = 30_000
    sp.acquire("m2", batches((5, 9)), 10, fetch_offset=5)
    clock.advance(1000)
    assert sp.expire_locks() == 5
    assert states(sp) == [(0, 4, S.AVAILABLE, 1), (5, 9, S.ACQUIRED, 1)]


def test_an_aborted_transaction_gives_back_a_lock_that_ends_after_the_next_one() -> None:
    # KIP-1289's abort: the records go back to their owner under their own lock, which keeps running.
    limits = Limits(lock_ms=1000)
    sp, _, clock = make(limits=limits)
    sp.acquire("m1", batches((0, 4)), 10, fetch_offset=0)  # lock until 1000
    clock.advance(500)
    sp.acquire("m1", batches((5, 9)), 10, fetch_offset=5)  # lock until 1500
    sp.stage("m1", PID, [ack(5, 9, A.ACCEPT)])
    sp.complete_transaction(PID, commit=False)
    clock.advance(500)
    assert sp.expire_locks() == 5  # 0-4 at 1000, though 5-9 came back after they were locked
    clock.advance(500)
    assert sp.expire_locks() == 5


def test_a_per_offset_renew_restarts_that_records_lock() -> None:
    sp, persister, clock = make(limits=Limits(lock_ms=1000))
    sp.acquire("m1", batches((0, 1)), 10, fetch_offset=0)
    clock.advance(900)
    sp.acknowledge("m1", [ack(0, 1, A.ACCEPT, A.RENEW)])
    clock.advance(100)
    assert sp.expire_locks() == 0  # 1's lock now ends at 1900
    clock.advance(899)
    assert sp.expire_locks() == 0
    clock.advance(1)
    assert sp.expire_locks() == 1
    assert persister.writes[-1] == (1, [StateBatch(1, 1, int(S.AVAILABLE), 1)])


def test_a_pending_records_expired_lock_is_counted_once_while_other_locks_run_out() -> None:
    sp, _, clock = make(limits=Limits(lock_ms=1000))
    sp.acquire("m1", batches((0, 4)), 10, fetch_offset=0)
    sp.stage("m1", PID, [ack(0, 1, A.ACCEPT)])
    clock.advance(500)
    sp.acquire("m2", batches((5, 9)), 10, fetch_offset=5)
    clock.advance(500)
    assert sp.expire_locks() == 3 and sp.expired_pending_locks == 2
    clock.advance(500)
    assert sp.expire_locks() == 5  # m2's lock: 0-1 are still pending, and were counted already
    assert sp.expired_pending_locks == 2


# ---- acknowledgements and what is written ----------------------------------------------------------------
def test_per_offset_types_of_a_batch_that_does_not_start_at_zero() -> None:
    sp, persister, _ = make()
    sp.acquire("m1", batches((0, 9)), 10, fetch_offset=0)
    sp.acknowledge("m1", [ack(6, 9, A.REJECT, A.ACCEPT, A.RELEASE, A.ACCEPT)])
    assert persister.writes[-1] == (0, [StateBatch(6, 6, int(S.ARCHIVED), 1),
                                        StateBatch(7, 7, int(S.ACKNOWLEDGED), 1),
                                        StateBatch(8, 8, int(S.AVAILABLE), 1),
                                        StateBatch(9, 9, int(S.ACKNOWLEDGED), 1)])


def test_two_adjacent_batches_of_one_state_are_written_as_one() -> None:
    sp, persister, _ = make()
    sp.acquire("m1", batches((0, 9)), 10, fetch_offset=0)
    sp.acknowledge("m1", [ack(2, 3, A.REJECT), ack(4, 5, A.REJECT)])
    assert persister.writes[-1] == (0, [StateBatch(2, 5, int(S.ARCHIVED), 1)])


def test_records_that_end_alike_by_different_paths_are_one_range() -> None:
    # REJECT acknowledged directly and REJECT committed in a transaction both archive with one delivery,
    # and so does a record archived behind a compaction gap and released before: neighbours that end in the
    # same state, count and owner are one range, however many pieces they came from.
    sp, _, _ = make()
    sp.acquire("m1", batches((0, 9)), 10, fetch_offset=0)
    sp.stage("m1", PID, [ack(7, 8, A.REJECT)])
    sp.acknowledge("m1", [ack(5, 6, A.REJECT)])
    sp.complete_transaction(PID, commit=True)
    assert states(sp) == [(0, 4, S.ACQUIRED, 1), (5, 8, S.ARCHIVED, 1), (9, 9, S.ACQUIRED, 1)]
    sp.acknowledge("m1", [ack(0, 0, A.RELEASE), ack(2, 2, A.RELEASE)])
    sp.acknowledge("m1", [ack(1, 1, A.RELEASE)])  # joins both neighbours
    assert states(sp)[0] == (0, 2, S.AVAILABLE, 1)


# ---- transactional acknowledgements (KIP-1289) -----------------------------------------------------------
def test_per_offset_accept_and_reject_commit_each_record_as_staged() -> None:
    sp, persister, _ = make()
    sp.acquire("m1", batches((0, 9)), 10, fetch_offset=0)
    sp.stage("m1", PID, [ack(1, 4, A.ACCEPT, A.REJECT, A.REJECT, A.ACCEPT)])  # 0 is still m1's: SPSO stays
    assert sp.complete_transaction(PID, commit=True) == 4
    assert persister.writes[-1] == (0, [StateBatch(1, 1, int(S.ACKNOWLEDGED), 1),
                                        StateBatch(2, 3, int(S.ARCHIVED), 1),
                                        StateBatch(4, 4, int(S.ACKNOWLEDGED), 1)])


def test_unstage_undoes_only_its_producers_staging() -> None:
    sp, _, _ = make()
    sp.acquire("m1", batches((0, 9)), 10, fetch_offset=0)
    sp.stage("m1", OTHER_PID, [ack(0, 1, A.ACCEPT)])
    sp.stage("m1", PID, [ack(2, 3, A.ACCEPT), ack(6, 7, A.ACCEPT)])
    sp.unstage(PID, [ack(0, 7, A.ACCEPT)])
    assert sp.pending_transactions() == [PendingTxn(OTHER_PID, 2, 0)]
    assert [(r.first, r.last, r.state) for r in sp.in_flight()] == [(0, 1, S.TX_PENDING), (2, 9, S.ACQUIRED)]


# ---- loading ---------------------------------------------------------------------------------------------
def test_persisted_batches_wholly_below_the_start_offset_are_ignored() -> None:
    # A share coordinator may still hold batches the start offset has passed: the start offset covers them.
    persister = FakePersister(start=5, offsets={2: (int(S.ARCHIVED), 1), 7: (int(S.AVAILABLE), 2),
                                                8: (int(S.ACKNOWLEDGED), 1)})
    sp, _, _ = make(persister)
    assert sp.start_offset == 5
    assert states(sp) == [(5, 6, S.AVAILABLE, 0), (7, 7, S.AVAILABLE, 2), (8, 8, S.ACKNOWLEDGED, 1)]


def test_an_unloaded_share_partition_holds_nothing() -> None:
    # Before its state is read the start offset is -1 (Kafka's uninitialized start offset) and nothing is
    # in flight.
    sp = SharePartition(KEY, 0, FakePersister(), ManualClock(), Limits())
    assert (sp.start_offset, sp.next_fetch_offset(), sp.in_flight(), sp.pending_transactions()) == (-1, -1, [], [])
    assert set(sp.counts_by_state().values()) == {0}


def test_an_event_a_state_does_not_accept_names_both() -> None:
    with pytest.raises(InvalidRecordStateError, match="a record in state ARCHIVED does not accept release"):
        transition(S.ARCHIVED, E.RELEASE, 1, 5)
