from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_txn_broker.log.offset_index import OffsetIndex
from kafka_txn_broker.log.time_index import TimeIndex
from kafka_txn_broker.log.transaction_index import AbortedTxn, TransactionIndex


def test_offset_index_append_lookup_reload(tmp_path: Path) -> None:
    path = str(tmp_path / "00000000000000000100.index")
    idx = OffsetIndex(path, 100)
    assert idx.lookup(150) == 0 and not Path(path).exists()  # nothing written until an entry exists
    idx.append(110, 500)
    idx.append(120, 900)
    assert Path(path).stat().st_size == 16
    assert Path(path).read_bytes()[:8] == (10).to_bytes(4, "big") + (500).to_bytes(4, "big")
    assert [idx.lookup(o) for o in (100, 109, 110, 119, 120, 500)] == [0, 0, 500, 500, 900, 900]
    reloaded = OffsetIndex(path, 100)
    assert reloaded.entries() == [(110, 500), (120, 900)]
    with pytest.raises(ValueError):
        reloaded.append(115, 1000)
    reloaded.truncate_to(120)
    assert reloaded.entries() == [(110, 500)] and Path(path).stat().st_size == 8
    assert reloaded.is_sane(600) and not reloaded.is_sane(400)


def test_offset_index_ignores_torn_entry(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.index"
    path.write_bytes((5).to_bytes(4, "big") + (64).to_bytes(4, "big") + b"\x00\x00\x00")
    assert OffsetIndex(str(path), 0).entries() == [(5, 64)]


def test_time_index(tmp_path: Path) -> None:
    path = str(tmp_path / "00000000000000000010.timeindex")
    idx = TimeIndex(path, 10)
    assert idx.maybe_append(1000, 12)
    assert not idx.maybe_append(1000, 13)  # not growing: skipped
    assert idx.maybe_append(2000, 20)
    assert Path(path).stat().st_size == 24
    reloaded = TimeIndex(path, 10)
    assert reloaded.entries() == [(1000, 12), (2000, 20)]
    assert reloaded.offset_before(1000) is None
    assert reloaded.offset_before(1500) == 12 and reloaded.offset_before(5000) == 20
    reloaded.truncate_to(20)
    assert reloaded.entries() == [(1000, 12)]


def test_transaction_index_format_and_collect(tmp_path: Path) -> None:
    path = str(tmp_path / "00000000000000000000.txnindex")
    idx = TransactionIndex(path)
    a = AbortedTxn(7, 0, 10, 11)
    b = AbortedTxn(8, 5, 20, 5)  # an older open txn (pid 7's next?) kept the LSO at 5
    c = AbortedTxn(9, 30, 40, 41)
    for t in (a, b, c):
        idx.append(t)
    raw = Path(path).read_bytes()
    assert len(raw) == 3 * 34
    assert raw[:34] == (0).to_bytes(2, "big") + b"".join(v.to_bytes(8, "big") for v in (7, 0, 10, 11))
    with pytest.raises(ValueError):
        idx.append(AbortedTxn(1, 0, 40, 41))
    reloaded = TransactionIndex(path)
    assert reloaded.entries() == [a, b, c]
    assert reloaded.collect(0, 12) == ([a, b], True)  # a's LSO 11 < 12, c's 41 >= 12: complete
    assert reloaded.collect(11, 25) == ([b], True)
    assert reloaded.collect(41, 50) == ([], False)
    reloaded.truncate_to(20)
    assert reloaded.entries() == [a]
    reloaded.truncate_to(0)
    assert reloaded.entries() == [] and not Path(path).exists()


def test_transaction_index_boundaries(tmp_path: Path) -> None:
    # Kafka's TransactionIndex: entries must come in increasing lastOffset order (the marker's offset, not the
    # LSO); collectAbortedTxns keeps an entry whose lastOffset >= fetchOffset and firstOffset < upperBound, and
    # the search is complete once an entry's lastStableOffset >= upperBound.
    idx = TransactionIndex(str(tmp_path / "00000000000000000000.txnindex"))
    a = AbortedTxn(7, 0, 10, 5)  # another transaction open from 5 held the LSO
    idx.append(a)
    with pytest.raises(ValueError, match=r"^aborted txn AbortedTxn\(producer_id=8.* does not follow AbortedTxn\("
                                         r"producer_id=7.* in .*00000000000000000000\.txnindex$"):
        idx.append(AbortedTxn(8, 6, 8, 9))  # above a's LSO, below its marker
    with pytest.raises(ValueError):
        idx.append(AbortedTxn(8, 6, 10, 11))  # the same marker offset
    assert idx.collect(0, 5) == ([a], True)  # a's LSO 5 reaches the bound 5: nothing later can matter
    assert idx.collect(0, 6) == ([a], False)
    assert idx.collect(3, 3) == ([a], True)  # an empty range: the scan starts at the first entry
    b = AbortedTxn(8, 12, 20, 21)
    idx.append(b)
    assert idx.collect(10, 15) == ([a, b], True)  # a's marker at the fetch offset counts
    assert idx.collect(11, 15) == ([b], True)
    assert idx.collect(0, 12) == ([a], True)  # b starts at the bound: none of its records was fetched


def test_an_empty_range_is_answered_as_kafkas_scan_from_the_first_entry(tmp_path: Path) -> None:
    # Kafka scans from the first entry even when fetchOffset == upperBound: an entry whose LSO (its marker + 1)
    # reaches the bound ends the search as complete, although nothing can be returned.
    idx = TransactionIndex(str(tmp_path / "00000000000000000000.txnindex"))
    a = AbortedTxn(7, 0, 10, 11)
    idx.append(a)
    assert idx.collect(11, 11) == _kafka_collect([a], 11, 11) == ([], True)


def _retained_bytes(work: Callable[[], object], frames: int = 1) -> int:
    """Memory still allocated after `work` (what it keeps, not what it used on the way). With `frames` deep
    enough to reach this file from inside the indexes, only what was allocated under this call counts: a thread
    another test left in the process (a parallel run's worker runs many modules) may allocate meanwhile."""
    gc.collect()
    tracemalloc.start(frames)
    try:
        kept = work()
        gc.collect()
        if frames == 1:
            size = tracemalloc.get_traced_memory()[0]
        else:
            ours = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(True, __file__, all_frames=True)])
            size = sum(trace.size for trace in ours.traces)
    finally:
        tracemalloc.stop()
    del kept
    return size


