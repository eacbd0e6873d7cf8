"""Edges of the log's producer-state paths, each pinned because other tests let a change of it pass: markers
appended as batches by the coordinator, markers replicated from their append result, the map end offset
after a load, the refusal of a read below the log start."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_txn_broker.clock import ManualClock
from kafka_txn_broker.configs.broker_config import BrokerConfig
from kafka_txn_broker.formats.errors import OffsetOutOfRangeError
from kafka_txn_broker.formats.record_batch import build_batch, build_control_batch
from kafka_txn_broker.log.transaction_index import AbortedTxn
from kafka_txn_broker.log.unified_log import UnifiedLog
from tests.broker.log.test_unified_log import TS, Producer, plain


@pytest.fixture
def ulog(part_dir: Path, config: BrokerConfig, clock: ManualClock) -> UnifiedLog:
    return UnifiedLog.open(part_dir, config, clock)


def test_a_commit_marker_appended_as_a_batch_commits_and_stamps_its_time(ulog: UnifiedLog) -> None:
    # Kafka's ProducerAppendInfo.appendEndTxnMarker for a COMMIT: the transaction completes without an
    # aborted-index entry, and the producer's last timestamp becomes the marker batch's timestamp.
    t = Producer(4, txn=True)
    ulog.append_as_leader(t.batch(2), 0, origin="coordinator")  # 0-1
    info = ulog.append_as_leader(build_control_batch(4, 0, True, 2, TS + 7), 0, origin="coordinator")  # 2
    ulog.high_watermark = ulog.log_end_offset
    assert info.first_offset == 2
    assert ulog.log.active.txn_index.entries() == []
    assert ulog.read(0, 10**6, True).aborted_transactions == []
    assert (ulog.first_unstable_offset, ulog.last_stable_offset) == (None, 3)
    entry = ulog.producer_state.last_entry(4)
    assert entry is not None
    assert (entry.last_timestamp, entry.coordinator_epoch, entry.current_txn_first_offset) == (TS + 7, 2, None)


def test_a_follower_fed_the_markers_append_result_completes_the_transaction(
        ulog: UnifiedLog, part_dir: Path, config: BrokerConfig, clock: ManualClock) -> None:
    # In-process followers append the leader's AppendInfo (records + the position of each batch in them), as
    # Partition.append_marker does: the follower must see the marker as a marker, so the abort reaches its
    # transaction index and its transaction is no longer open.
    follower = UnifiedLog.open(part_dir.parent / "follower-0", config, clock)
    t = Producer(1, txn=True)
    for info in (ulog.append_as_leader(plain(), 0), ulog.append_as_leader(t.batch(2), 0),
                 ulog.append_marker_info(1, 0, False, 0, 0, transaction_version=1)):
        follower.append_as_follower(info.records, verified=True, batches=info.batches)
    follower.high_watermark = follower.log_end_offset
    assert follower.log.active.txn_index.entries() == [AbortedTxn(1, 1, 3, 4)]
    assert follower.log.active.txn_index.entries() == ulog.log.active.txn_index.entries()
    assert (follower.first_unstable_offset, follower.last_stable_offset) == (None, 4)


def test_after_a_load_the_map_end_offset_is_the_log_end(part_dir: Path, config: BrokerConfig,
                                                       clock: ManualClock) -> None:
    # Kafka's loadProducerState ends with updateMapEndOffset(logEndOffset): the state loaded from an older
    # snapshot plus the replay describes the log up to its end, so the next snapshot is taken there.
    ulog = UnifiedLog.open(part_dir, config, clock)
    p = Producer(1)
    ulog.append_as_leader(p.batch(), 0)
    ulog.take_snapshot()  # at 1
    ulog.append_as_leader(p.batch(2), 0)  # 1-2: only in the log
    for seg in ulog.log.segments:  # crash: no snapshot at the end
        seg.close()
    reopened = UnifiedLog.open(part_dir, config, clock)
    psm = reopened.producer_state
    assert (psm.last_map_offset, reopened.log_end_offset) == (3, 3)
    assert psm.take_snapshot() == part_dir / f"{3:020d}.snapshot"


def test_a_read_below_the_log_start_names_the_offset_and_the_start(ulog: UnifiedLog) -> None:
    for _ in range(4):
        ulog.append_as_leader(plain(), 0)
    ulog.high_watermark = 4
    ulog.maybe_increment_log_start_offset(3)
    with pytest.raises(OffsetOutOfRangeError,
                       match=r"OffsetOutOfRangeError: offset 2 is below the log start offset 3 of .*topic-0$"):
        ulog.read(2, 10**6, False)


def test_truncation_replays_a_kept_marker_without_indexing_it_again(ulog: UnifiedLog) -> None:
    # Truncating above an abort marker reloads producer state by replaying the log from its start (no snapshot
    # here): the replayed marker completes its transaction again, and the segment's index, which already holds
    # the abort, keeps exactly that one entry.
    t = Producer(1, txn=True)
    ulog.append_as_leader(t.batch(), 0)  # 0
    abort_at = ulog.append_marker(1, 0, False, 0, 0)  # 1
    ulog.append_as_leader(plain(), 0)  # 2
    ulog.append_as_leader(plain(), 0)  # 3
    assert ulog.producer_state.snapshots == []
    ulog.high_watermark = 4
    ulog.truncate_to(3)
    assert (ulog.log_end_offset, ulog.first_unstable_offset, ulog.last_stable_offset) == (3, None, 3)
    assert ulog.log.active.txn_index.entries() == [AbortedTxn(1, 0, abort_at, 2)]
    assert ulog.read(0, 10**6, True).aborted_transactions == [AbortedTxn(1, 0, abort_at, 2)]


def test_recovery_rebuilds_the_abort_of_a_marker_at_the_segments_base_offset(part_dir: Path,
                                                                             clock: ManualClock) -> None:
    # After an unclean shutdown the active segment's .txnindex is rebuilt from the replay of every marker in
    # that segment, its first batch included (Kafka's recovery rebuilds the indexes of the segment from its base
    # offset on).
    config = BrokerConfig({"log.segment.bytes": 400})
    ulog = UnifiedLog.open(part_dir, config, clock)
    t = Producer(1, txn=True)
    ulog.append_as_leader(t.batch(), 0)  # 0: the transaction starts
    while ulog.log.active.size + 78 <= 400:  # fill the segment until a marker (78 bytes) no longer fits
        ulog.append_as_leader(plain(), 0)  # smaller than a marker: never rolls itself
    abort_at = ulog.append_marker(1, 0, False, 0, 0)
    assert ulog.log.active.base_offset == abort_at and len(ulog.log.segments) == 2
    expected = [AbortedTxn(1, 0, abort_at, abort_at + 1)]
    assert ulog.log.active.txn_index.entries() == expected
    for seg in ulog.log.segments:  # crash: no flush, no snapshot at the end, no clean-shutdown marker
        seg.close()
    Path(ulog.log.active.txn_index_path).unlink(missing_ok=True)
    reopened = UnifiedLog.open(part_dir, config, clock)
    assert reopened.log.active.base_offset == abort_at
    assert reopened.log.active.txn_index.entries() == expected
    reopened.high_watermark = reopened.log_end_offset
    assert reopened.read(0, 10**6, True).aborted_transactions == expected


def _state(log: UnifiedLog) -> dict[int, tuple[object, ...]]:
    return {pid: (e.producer_epoch, e.coordinator_epoch, e.last_timestamp, e.current_txn_first_offset,
                  list(e.batches)) for pid, e in log.producer_state.producers.items()}


def test_a_follower_fed_every_append_result_holds_the_leaders_producer_state(
        ulog: UnifiedLog, part_dir: Path, config: BrokerConfig, clock: ManualClock) -> None:
    # Followers update their producer entries in place (nothing on the replication path can refuse a batch):
    # after commits, an abort, a new epoch and more than five batches of one producer, every entry matches
    # the leader's, and neither log holds the other's entry objects.
    follower = UnifiedLog.open(part_dir.parent / "follower-0", config, clock)
    t1, t2, idem = Producer(1, txn=True), Producer(2, txn=True), Producer(3)
    infos = [ulog.append_as_leader(t1.batch(2), 0), ulog.append_as_leader(t2.batch(), 0)]
    for _ in range(6):
        infos.append(ulog.append_as_leader(idem.batch(), 0))
    infos += [ulog.append_marker_info(1, 0, True, 3, 0, transaction_version=1),
              ulog.append_marker_info(2, 0, False, 3, 0, transaction_version=1),
              ulog.append_as_leader(t1.batch(), 0)]
    t1.epoch, t1.seq = 1, 0  # the coordinator fenced epoch 0: the abort marker carries epoch 1
    infos += [ulog.append_marker_info(1, 1, False, 4, 0, transaction_version=1), ulog.append_as_leader(t1.batch(3), 0)]
    for info in infos:
        follower.append_as_follower(info.records, verified=True, batches=info.batches)
    assert _state(follower) == _state(ulog)
    assert len(ulog.producer_state.producers[3].batches) == 5  # the last five batches only, on both
    leader_entries = {id(e) for e in ulog.producer_state.producers.values()}
    assert not leader_entries & {id(e) for e in follower.producer_state.producers.values()}
    assert follower.log.active.txn_index.entries() == ulog.log.active.txn_index.entries() != []
    assert follower.producer_state.first_unstable_offset() == ulog.producer_state.first_unstable_offset()
    # As a new leader, the follower recognises the last batch's retry by the sequence numbers it replayed.
    retry = build_batch([(b"k", b"v")] * 3, timestamp_ms=TS, producer_id=1, producer_epoch=1, base_sequence=0,
                        transactional=True)
    assert follower.append_as_leader(retry, 1).duplicate
