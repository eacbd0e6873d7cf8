"""Producer-state snapshots: the formats.md test vector, CRC checks, file selection."""

from __future__ import annotations

import crc32c
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_txn_tools.dumps import snapshot as snap

VECTOR = bytes.fromhex(
    "0001 4eaec20a 00000002"
    " 00000000000003e8 0000 00000009 000000000000006d 00000009 0000018bcfe56800 ffffffff ffffffffffffffff"
    " 00000000000007d0 0003 00000004 0000000000000078 00000004 0000018bcfe57b88 00000007 0000000000000074"
    .replace(" ", "")
)
ENTRIES = [
    snap.SnapshotEntry(1000, 0, 9, 109, 9, 1700000000000, -1, -1),
    snap.SnapshotEntry(2000, 3, 4, 120, 4, 1700000005000, 7, 116),
]


def test_crc32c_check_value():
    assert crc32c.crc32c(b"123456789") == 0xE3069283


def test_decode_vector():
    assert len(VECTOR) == 102
    assert snap.decode_snapshot(VECTOR) == ENTRIES
    assert [e.has_open_transaction for e in ENTRIES] == [False, True]


def test_encode_vector():
    assert snap.encode_snapshot(ENTRIES) == VECTOR


def test_corrupt_byte_is_reported_with_the_file_name():
    broken = bytearray(VECTOR)
    broken[40] ^= 0x01
    with pytest.raises(snap.SnapshotError, match=r"x\.snapshot: CRC mismatch"):
        snap.decode_snapshot(bytes(broken), "x.snapshot")


def test_truncated_and_wrong_version():
    with pytest.raises(snap.SnapshotError, match="too short"):
        snap.decode_snapshot(VECTOR[:8])
    with pytest.raises(snap.SnapshotError, match="entries need"):
        snap.decode_snapshot(b"\x00\x01" + crc32c.crc32c(VECTOR[6:-46]).to_bytes(4, "big") + VECTOR[6:-46])
    with pytest.raises(snap.SnapshotError, match="version 2"):
        snap.decode_snapshot(b"\x00\x02" + VECTOR[2:])


@given(st.lists(st.tuples(
    st.integers(0, 2**63 - 1), st.integers(-1, 2**15 - 1), st.integers(-1, 2**31 - 1), st.integers(-1, 2**62),
    st.integers(0, 2**31 - 1), st.integers(-1, 2**62), st.integers(-1, 2**31 - 1), st.integers(-(2**63), 2**62),
), max_size=20))
def test_roundtrip(fields):
    entries = [snap.SnapshotEntry(*f) for f in fields]
    data = snap.encode_snapshot(entries)
    assert len(data) == 10 + 46 * len(entries)
    assert snap.decode_snapshot(data) == entries


def test_any_negative_first_offset_means_no_transaction():
    assert not snap.SnapshotEntry(1, 0, 0, 0, 0, 0, 0, -5).has_open_transaction


def test_latest_snapshot_ignores_deleted_and_other_files(tmp_path):
    for name in ("00000000000000000100.snapshot", "00000000000000000121.snapshot",
                 "00000000000000000500.snapshot.deleted", "00000000000000000900.log", "leader-epoch-checkpoint"):
        (tmp_path / name).write_bytes(b"")
    assert snap.latest_snapshot(tmp_path).name == "00000000000000000121.snapshot"
    assert snap.snapshot_offset(tmp_path / "00000000000000000121.snapshot") == 121
    empty = tmp_path / "empty"
    empty.mkdir()
    assert snap.latest_snapshot(empty) is None


@pytest.mark.parametrize(("name", "expected"), [
    ("orders-3", ("orders", 3)),
    ("events-000-12", ("events-000", 12)),
    ("__transaction_state-49", ("__transaction_state", 49)),
    ("orders-3.0123456789abcdef0123456789abcdef-delete", None),
    ("orders-3.0123456789abcdef0123456789abcdef-future", None),
    ("orders-3.0123456789abcdef0123456789abcdef-stray", None),
    ("lost+found", None),
    ("orders", None),
])
def test_partition_dir_names(name, expected):
    assert snap.parse_partition_dir(name) == expected
