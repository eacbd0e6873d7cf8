from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatchBuilder

from kafka_txn_broker.clock import ManualClock
from kafka_txn_broker.configs.broker_config import BrokerConfig
from kafka_txn_broker.formats.errors import (
    CorruptRecordError,
    InvalidProducerEpochError,
    InvalidRecordError,
    InvalidTxnStateError,
    MessageTooLargeError,
    OffsetOutOfRangeError,
    OutOfOrderSequenceNumberError,
    RecordListTooLargeError,
    TransactionCoordinatorFencedError,
)
from kafka_txn_broker.formats.record_batch import BatchHeader, build_batch, iter_batches, parse_control_record
from kafka_txn_broker.log import file_cache
from kafka_txn_broker.log.local_log import CLEAN_SHUTDOWN_FILE
from kafka_txn_broker.log.transaction_index import AbortedTxn
from kafka_txn_broker.log.unified_log import UnexpectedAppendOffsetError, UnifiedLog


def _load_reader():  # tests run with --import-mode=importlib: sibling modules are not importable
    spec = importlib.util.spec_from_file_location("independent_reader",
                                                  Path(__file__).with_name("independent_reader.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    return module


reader = _load_reader()

TS = 1_700_000_000_000


class Producer:
    """Builds client batches with per-producer sequence numbers, like a real idempotent producer."""

    def __init__(self, pid: int, epoch: int = 0, *, txn: bool = False) -> None:
        self.pid, self.epoch, self.txn, self.seq = pid, epoch, txn, 0

    def batch(self, n: int = 1, value: bytes = b"v") -> bytes:
        raw = build_batch([(b"k", value)] * n, timestamp_ms=TS, producer_id=self.pid, producer_epoch=self.epoch,
                          base_sequence=self.seq, transactional=self.txn)
        self.seq += n
        return raw


def plain(n: int = 1, value: bytes = b"v") -> bytes:
    return build_batch([(b"k", value)] * n, timestamp_ms=TS)


def offsets(data: bytes | memoryview) -> list[int]:
    return [h.base_offset for _, h in iter_batches(data)]


@pytest.fixture
def ulog(part_dir: Path, config: BrokerConfig, clock: ManualClock) -> UnifiedLog:
    return UnifiedLog.open(part_dir, config, clock)


def test_append_assigns_offsets_and_epoch(ulog: UnifiedLog) -> None:
    a = ulog.append_as_leader(plain(3), 7)
    b = ulog.append_as_leader(plain(2), 7)
    assert (a.first_offset, a.last_offset, a.record_count, a.duplicate) == (0, 2, 3, False)
    assert (b.first_offset, b.last_offset, b.log_append_time, b.log_start_offset) == (3, 4, -1, 0)
    ulog.high_watermark = 5
    data = ulog.read(0, 10**6, False).records
    headers = [h for _, h in iter_batches(data)]
    assert [(h.base_offset, h.partition_leader_epoch) for h in headers] == [(0, 7), (3, 7)]


def test_kafka_python_batches_are_accepted(ulog: UnifiedLog) -> None:
    for codec in (0, 1):
        builder = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=False,
                                            producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                            batch_size=1 << 20)
        for i in range(5):
            builder.append(i, timestamp=TS, key=None, value=b"x" * 300, headers=[])
        info = ulog.append_as_leader(bytes(builder.build()), 0)
        assert info.record_count == 5
    assert ulog.log_end_offset == 10


def test_high_watermark_bounds_reads_and_is_clamped(ulog: UnifiedLog) -> None:
    for _ in range(4):
        ulog.append_as_leader(plain(), 0)
    assert ulog.read(0, 10**6, False).records == b""  # HW starts at the log start
    ulog.high_watermark = 2
    assert offsets(ulog.read(0, 10**6, False).records) == [0, 1]
    assert ulog.read(3, 10**6, False).records == b""  # between HW and LEO: empty, not an error
    with pytest.raises(OffsetOutOfRangeError):
        ulog.read(5, 10**6, False)
    ulog.high_watermark = 99
    assert ulog.high_watermark == 4
    assert offsets(ulog.read_for_replication(0, 10**6)) == [0, 1, 2, 3]


def test_idempotent_duplicate_returns_original_offsets(ulog: UnifiedLog) -> None:
    p = Producer(10)
    first = p.batch(3)
    ulog.append_as_leader(plain(), 0)
    ulog.append_as_leader(first, 0)
    ulog.append_as_leader(p.batch(2), 0)
    end = ulog.log_end_offset
    dup = ulog.append_as_leader(first, 0)
    assert dup.duplicate and (dup.first_offset, dup.last_offset) == (1, 3)
    # Kafka answers a retry with the original batch's offsets and its timestamp as the log append time (even on
    # a CreateTime topic: Kafka 3.3.2 did, tests/external/fidelity), nothing written.
    assert (dup.log_append_time, dup.log_start_offset, dup.record_count, dup.max_timestamp, dup.records) == (
        TS, 0, 3, TS, b"")
    assert ulog.log_end_offset == end
    with pytest.raises(OutOfOrderSequenceNumberError):
        p.seq += 1
        ulog.append_as_leader(p.batch(), 0)


def test_validation_errors(ulog: UnifiedLog, part_dir: Path, clock: ManualClock) -> None:
    with pytest.raises(InvalidRecordError):
        ulog.append_as_leader(plain() + plain(), 0)
    assert ulog.append_as_leader(plain() + plain(), 0, origin="coordinator").last_offset == 1
    bad = bytearray(plain())
    bad[-1] ^= 1
    with pytest.raises(CorruptRecordError):
        ulog.append_as_leader(bad, 0)
    small = UnifiedLog.open(part_dir.parent / "small-0", BrokerConfig({"message.max.bytes": 100}), clock)
    with pytest.raises(MessageTooLargeError):
        small.append_as_leader(plain(1, b"x" * 200), 0)
    tiny = UnifiedLog.open(part_dir.parent / "tiny-0", BrokerConfig({"log.segment.bytes": 100}), clock)
    with pytest.raises(RecordListTooLargeError):
        tiny.append_as_leader(plain(1, b"x" * 200), 0)
    assert ulog.log_end_offset == 2


def test_coordinator_appends_validate_every_producer_batch(ulog: UnifiedLog) -> None:
    # Appends from the coordinator (offset commits, several batches at once) update each producer's state
    # batch by batch: two batches of one producer chain, and a batch without a producer id skips nothing.
    t1 = Producer(1, txn=True)
    ulog.append_as_leader(plain() + t1.batch(1) + t1.batch(2), 0, origin="coordinator")
    entry = ulog.producer_state.last_entry(1)
    assert entry is not None and (entry.last_seq, entry.current_txn_first_offset, len(entry.batches)) == (2, 1, 2)
    assert ulog.first_unstable_offset == 1


def test_markers_are_tv1_unless_told_and_carry_their_timestamp(ulog: UnifiedLog, clock: ManualClock) -> None:
    txn = Producer(1, epoch=3, txn=True)
    ulog.append_as_leader(txn.batch(1), 0)
    clock.advance(5)
    at = ulog.append_marker(1, 3, False, 0, 7)  # TV1: a marker at the producer's own epoch is valid
    data = ulog.read_for_replication(at, 10**6)
    [(_, header)] = list(iter_batches(data))
    assert (header.base_offset, header.partition_leader_epoch, header.is_control, header.max_timestamp) == (
        at, 7, True, clock.millis())
    entry = ulog.producer_state.last_entry(1)
    assert entry is not None and (entry.last_timestamp, entry.current_txn_first_offset) == (clock.millis(), None)


def test_read_committed_at_the_end_returns_nothing_and_no_aborted_list(ulog: UnifiedLog) -> None:
    ulog.append_as_leader(plain(), 0)
    ulog.high_watermark = 1
    fetched = ulog.read(1, 10**6, True)
    assert (bytes(fetched.records), fetched.aborted_transactions) == (b"", [])


def test_read_passes_min_one_batch(ulog: UnifiedLog) -> None:
    ulog.append_as_leader(plain(1, b"x" * 100), 0)
    ulog.high_watermark = 1
    assert offsets(ulog.read(0, 10, False).records) == [0]  # one batch, though larger than max_bytes
    assert offsets(ulog.read(0, 10, False, min_one_batch=False).records) == []
    assert offsets(ulog.read(0, 10, True, min_one_batch=False).records) == []


def test_lso_with_open_committed_and_aborted_txns(ulog: UnifiedLog) -> None:
    t1, t2 = Producer(1, txn=True), Producer(2, txn=True)
    ulog.append_as_leader(plain(), 0)  # 0
    ulog.append_as_leader(t1.batch(2), 0)  # 1-2
    ulog.append_as_leader(t2.batch(1), 0)  # 3
    ulog.append_as_leader(plain(), 0)  # 4
    ulog.high_watermark = ulog.log_end_offset
    assert ulog.first_unstable_offset == 1 and ulog.last_stable_offset == 1
    assert offsets(ulog.read(0, 10**6, True).records) == [0]
    assert offsets(ulog.read(0, 10**6, False).records) == [0, 1, 3, 4]

    commit_at = ulog.append_marker(1, 0, True, 0, 0)  # 5
    assert commit_at == 5
    assert ulog.last_stable_offset == 1  # marker not yet below the high watermark
    ulog.high_watermark = ulog.log_end_offset
    assert ulog.last_stable_offset == 3  # t2 still open

    abort_at = ulog.append_marker(2, 0, False, 0, 0)  # 6
    ulog.high_watermark = ulog.log_end_offset
    assert ulog.last_stable_offset == 7 and ulog.first_unstable_offset is None
    fetched = ulog.read(0, 10**6, True)
    assert offsets(fetched.records) == [0, 1, 3, 4, 5, 6]
    assert fetched.aborted_transactions == [AbortedTxn(2, 3, abort_at, 7)]
    assert ulog.read(0, 10**6, False).aborted_transactions is None
    marker = [raw for raw in _batches(fetched.records) if BatchHeader.parse(raw).is_control]
    assert [parse_control_record(m) for m in marker] == [(True, 0), (False, 0)]


def _batches(data: bytes | memoryview) -> list[bytes]:
    return [bytes(data[p:p + h.size]) for p, h in iter_batches(data)]


def test_lso_is_the_high_watermark_when_the_high_watermark_is_below_an_open_transaction(ulog: UnifiedLog) -> None:
    # Kafka's UnifiedLog.lastStableOffset: the first unstable offset only if it is below the high watermark,
    # else the high watermark (min of the two): an open transaction above the HW never lifts the LSO past it.
    txn = Producer(1, txn=True)
    for _ in range(5):
        ulog.append_as_leader(plain(), 0)  # 0-4
    ulog.append_as_leader(txn.batch(2), 0)  # 5-6, open
    assert ulog.first_unstable_offset == 5
    for hw, lso in ((3, 3), (5, 5), (6, 5), (7, 5)):
        ulog.high_watermark = hw
        assert ulog.last_stable_offset == lso, f"high watermark {hw}"
    ulog.high_watermark = 3
    assert offsets(ulog.read(0, 10**6, True).records) == [0, 1, 2]  # read_committed stops at the HW


def test_a_decided_transaction_holds_the_lso_until_the_high_watermark_passes_its_marker(ulog: UnifiedLog) -> None:
    # Kafka's ProducerStateManager.onHighWatermarkUpdated drops a completed transaction only once its marker
    # is below the high watermark (lastOffset < highWatermark): with the HW at the marker it still holds the
    # LSO at its first offset, one offset later it is gone.
    txn = Producer(1, txn=True)
    ulog.append_as_leader(txn.batch(2), 0)  # 0-1
    marker = ulog.append_marker(1, 0, True, 0, 0)  # 2
    ulog.high_watermark = marker
    assert (ulog.first_unstable_offset, ulog.last_stable_offset) == (0, 0)
    ulog.high_watermark = marker + 1
    assert (ulog.first_unstable_offset, ulog.last_stable_offset) == (None, marker + 1)


def test_aborted_lso_records_other_open_txn(ulog: UnifiedLog) -> None:
    t1, t2 = Producer(1, txn=True), Producer(2, txn=True)
    ulog.append_as_leader(t1.batch(), 0)  # 0
    ulog.append_as_leader(t2.batch(), 0)  # 1
    ulog.append_marker(2, 0, False, 0, 0)  # 2: t1 still open -> LSO recorded 0
    ulog.append_marker(1, 0, False, 0, 0)  # 3
    entries = ulog.log.active.txn_index.entries()
    assert entries == [AbortedTxn(2, 1, 2, 0), AbortedTxn(1, 0, 3, 4)]


def test_aborted_txn_collection_across_segments(part_dir: Path, clock: ManualClock) -> None:
    config = BrokerConfig({"log.segment.bytes": 400})
    ulog = UnifiedLog.open(part_dir, config, clock)
    t = Producer(1, txn=True)
    ulog.append_as_leader(t.batch(1, b"x" * 100), 0)  # txn starts at 0
    for _ in range(6):
        ulog.append_as_leader(plain(1, b"y" * 100), 0)
    abort_at = ulog.append_marker(1, 0, False, 3, 0)
    ulog.high_watermark = ulog.log_end_offset
    assert len(ulog.log.segments) > 2
    fetched = ulog.read(0, 150, True)  # only the first batch
    assert offsets(fetched.records) == [0]
    assert fetched.aborted_transactions == [AbortedTxn(1, 0, abort_at, abort_at + 1)]
    later = ulog.read(abort_at + 1 if abort_at + 1 < ulog.log_end_offset else abort_at, 10**6, True)
    assert later.aborted_transactions in ([], [AbortedTxn(1, 0, abort_at, abort_at + 1)])
    assert ulog.read(ulog.log_end_offset, 10**6, True).aborted_transactions == []


def test_marker_validation(ulog: UnifiedLog) -> None:
    t = Producer(1, epoch=2, txn=True)
    ulog.append_as_leader(t.batch(), 0)
    with pytest.raises(InvalidProducerEpochError):
        ulog.append_marker(1, 1, True, 5, 0)
    with pytest.raises(InvalidTxnStateError):
        ulog.append_marker(1, 2, False, 5, 0, txn_start_offset=7)
    end = ulog.log_end_offset
    ulog.append_marker(1, 3, False, 5, 0, transaction_version=2, txn_start_offset=0)
    with pytest.raises(TransactionCoordinatorFencedError):
        ulog.append_marker(1, 3, False, 4, 0)
    assert ulog.log_end_offset == end + 1  # rejected markers write nothing
    with pytest.raises(InvalidProducerEpochError):
        ulog.append_as_leader(t.batch(), 0)  # epoch 2 is fenced by the TV2 marker's epoch 3


def test_follower_append_mirrors_leader(ulog: UnifiedLog, part_dir: Path, config: BrokerConfig,
                                        clock: ManualClock) -> None:
    t = Producer(1, txn=True)
    ulog.append_as_leader(plain(), 0)
    ulog.append_as_leader(t.batch(2), 0)
    ulog.append_marker(1, 0, False, 0, 0)
    ulog.append_as_leader(Producer(2).batch(), 0)
    follower = UnifiedLog.open(part_dir.parent / "follower-0", config, clock)
    data = ulog.read_for_replication(0, 10**6)
    with pytest.raises(UnexpectedAppendOffsetError):
        follower.append_as_follower(bytes(data)[BatchHeader.parse(data).size:])
    follower.append_as_follower(data)
    assert follower.log_end_offset == ulog.log_end_offset
    assert follower.log.active.txn_index.entries() == ulog.log.active.txn_index.entries()
    assert sorted(follower.producer_state.active_producers()) == sorted(ulog.producer_state.active_producers())
    bad = bytearray(data)
    bad[-1] ^= 1
    with pytest.raises(CorruptRecordError):
        follower.append_as_follower(bytes(bad))


def _fill(ulog: UnifiedLog) -> None:
    t1, t2, idem = Producer(1, txn=True), Producer(2, txn=True), Producer(3)
    for i in range(30):
        ulog.append_as_leader(idem.batch(1, b"i" * 300), 0)
        if i == 5:
            ulog.append_as_leader(t1.batch(2), 0)
        if i == 8:
            ulog.append_as_leader(t2.batch(1), 0)
        if i == 12:
            ulog.append_marker(1, 0, False, 1, 0)
        if i == 20:
            ulog.append_as_leader(t1.batch(1), 0)
        if i == 25:
            ulog.append_marker(2, 0, False, 1, 0)
    ulog.high_watermark = ulog.log_end_offset


def _state(ulog: UnifiedLog) -> tuple:
    aborted = [t for s in ulog.log.segments for t in s.txn_index.entries()]
    return (ulog.log_end_offset, sorted(ulog.producer_state.active_producers()), ulog.first_unstable_offset,
            aborted)


def test_reopen_after_clean_shutdown_is_lazy_and_identical(part_dir: Path, config: BrokerConfig,
                                                           clock: ManualClock,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    ulog = UnifiedLog.open(part_dir, config, clock)
    _fill(ulog)
    before = _state(ulog)
    assert len(ulog.log.segments) > 2
    ulog.close()
    assert (part_dir / CLEAN_SHUTDOWN_FILE).exists()
    assert (part_dir / f"{before[0]:020d}.snapshot").exists()
    reads: list[str] = []
    real = file_cache.read_at
    monkeypatch.setattr(file_cache, "read_at", lambda p, n, pos: reads.append(p) or real(p, n, pos))
    reopened = UnifiedLog.open(part_dir, config, clock)
    assert reopened.log_end_offset == before[0] and reads == []
    monkeypatch.undo()
    reopened.high_watermark = reopened.log_end_offset
    assert _state(reopened) == before


def test_reopen_after_crash_rebuilds_state_and_txn_index(part_dir: Path, config: BrokerConfig,
                                                        clock: ManualClock) -> None:
    ulog = UnifiedLog.open(part_dir, config, clock)
    _fill(ulog)
    before = _state(ulog)
    assert ulog.log.active.txn_index.entries()  # the rebuilt segment holds an abort
    for seg in ulog.log.segments:  # crash: no flush, no snapshot at the end, no marker
        seg.close()
    Path(ulog.log.active.txn_index_path).unlink(missing_ok=True)
    reopened = UnifiedLog.open(part_dir, config, clock)
    reopened.high_watermark = reopened.log_end_offset
    assert _state(reopened) == before


def test_crash_with_torn_tail_drops_producer_state_of_lost_batches(part_dir: Path, config: BrokerConfig,
                                                                   clock: ManualClock) -> None:
    ulog = UnifiedLog.open(part_dir, config, clock)
    p = Producer(5)
    ulog.append_as_leader(p.batch(), 0)
    t = Producer(6, txn=True)
    ulog.append_as_leader(t.batch(), 0)
    active = ulog.log.active
    for seg in ulog.log.segments:
        seg.close()
    with open(active.log_path, "r+b") as f:
        f.truncate(active.size - 5)
    reopened = UnifiedLog.open(part_dir, config, clock)
    assert reopened.log_end_offset == 1
    assert [a.producer_id for a in reopened.producer_state.active_producers()] == [5]
    assert reopened.first_unstable_offset is None


def test_truncate_to_restores_producer_state(ulog: UnifiedLog) -> None:
    t = Producer(1, txn=True)
    ulog.append_as_leader(Producer(2).batch(), 0)  # 0
    ulog.append_as_leader(t.batch(), 0)  # 1
    ulog.take_snapshot()  # at 2
    ulog.append_marker(1, 0, False, 0, 0)  # 2
    ulog.append_as_leader(Producer(3).batch(), 0)  # 3
    ulog.take_snapshot()  # at 4
    ulog.high_watermark = 4
    ulog.truncate_to(2)
    assert ulog.log_end_offset == 2 and ulog.high_watermark == 2
    assert ulog.first_unstable_offset == 1
    assert ulog.log.active.txn_index.entries() == []
    assert sorted(a.producer_id for a in ulog.producer_state.active_producers()) == [1, 2]
    assert ulog.producer_state.snapshots == [2]
    ulog.truncate_to(0)
    assert ulog.log_end_offset == 0 and ulog.producer_state.active_producers() == []


def test_remove_expired_producers(ulog: UnifiedLog, clock: ManualClock) -> None:
    ulog.append_as_leader(Producer(1).batch(), 0)
    # Idleness is measured on the log's clock (monotonic), so time has to pass there.
    clock.advance(86_400_000 - 1)
    assert ulog.remove_expired_producers(clock.millis()) == []
    clock.advance(1)
    assert ulog.remove_expired_producers(clock.millis()) == [1]


def test_offset_for_timestamp(ulog: UnifiedLog) -> None:
    for i in range(5):
        ulog.append_as_leader(build_batch([(None, b"v", None, TS + i * 100)], timestamp_ms=TS + i * 100), 0)
    assert ulog.offset_for_timestamp(TS + 150) == (2, TS + 200)
    assert ulog.max_timestamp_offset() == (4, TS + 400)


def test_delete(ulog: UnifiedLog, part_dir: Path) -> None:
    ulog.append_as_leader(plain(), 0)
    ulog.delete()
    assert not part_dir.exists()


def test_files_parse_with_independent_reader(part_dir: Path, config: BrokerConfig, clock: ManualClock) -> None:
    ulog = UnifiedLog.open(part_dir, config, clock)
    _fill(ulog)
    end = ulog.log_end_offset
    ulog.close()
    batches = [b for seg in sorted(part_dir.glob("*.log")) for b in reader.read_log(seg.read_bytes())]
    offsets_seen = [o for b in batches for o, _, _ in b.records]
    assert offsets_seen == list(range(end))
    markers = [b for b in batches if b.is_control]
    assert [m.producer_id for m in markers] == [1, 2] and markers[0].is_transactional
    assert markers[0].records[0][1] == b"\x00\x00\x00\x00"  # ABORT
    snapshot = reader.read_snapshot((part_dir / f"{end:020d}.snapshot").read_bytes())
    rows = {r[0]: r for r in snapshot}
    assert rows[3][2] == 29 and rows[3][7] == -1  # idempotent producer: last sequence 29, no txn
    assert rows[1][7] == 25 and rows[2][7] == -1  # t1's second transaction is open
    aborted = [row for f in sorted(part_dir.glob("*.txnindex")) for row in reader.read_txn_index(f.read_bytes())]
    assert aborted == [(1, 6, 16, 11), (2, 11, 31, 25)]


def test_coordinator_origin_may_append_markers_as_batches(ulog: UnifiedLog) -> None:
    from kafka_txn_broker.formats.record_batch import build_control_batch

    t = Producer(4, txn=True)
    ulog.append_as_leader(t.batch(), 0, origin="coordinator")
    info = ulog.append_as_leader(build_control_batch(4, 0, False, 2, TS), 0, origin="coordinator")
    assert info.first_offset == 1
    assert ulog.log.active.txn_index.entries() == [AbortedTxn(4, 0, 1, 2)]
    with pytest.raises(InvalidRecordError):
        ulog.append_as_leader(build_control_batch(4, 0, False, 2, TS), 0)  # never from clients


def test_many_logs_share_a_bounded_set_of_file_descriptors(tmp_path: Path, config: BrokerConfig,
                                                           clock: ManualClock) -> None:
    logs = [UnifiedLog.open(tmp_path / f"t-{i}", config, clock) for i in range(300)]
    for ul in logs:
        ul.append_as_leader(plain(), 0)
        ul.high_watermark = 1
        assert offsets(ul.read(0, 1000, True).records) == [0]
    assert file_cache.FILE_CACHE.open_count() <= file_cache.FILE_CACHE.capacity
    for ul in logs:
        ul.close()
    # a clean reopen of an idle log holds no descriptor at all
    before = file_cache.FILE_CACHE.open_count()
    again = [UnifiedLog.open(tmp_path / f"t-{i}", config, clock) for i in range(300)]
    assert file_cache.FILE_CACHE.open_count() == before
    assert all(ul.log_end_offset == 1 for ul in again)


def test_empty_log_close_and_reopen(part_dir: Path, config: BrokerConfig, clock: ManualClock) -> None:
    ulog = UnifiedLog.open(part_dir, config, clock)
    ulog.close()
    assert sorted(p.name for p in part_dir.iterdir()) == [CLEAN_SHUTDOWN_FILE, "00000000000000000000.log"]
    again = UnifiedLog.open(part_dir, config, clock)
    assert (again.log_end_offset, again.last_stable_offset, again.producer_state.active_producers()) == (0, 0, [])
    assert again.append_as_leader(plain(), 0).first_offset == 0


def _rebuilt_from_scratch(directory: Path, into: Path, config: BrokerConfig, clock: ManualClock) -> UnifiedLog:
    """Copy the partition without snapshots or shutdown marker: state must come from the log alone."""
    import shutil

    shutil.copytree(directory, into)
    for p in list(into.glob("*.snapshot")) + [into / CLEAN_SHUTDOWN_FILE]:
        p.unlink(missing_ok=True)
    return UnifiedLog.open(into, config, clock)


_OPS = st.lists(st.one_of(
    st.tuples(st.just("idem"), st.integers(0, 2)),
    st.tuples(st.just("txn"), st.integers(0, 2)),
    st.tuples(st.sampled_from(["commit", "abort"]), st.integers(0, 2)),
    st.tuples(st.just("truncate"), st.integers(0, 40)),
    st.tuples(st.sampled_from(["reopen", "crash", "plain"]), st.just(0)),
), max_size=30)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_OPS)
def test_state_always_matches_a_rebuild_from_the_log(tmp_path_factory, ops) -> None:
    directory = tmp_path_factory.mktemp("p") / "t-0"
    clock = ManualClock()
    config = BrokerConfig({"log.segment.bytes": 500, "log.index.interval.bytes": 100})
    ulog = UnifiedLog.open(directory, config, clock)
    for op, pid in ops:
        entry = ulog.producer_state.last_entry(pid)
        seq = entry.last_seq + 1 if entry is not None and entry.batches else 0
        in_txn = entry is not None and entry.current_txn_first_offset is not None
        if op == "idem" and not in_txn:
            ulog.append_as_leader(build_batch([(None, b"i" * 30)], timestamp_ms=TS, producer_id=pid,
                                              producer_epoch=0, base_sequence=seq), 0)
        elif op == "txn":
            ulog.append_as_leader(build_batch([(None, b"t" * 30)], timestamp_ms=TS, producer_id=pid,
                                              producer_epoch=0, base_sequence=seq, transactional=True), 0)
        elif op in ("commit", "abort") and entry is not None:
            ulog.append_marker(pid, 0, op == "commit", 0, 0)
        elif op == "plain":
            ulog.append_as_leader(plain(1, b"p" * 30), 0)
        elif op == "truncate":
            ulog.truncate_to(pid * 7 + 3)
        elif op == "reopen":
            ulog.close()
            ulog = UnifiedLog.open(directory, config, clock)
        elif op == "crash":
            for seg in ulog.log.segments:
                seg.close()
            ulog = UnifiedLog.open(directory, config, clock)
    ulog.high_watermark = ulog.log_end_offset
    rebuilt = _rebuilt_from_scratch(directory, directory.parent / "copy", config, clock)
    rebuilt.high_watermark = rebuilt.log_end_offset
    assert _state(rebuilt) == _state(ulog)
    assert ulog.last_stable_offset == rebuilt.last_stable_offset


def test_expiration_check_does_not_load_an_idle_producer_state(part_dir: Path, config: BrokerConfig,
                                                               clock: ManualClock) -> None:
    log = UnifiedLog.open(part_dir, config, clock)
    log.append_as_leader(Producer(77).batch(), 0)
    log.close()
    snapshot = next(part_dir.glob("*.snapshot"))
    reopened = UnifiedLog.open(part_dir, config, clock)  # clean shutdown: producer state loads lazily
    clock.advance(config["producer.id.expiration.ms"] + 1)
    snapshot.write_bytes(b"unreadable")  # a check that read the snapshot would fail here
    assert reopened.remove_expired_producers(clock.millis()) == []
    snapshot.unlink()  # now let the state load (from the log) and expire on the next check
    assert [p.producer_id for p in reopened.producer_state.active_producers()] == [77]
    assert reopened.remove_expired_producers(clock.millis()) == [77]


def test_log_start_offset_moves_within_the_high_watermark(ulog: UnifiedLog, part_dir: Path, config: BrokerConfig,
                                                          clock: ManualClock) -> None:
    """DeleteRecords (Kafka's maybeIncrementLogStartOffset): up to the high watermark, never back; reads and
    timestamp lookups below it are gone; segments wholly below it can be deleted; a reopen with the
    checkpointed value keeps it."""
    for _ in range(200):
        ulog.append_as_leader(plain(), 0)  # ~70 bytes a batch, 4096-byte segments: 58 batches each
    ulog.high_watermark = 150
    assert len(ulog.log.segments) > 1
    with pytest.raises(OffsetOutOfRangeError):
        ulog.maybe_increment_log_start_offset(151)
    assert ulog.maybe_increment_log_start_offset(130) and not ulog.maybe_increment_log_start_offset(100)
    assert ulog.log_start_offset == 130
    with pytest.raises(OffsetOutOfRangeError):
        ulog.read(129, 1 << 20, False)
    assert offsets(ulog.read(130, 1 << 20, False).records)[0] == 130
    assert ulog.offset_for_timestamp(0) == (130, TS)
    deleted = ulog.delete_segments_below_start()
    assert (deleted, [s.base_offset for s in ulog.log.segments]) == (2, [116, 174])
    assert sorted(int(p.name.split(".")[0]) for p in part_dir.glob("*.log")) == [s.base_offset for s in
                                                                                 ulog.log.segments]
    ulog.close()
    reopened = UnifiedLog.open(part_dir, config, clock, log_start_offset=130)
    assert (reopened.log_start_offset, reopened.log_end_offset) == (130, 200)
    reopened.close()


def test_log_start_offset_inside_an_open_transaction_holds_the_lso(ulog: UnifiedLog) -> None:
    txn = Producer(7, txn=True)
    ulog.append_as_leader(plain(2), 0)  # offsets 0-1
    ulog.append_as_leader(txn.batch(3), 0)  # 2-4, open
    ulog.high_watermark = ulog.log_end_offset
    assert ulog.last_stable_offset == 2
    ulog.maybe_increment_log_start_offset(4)
    assert (ulog.first_unstable_offset, ulog.last_stable_offset) == (4, 4)  # Kafka: max(first unstable, start)
    ulog.append_marker(7, 0, True, 0, 0)
    ulog.high_watermark = ulog.log_end_offset
    assert ulog.last_stable_offset == 6
