"""SharePartition at its edges, with plain data (fake log batches, fake persister, manual clock): the
ownership check of an acknowledgement range by range and its error text, what one write of the state
holds (adjacent batches of one state merged, as the share coordinator's records keep them), the records
by state, and the `__share_group_state` key.

KIP-932: a member may acknowledge only records it holds ACQUIRED (else INVALID_RECORD_STATE), offsets
outside the in-flight window are invalid too, and state is written as (first, last, state, delivery
count) batches.
"""

from __future__ import annotations

import base64

import pytest

from kafka_txn_broker.clock import ManualClock
from kafka_txn_broker.formats.errors import (
    CoordinatorNotAvailableError,
    FencedStateEpochError,
    InvalidRecordStateError,
    InvalidRequestError,
)
from kafka_txn_broker.formats.share_coordinator_records import StateBatch
from kafka_txn_broker.share.record_state import AcknowledgeType as A
from kafka_txn_broker.share.record_state import RecordState as S
from kafka_txn_broker.share.share_partition import AckBatch, AcquiredRange, SharePartition
from tests.broker.share.share_fakes import KEY, Batch, FakePersister, Limits, batches


def make(**limits: int) -> tuple[SharePartition, FakePersister]:
    persister = FakePersister()
    sp = SharePartition(KEY, 0, persister, ManualClock(), Limits(**limits))
    sp.initialize(lambda: 0)
    return sp, persister


def ack(first: int, last: int, *types: A) -> AckBatch:
    return AckBatch(first, last, [int(t) for t in types])


def three_holders() -> SharePartition:
    sp, _ = make()
    sp.acquire("m1", batches((0, 4)), 5, fetch_offset=0)
    sp.acquire("m2", batches((5, 9)), 5, fetch_offset=5)
    sp.acquire("m1", batches((10, 14)), 5, fetch_offset=10)
    return sp


def refused(sp: SharePartition, member: str, first: int, last: int) -> str:
    with pytest.raises(InvalidRecordStateError) as exc:
        sp.acknowledge(member, [ack(first, last, A.ACCEPT)])
    return str(exc.value)


def test_offsets_outside_the_in_flight_records_are_refused_and_the_last_one_is_inside() -> None:
    sp = three_holders()
    assert "offsets 15-15 are not in flight (0-14)" in refused(sp, "m1", 15, 15)
    sp.acknowledge("m1", [ack(14, 14, A.ACCEPT)])  # the last in-flight offset is in flight


def test_every_range_an_acknowledgement_spans_must_be_the_members() -> None:
    sp = three_holders()
    # m1 holds 0-4 and 10-14, m2 holds 5-9 between them: the middle range is found, nothing is applied.
    assert "offsets 5-9 are ACQUIRED by m2, not acquired by member m1" in refused(sp, "m1", 0, 14)
    # A range that only touches the next one at its last offset is checked too.
    assert "offsets 5-5 are ACQUIRED by m2, not acquired by member m1" in refused(sp, "m1", 0, 5)
    assert sp.counts_by_state()[S.ACQUIRED] == 15
    sp.acknowledge("m2", [ack(5, 9, A.RELEASE)])
    assert "offsets 5-7 are AVAILABLE, not acquired by member m1" in refused(sp, "m1", 3, 7)


def test_records_by_state_count_every_state_including_the_empty_ones() -> None:
    sp = three_holders()
    sp.acknowledge("m1", [ack(0, 4, A.ACCEPT, A.ACCEPT, A.RELEASE, A.REJECT, A.ACCEPT)])
    # 0-1 accepted: the start offset moves past them; 2 released; 3 rejected; 4 accepted above the start.
    assert sp.start_offset == 2
    expected = dict.fromkeys(S, 0) | {S.AVAILABLE: 1, S.ACQUIRED: 10, S.ACKNOWLEDGED: 1, S.ARCHIVED: 1}
    assert sp.counts_by_state() == expected


def test_one_write_merges_adjacent_batches_of_one_state_and_delivery_count() -> None:
    sp, persister = make()
    sp.acquire("m1", batches((0, 3), (4, 7), (8, 11)), 12, fetch_offset=0)
    sp.acknowledge("m1", [ack(1, 2, A.ACCEPT), ack(4, 7, A.REJECT), ack(8, 9, A.REJECT), ack(10, 11, A.ACCEPT)])
    # 0 and 3 are still acquired: the start offset stays at 0; 4-9 are one ARCHIVED batch, 10-11 another.
    assert persister.writes[-1] == (0, [StateBatch(1, 2, 2, 1), StateBatch(4, 9, 4, 1), StateBatch(10, 11, 2, 1)])


