from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_txn_broker.clock import ManualClock
from kafka_txn_broker.configs.broker_config import BrokerConfig
from kafka_txn_broker.configs.dynamic_broker_config import DynamicBrokerConfig
from kafka_txn_broker.formats.errors import OffsetOutOfRangeError
from kafka_txn_broker.formats.record_batch import BatchHeader, build_batch, iter_batches
from kafka_txn_broker.log import file_cache
from kafka_txn_broker.log.local_log import CLEAN_SHUTDOWN_FILE, LocalLog
from tests.broker.configs.fakes import FakeRepository

TS = 1_700_000_000_000


def append(log: LocalLog, n_records: int = 1, value: bytes = b"v" * 50, ts: int = TS) -> BatchHeader:
    raw = build_batch([(b"k", value)] * n_records, timestamp_ms=ts, base_offset=log.log_end_offset)
    header = BatchHeader.parse(raw)
    log.maybe_roll(len(raw), header.last_offset)
    log.append(raw, [(0, header)], n_records)
    return header


def offsets(data: bytes) -> list[int]:
    return [h.base_offset for _, h in iter_batches(data)]


def files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def test_create_writes_only_dir_and_empty_log(part_dir: Path, config: BrokerConfig, clock: ManualClock) -> None:
    log = LocalLog.open(part_dir, config, clock)
    assert files(part_dir) == ["00000000000000000000.log"]
    assert (log.log_start_offset, log.log_end_offset) == (0, 0)
    assert (part_dir / "00000000000000000000.log").stat().st_size == 0
    assert log.read(0, 1000, 10) == b""
    with pytest.raises(OffsetOutOfRangeError):
        log.read(1, 1000, 10)


def test_append_read_and_limits(part_dir: Path, config: BrokerConfig, clock: ManualClock) -> None:
    log = LocalLog.open(part_dir, config, clock)
    headers = [append(log, 2) for _ in range(10)]
    assert log.log_end_offset == 20
    assert offsets(log.read(0, 10**6, 100)) == [h.base_offset for h in headers]
    size = headers[0].size
    assert offsets(log.read(3, size * 2, 100)) == [2, 4]  # starts with the batch holding offset 3
    assert offsets(log.read(4, 1, 100)) == [4]  # min_one_batch even when larger than max_bytes
    assert log.read(4, 1, 100, min_one_batch=False) == b""
    assert offsets(log.read(0, 10**6, 6)) == [0, 2, 4]  # never a batch whose base offset is >= the bound
    assert log.read(20, 1000, 100) == b""
    with pytest.raises(OffsetOutOfRangeError) as exc:
        log.read(21, 1000, 100)
    assert exc.value.errno == 1


def test_roll_by_size_and_reads_across_segments(part_dir: Path, config: BrokerConfig, clock: ManualClock) -> None:
    log = LocalLog.open(part_dir, config, clock)
    for _ in range(100):
        append(log)
    assert len(log.segments) >= 3
    for seg in log.segments[:-1]:
        assert 0 < seg.size <= config["log.segment.bytes"]
    got = []
    offset = 0
    while offset < log.log_end_offset:
        data = log.read(offset, 700, 10**9)
        found = offsets(data)
        got.extend(found)
        offset = found[-1] + 1
    assert got == list(range(100))
    names = files(part_dir)
    assert names.count("00000000000000000000.log") == 1
    assert any(n.endswith(".index") for n in names) and any(n.endswith(".timeindex") for n in names)
    # Only the segment being appended to keeps index entries in memory: rolled ones answer from their
    # files, however often they are read (a broker would otherwise grow with every byte ever written).
    assert [s.offset_index.loaded for s in log.segments] == [False] * (len(log.segments) - 1) + [True]
    assert not any(s.time_index.loaded or s.txn_index.loaded for s in log.segments[:-1])


def test_roll_by_time(part_dir: Path, clock: ManualClock) -> None:
    config = BrokerConfig({"log.roll.ms": 1000})
    log = LocalLog.open(part_dir, config, clock)
    append(log)
    clock.advance(999)
    append(log)
    assert len(log.segments) == 1
    clock.advance(1)
    append(log)
    assert [s.base_offset for s in log.segments] == [0, 2]


