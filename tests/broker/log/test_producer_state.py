from __future__ import annotations

import re
from pathlib import Path

import pytest

from kafka_txn_broker.clock import ManualClock
from kafka_txn_broker.formats.errors import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceNumberError,
    TransactionCoordinatorFencedError,
    UnknownProducerIdError,
)
from kafka_txn_broker.formats.producer_snapshot import SnapshotEntry
from kafka_txn_broker.formats.record_batch import BatchHeader, build_batch
from kafka_txn_broker.log.producer_state import (
    AppendOrigin,
    CompletedTxn,
    ProducerStateManager,
)

TS = 1_700_000_000_000
CLIENT = AppendOrigin.CLIENT


class Harness:
    """Drives a ProducerStateManager the way UnifiedLog does, with a fake log end offset."""

    def __init__(self, directory: Path, expiration_ms: int = 60_000) -> None:
        self.psm = ProducerStateManager(directory, expiration_ms)
        self.next_offset = 0

    def data(self, pid: int, epoch: int, seq: int, count: int = 1, *, txn: bool = False,
             origin: AppendOrigin = CLIENT, ts: int = TS) -> BatchHeader:
        raw = build_batch([(None, b"v")] * count, timestamp_ms=ts, base_offset=self.next_offset, producer_id=pid,
                          producer_epoch=epoch, base_sequence=seq, transactional=txn)
        header = BatchHeader.parse(raw)
        if origin is CLIENT and self.psm.find_duplicate(header) is not None:
            raise AssertionError("duplicate")
        info = self.psm.prepare_update(pid, origin)
        info.append_batch(header)
        self.psm.update(info)
        self.next_offset = header.next_offset
        self.psm.update_map_end_offset(self.next_offset)
        return header

    def marker(self, pid: int, epoch: int, commit: bool, coord: int = 0, *, tv: int = 1,
               start: int | None = None) -> CompletedTxn | None:
        info = self.psm.prepare_update(pid, AppendOrigin.COORDINATOR)
        done = info.append_end_txn_marker(commit, coord, epoch, self.next_offset, TS, tv, start)
        self.psm.update(info)
        if done is not None:
            self.psm.complete_txn(done)
        self.next_offset += 1
        self.psm.update_map_end_offset(self.next_offset)
        return done


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    return Harness(tmp_path)


def test_sequences_must_be_contiguous(h: Harness) -> None:
    h.data(1, 0, 0, 3)
    h.data(1, 0, 3, 2)
    with pytest.raises(OutOfOrderSequenceNumberError) as exc:
        h.data(1, 0, 6)
    assert exc.value.errno == 45
    with pytest.raises(OutOfOrderSequenceNumberError):
        h.data(1, 0, 4)
    h.data(1, 0, 5)
    assert h.psm.last_entry(1).last_seq == 5


def test_duplicate_of_last_five_batches(h: Harness) -> None:
    headers = [h.data(1, 0, i * 2, 2) for i in range(6)]
    entry = h.psm.last_entry(1)
    assert len(entry.batches) == 5
    for old in headers[1:]:
        dup = h.psm.find_duplicate(old)
        assert dup is not None and (dup.first_offset, dup.last_offset) == (old.base_offset, old.last_offset)
    assert h.psm.find_duplicate(headers[0]) is None  # fell out of the window


def test_sequence_wraps_at_int32_max(h: Harness) -> None:
    h.data(1, 0, 0)
    h.psm.last_entry(1).batches[-1] = h.psm.last_entry(1).batches[-1]._replace(last_seq=2**31 - 3)
    h.data(1, 0, 2**31 - 2, 2)  # ends at int32 max
    assert h.psm.last_entry(1).last_seq == 2**31 - 1
    h.data(1, 0, 0, 1)  # wraps to 0
    assert h.psm.last_entry(1).last_seq == 0