def test_the_state_key_is_kafkas_coordinator_key() -> None:
    # SharePartitionKey.asCoordinatorKey: "group:topicId:partition", the topic id as Uuid.toString() prints it.
    topic = base64.urlsafe_b64encode(KEY.topic_id.bytes).decode().rstrip("=")
    assert KEY.coordinator_key() == f"g:{topic}:0"
    assert topic == "AAAAAAAAAAAAAAAAAAAABw"


def test_reads_and_writes_name_the_key_and_carry_the_state_and_leader_epochs() -> None:
    # The share coordinator fences a write by state epoch and leader epoch (FENCED_STATE_EPOCH,
    # FENCED_LEADER_EPOCH): a share-partition must send the epochs it read and was given.
    persister = FakePersister(state_epoch=4)
    sp = SharePartition(KEY, 7, persister, ManualClock(), Limits())
    sp.initialize(lambda: 0)
    sp.acquire("m1", batches((0, 4)), 5, fetch_offset=0)
    sp.acknowledge("m1", [ack(0, 1, A.ACCEPT)])
    assert persister.reads == [(KEY, 7)]
    assert persister.writers == [(KEY, 4, 7), (KEY, 4, 7)]


def test_a_fenced_write_leaves_the_state_as_it_was_and_the_partition_fenced() -> None:
    sp, persister = make()
    sp.acquire("m1", batches((0, 4)), 5, fetch_offset=0)
    persister.fail = FencedStateEpochError("a newer leader wrote the state")
    with pytest.raises(FencedStateEpochError):
        sp.acknowledge("m1", [ack(0, 4, A.ACCEPT)])
    assert sp.fenced and sp.start_offset == 0 and sp.counts_by_state()[S.ACQUIRED] == 5
    sp2, p2 = make()
    sp2.acquire("m1", batches((0, 4)), 5, fetch_offset=0)
    p2.fail = CoordinatorNotAvailableError("down")
    with pytest.raises(CoordinatorNotAvailableError):
        sp2.acknowledge("m1", [ack(0, 4, A.ACCEPT)])
    assert not sp2.fenced and sp2.counts_by_state()[S.ACQUIRED] == 5  # restored, usable again


def test_a_new_log_start_archives_what_is_below_it() -> None:
    sp, _ = make()
    sp.acquire("m1", batches((0, 9)), 10, fetch_offset=0)
    sp.archive_below(0)  # not above the start: nothing happens
    assert (sp.start_offset, sp.counts_by_state()[S.ACQUIRED]) == (0, 10)
    sp.archive_below(4)  # 0-3 can no longer be delivered: archived, so the start offset passes them
    assert (sp.start_offset, sp.counts_by_state()[S.ACQUIRED]) == (4, 6)
    sp.archive_below(10)  # up to the end of the in-flight records exactly
    assert (sp.start_offset, sp.end_offset, sp.counts_by_state()[S.ACQUIRED]) == (10, 9, 0)
    sp.archive_below(25)  # beyond them: the window starts again at the new log start
    assert (sp.start_offset, sp.next_fetch_offset(), sp.in_flight()) == (25, 25, [])


def test_pending_transactions_sum_each_producers_records_and_keep_its_oldest_staging() -> None:
    persister = FakePersister()
    clock = ManualClock()
    sp = SharePartition(KEY, 0, persister, clock, Limits())
    sp.initialize(lambda: 0)
    sp.acquire("m1", batches((0, 4), (5, 9), (10, 14)), 15, fetch_offset=0)
    sp.stage("m1", 100, [ack(0, 1, A.ACCEPT)])
    clock.advance(500)
    sp.stage("m1", 200, [ack(5, 5, A.REJECT)])
    clock.advance(500)
    sp.stage("m1", 100, [ack(10, 12, A.ACCEPT)])
    a, b = sp.pending_transactions()
    assert (a.producer_id, a.records, b.producer_id, b.records) == (100, 5, 200, 1)
    assert b.oldest_staged_ms - a.oldest_staged_ms == 500  # 100's oldest is its first staging, not its last