def test_index_lookup_is_used_and_sane(part_dir: Path, config: BrokerConfig, clock: ManualClock) -> None:
    log = LocalLog.open(part_dir, config, clock)
    for _ in range(30):
        append(log)
    seg = log.segments[0]
    entries = seg.offset_index.entries()
    assert entries and all(pos > 0 for _, pos in entries)
    for off, pos in entries:
        found = seg.find(off)
        assert found is not None and found[0] == pos


def test_clean_reopen_reads_no_file_contents(part_dir: Path, config: BrokerConfig, clock: ManualClock,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    log = LocalLog.open(part_dir, config, clock)
    for _ in range(40):
        append(log)
    end = log.log_end_offset
    log.close()
    assert (part_dir / CLEAN_SHUTDOWN_FILE).exists()
    reads: list[str] = []
    real = file_cache.read_at
    monkeypatch.setattr(file_cache, "read_at", lambda p, n, pos: reads.append(p) or real(p, n, pos))
    monkeypatch.setattr(file_cache, "read_all", lambda p: reads.append(p) or b"")
    reopened = LocalLog.open(part_dir, config, clock, next_offset_hint=end)
    assert not (part_dir / CLEAN_SHUTDOWN_FILE).exists()
    assert reopened.log_end_offset == end and reads == []
    assert file_cache.FILE_CACHE.open_count() <= file_cache.FILE_CACHE.capacity


def test_clean_reopen_without_hint_finds_end_lazily(part_dir: Path, config: BrokerConfig,
                                                    clock: ManualClock) -> None:
    log = LocalLog.open(part_dir, config, clock)
    for _ in range(40):
        append(log, 3)
    log.close()
    reopened = LocalLog.open(part_dir, config, clock)
    assert reopened._next_offset is None
    assert reopened.log_end_offset == 120


def _crash(log: LocalLog) -> None:
    """Drop the in-memory log without close: no flush, no marker."""
    for seg in log.segments:
        seg.close()


def test_recovery_truncates_torn_tail(part_dir: Path, config: BrokerConfig, clock: ManualClock) -> None:
    log = LocalLog.open(part_dir, config, clock)
    for _ in range(5):
        append(log)
    good = log.active.size
    last = log.active.log_path
    _crash(log)
    with open(last, "ab") as f:
        f.write(build_batch([(b"k", b"torn")], timestamp_ms=TS, base_offset=5)[:30])
    reopened = LocalLog.open(part_dir, config, clock)
    assert reopened.recovered_bytes == 30 and os.path.getsize(last) == good
    assert reopened.log_end_offset == 5
    append(reopened)
    assert offsets(reopened.read(0, 10**6, 100)) == [0, 1, 2, 3, 4, 5]


def test_recovery_truncates_corrupt_crc_tail(part_dir: Path, config: BrokerConfig, clock: ManualClock) -> None:
    log = LocalLog.open(part_dir, config, clock)
    headers = [append(log) for _ in range(6)]
    path = log.active.log_path
    _crash(log)
    data = bytearray(Path(path).read_bytes())
    bad_pos = sum(h.size for h in headers[:4])
    data[bad_pos + 70] ^= 0xFF  # inside batch 4's records: CRC no longer matches
    Path(path).write_bytes(bytes(data))
    reopened = LocalLog.open(part_dir, config, clock)
    assert reopened.log_end_offset == 4 and reopened.active.size == bad_pos
    assert offsets(reopened.read(0, 10**6, 100)) == [0, 1, 2, 3]


def test_recovery_rebuilds_index_with_stale_entries(part_dir: Path, clock: ManualClock) -> None:
    config = BrokerConfig({"log.index.interval.bytes": 100})
    log = LocalLog.open(part_dir, config, clock)
    for _ in range(20):
        append(log)
    index = Path(log.active.index_path)
    entries_before = index.read_bytes()
    _crash(log)
    Path(log.active.log_path).write_bytes(Path(log.active.log_path).read_bytes()[:1000])
    reopened = LocalLog.open(part_dir, config, clock)
    rebuilt = reopened.active.offset_index.entries()
    assert all(pos < reopened.active.size for _, pos in rebuilt)
    assert len(index.read_bytes()) < len(entries_before)
    for off, pos in rebuilt:
        assert reopened.active.find(off)[0] == pos


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.integers(1, 5), min_size=1, max_size=12), st.data())
def test_random_torn_tail_recovers_to_a_batch_boundary(tmp_path_factory, counts, data) -> None:
    directory = tmp_path_factory.mktemp("torn")
    clock = ManualClock()
    config = BrokerConfig({"log.index.interval.bytes": 64})
    log = LocalLog.open(directory, config, clock)
    boundaries = [0]
    for n in counts:
        append(log, n)
        boundaries.append(log.active.size)
    _crash(log)
    cut = data.draw(st.integers(0, boundaries[-1]))
    path = log.active.log_path
    Path(path).write_bytes(Path(path).read_bytes()[:cut])
    reopened = LocalLog.open(directory, config, clock)
    kept = max(b for b in boundaries if b <= cut)
    assert reopened.active.size == kept
    n_batches = boundaries.index(kept)
    assert reopened.log_end_offset == sum(counts[:n_batches])
    assert len(offsets(reopened.read(0, 10**9, 10**9))) == n_batches


