from __future__ import annotations

from pathlib import Path

from kafka_txn_broker.clock import ManualClock
from kafka_txn_broker.configs.broker_config import BrokerConfig
from kafka_txn_broker.formats.record_batch import build_batch
from kafka_txn_broker.log.leader_epoch import LeaderEpochCache
from kafka_txn_broker.log.unified_log import UnifiedLog


def test_cache_answers_like_kafka() -> None:
    cache = LeaderEpochCache()
    assert cache.end_offset_for(0, 10) == (-1, -1)
    cache.assign(1, 0)
    cache.assign(1, 5)  # same epoch again: ignored
    cache.assign(3, 10)
    cache.assign(4, 10)  # epoch 3 wrote nothing: superseded
    cache.assign(6, 20)
    assert cache.entries == [(1, 0), (4, 10), (6, 20)]
    assert cache.end_offset_for(6, 25) == (6, 25)  # latest epoch ends at the log end
    assert cache.end_offset_for(5, 25) == (4, 20)
    assert cache.end_offset_for(1, 25) == (1, 10)
    assert cache.end_offset_for(0, 25) == (0, 0)  # older than any known: ends where the first starts
    assert cache.end_offset_for(7, 25) == (-1, -1)
    assert cache.end_offset_for(-1, 25) == (-1, -1)
    cache.truncate_from_end(15)
    assert cache.entries == [(1, 0), (4, 10)] and cache.latest_epoch == 4


def test_unified_log_epochs_survive_reopen_and_truncation(tmp_path: Path) -> None:
    clock, config = ManualClock(), BrokerConfig()
    ulog = UnifiedLog.open(tmp_path / "t-0", config, clock)
    ulog.assign_epoch_start(0)
    for epoch in (0, 0, 2, 2, 5):
        ulog.append_as_leader(build_batch([(None, b"v")] * 2, timestamp_ms=clock.millis()), epoch)
    assert ulog.end_offset_for_epoch(2) == (2, 8) and ulog.latest_epoch == 5
    ulog.close()
    again = UnifiedLog.open(tmp_path / "t-0", config, clock)
    assert again.end_offset_for_epoch(1) == (0, 4)  # rebuilt from the batches on first use
    again.assign_epoch_start(7)
    assert again.end_offset_for_epoch(5) == (5, 10) and again.end_offset_for_epoch(7) == (7, 10)
    again.truncate_to(6)
    assert again.latest_epoch == 2 and again.end_offset_for_epoch(9) == (-1, -1)
    assert again.end_offset_for_epoch(2) == (2, 6)


def _epoch_history(ulog: UnifiedLog, events: list[tuple[str, int]], clock: ManualClock) -> list[tuple[int, int]]:
    for kind, epoch in events:
        if kind == "lead":
            ulog.assign_epoch_start(epoch)
        elif kind == "append":
            ulog.append_as_leader(build_batch([(None, b"v")] * 3, timestamp_ms=clock.millis()), epoch)
        else:
            ulog.truncate_to(epoch)
    return [ulog.end_offset_for_epoch(e) for e in range(8)]


def test_epoch_starts_noted_before_the_cache_exists_replay_in_order(tmp_path: Path) -> None:
    # A new leader notes its epoch start without reading the log; whenever the cache is built later,
    # it must hold exactly what building it first would have held.
    clock, config = ManualClock(), BrokerConfig()
    events = [("append", 0), ("lead", 1), ("lead", 2), ("append", 2), ("append", 2), ("lead", 4),
              ("truncate", 6), ("lead", 5), ("append", 5), ("lead", 6)]
    eager = UnifiedLog.open(tmp_path / "eager-0", config, clock)
    assert eager.latest_epoch == -1  # builds the (empty) cache first
    lazy = UnifiedLog.open(tmp_path / "lazy-0", config, clock)
    assert _epoch_history(lazy, events, clock) == _epoch_history(eager, events, clock)
    assert lazy.end_offset_for_epoch(2) == (2, 6) and lazy.end_offset_for_epoch(6) == (6, 9)


def test_truncate_from_start_and_epoch_for() -> None:
    from kafka_txn_broker.log.leader_epoch import LeaderEpochCache

    cache = LeaderEpochCache()
    for epoch, start in ((0, 0), (2, 10), (5, 20)):
        cache.assign(epoch, start)
    assert [cache.epoch_for(o) for o in (0, 9, 10, 25)] == [0, 0, 2, 5]
    cache.truncate_from_start(15)  # DeleteRecords to 15: epoch 2 now starts there, epoch 0 is gone
    assert cache.entries == [(2, 15), (5, 20)]
    assert cache.epoch_for(14) == -1
    cache.truncate_from_start(3)  # never backwards
    assert cache.entries == [(2, 15), (5, 20)]