def test_read_committed_follows_the_aborted_list_in_offset_order_across_transactions() -> None:
    # Kafka's read_committed rule (as the consumer applies FetchResponse.AbortedTransactions): an aborted
    # transaction's data is skipped from its first offset until that producer's marker; the list comes
    # in any order; after the marker the same producer's next transaction is delivered.
    sp, _ = make()
    log = [Batch(0, 1, 9, True),  # producer 9, aborted from 0
           Batch(2, 2, 9, True, True),  # its ABORT marker
           Batch(3, 4, 9, True),  # producer 9's next transaction, committed
           Batch(5, 5, 2, True),  # producer 2, aborted from 5: the list names it before producer 9
           Batch(6, 6, 4, True),  # producer 4, aborted from 6: its first offset is this batch's last offset
           Batch(7, 7, 2, True, True), Batch(8, 8, 4, True, True), Batch(9, 9, 9, True, True)]
    got = sp.acquire("m1", log, 100, fetch_offset=0, read_committed=True, aborted=[(2, 5), (9, 0), (4, 6)])
    assert got == [AcquiredRange(3, 4, 1)]
    # 0-2 archived, so the start offset passed them; 5-9 archived behind the acquired 3-4.
    assert (sp.start_offset, sp.counts_by_state()[S.ARCHIVED]) == (3, 5)


def test_the_record_limit_mode_takes_exactly_max_records_available_first_then_new() -> None:
    # ShareFetch v2's record-limit acquisition: a hard limit that may split a batch; records already in
    # flight and AVAILABLE count first, then new ones from the log, in offset order.
    sp, _ = make()
    log = batches((0, 9))
    assert sp.acquire("m1", log, 4, fetch_offset=0, record_limit=True) == [AcquiredRange(0, 3, 1)]
    sp.acknowledge("m1", [ack(0, 3, A.RELEASE)])
    assert sp.acquire("m2", log, 4, fetch_offset=0, record_limit=True) == [AcquiredRange(0, 3, 2)]
    sp.acknowledge("m2", [ack(0, 3, A.RELEASE)])
    assert sp.acquire("m3", log, 6, fetch_offset=0, record_limit=True) == [AcquiredRange(0, 3, 3),
                                                                          AcquiredRange(4, 5, 1)]
    sp.acknowledge("m3", [ack(0, 5, A.RELEASE)])
    assert sp.acquire("m4", log, 3, fetch_offset=0, record_limit=True) == [AcquiredRange(0, 2, 4)]
    assert sp.acquire("m5", log, 5, fetch_offset=3, record_limit=True) == [AcquiredRange(3, 3, 4),
                                                                          AcquiredRange(4, 5, 2),
                                                                          AcquiredRange(6, 7, 1)]


# ---- malformed acknowledgements: INVALID_REQUEST with what is wrong, nothing applied ----------------------
def invalid(sp: SharePartition, *acks: AckBatch) -> str:
    before = sp.counts_by_state()
    with pytest.raises(InvalidRequestError) as exc:
        sp.acknowledge("m1", list(acks))
    assert sp.counts_by_state() == before
    return str(exc.value)


def test_malformed_acknowledgement_batches_are_invalid_requests_naming_the_problem() -> None:
    sp, _ = make()
    sp.acquire("m1", batches((0, 9)), 10, fetch_offset=0)
    assert "acknowledgement batch 5-4 is empty" in invalid(sp, ack(5, 4, A.ACCEPT))
    assert "acknowledgement batch -1-2 is empty" in invalid(sp, ack(-1, 2, A.ACCEPT))
    assert "acknowledgement batch 0-3 has 2 types; give 1 or 4" in invalid(sp, ack(0, 3, A.ACCEPT, A.ACCEPT))
    assert "unknown acknowledge type in [9]" in invalid(sp, AckBatch(0, 0, [9]))
    assert "acknowledgement batches 0-3 and 2-5 overlap" in invalid(sp, ack(0, 3, A.ACCEPT), ack(2, 5, A.ACCEPT))
    assert "acknowledgement batches 3-3 and 3-4 overlap" in invalid(sp, ack(3, 3, A.ACCEPT), ack(3, 4, A.ACCEPT))
    assert "acknowledgement batches 3-4 and 1-3 overlap" in invalid(sp, ack(3, 4, A.ACCEPT), ack(1, 3, A.ACCEPT))
    # Kafka's validateAcknowledgementBatches also wants them in offset order.
    assert "acknowledgement batches 5-6 and 0-1 are out of offset order" in invalid(sp, ack(5, 6, A.ACCEPT),
                                                                                     ack(0, 1, A.ACCEPT))
    with pytest.raises(InvalidRecordStateError) as exc:
        sp.stage("m1", 100, [ack(0, 1, A.RELEASE)])
    assert "acknowledge type 2 is not allowed in a transaction: only ACCEPT (1) and REJECT (3)" in str(exc.value)


