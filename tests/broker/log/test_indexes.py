from __future__ import annotations

from pathlib import Path

import pytest

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