def test_mirrored_indexes_cost_their_bytes_on_disk(tmp_path: Path) -> None:
    # Kafka's offset index costs 8 bytes an entry and its time index 12 (memory-mapped): in memory an
    # entry may cost that plus the arrays' growth reserve (1/8), not the ~120 bytes of a tuple in a list.
    base = 10**12  # offsets as a busy log has them: no small-int cache
    offsets = OffsetIndex(str(tmp_path / "a.index"), base)
    times = TimeIndex(str(tmp_path / "a.timeindex"), base)
    offsets.load()
    times.load()
    n = 20_000

    def append() -> None:
        for i in range(1, n + 1):
            offsets.append(base + 10 * i, 4096 * i)
            times.maybe_append(1_700_000_000_000 + i, base + 10 * i)

    per_entry = _retained_bytes(append) / n
    assert per_entry <= (8 + 12) * 1.25, per_entry
    assert len(offsets) == len(times) == n and Path(offsets.path).stat().st_size == 8 * n


def test_unloaded_indexes_answer_from_the_file_and_keep_nothing(tmp_path: Path) -> None:
    offsets = OffsetIndex(str(tmp_path / "b.index"), 1000)
    times = TimeIndex(str(tmp_path / "b.timeindex"), 1000)
    offsets.load()
    times.load()
    for i in range(1, 301):
        offsets.append(1000 + 7 * i, 100 * i)
        times.maybe_append(5000 + 3 * i, 1000 + 7 * i)
    probes = range(990, 1000 + 7 * 302)
    mirrored = ([offsets.lookup(o) for o in probes], [times.offset_before(t) for t in range(4990, 6000)],
                offsets.last_entry(), times.last_entry(), times.max_timestamp())
    offsets.unload()
    times.unload()

    def from_file() -> tuple[object, ...]:
        return ([offsets.lookup(o) for o in probes], [times.offset_before(t) for t in range(4990, 6000)],
                offsets.last_entry(), times.last_entry(), times.max_timestamp())

    def read_only() -> None:
        from_file()

    assert from_file() == mirrored
    # Nothing mirrored behind the answers: the smaller mirror, the offset index's 300 entries packed as two int32
    # arrays, would keep 2,400 bytes; under 2 KiB leaves room for a cache a module fills on first use.
    assert _retained_bytes(read_only, frames=12) < 2048
    assert not offsets.loaded and not times.loaded
    offsets.truncate_to(1000 + 7 * 100)  # truncation works on the file too
    assert len(offsets) == 99 and Path(offsets.path).stat().st_size == 99 * 8
    assert offsets.last_entry() == (1000 + 7 * 99, 9900)
    offsets.truncate_to_position(5000)
    assert offsets.last_entry() == (1000 + 7 * 49, 4900)


def _kafka_collect(entries: list[AbortedTxn], fetch_offset: int, upper: int) -> tuple[list[AbortedTxn], bool]:
    """Kafka's TransactionIndex.collectAbortedTxns: a scan from the first entry."""
    found = []
    for txn in entries:
        if txn.last_offset >= fetch_offset and txn.first_offset < upper:
            found.append(txn)
        if txn.last_stable_offset >= upper:
            return found, True
    return found, False


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(1, 30), st.booleans()), min_size=1, max_size=40),
       st.integers(0, 800), st.integers(1, 200))
def test_transaction_index_collect_matches_kafkas_full_scan(tmp_path_factory: pytest.TempPathFactory,
                                                            txns: list[tuple[int, int, bool]], fetch: int,
                                                            span: int) -> None:
    # Aborted transactions as Kafka records them: each marker after the last; the LSO is the first offset of
    # another transaction still open (before the marker) or the marker + 1.
    entries, marker = [], 0
    for gap, length, other_open in txns:
        marker += gap + length
        first = marker - length
        lso = max(0, first - gap) if other_open else marker + 1
        entries.append(AbortedTxn(len(entries), first, marker, lso))
    idx = TransactionIndex(str(tmp_path_factory.mktemp("txn") / "0.txnindex"))
    for t in entries:
        idx.append(t)
    assert not idx.loaded  # an aborted transaction costs no memory
    assert idx.collect(fetch, fetch + span) == _kafka_collect(entries, fetch, fetch + span)
