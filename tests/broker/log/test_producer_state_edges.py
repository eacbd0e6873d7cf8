"""Edges of the producer state, each pinned because other tests let a change of it pass: snapshot
bookkeeping, replicated markers, idleness after a load, each checked against Kafka's ProducerStateManager."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_txn_broker.clock import ManualClock
from kafka_txn_broker.formats import producer_snapshot as snap
from kafka_txn_broker.formats.record_batch import BatchHeader, build_control_batch
from kafka_txn_broker.log.producer_state import AppendOrigin, CompletedTxn, ProducerStateManager
from tests.broker.log.test_producer_state import TS, Harness


def _snapshot_files(directory: Path) -> list[int]:
    return sorted(int(p.name.split(".")[0]) for p in directory.glob("*.snapshot"))


def test_deleting_snapshots_below_an_offset_keeps_the_one_at_it(tmp_path: Path) -> None:
    # Kafka's deleteSnapshotsBefore(offset): only snapshots strictly below the new log start go; the one at
    # the log start describes the state there and is what the next load starts from.
    h = Harness(tmp_path)
    for seq in range(3):
        h.data(1, 0, seq)
        h.psm.take_snapshot()  # at 1, 2, 3
    h.psm.delete_snapshots_below(2)
    assert h.psm.snapshots == [2, 3] and _snapshot_files(tmp_path) == [2, 3]
    fresh = ProducerStateManager(tmp_path, 60_000)
    assert fresh.load_snapshot(2, 3, TS) == 3


def test_a_fresh_manager_writes_its_snapshot_over_one_found_at_the_same_offset(tmp_path: Path) -> None:
    # Kafka's takeSnapshot writes when lastMapOffset > lastSnapOffset, and lastSnapOffset starts at 0: a new
    # manager at map end offset 1 writes its own state even though a file for offset 1 is already there.
    old = Harness(tmp_path)
    old.data(1, 0, 0)
    old.psm.take_snapshot()  # 1.snapshot: producer 1
    fresh = Harness(tmp_path)
    assert fresh.psm.snapshots == [1]
    fresh.data(2, 0, 0)  # offset 0: map end offset 1
    path = fresh.psm.take_snapshot()
    assert path == snap.snapshot_path(tmp_path, 1)
    assert [e.producer_id for e in snap.read_snapshot(path)] == [2]


def test_a_batchless_producer_reloads_without_batches(tmp_path: Path) -> None:
    # A producer known here only from a marker is written with last offset -1; Kafka's snapshot reader keeps
    # batch metadata only for an offset >= 0, so the reloaded entry has no sequence range at all.
    h = Harness(tmp_path)
    h.marker(1, 2, True, coord=3)
    h.psm.take_snapshot()
    fresh = ProducerStateManager(tmp_path, 60_000)
    fresh.load_snapshot(0, 10, TS)
    entry = fresh.last_entry(1)
    assert entry is not None and entry.batches == []
    assert (entry.first_seq, entry.last_seq, entry.last_data_offset, entry.last_offset_delta) == (-1, -1, -1, 0)
    assert (entry.producer_epoch, entry.coordinator_epoch, entry.last_timestamp) == (2, 3, TS)


def _replicated_marker(pid: int, epoch: int, commit: bool, offset: int) -> BatchHeader:
    return BatchHeader.parse(build_control_batch(pid, epoch, commit, 0, TS + 1, base_offset=offset))


def test_a_replicated_commit_marker_completes_the_transaction_as_committed(tmp_path: Path) -> None:
    # A follower (or log replay) applies the marker as written: COMMIT is not an abort, and the completed
    # transaction runs from its first data offset to the marker's offset.
    h = Harness(tmp_path)
    h.data(1, 0, 0, 2, txn=True, origin=AppendOrigin.REPLICATION)  # offsets 0-1
    done = h.psm.apply_replicated(_replicated_marker(1, 0, True, 2), (True, 0))
    assert done == CompletedTxn(1, 0, 2, False)
    h.next_offset = 3
    h.data(2, 0, 0, txn=True, origin=AppendOrigin.REPLICATION)  # offset 3
    aborted = h.psm.apply_replicated(_replicated_marker(2, 0, False, 4), (False, 0))
    assert aborted == CompletedTxn(2, 3, 4, True)


def test_loaded_producers_idle_from_their_last_timestamp_in_seconds(tmp_path: Path) -> None:
    # After a load each producer counts as idle since its last batch's timestamp (wall-clock age, in ms), and a
    # timestamp at or past "now" counts as active just now: expiry comes exactly producer.id.expiration.ms later.
    clock = ManualClock(TS)
    h = Harness(tmp_path)
    h.data(1, 0, 0, ts=TS - 10_000)  # 10 s old
    h.data(2, 0, 0, ts=TS)  # written now
    h.data(3, 0, 0, ts=TS + 1)  # 1 ms in the future: also now
    h.psm.take_snapshot()
    psm = ProducerStateManager(tmp_path, 60_000, clock=clock)
    psm.load_snapshot(0, 10, TS)
    psm.stamp_loaded_activity()
    clock.advance(49_999)
    assert psm.remove_expired_producers(clock.millis()) == []  # producer 1: 59.999 s idle
    clock.advance(1)
    assert psm.remove_expired_producers(clock.millis()) == [1]
    clock.advance(9_999)
    assert psm.remove_expired_producers(clock.millis()) == []  # producers 2 and 3: 59.999 s idle
    clock.advance(1)
    assert sorted(psm.remove_expired_producers(clock.millis())) == [2, 3]


def test_a_loaded_producer_without_an_activity_mark_expires_by_kafkas_wall_clock_rule(tmp_path: Path) -> None:
    # Loaded but not yet stamped (the log stamps right after its replay): no monotonic mark exists, so expiry
    # falls back to Kafka's rule, now - lastTimestamp >= producer.id.expiration.ms on the wall clock.
    clock = ManualClock(TS)
    h = Harness(tmp_path)
    h.data(1, 0, 0, ts=TS - 10_000)
    h.psm.take_snapshot()
    psm = ProducerStateManager(tmp_path, 60_000, clock=clock)
    psm.load_snapshot(0, 10, TS)
    assert psm.remove_expired_producers(TS + 49_999) == []
    assert psm.remove_expired_producers(TS + 50_000) == [1]


def test_an_open_transaction_whose_producer_is_gone_has_no_last_timestamp(tmp_path: Path) -> None:
    # The log applies a marker's producer update before completing the transaction (UnifiedLog._write); if
    # completing fails (the .txnindex write), the transaction stays listed while its producer has none open
    # and may expire. Kafka's updateOldestTxnTimestamp answers -1 when the producer entry is missing, so such
    # a transaction is never reported late.
    h = Harness(tmp_path, expiration_ms=1000)
    h.data(1, 0, 0, txn=True, ts=TS)  # offset 0
    info = h.psm.prepare_update(1, AppendOrigin.COORDINATOR)
    assert info.append_end_txn_marker(False, 0, 0, 1, TS, 1) == CompletedTxn(1, 0, 1, True)
    h.psm.update(info)  # not completed: still listed as open from offset 0
    assert h.psm.oldest_txn_last_timestamp() == TS
    assert h.psm.remove_expired_producers(TS + 1000) == [1]
    assert h.psm.first_undecided_offset() == 0
    assert h.psm.oldest_txn_last_timestamp() == -1
    assert not h.psm.has_late_transaction(TS + 10**9, 0)


def test_a_listing_given_at_creation_is_used_without_reading_the_directory_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The log's open lists the partition directory once and hands the snapshot offsets over; the manager must
    # not scan it a second time (startup cost with many partitions). Without a listing it scans by itself.
    h = Harness(tmp_path)
    h.data(1, 0, 0)
    h.psm.take_snapshot()  # at 1

    def no_scan(directory: object) -> list[int]:
        raise AssertionError(f"{directory} listed again")

    real = snap.list_snapshots
    monkeypatch.setattr(snap, "list_snapshots", no_scan)
    assert ProducerStateManager(tmp_path, 60_000, [1]).snapshots == [1]
    monkeypatch.setattr(snap, "list_snapshots", real)
    assert ProducerStateManager(tmp_path, 60_000).snapshots == [1]
