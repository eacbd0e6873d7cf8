"""`.snapshot` files: the formats.md test vector, CRC and size checks naming the file, names and listing."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_txn_broker.formats import producer_snapshot as ps
from kafka_txn_broker.formats.record_batch import crc32c

VECTOR_HEX = (
    "0001 4eaec20a 00000002 | 00000000000003e8 0000 00000009 000000000000006d 00000009 0000018bcfe56800 "
    "ffffffff ffffffffffffffff | 00000000000007d0 0003 00000004 0000000000000078 00000004 0000018bcfe57b88 "
    "00000007 0000000000000074"
)
VECTOR = bytes.fromhex(VECTOR_HEX.replace(" ", "").replace("|", ""))
ENTRIES = [ps.SnapshotEntry(1000, 0, 9, 109, 9, 1700000000000, -1, -1),
           ps.SnapshotEntry(2000, 3, 4, 120, 4, 1700000005000, 7, 116)]


def test_crc32c_check_value() -> None:
    assert crc32c(b"123456789") == 0xE3069283


def test_formats_md_test_vector() -> None:
    assert len(VECTOR) == 102
    assert ps.encode_snapshot(ENTRIES) == VECTOR
    assert ps.decode_snapshot(VECTOR) == ENTRIES
    assert [e.has_open_transaction for e in ENTRIES] == [False, True]


def test_any_negative_first_offset_means_no_transaction() -> None:
    assert not ps.SnapshotEntry(1, 0, 0, 0, 0, 0, 0, -5).has_open_transaction


def test_empty_snapshot_is_ten_bytes() -> None:
    data = ps.encode_snapshot([])
    assert len(data) == 10 and ps.decode_snapshot(data) == []


@given(st.lists(st.tuples(
    st.integers(0, 2**63 - 1), st.integers(-1, 2**15 - 1), st.integers(-1, 2**31 - 1), st.integers(-1, 2**62),
    st.integers(0, 2**31 - 1), st.integers(-1, 2**62), st.integers(-1, 2**31 - 1), st.integers(-(2**63), 2**62),
), max_size=20))
def test_round_trip(fields: list[tuple[int, ...]]) -> None:
    entries = [ps.SnapshotEntry(*f) for f in fields]
    data = ps.encode_snapshot(entries)
    assert len(data) == 10 + 46 * len(entries)
    assert ps.decode_snapshot(data) == entries


def test_write_read_names_and_listing(tmp_path: Path) -> None:
    path = ps.write_snapshot(tmp_path, 121, ENTRIES)
    assert path.name == "00000000000000000121.snapshot"
    assert ps.read_snapshot(path) == ENTRIES
    assert ps.snapshot_offset(path) == 121
    (tmp_path / "00000000000000000500.snapshot.deleted").write_bytes(VECTOR)
    (tmp_path / "00000000000000000009.snapshot.tmp").write_bytes(b"partial")
    (tmp_path / "00000000000000000900.log").write_bytes(b"")
    (tmp_path / "leader-epoch-checkpoint").write_bytes(b"")
    ps.write_snapshot(tmp_path, 5, [])
    assert ps.list_snapshots(tmp_path) == [5, 121]
    assert ps.latest_snapshot(tmp_path) == path
    ps.delete_snapshot(tmp_path, 5)
    ps.delete_snapshot(tmp_path, 5)  # idempotent
    assert ps.list_snapshots(tmp_path) == [121]
    assert ps.latest_snapshot(tmp_path / "missing") is None


def test_a_name_that_is_not_a_snapshot_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ps.CorruptSnapshotError, match="not a snapshot file name"):
        ps.snapshot_offset(tmp_path / "00000000000000000500.snapshot.deleted")


@pytest.mark.parametrize("damage, words", [
    (lambda b: b[:-1], r"x\.snapshot: CRC mismatch"),
    (lambda b: b[:5], r"x\.snapshot: 5 bytes is too short"),
    (lambda b: b"\x00\x02" + b[2:], r"x\.snapshot: snapshot version 2"),
    (lambda b: b[:20] + bytes([b[20] ^ 1]) + b[21:], r"x\.snapshot: CRC mismatch"),
])
def test_corrupt_snapshot_names_file_and_problem(damage, words) -> None:
    with pytest.raises(ps.CorruptSnapshotError, match=words):
        ps.decode_snapshot(damage(VECTOR), "x.snapshot")


def test_count_mismatch_detected() -> None:
    body = bytearray(ps.encode_snapshot(ENTRIES))
    body[9] = 3  # claims 3 entries
    body[2:6] = crc32c(bytes(body[6:])).to_bytes(4, "big")
    with pytest.raises(ps.CorruptSnapshotError, match="3 entries need 148 bytes"):
        ps.decode_snapshot(bytes(body))