def test_epoch_fencing_and_new_epoch_starts_at_zero(h: Harness) -> None:
    h.data(1, 3, 0, 5)
    with pytest.raises(InvalidProducerEpochError) as exc:
        h.data(1, 2, 5)
    assert exc.value.errno == 47
    with pytest.raises(OutOfOrderSequenceNumberError):
        h.data(1, 4, 5)
    h.data(1, 4, 0)
    assert h.psm.last_entry(1).producer_epoch == 4 and len(h.psm.last_entry(1).batches) == 1


def test_unknown_producer_with_nonzero_sequence(h: Harness) -> None:
    with pytest.raises(UnknownProducerIdError) as exc:
        h.data(9, 0, 17)
    assert exc.value.errno == 59
    h.data(9, 0, 0)


def test_lenient_mode_accepts_unknown_producer(tmp_path: Path) -> None:
    psm = ProducerStateManager(tmp_path, 1000, strict_unknown_producer=False)
    info = psm.prepare_update(9, CLIENT)
    info.append_batch(BatchHeader.parse(build_batch([(None, b"v")], timestamp_ms=TS, producer_id=9,
                                                    producer_epoch=0, base_sequence=17)))
    psm.update(info)
    assert psm.last_entry(9).last_seq == 17


def test_replication_and_coordinator_origins_skip_sequence_checks(h: Harness) -> None:
    h.data(1, 0, 0)
    h.data(1, 0, 10, origin=AppendOrigin.REPLICATION)
    h.data(1, 0, 50, origin=AppendOrigin.COORDINATOR)
    h.data(1, 0, 2, origin=AppendOrigin.REPLICATION)
    h.data(1, 1, 0)
    h.data(1, 0, 9, origin=AppendOrigin.REPLICATION)  # a lower epoch only warns on a follower
    with pytest.raises(InvalidProducerEpochError):
        h.data(1, -1, 0, origin=AppendOrigin.COORDINATOR)


def test_transaction_lifecycle_and_first_unstable_offset(h: Harness) -> None:
    assert h.psm.first_unstable_offset() is None
    h.data(1, 0, 0, 2, txn=True)  # offsets 0-1
    h.data(2, 0, 0, 1, txn=True)  # offset 2
    h.data(1, 0, 2, 1, txn=True)  # offset 3, same txn
    assert h.psm.first_unstable_offset() == 0 and h.psm.last_entry(1).current_txn_first_offset == 0
    with pytest.raises(InvalidTxnStateError):
        h.data(1, 0, 3, 1, txn=False)
    done = h.marker(1, 0, commit=False, coord=5)
    assert done == CompletedTxn(1, 0, 4, True)
    # decided, but the marker is not below the high watermark yet
    assert h.psm.first_unstable_offset() == 0 and h.psm.first_undecided_offset() == 2
    h.psm.on_high_watermark_updated(5)
    assert h.psm.first_unstable_offset() == 2
    assert h.psm.last_entry(1).coordinator_epoch == 5 and h.psm.last_entry(1).current_txn_first_offset is None


def test_completed_transaction_leaves_exactly_when_the_high_watermark_passes_its_marker(h: Harness) -> None:
    # ProducerStateManager.onHighWatermarkUpdated -> removeUnreplicatedTransactions(highWatermark): a
    # transaction is dropped when its lastOffset (the marker) < the high watermark, not when it equals it.
    h.data(1, 0, 0, 2, txn=True)  # 0-1
    h.marker(1, 0, commit=True, coord=0)  # 2
    for hw in (0, 1, 2):
        h.psm.on_high_watermark_updated(hw)
        assert h.psm.first_unstable_offset() == 0, f"high watermark {hw}"
    h.psm.on_high_watermark_updated(3)
    assert h.psm.first_unstable_offset() is None and not h.psm.unreplicated_txns