def test_truncate_to(part_dir: Path, config: BrokerConfig, clock: ManualClock) -> None:
    log = LocalLog.open(part_dir, config, clock)
    for _ in range(60):
        append(log, 2)
    nseg = len(log.segments)
    log.truncate_to(61)  # mid-batch: the whole batch 60-61 goes
    assert log.log_end_offset == 60 and len(log.segments) < nseg
    assert offsets(log.read(50, 10**6, 10**6))[-1] == 58
    append(log, 2)
    assert log.log_end_offset == 62
    log.truncate_to(log.segments[-1].base_offset)
    assert log.active.size > 0 or len(log.segments) == 1
    log.truncate_to(0)
    assert (log.log_start_offset, log.log_end_offset, len(log.segments)) == (0, 0, 1)
    assert files(part_dir) == ["00000000000000000000.log"]


def test_flush_policy_by_messages_and_time(part_dir: Path, clock: ManualClock) -> None:
    log = LocalLog.open(part_dir, BrokerConfig({"log.flush.interval.messages": 5}), clock)
    append(log, 3)
    assert log.unflushed_messages == 3
    append(log, 2)
    assert log.unflushed_messages == 0
    other = LocalLog.open(part_dir.parent / "t-1", BrokerConfig({"log.flush.interval.ms": 1000}), clock)
    append(other)
    assert other.unflushed_messages == 1
    clock.advance(1000)
    append(other)
    assert other.unflushed_messages == 0


def test_a_live_log_follows_changes_of_its_flush_and_roll_policy(part_dir: Path, clock: ManualClock) -> None:
    # The policy is read once and kept until a broker config changes: a value set on the static config, and
    # a dynamic value (AlterConfigs reloads the node's view), apply from the next append on.
    static = BrokerConfig({"log.flush.interval.messages": 100})
    repo = FakeRepository()
    node = DynamicBrokerConfig(static, 1, repo)
    log = LocalLog.open(part_dir, node, clock)
    append(log, 3)
    assert log.unflushed_messages == 3
    static.set("log.flush.interval.messages", 4)
    append(log)
    assert log.unflushed_messages == 0
    repo.set_broker("1", log_flush_interval_messages="2", log_roll_ms="1000")
    node.reload()
    append(log)
    assert log.unflushed_messages == 1
    clock.advance(1000)
    append(log)
    assert [s.base_offset for s in log.segments] == [0, 5] and log.unflushed_messages == 1  # a roll flushes
    append(log)
    assert log.unflushed_messages == 0
    repo.set_broker("1", log_flush_interval_ms="500")
    node.reload()
    append(log)
    clock.advance(500)
    append(log)
    assert log.unflushed_messages == 0 and len(log.segments) == 2  # log.roll.ms back to Kafka's 7 days


def test_offset_for_timestamp(part_dir: Path, config: BrokerConfig, clock: ManualClock) -> None:
    log = LocalLog.open(part_dir, config, clock)
    for i in range(50):
        raw = build_batch([(b"k", b"v" * 40, None, TS + i * 10), (b"k", b"v", None, TS + i * 10 + 5)],
                          timestamp_ms=TS + i * 10, base_offset=log.log_end_offset)
        header = BatchHeader.parse(raw)
        log.maybe_roll(len(raw), header.last_offset)
        log.append(raw, [(0, header)], 2)
    assert len(log.segments) > 1
    assert log.offset_for_timestamp(0) == (0, TS)
    assert log.offset_for_timestamp(TS + 5) == (1, TS + 5)
    assert log.offset_for_timestamp(TS + 6) == (2, TS + 10)
    assert log.offset_for_timestamp(TS + 333) == (67, TS + 335)
    assert log.offset_for_timestamp(TS + 336) == (68, TS + 340)
    assert log.offset_for_timestamp(TS + 495) == (99, TS + 495)
    assert log.offset_for_timestamp(TS + 496) is None
    assert log.max_timestamp_offset() == (99, TS + 495)


