from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_txn_broker.clock import ManualClock
from kafka_txn_broker.formats.record_batch import BatchHeader, build_batch
from kafka_txn_broker.log.segment import LogSegment

TS = 1_700_000_000_000


def _fill(seg: LogSegment, sizes: list[int]) -> list[bytes]:
    written = []
    offset = seg.base_offset
    for i, size in enumerate(sizes):
        raw = build_batch([(b"k", bytes([i % 251]) * size)] * 2, timestamp_ms=TS + i, base_offset=offset)
        seg.append(raw, [(0, BatchHeader.parse(raw))], ManualClock(TS))
        written.append(raw)
        offset += 2
    return written


def test_create_names_and_empty_file(tmp_path: Path) -> None:
    seg = LogSegment.create(str(tmp_path), 1234, 4096)
    assert Path(seg.log_path).name == "00000000000000001234.log"
    assert Path(seg.index_path).name == "00000000000000001234.index"
    assert Path(seg.time_index_path).name == "00000000000000001234.timeindex"
    assert Path(seg.txn_index_path).name == "00000000000000001234.txnindex"
    assert [p.name for p in tmp_path.iterdir()] == ["00000000000000001234.log"]
    assert seg.read_next_offset() == 1234 and seg.find(1234) is None


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from([10, 300, 5_000, 40_000, 70_000, 150_000]), min_size=1, max_size=12))
def test_scans_cross_read_chunks_and_big_batches(tmp_path_factory, sizes) -> None:
    directory = tmp_path_factory.mktemp("seg")
    seg = LogSegment.create(str(directory), 100, 4096)
    written = _fill(seg, sizes)
    assert [bytes(raw) for _, _, raw in seg.iter_batches(0)] == written
    assert [h.base_offset for _, h in seg.iter_headers(0)] == [100 + 2 * i for i in range(len(sizes))]
    assert seg.read_next_offset() == 100 + 2 * len(sizes)
    for i in range(len(sizes)):
        for off in (100 + 2 * i, 101 + 2 * i):
            pos, header = seg.find(off)
            assert header.base_offset == 100 + 2 * i and pos == sum(len(w) for w in written[:i])


def test_recover_keeps_good_batches_and_rebuilds_indexes(tmp_path: Path) -> None:
    seg = LogSegment.create(str(tmp_path), 0, 100)
    written = _fill(seg, [200] * 10)
    good_size = seg.size
    with open(seg.log_path, "ab") as f:
        f.write(b"\x00" * 7)  # garbage shorter than a header
    reloaded = LogSegment(str(tmp_path), 0, good_size + 7, 100)
    assert reloaded.recover() == (7, 20)
    assert reloaded.size == good_size and Path(reloaded.log_path).stat().st_size == good_size
    assert reloaded.offset_index.entries() == seg.offset_index.entries()
    assert b"".join(bytes(r) for _, _, r in reloaded.iter_batches(0)) == b"".join(written)


def test_recover_rejects_offsets_going_backwards(tmp_path: Path) -> None:
    seg = LogSegment.create(str(tmp_path), 0, 4096)
    _fill(seg, [10, 10])
    raw = build_batch([(b"k", b"v")], timestamp_ms=TS, base_offset=1)  # overlaps the previous batch
    seg.append(raw, [(0, BatchHeader.parse(raw))], ManualClock(TS))
    assert seg.recover() == (len(raw), 4)


def test_lazy_indexes_are_sanity_checked(tmp_path: Path) -> None:
    seg = LogSegment.create(str(tmp_path), 0, 100)
    _fill(seg, [200] * 10)
    good = seg.offset_index.entries()
    Path(seg.index_path).write_bytes(b"\x00\x00\x00\x05\x7f\xff\xff\xff")  # points past the end
    reopened = LogSegment(str(tmp_path), 0, seg.size, 100)
    assert reopened.offset_index.entries() == good
