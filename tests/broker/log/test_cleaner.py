"""Log compaction of one log (kafka_txn_broker/log/cleaner.py): what is kept, offsets, indexes, reads, crash safety."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from kafka_txn_broker.clock import ManualClock
from kafka_txn_broker.configs.broker_config import BrokerConfig
from kafka_txn_broker.formats.record_batch import BatchHeader, build_batch, iter_batches, iter_records
from kafka_txn_broker.log import cleaner, file_cache
from kafka_txn_broker.log.unified_log import UnifiedLog

TS = 1_700_000_000_000
KEYS = [b"k%d" % i for i in range(5)]

Rec = tuple[int, bytes | None, bytes | None]


@pytest.fixture
def small() -> BrokerConfig:
    return BrokerConfig({"log.segment.bytes": 2048, "log.index.interval.bytes": 128})


def _open(path: Path, config: BrokerConfig, clock: ManualClock) -> UnifiedLog:
    return UnifiedLog.open(path, config, clock)


def _put(ulog: UnifiedLog, key: bytes | None, value: bytes | None) -> int:
    info = ulog.append_as_leader(build_batch([(key, value)], timestamp_ms=TS), 0)
    ulog.high_watermark = ulog.log_end_offset
    return info.first_offset


def _updates(ulog: UnifiedLog, count: int, start: int = 0) -> None:
    for i in range(start, start + count):
        key = KEYS[i % len(KEYS)]
        _put(ulog, key, key + b"=%d" % i)


def _records(ulog: UnifiedLog) -> list[Rec]:
    return [(r.offset, r.key, r.value) for _seg, _h, raw in ulog.log.iter_batches(0) for r in iter_records(raw)]


def _batches(ulog: UnifiedLog) -> list[bytes]:
    return [bytes(raw) for _seg, _h, raw in ulog.log.iter_batches(0)]


def _compact(ulog: UnifiedLog, horizon: int = -1) -> cleaner.CleanStats | None:
    return ulog.compact(ulog.first_uncleanable_offset(0, TS), horizon)


def _expected(before: list[Rec], upto: int) -> list[Rec]:
    """The latest record of each key below `upto`, and everything from `upto` on."""
    latest = {key: off for off, key, _v in before if off < upto}
    return [r for r in before if r[0] >= upto or latest[r[1]] == r[0]]


def _check_files(ulog: UnifiedLog) -> None:
    """Every segment file holds whole contiguous batches, and its indexes point at real batches."""
    for seg in ulog.log.segments:
        data = Path(seg.log_path).read_bytes()
        assert len(data) == seg.size
        end, boundaries = 0, {}
        for pos, header in iter_batches(data):
            assert pos == end
            boundaries[pos] = header
            end = pos + header.size
        assert end == len(data)
        assert seg.offset_index.is_sane(seg.size)
        for offset, pos in seg.offset_index.entries():
            assert pos in boundaries and boundaries[pos].last_offset == offset
        assert seg.time_index.is_sane(2**63)
    leftovers = [n for n in os.listdir(ulog.log.dir) if n.endswith((".cleaned", ".swap"))]
    assert leftovers == []


def test_updates_of_few_keys_shrink_and_keep_latest_values_at_their_offsets(
        tmp_path: Path, small: BrokerConfig, clock: ManualClock) -> None:
    ulog = _open(tmp_path / "t-0", small, clock)
    _updates(ulog, 300)
    before = _records(ulog)
    size_before = ulog.size_in_bytes
    upto = ulog.log.active.base_offset
    stats = _compact(ulog)
    assert stats is not None and stats.records_removed > 0
    after = _records(ulog)
    assert after == _expected(before, upto)
    assert ulog.size_in_bytes < size_before
    assert ulog.log_start_offset == 0 and ulog.log_end_offset == 300
    _check_files(ulog)

    # Reads: from 0, and from an offset that was removed, both return the next batch that is there.
    kept = [off for off, _k, _v in after]
    first = BatchHeader.parse(ulog.read(0, 10**6, False).records)
    assert first.base_offset == kept[0]
    removed = next(o for o in range(300) if o not in kept)
    data = ulog.read(removed, 100, False).records
    assert BatchHeader.parse(data).base_offset == min(o for o in kept if o > removed)

    # A second pass after more updates merges the small cleaned segments into fewer; its offset map
    # covers only what was written since the first pass (the cleaner checkpoint).
    checkpoint = upto
    _updates(ulog, 300, 300)
    before = _records(ulog)
    upto = ulog.log.active.base_offset
    segments_before = len([s for s in ulog.log.segments if s.base_offset < upto])
    stats = ulog.compact(ulog.first_uncleanable_offset(0, TS), -1, checkpoint)
    assert stats is not None and stats.segments_after < segments_before
    assert _records(ulog) == _expected(before, upto)
    _check_files(ulog)

    # The cleaned log reopens as it is.
    content = _records(ulog)
    ulog.close()
    again = _open(tmp_path / "t-0", small, clock)
    assert _records(again) == content
    _check_files(again)
    again.close()


def test_producer_id_batches_and_markers_are_kept_and_an_open_transaction_pins_cleaning(
        tmp_path: Path, small: BrokerConfig, clock: ManualClock) -> None:
    ulog = _open(tmp_path / "t-0", small, clock)
    _updates(ulog, 60)
    idem = build_batch([(KEYS[0], b"idempotent")], timestamp_ms=TS, producer_id=7, producer_epoch=0,
                       base_sequence=0)
    ulog.append_as_leader(idem, 0)
    txn = build_batch([(KEYS[1], b"in-txn")], timestamp_ms=TS, producer_id=9, producer_epoch=0,
                      base_sequence=0, transactional=True)
    txn_start = ulog.append_as_leader(txn, 0).first_offset
    _updates(ulog, 200, 60)  # the hanging transaction's segment and later ones roll too
    assert len(ulog.log.segments) > 4
    assert ulog.first_uncleanable_offset(0, TS) == txn_start
    before = _records(ulog)
    pid_batches = [b for b in _batches(ulog) if BatchHeader.parse(b).producer_id >= 0]
    upto = ulog.log.segments[cleaner.cleanable_segment_count(ulog.log, txn_start)].base_offset
    assert upto <= txn_start
    _compact(ulog)
    after = _records(ulog)
    assert [r for r in after if r[0] >= upto] == [r for r in before if r[0] >= upto]  # pinned: untouched
    assert [b for b in _batches(ulog) if BatchHeader.parse(b).producer_id >= 0] == pid_batches
    assert _compact(ulog) is not None  # nothing more is cleanable, however often it runs
    assert [r for r in _records(ulog) if r[0] >= upto] == [r for r in before if r[0] >= upto]

    # Aborting the hanging transaction (what WriteTxnMarkers does) frees the log for the next pass.
    ulog.append_marker(9, 0, False, 0, 0)
    ulog.high_watermark = ulog.log_end_offset
    _updates(ulog, 40, 260)
    assert ulog.first_uncleanable_offset(0, TS) == ulog.log.active.base_offset
    pid_batches = [b for b in _batches(ulog) if BatchHeader.parse(b).producer_id >= 0]
    aborted = [t for s in ulog.log.segments for t in s.txn_index.entries()]
    before = _records(ulog)
    _compact(ulog)
    after = _records(ulog)
    upto = ulog.log.active.base_offset
    assert [r for r in after if r[0] >= txn_start and r[0] < upto and r[1] in KEYS[2:]] == \
        [r for r in _expected([r for r in before if r[2] not in (b"idempotent", b"in-txn")], upto)
         if r[0] >= txn_start and r[0] < upto and r[1] in KEYS[2:]]
    assert [b for b in _batches(ulog) if BatchHeader.parse(b).producer_id >= 0] == pid_batches  # marker too
    assert [t for s in ulog.log.segments for t in s.txn_index.entries()] == aborted
    assert ulog.read(txn_start, 10**6, True).aborted_transactions == aborted
    _check_files(ulog)
    ulog.close()


def test_tombstones_stay_until_the_horizon_then_go(tmp_path: Path, small: BrokerConfig, clock: ManualClock) -> None:
    ulog = _open(tmp_path / "t-0", small, clock)
    _put(ulog, b"gone", b"old value")
    tomb = _put(ulog, b"gone", None)
    _updates(ulog, 120)
    _compact(ulog)
    gone = [r for r in _records(ulog) if r[1] == b"gone"]
    assert gone == [(tomb, b"gone", None)]  # the value went, the tombstone stays
    stats = _compact(ulog, horizon=tomb + 1)
    assert stats is not None and stats.first_kept_tombstone is None
    assert [r for r in _records(ulog) if r[1] == b"gone"] == []
    _check_files(ulog)
    ulog.close()


def test_a_follower_behind_copies_the_compacted_leader_across_gaps(
        tmp_path: Path, small: BrokerConfig, clock: ManualClock) -> None:
    leader = _open(tmp_path / "leader-0", small, clock)
    follower = _open(tmp_path / "follower-0", small, clock)
    _put(leader, KEYS[0], b"first")
    follower.append_as_follower(leader.read_for_replication(0, 10**6))
    _updates(leader, 200)
    _compact(leader)
    while follower.log_end_offset < leader.log_end_offset:
        follower.append_as_follower(leader.read_for_replication(follower.log_end_offset, 4096), allow_gap=True)
    assert [r for r in _records(follower) if r[0] > 0] == [r for r in _records(leader) if r[0] > 0]
    leader.close()
    follower.close()


class _Crash(Exception):
    pass


def _prepared_log(path: Path, config: BrokerConfig, clock: ManualClock) -> UnifiedLog:
    """A log whose next pass merges small cleaned segments and cleans fresh ones (several groups)."""
    ulog = _open(path, config, clock)
    _updates(ulog, 300)
    _compact(ulog)
    _updates(ulog, 200, 300)
    ulog.flush()
    return ulog


def _crash_at(monkeypatch: pytest.MonkeyPatch, step: str, occurrence: int) -> None:
    seen = []

    def hook(name: str) -> None:
        if name == step:
            seen.append(name)
            if len(seen) == occurrence:
                raise _Crash(step)

    monkeypatch.setattr(cleaner, "_after_step", hook)


def _cleaned_copy(src: Path, dst: Path, config: BrokerConfig, clock: ManualClock,
                  monkeypatch: pytest.MonkeyPatch) -> tuple[list[Rec], int]:
    """(records after a full pass, number of groups swapped) on a copy of `src`."""
    shutil.copytree(src, dst)
    swaps: list[str] = []
    monkeypatch.setattr(cleaner, "_after_step", lambda step: swaps.append(step) if step == "swap" else None)
    copy = _open(dst, config, clock)
    copy.high_watermark = copy.log_end_offset  # known from replication in a broker; not persisted here
    _compact(copy)
    result = _records(copy), len(swaps)
    copy.close()
    return result


def _reopen_after_crash(path: Path, config: BrokerConfig, clock: ManualClock) -> UnifiedLog:
    file_cache.FILE_CACHE.close_under(str(path))  # the process died: nothing of it survives
    return _open(path, config, clock)


def test_a_crash_before_the_commit_leaves_the_log_as_before(
        tmp_path: Path, small: BrokerConfig, clock: ManualClock, monkeypatch: pytest.MonkeyPatch) -> None:
    ulog = _prepared_log(tmp_path / "t-0", small, clock)
    before = _records(ulog)
    _crash_at(monkeypatch, "cleaned", 1)
    with pytest.raises(_Crash):
        _compact(ulog)
    assert any(n.endswith(".cleaned") for n in os.listdir(tmp_path / "t-0"))
    reopened = _reopen_after_crash(tmp_path / "t-0", small, clock)
    assert _records(reopened) == before
    _check_files(reopened)
    reopened.close()


def test_a_crash_after_the_commit_is_completed_at_open(
        tmp_path: Path, small: BrokerConfig, clock: ManualClock, monkeypatch: pytest.MonkeyPatch) -> None:
    ulog = _prepared_log(tmp_path / "t-0", small, clock)
    expected, groups = _cleaned_copy(tmp_path / "t-0", tmp_path / "copy-0", small, clock, monkeypatch)
    assert groups >= 2
    _crash_at(monkeypatch, "swap", groups)  # the last group: every earlier one is swapped already
    with pytest.raises(_Crash):
        _compact(ulog)
    assert any(n.endswith(".log.swap") for n in os.listdir(tmp_path / "t-0"))
    reopened = _reopen_after_crash(tmp_path / "t-0", small, clock)
    assert _records(reopened) == expected
    _check_files(reopened)
    reopened.close()


@pytest.mark.parametrize("renamed", [0, 2, 4])
def test_a_crash_while_deleting_or_renaming_is_completed_at_open(
        tmp_path: Path, small: BrokerConfig, clock: ManualClock, monkeypatch: pytest.MonkeyPatch,
        renamed: int) -> None:
    """Stop inside step 3/4: after some old files were deleted or some .swap files renamed."""
    ulog = _prepared_log(tmp_path / "t-0", small, clock)
    expected, groups = _cleaned_copy(tmp_path / "t-0", tmp_path / "copy-0", small, clock, monkeypatch)
    _crash_at(monkeypatch, "swap", groups)
    with pytest.raises(_Crash):
        _compact(ulog)
    directory = str(tmp_path / "t-0")
    swaps = sorted(n for n in os.listdir(directory) if n.endswith(".swap") and ".end." not in n and ".log." not in n)
    for name in swaps[:renamed]:  # some index files already in place, the .log.swap not yet
        os.replace(os.path.join(directory, name), os.path.join(directory, name[:-len(".swap")]))
    reopened = _reopen_after_crash(tmp_path / "t-0", small, clock)
    assert _records(reopened) == expected
    _check_files(reopened)
    reopened.close()
