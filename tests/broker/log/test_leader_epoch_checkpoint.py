"""`leader-epoch-checkpoint`: Kafka's file format, and epochs that survive compaction across a restart."""

from __future__ import annotations

from pathlib import Path

from kafka_txn_broker.clock import ManualClock
from kafka_txn_broker.configs.broker_config import BrokerConfig
from kafka_txn_broker.formats.record_batch import build_batch
from kafka_txn_broker.log import leader_epoch_checkpoint
from kafka_txn_broker.log.unified_log import UnifiedLog

TS = 1_700_000_000_000


def test_kafka_format_round_trip_and_damaged_files(tmp_path: Path) -> None:
    leader_epoch_checkpoint.write(tmp_path, [(0, 0), (3, 120)])
    assert (tmp_path / "leader-epoch-checkpoint").read_text() == "0\n2\n0 0\n3 120\n"
    assert leader_epoch_checkpoint.read(tmp_path) == [(0, 0), (3, 120)]
    for damaged in ("", "1\n1\n0 0\n", "0\n3\n0 0\n", "0\nx\n"):  # empty, other version, short, garbage
        (tmp_path / "leader-epoch-checkpoint").write_text(damaged)
        assert leader_epoch_checkpoint.read(tmp_path) == []
    assert leader_epoch_checkpoint.read(tmp_path / "missing") == []


def _write_epochs(ulog: UnifiedLog, epochs: list[int]) -> None:
    """Each epoch writes every key once: the later epochs supersede all records of the earlier ones."""
    for epoch in epochs:
        ulog.assign_epoch_start(epoch)
        for key in (b"a", b"b", b"c"):
            ulog.append_as_leader(build_batch([(key, b"%s@%d" % (key, epoch))], timestamp_ms=TS), epoch)
        ulog.high_watermark = ulog.log_end_offset


def test_epochs_compaction_removed_are_still_known_after_a_restart(tmp_path: Path) -> None:
    clock = ManualClock(TS)
    config = BrokerConfig({"log.segment.bytes": 300})  # a few batches per segment
    ulog = UnifiedLog.open(tmp_path / "t-0", config, clock)
    ulog.end_offset_for_epoch(0)  # OffsetForLeaderEpoch was asked once: the cache exists from here on
    _write_epochs(ulog, [0, 2, 5, 7])
    before = [ulog.end_offset_for_epoch(e) for e in range(9)]
    assert before[2] == (2, 6) and before[4] == (2, 6) and before[5] == (5, 9)
    stats = ulog.compact(ulog.first_uncleanable_offset(0, TS), -1)
    assert stats is not None
    starts = {h.partition_leader_epoch for _seg, h, _raw in ulog.log.iter_batches(0)}
    assert 0 not in starts  # every batch of epoch 0 is gone (and some of epoch 2's)
    ulog.close()

    reopened = UnifiedLog.open(tmp_path / "t-0", config, clock)
    assert [reopened.end_offset_for_epoch(e) for e in range(9)] == before
    reopened.close()
    # Without the file the log alone would answer differently: what the checkpoint is for.
    (tmp_path / "t-0" / "leader-epoch-checkpoint").unlink()
    headers_only = UnifiedLog.open(tmp_path / "t-0", config, clock)
    assert [headers_only.end_offset_for_epoch(e) for e in range(9)] != before
    headers_only.close()


def test_a_stale_checkpoint_never_outlives_a_truncation(tmp_path: Path) -> None:
    clock = ManualClock(TS)
    ulog = UnifiedLog.open(tmp_path / "t-0", BrokerConfig(), clock)
    ulog.end_offset_for_epoch(0)
    _write_epochs(ulog, [0, 1])
    ulog.truncate_to(3)  # epoch 1 started at 3: it is gone, and so is its checkpoint entry
    assert leader_epoch_checkpoint.read(tmp_path / "t-0") == [(0, 0)]
    _write_epochs(ulog, [4])
    ulog.close()
    reopened = UnifiedLog.open(tmp_path / "t-0", BrokerConfig(), clock)
    assert reopened.end_offset_for_epoch(1) == (0, 3) and reopened.end_offset_for_epoch(4) == (4, 6)
    reopened.close()