def test_last_stable_offset_for_abort(h: Harness) -> None:
    h.data(1, 0, 0, 1, txn=True)  # 0
    h.data(2, 0, 0, 1, txn=True)  # 1
    info = h.psm.prepare_update(1, AppendOrigin.COORDINATOR)
    done = info.append_end_txn_marker(False, 0, 0, 2, TS)
    assert done is not None and h.psm.last_stable_offset(done) == 1  # pid 2's txn still open
    info = h.psm.prepare_update(2, AppendOrigin.COORDINATOR)
    done2 = info.append_end_txn_marker(False, 0, 0, 3, TS)
    assert done2 is not None and h.psm.last_stable_offset(done2) == 0  # pid 1's txn not completed yet


def test_marker_without_open_txn_completes_nothing(h: Harness) -> None:
    h.data(1, 0, 0)
    assert h.marker(1, 0, commit=True) is None
    assert h.psm.last_entry(1).coordinator_epoch == 0


def test_coordinator_epoch_fencing(h: Harness) -> None:
    h.data(1, 0, 0, txn=True)
    h.marker(1, 0, True, coord=4)
    h.data(1, 0, 1, txn=True)
    with pytest.raises(TransactionCoordinatorFencedError) as exc:
        h.marker(1, 0, True, coord=3)
    assert exc.value.errno == 52
    assert h.marker(1, 0, True, coord=4) is not None


def test_marker_epoch_rules_tv1_and_tv2(h: Harness) -> None:
    h.data(1, 2, 0, txn=True)
    with pytest.raises(InvalidProducerEpochError):
        h.marker(1, 1, True)  # TV1: lower epoch
    with pytest.raises(InvalidProducerEpochError):
        h.marker(1, 2, True, tv=2)  # TV2: marker must carry the bumped epoch while the txn is open
    assert h.marker(1, 3, True, tv=2) is not None
    assert h.psm.last_entry(1).producer_epoch == 3
    assert h.marker(1, 3, True, tv=2) is None  # TV2 retry of a marker already written: accepted
    with pytest.raises(InvalidProducerEpochError):
        h.marker(1, 2, True, tv=2)
    h.data(1, 3, 0, txn=True)
    assert h.marker(1, 3, False, tv=1) is not None  # TV1: same epoch is fine


def test_marker_txn_start_offset_check(h: Harness) -> None:
    h.data(1, 0, 0, 2)
    h.data(1, 0, 2, 1, txn=True)  # txn starts at 2
    with pytest.raises(InvalidTxnStateError) as exc:
        h.marker(1, 0, False, start=0)
    assert exc.value.errno == 48
    assert h.marker(1, 0, False, start=2) == CompletedTxn(1, 2, 3, True)
    with pytest.raises(InvalidTxnStateError):
        h.marker(1, 0, False, start=2)  # nothing open any more


def test_expiration_keeps_open_transactions(h: Harness) -> None:
    h.data(1, 0, 0, ts=TS)
    h.data(2, 0, 0, ts=TS, txn=True)
    h.data(3, 0, 0, ts=TS + 50_000)
    assert h.psm.remove_expired_producers(TS + 60_000) == [1]
    assert sorted(p.producer_id for p in h.psm.active_producers()) == [2, 3]
    with pytest.raises(UnknownProducerIdError):
        h.data(1, 0, 1)  # expired producer resumes mid-sequence


def test_active_producers_rows(h: Harness) -> None:
    h.data(7, 1, 0, 3, txn=True, ts=TS + 5)
    row = h.psm.active_producers()[0]
    assert row == (7, 1, 2, TS + 5, -1, 0)