def test_per_offset_types_apply_as_runs() -> None:
    sp, persister = make()
    sp.acquire("m1", batches((0, 5)), 6, fetch_offset=0)
    sp.acknowledge("m1", [ack(0, 5, A.ACCEPT, A.RELEASE, A.RELEASE, A.REJECT, A.ACCEPT, A.ACCEPT)])
    assert sp.start_offset == 1
    assert persister.writes[-1] == (1, [StateBatch(1, 2, 0, 1), StateBatch(3, 3, 4, 1), StateBatch(4, 5, 2, 1)])


def test_staging_answers_how_many_records_it_staged() -> None:
    sp, _ = make()
    sp.acquire("m1", batches((0, 9)), 10, fetch_offset=0)
    assert sp.stage("m1", 100, [ack(5, 7, A.ACCEPT), ack(9, 9, A.REJECT)]) == 4


def test_a_pending_records_lock_runs_out_once_at_its_deadline() -> None:
    persister = FakePersister()
    clock = ManualClock()
    sp = SharePartition(KEY, 0, persister, clock, Limits(lock_ms=1000))
    sp.initialize(lambda: 0)
    sp.acquire("m1", batches((0, 4), (5, 9)), 10, fetch_offset=0)
    sp.stage("m1", 100, [ack(0, 1, A.ACCEPT), ack(5, 6, A.ACCEPT)])
    clock.advance(999)
    sp.expire_locks()
    assert sp.expired_pending_locks == 0
    clock.advance(1)  # the deadline itself
    sp.expire_locks()
    assert sp.expired_pending_locks == 4  # both staged ranges, counted once each
    clock.advance(5000)
    sp.expire_locks()
    assert sp.expired_pending_locks == 4 and sp.counts_by_state()[S.TX_PENDING] == 4


def test_a_fenced_or_unloaded_share_partition_does_nothing_more() -> None:
    sp, persister = make()
    sp.acquire("m1", batches((0, 4)), 5, fetch_offset=0)
    sp.stage("m1", 100, [ack(0, 1, A.ACCEPT)])
    persister.fail = FencedStateEpochError("a newer leader wrote the state")
    with pytest.raises(FencedStateEpochError):
        sp.acknowledge("m1", [ack(2, 4, A.ACCEPT)])
    assert sp.complete_transaction(100, True) == 0
    assert sp.release_member("m1") == 0
    with pytest.raises(FencedStateEpochError, match="was fenced; it is loaded again"):
        sp.acquire("m2", batches((5, 9)), 5, fetch_offset=5)
    unloaded = SharePartition(KEY, 0, FakePersister(), ManualClock(), Limits())
    with pytest.raises(InvalidRequestError, match="is not initialized"):
        unloaded.acquire("m1", batches((0, 4)), 5, fetch_offset=0)
    assert unloaded.complete_transaction(100, True) == 0 and unloaded.release_member("m1") == 0


def test_the_soft_record_limit_stops_at_the_batch_that_reaches_it() -> None:
    sp, _ = make()
    assert sp.acquire("m1", batches((0, 4), (5, 9)), 5, fetch_offset=0) == [AcquiredRange(0, 4, 1)]
    assert sp.acquire("m1", batches((5, 9)), 0, fetch_offset=5) == []
    assert sp.acquire("m1", [], 5, fetch_offset=5) == []


def test_the_in_flight_cap_counts_from_the_start_offset() -> None:
    sp, _ = make(max_in_flight=10)
    sp.acquire("m1", batches((0, 9)), 10, fetch_offset=0)
    assert not sp.can_acquire()  # 10 in flight, none available
    sp.acknowledge("m1", [ack(0, 4, A.ACCEPT)])
    assert sp.start_offset == 5 and sp.can_acquire()  # 5 in flight: room for 5 more
