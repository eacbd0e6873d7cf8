"""Which logs the cleaner picks and when (kafka_txn_broker/log/cleaner_manager.py), against the broker's clock."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from kafka_txn_broker.clock import ManualClock
from kafka_txn_broker.configs.broker_config import BrokerConfig
from kafka_txn_broker.formats.record_batch import build_batch, iter_records
from kafka_txn_broker.log.cleaner_manager import (
    CHECKPOINT_FILE,
    LogCleanerManager,
    topic_cleaning,
)
from kafka_txn_broker.log.offset_checkpoint import read_checkpoints
from kafka_txn_broker.log.unified_log import UnifiedLog

DAY = 86_400_000
CONFIG = BrokerConfig({"log.segment.bytes": 2048, "log.index.interval.bytes": 128})
COMPACT = {"cleanup.policy": "compact"}


def _put(ulog: UnifiedLog, clock: ManualClock, key: bytes, value: bytes | None) -> int:
    info = ulog.append_as_leader(build_batch([(key, value)], timestamp_ms=clock.millis()), 0)
    ulog.high_watermark = ulog.log_end_offset
    return info.first_offset


def _fill(ulog: UnifiedLog, clock: ManualClock, count: int) -> None:
    for i in range(count):
        _put(ulog, clock, b"k%d" % (i % 4), b"v%d" % i)


def _keys(ulog: UnifiedLog) -> list[tuple[bytes | None, bytes | None]]:
    return [(r.key, r.value) for _s, _h, raw in ulog.log.iter_batches(0) for r in iter_records(raw)]


def _partitions(ulog: UnifiedLog) -> dict[tuple[str, int], Any]:
    return {("t", 0): SimpleNamespace(log=ulog)}


def test_topic_settings_follow_the_policy_and_overrides() -> None:
    assert topic_cleaning({}, CONFIG) is None
    assert topic_cleaning({"cleanup.policy": "delete"}, CONFIG) is None
    both = topic_cleaning({"cleanup.policy": "compact,delete", "min.cleanable.dirty.ratio": "0.1",
                           "delete.retention.ms": "5"}, CONFIG)
    assert both is not None and (both.min_dirty_ratio, both.delete_retention_ms) == (0.1, 5)
    default = topic_cleaning(COMPACT, CONFIG)
    assert default is not None and (default.min_dirty_ratio, default.delete_retention_ms) == (0.5, DAY)


def test_backoff_dirty_ratio_and_tombstone_retention(tmp_path: Path) -> None:
    clock = ManualClock()
    ulog = UnifiedLog.open(tmp_path / "t-0", CONFIG, clock)
    manager = LogCleanerManager(CONFIG)
    parts = _partitions(ulog)
    configs = {"t": COMPACT}.__getitem__
    _put(ulog, clock, b"gone", b"old")
    _put(ulog, clock, b"gone", None)
    _fill(ulog, clock, 100)
    assert len(ulog.log.segments) > 2
    assert manager.tick(clock.millis(), parts, configs)  # never cleaned: wholly dirty
    assert _keys(ulog).count((b"gone", None)) == 1 and (b"gone", b"old") not in _keys(ulog)
    assert not manager.tick(clock.millis(), parts, configs)  # nothing dirty left: backs off
    _fill(ulog, clock, 100)
    assert not manager.tick(clock.millis() + 1000, parts, configs)  # within log.cleaner.backoff.ms
    clock.advance(15_000)
    assert manager.tick(clock.millis(), parts, configs)
    assert _keys(ulog).count((b"gone", None)) == 1  # the tombstone waits for delete.retention.ms
    clock.advance(DAY)
    assert manager.tick(clock.millis(), parts, configs)  # due for its tombstone alone
    assert (b"gone", None) not in _keys(ulog)
    ulog.close()


def test_a_compacted_log_without_rolled_segments_is_never_read(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    clock = ManualClock()
    ulog = UnifiedLog.open(tmp_path / "t-0", CONFIG, clock)
    _fill(ulog, clock, 3)
    manager = LogCleanerManager(CONFIG)

    def no_read(*_a: object) -> int:
        raise AssertionError("a log with one segment must not be looked at")

    monkeypatch.setattr(UnifiedLog, "first_uncleanable_offset", no_read)
    assert not manager.tick(clock.millis(), _partitions(ulog), {"t": COMPACT}.__getitem__)
    disabled = LogCleanerManager(BrokerConfig({"log.cleaner.enable": False}))
    assert not disabled.tick(clock.millis(), _partitions(ulog), {"t": COMPACT}.__getitem__)
    ulog.close()


def test_checkpoints_survive_a_restart_so_a_clean_log_is_not_cleaned_again(tmp_path: Path) -> None:
    clock = ManualClock()
    ulog = UnifiedLog.open(tmp_path / "t-0", CONFIG, clock)
    _fill(ulog, clock, 100)
    configs = {"t": COMPACT}.__getitem__
    first = LogCleanerManager(CONFIG, tmp_path)
    assert first.tick(clock.millis(), _partitions(ulog), configs)
    upto = first.states[("t", 0)].checkpoint
    assert read_checkpoints(tmp_path / CHECKPOINT_FILE) == {("t", 0): upto}
    assert (tmp_path / CHECKPOINT_FILE).read_text() == f"0\n1\nt 0 {upto}\n"  # Kafka's format

    restarted = LogCleanerManager(CONFIG, tmp_path)
    assert not restarted.tick(clock.millis(), _partitions(ulog), configs)  # nothing dirty since
    _fill(ulog, clock, 100)
    clock.advance(15_000)
    assert restarted.tick(clock.millis(), _partitions(ulog), configs)
    restarted.forget(("t", 0))
    assert read_checkpoints(tmp_path / CHECKPOINT_FILE) == {}
    (tmp_path / CHECKPOINT_FILE).write_text("garbage")
    assert read_checkpoints(tmp_path / CHECKPOINT_FILE) == {}  # unreadable: every log counts as dirty
    ulog.close()