def test_snapshot_round_trip_and_load(h: Harness, tmp_path: Path) -> None:
    h.data(1, 0, 0, 3)
    h.data(2, 4, 0, 1, txn=True)
    h.marker(1, 0, True, coord=2)
    path = h.psm.take_snapshot()
    assert path is not None and path.name == f"{h.next_offset:020d}.snapshot"
    assert h.psm.take_snapshot() is None  # nothing new
    fresh = ProducerStateManager(tmp_path, 60_000)
    assert fresh.load_snapshot(0, h.next_offset, TS) == h.next_offset
    assert sorted(fresh.active_producers()) == sorted(h.psm.active_producers())
    assert fresh.first_unstable_offset() == 3
    # the dedup window keeps only the last batch after a reload
    assert fresh.last_entry(1).batches == h.psm.last_entry(1).batches[-1:]


def test_load_skips_snapshots_above_end_and_corrupt_ones(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.data(1, 0, 0)
    h.psm.take_snapshot()  # at 1
    h.data(1, 0, 1)
    h.psm.take_snapshot()  # at 2
    h.data(1, 0, 2)
    h.psm.take_snapshot()  # at 3
    (tmp_path / f"{2:020d}.snapshot").write_bytes(b"\x00\x01garbage")
    fresh = ProducerStateManager(tmp_path, 60_000)
    assert fresh.load_snapshot(0, 2, TS) == 1  # 3 is above the end; 2 is corrupt
    assert fresh.snapshots == [1] and fresh.last_entry(1).last_seq == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{1:020d}.snapshot"]


def test_only_a_few_snapshots_are_kept(h: Harness, tmp_path: Path) -> None:
    for i in range(6):
        h.data(1, 0, i)
        h.psm.take_snapshot()
    assert h.psm.snapshots == [4, 5, 6]
    assert len(list(tmp_path.glob("*.snapshot"))) == 3


def test_expired_entries_dropped_on_load(h: Harness, tmp_path: Path) -> None:
    h.data(1, 0, 0, ts=TS)
    h.data(2, 0, 0, ts=TS, txn=True)
    h.psm.take_snapshot()
    fresh = ProducerStateManager(tmp_path, 60_000)
    fresh.load_snapshot(0, 10, TS + 120_000)
    assert [p.producer_id for p in fresh.active_producers()] == [2]


def test_late_transaction_uses_timeout_plus_five_minutes(h: Harness) -> None:
    h.data(1, 0, 0, ts=TS + 1000)
    h.data(2, 0, 0, txn=True, ts=TS)  # oldest open txn; its producer last wrote at TS
    h.data(3, 0, 0, txn=True, ts=TS + 500)
    assert h.psm.oldest_txn_last_timestamp() == TS
    limit = 900_000 + 300_000
    assert not h.psm.has_late_transaction(TS + limit, 900_000)
    assert h.psm.has_late_transaction(TS + limit + 1, 900_000)
    h.marker(2, 0, commit=True)
    assert h.psm.oldest_txn_last_timestamp() == TS + 500


# ---- what each refusal says (the partition leader's error, as Kafka's ProducerAppendInfo words its checks) --------
@pytest.mark.parametrize(("setup", "action", "error", "message"), [
    (lambda h: h.data(1, 3, 0), lambda h: h.data(1, 2, 0, origin=AppendOrigin.COORDINATOR), InvalidProducerEpochError,
     r"^epoch 2 of producer 1 at offset 1 is older than the last seen epoch 3$"),
    (lambda h: h.data(1, 3, 0), lambda h: h.marker(1, 2, False, tv=1), InvalidProducerEpochError,
     r"^marker epoch 2 of producer 1 at offset 1 is < the last seen epoch 3 \(TV1\)$"),
    (lambda h: h.data(1, 3, 0, txn=True), lambda h: h.marker(1, 3, False, tv=2), InvalidProducerEpochError,
     r"^marker epoch 3 of producer 1 at offset 1 is <= the last seen epoch 3 \(TV2\)$"),
    (lambda h: h.marker(1, 0, True, coord=5), lambda h: h.marker(1, 0, True, coord=4),
     TransactionCoordinatorFencedError,
     r"^coordinator epoch 4 of the marker for producer 1 at offset 1 is older than 5 \(zombie coordinator\)$"),
    (lambda h: None, lambda h: h.data(1, 0, 5), UnknownProducerIdError,
     r"^producer 1 has no state on this partition \(expired after producer.id.expiration.ms\?\) and sent sequence 5$"),
    (lambda h: h.data(1, 0, 0), lambda h: h.data(1, 1, 4), OutOfOrderSequenceNumberError,
     r"^new epoch 1 of producer 1 must start at sequence 0, got 4 at offset 1$"),
    (lambda h: h.data(1, 0, 0, 3), lambda h: h.data(1, 0, 7), OutOfOrderSequenceNumberError,
     r"^out of order sequence 7 for producer 1 at offset 3: expected 3$"),
    (lambda h: h.data(1, 0, 2**31 - 1, origin=AppendOrigin.REPLICATION), lambda h: h.data(1, 0, 5),
     OutOfOrderSequenceNumberError,
     r"expected 0$"),  # after Integer.MAX_VALUE the sequence wraps to 0
    (lambda h: h.data(1, 0, 0, txn=True), lambda h: h.data(1, 0, 1), InvalidTxnStateError,
     r"^non-transactional write from producer 1 at offset 1 while its transaction from offset 0 is open$"),
    (lambda h: h.data(1, 0, 0, txn=True), lambda h: h.marker(1, 0, False, start=7), InvalidTxnStateError,
     r"^producer 1 has no open transaction starting at offset 7 \(its open transaction starts at 0\)$"),
    (lambda h: h.data(1, 0, 0), lambda h: h.marker(1, 0, False, start=7), InvalidTxnStateError,
     r"\(its open transaction starts at none\)$"),
])
def test_each_refusal_names_the_producer_offset_and_rule(h: Harness, setup, action, error, message) -> None:
    setup(h)
    with pytest.raises(error) as exc:
        action(h)
    assert re.search(message, exc.value.args[0]), exc.value.args[0]  # the message, without kafka-python's prefix


def test_a_sequence_is_next_only_after_its_predecessor(h: Harness) -> None:
    # ProducerAppendInfo.inSequence: lastSeq + 1, or 0 right after Integer.MAX_VALUE; 0 after anything else is a gap.
    h.data(1, 0, 0, 5)
    with pytest.raises(OutOfOrderSequenceNumberError):
        h.data(1, 0, 0)


def test_completing_a_transaction_that_never_started_is_a_bug(h: Harness) -> None:
    with pytest.raises(ValueError, match=r"^cannot complete CompletedTxn\(producer_id=1, first_offset=4"):
        h.psm.complete_txn(CompletedTxn(1, 4, 9, True))


def test_an_entry_without_batches(tmp_path: Path) -> None:
    # A producer known only from a marker (no data here) has no sequence, no data offset: Kafka's NO_SEQUENCE
    # and -1 in DescribeProducers and in the snapshot.
    h = Harness(tmp_path)
    h.marker(1, 2, True, coord=3)
    entry = h.psm.last_entry(1)
    assert entry is not None
    assert (entry.first_seq, entry.last_seq, entry.last_data_offset, entry.last_offset_delta) == (-1, -1, -1, 0)
    assert h.psm.active_producers() == [(1, 2, -1, TS, 3, -1)]
    assert entry.to_snapshot() == SnapshotEntry(1, 2, -1, -1, 0, TS, 3, -1)


def test_entry_fields_of_a_multi_batch_producer(h: Harness) -> None:
    h.data(1, 0, 0, 3)  # offsets 0-2, sequences 0-2
    h.data(1, 0, 3, 2, ts=TS + 9)  # offsets 3-4, sequences 3-4
    entry = h.psm.last_entry(1)
    assert entry is not None
    assert (entry.first_seq, entry.last_seq, entry.last_data_offset, entry.last_offset_delta) == (0, 4, 4, 1)
    copy = entry.copy()
    assert (copy.producer_epoch, copy.last_timestamp, copy.batches) == (0, TS + 9, entry.batches)
    assert copy.batches is not entry.batches


def test_a_snapshot_keeps_a_transaction_that_starts_at_offset_zero(h: Harness, tmp_path: Path) -> None:
    h.data(1, 0, 0, txn=True)  # the transaction starts at offset 0
    h.psm.take_snapshot()
    fresh = ProducerStateManager(tmp_path, 60_000)
    fresh.load_snapshot(0, 10, TS)
    assert fresh.first_unstable_offset() == 0 and fresh.ongoing_txns[0].first_offset == 0


def test_late_transaction_needs_a_real_timestamp(h: Harness) -> None:
    # ProducerStateManager.hasLateTransaction: lastTimestamp > 0 (a producer whose batches carry no timestamp
    # is not counted), and the age strictly past the timeout + 5 minutes.
    h.data(1, 0, 0, txn=True, ts=0)
    assert h.psm.oldest_txn_last_timestamp() == 0
    assert not h.psm.has_late_transaction(TS, 900_000)
    fresh = Harness(h.psm.dir and Path(h.psm.dir) / "other")
    assert fresh.psm.oldest_txn_last_timestamp() == -1 and not fresh.psm.has_late_transaction(TS, 0)
    fresh.data(1, 0, 0, txn=True, ts=1)
    assert fresh.psm.has_late_transaction(TS, 0)


def test_producers_expire_on_the_monotonic_clock_when_there_is_one(tmp_path: Path) -> None:
    clock = ManualClock(TS)
    psm = ProducerStateManager(tmp_path, 60_000, clock=clock)
    for pid, ts in ((1, TS - 10**9), (2, TS + 10**9)):  # batch timestamps far in the past and the future
        info = psm.prepare_update(pid, AppendOrigin.CLIENT)
        info.append_data_batch(0, 0, 0, ts, pid, pid, False)
        psm.update(info)
    clock.advance(59_999)
    assert psm.remove_expired_producers(clock.millis()) == []  # 60 s since the appends, not the timestamps
    clock.advance(1)
    assert psm.remove_expired_producers(clock.millis()) == [1, 2]
    assert psm._active_at == {}


def test_loaded_producers_age_from_their_last_timestamp(tmp_path: Path) -> None:
    clock = ManualClock(TS)
    h = Harness(tmp_path)
    h.data(1, 0, 0, ts=TS - 50_000)
    h.data(2, 0, 0, ts=TS + 50_000)  # in the future: counts as now
    h.psm.take_snapshot()
    psm = ProducerStateManager(tmp_path, 60_000, clock=clock)
    psm.load_snapshot(0, 10, TS)
    psm.stamp_loaded_activity()
    clock.advance(10_000)
    assert psm.remove_expired_producers(clock.millis()) == [1]
    clock.advance(50_000)
    assert psm.remove_expired_producers(clock.millis()) == [2]


def test_snapshot_at_the_log_start_is_used_and_older_ones_are_not(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.data(1, 0, 0)
    h.psm.take_snapshot()  # at 1
    fresh = ProducerStateManager(tmp_path, 60_000)
    assert fresh.load_snapshot(1, 5, TS) == 1 and fresh.last_entry(1) is not None
    older = ProducerStateManager(tmp_path, 60_000)
    assert older.load_snapshot(2, 5, TS) == 2 and older.last_entry(1) is None  # below the log start: replay
    assert (older.last_map_offset, older.last_snap_offset) == (2, 2)


def test_snapshots_where_asked_and_only_when_new(h: Harness, tmp_path: Path) -> None:
    assert ProducerStateManager(tmp_path, 60_000).last_map_offset == 0
    h.data(1, 0, 0, 5)
    assert h.psm.take_snapshot(offset=3) == tmp_path / f"{3:020d}.snapshot"
    assert h.psm.take_snapshot(offset=2) == tmp_path / f"{2:020d}.snapshot"  # lower, but new: written
    assert h.psm.take_snapshot(offset=2) is None
    other = tmp_path / "copy"
    other.mkdir()
    assert h.psm.take_snapshot(log_dir=other, offset=5) == other / f"{5:020d}.snapshot"
    assert ProducerStateManager(tmp_path, 60_000).snapshots == [2, 3]  # found in the directory


def test_truncating_fully_starts_over_at_the_offset(h: Harness, tmp_path: Path) -> None:
    h.data(1, 0, 0, 3)
    h.psm.take_snapshot()
    h.psm.truncate_fully_and_start_at(7)
    assert (h.psm.last_map_offset, h.psm.last_snap_offset, h.psm.snapshots) == (7, 0, [])
    assert h.psm.take_snapshot() == tmp_path / f"{7:020d}.snapshot"


def test_replicated_batches_are_applied_without_checks(h: Harness) -> None:
    h.data(1, 5, 0)
    stale = BatchHeader.parse(build_batch([(None, b"v")], timestamp_ms=TS, base_offset=1, producer_id=1,
                                          producer_epoch=4, base_sequence=9))
    assert h.psm.apply_replicated(stale, None) is None  # an older epoch, a gap: a follower takes it as written
    entry = h.psm.last_entry(1)
    assert entry is not None and entry.last_seq == 9


def _state(psm: ProducerStateManager) -> tuple[object, ...]:
    entries = {pid: (e.producer_epoch, e.coordinator_epoch, e.last_timestamp, e.current_txn_first_offset,
                     list(e.batches)) for pid, e in psm.producers.items()}
    return entries, {k: (t.producer_id, t.last_offset) for k, t in psm.ongoing_txns.items()}


def test_a_follower_applying_the_leaders_batches_holds_the_leaders_state(tmp_path: Path,
                                                                         caplog: pytest.LogCaptureFixture) -> None:
    # The leader validates (CLIENT); a follower applies the same stored batches with apply_replicated. A new
    # producer, a transaction started by its first batch and continued, more batches than the dedup window
    # keeps, a new epoch, a second producer: the follower ends with the same table and open transactions.
    clock = ManualClock(TS)
    leader = Harness(tmp_path / "leader")
    follower = ProducerStateManager(tmp_path / "follower", 60_000, clock=clock)
    steps = [(1, 0, 0, 2, True), (1, 0, 2, 1, True), (2, 3, 0, 4, False), *((2, 3, 4 + i, 1, False) for i in range(6)),
             (1, 0, 3, 3, True), (2, 4, 0, 1, False)]
    windows = []
    for pid, epoch, seq, count, txn in steps:
        header = leader.data(pid, epoch, seq, count, txn=txn, ts=TS + seq)
        assert follower.apply_replicated(header, None) is None
        assert _state(follower) == _state(leader.psm)
        windows.append(len(follower.producers[2].batches) if 2 in follower.producers else 0)
    assert list(follower.ongoing_txns) == [0] and max(windows) == 5 and windows[-1] == 1  # the new epoch: 1
    assert follower._active_at == {1: clock.monotonic(), 2: clock.monotonic()}  # idle from the append on
    # A batch of an older epoch (a leader that took it before the epoch moved on) is applied, with a warning.
    stale = BatchHeader.parse(build_batch([(None, b"v")], timestamp_ms=TS, base_offset=40, producer_id=2,
                                          producer_epoch=3, base_sequence=7))
    with caplog.at_level("WARNING", logger="kafka_txn_broker.log.producer_state"):
        follower.apply_replicated(stale, None)
    assert "epoch 3 of producer 2 at offset 40 is older than the last seen epoch 4" in caplog.text
    assert follower.producers[2].producer_epoch == 3 and follower.producers[2].batches[-1].last_offset == 40
