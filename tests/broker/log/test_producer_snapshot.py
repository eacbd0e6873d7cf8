from __future__ import annotations

from pathlib import Path

import pytest

from kafka_txn_broker.log import producer_snapshot as ps

VECTOR_HEX = (
    "0001 4eaec20a 00000002 | 00000000000003e8 0000 00000009 000000000000006d 00000009 0000018bcfe56800 "
    "ffffffff ffffffffffffffff | 00000000000007d0 0003 00000004 0000000000000078 00000004 0000018bcfe57b88 "
    "00000007 0000000000000074"
)
VECTOR = bytes.fromhex(VECTOR_HEX.replace(" ", "").replace("|", ""))
ENTRIES = [ps.SnapshotEntry(1000, 0, 9, 109, 9, 1700000000000, -1, -1),
           ps.SnapshotEntry(2000, 3, 4, 120, 4, 1700000005000, 7, 116)]


def test_crc32c_check_value() -> None:
    assert ps.crc32c(b"123456789") == 0xE3069283


def test_formats_md_test_vector() -> None:
    assert len(VECTOR) == 102
    assert ps.encode_snapshot(ENTRIES) == VECTOR
    assert ps.decode_snapshot(VECTOR) == ENTRIES


def test_empty_snapshot_is_ten_bytes() -> None:
    data = ps.encode_snapshot([])
    assert len(data) == 10 and ps.decode_snapshot(data) == []


def test_write_read_names_and_listing(tmp_path: Path) -> None:
    path = ps.write_snapshot(tmp_path, 121, ENTRIES)
    assert path.name == "00000000000000000121.snapshot"
    assert ps.read_snapshot(path) == ENTRIES
    (tmp_path / "00000000000000000007.snapshot.deleted").write_bytes(VECTOR)
    (tmp_path / "00000000000000000009.snapshot.tmp").write_bytes(b"partial")
    ps.write_snapshot(tmp_path, 5, [])
    assert ps.list_snapshots(tmp_path) == [5, 121]
    assert not list(tmp_path.glob("*.tmp")) or [p.name for p in tmp_path.glob("*.tmp")] == [
        "00000000000000000009.snapshot.tmp"]
    ps.delete_snapshot(tmp_path, 5)
    ps.delete_snapshot(tmp_path, 5)  # idempotent
    assert ps.list_snapshots(tmp_path) == [121]


@pytest.mark.parametrize("damage, words", [
    (lambda b: b[:-1], "CRC"),
    (lambda b: b[:5], "shorter"),
    (lambda b: b"\x00\x02" + b[2:], "version"),
    (lambda b: b[:20] + bytes([b[20] ^ 1]) + b[21:], "CRC"),
])
def test_corrupt_snapshot_has_clear_error(damage, words) -> None:
    with pytest.raises(ps.CorruptSnapshotError, match=words):
        ps.decode_snapshot(damage(VECTOR), "x.snapshot")


def test_count_mismatch_detected() -> None:
    body = bytearray(ps.encode_snapshot(ENTRIES))
    body[9] = 3  # claims 3 entries
    body[2:6] = ps.crc32c(bytes(body[6:])).to_bytes(4, "big")
    with pytest.raises(ps.CorruptSnapshotError, match="entries"):
        ps.decode_snapshot(bytes(body))