def test_delete_removes_directory(part_dir: Path, config: BrokerConfig, clock: ManualClock) -> None:
    log = LocalLog.open(part_dir, config, clock)
    append(log)
    log.delete()
    assert not part_dir.exists()


def test_file_cache_lru_bounds_open_descriptors(tmp_path: Path) -> None:
    cache = file_cache.FileCache(capacity=4)
    paths = [str(tmp_path / f"f{i}") for i in range(10)]
    for p in paths:
        with cache.fd(p, create=True) as fd:
            os.pwrite(fd, b"x", 0)
    assert cache.open_count() == 4
    with cache.fd(paths[0]) as fd0, cache.fd(paths[1]), cache.fd(paths[2]), cache.fd(paths[3]), \
            cache.fd(paths[4]) as fd4:
        assert cache.open_count() == 5  # all pinned: allowed to exceed briefly
        assert os.pread(fd0, 1, 0) == b"x" and os.pread(fd4, 1, 0) == b"x"
    assert cache.open_count() == 4
    cache.close_under(str(tmp_path))
    assert cache.open_count() == 0


def test_flush_if_due_without_appends(part_dir: Path, clock: ManualClock) -> None:
    log = LocalLog.open(part_dir, BrokerConfig({"log.flush.interval.ms": 500}), clock)
    assert not log.flush_if_due()
    append(log)
    assert log.unflushed_messages == 1 and not log.flush_if_due()
    clock.advance(500)
    assert log.flush_if_due() and log.unflushed_messages == 0


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(st.tuples(st.just("append"), st.integers(1, 4)),
                          st.tuples(st.just("truncate"), st.integers(0, 60)),
                          st.tuples(st.sampled_from(["reopen", "crash"]), st.just(0))),
                max_size=40))
def test_log_matches_a_model_under_appends_truncations_and_restarts(tmp_path_factory, ops) -> None:
    directory = tmp_path_factory.mktemp("model")
    clock = ManualClock()
    config = BrokerConfig({"log.segment.bytes": 600, "log.index.interval.bytes": 100})
    log = LocalLog.open(directory, config, clock)
    model: list[tuple[int, int]] = []  # (base offset, record count) of each batch
    for op, arg in ops:
        if op == "append":
            header = append(log, arg, b"m" * 40)
            model.append((header.base_offset, arg))
        elif op == "truncate":
            log.truncate_to(arg)
            model = [(b, n) for b, n in model if b + n <= arg]
            if arg <= 0:
                model = []
        elif op == "reopen":
            end = log.log_end_offset
            log.close()
            log = LocalLog.open(directory, config, clock, next_offset_hint=end)
        else:
            _crash(log)
            log = LocalLog.open(directory, config, clock)
        expected_end = model[-1][0] + model[-1][1] if model else log.log_start_offset
        assert log.log_end_offset == expected_end
    got = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        found = offsets(log.read(offset, 300, 10**9))
        got.extend(found)
        offset = [b + n for b, n in model if b == found[-1]][0]
    assert got == [b for b, _ in model]
    for seg in log.segments:
        assert seg.offset_index.is_sane(seg.size)
        for off, pos in seg.offset_index.entries():
            assert seg.find(off)[0] == pos


def test_file_cache_forgetting_a_borrowed_path(tmp_path: Path) -> None:
    cache = file_cache.FileCache(capacity=4)
    path = str(tmp_path / "a")
    with cache.fd(path, create=True) as old:
        os.pwrite(old, b"old", 0)
        cache.close(path)  # e.g. deleted by another thread while this read is in flight
        os.remove(path)
        with cache.fd(path, create=True) as new:
            assert new != old and os.pread(new, 3, 0) == b""
        assert os.pread(old, 3, 0) == b"old"  # the borrowed descriptor stays usable
    assert cache.open_count() == 1
