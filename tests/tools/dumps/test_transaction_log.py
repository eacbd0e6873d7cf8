"""__transaction_state-N dirs as the sweep reads them: coordinator rows, latest state per id and
tombstones, segments of either value version, strict errors naming the file and offset. The codec
itself is tested with the formats (tests/broker/formats/test_transaction_log.py)."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_txn_broker.formats.record_batch import build_batch
from kafka_txn_broker.formats.transaction_log import encode_key
from kafka_txn_broker.formats.transactions import STATE_NAMES
from kafka_txn_tools.dumps import transaction_log as txlog
from tests.tools.dumps.batches import gzip_batch


def meta(tid="t", state="Ongoing", parts=(("a", 0),), pid=5, epoch=1, update=100, start=90, **tags):
    return txlog.TxnMetadata(tid, pid, epoch, 60_000, state, tuple(parts), update, start, **tags)


@given(
    st.sampled_from(STATE_NAMES),
    st.lists(st.tuples(st.sampled_from(["a", "b-c", "ü"]), st.integers(0, 1000)), unique=True, max_size=6),
    st.integers(0, 2**62), st.integers(0, 2**15 - 1), st.sampled_from([0, 1]),
)
def test_coordinator_row_round_trip(state, parts, pid, epoch, version):
    m = meta(state=state, parts=() if state == "Empty" else sorted(parts), pid=pid, epoch=epoch,
             prev_producer_id=pid - 1 if version else -1)
    assert txlog.decode_value("t", txlog.encode_value(m, version)) == m


def test_a_newer_value_version_is_read_as_v1():
    # A reader of copied logs must not fail on a newer broker's records (KIP-915: only new tagged fields).
    v1 = txlog.encode_value(meta(), 1)
    newer = struct.pack(">h", 3) + v1[2:-1] + b"\x01" + b"\x07\x01\x00"  # v3 with an unknown tag 7
    assert txlog.decode_value("t", newer) == meta()


def rec(offset, ts, tid, m):
    return txlog.TxnLogRecord(offset, ts, tid, m)


def test_latest_state_and_tombstones():
    records = [
        rec(0, 10, "a", meta("a", "Empty", (), pid=1, update=10)),
        rec(1, 20, "a", meta("a", "Ongoing", (("x", 1),), pid=1, update=20)),
        rec(2, 30, "b", meta("b", "CompleteCommit", (), pid=2, update=30)),
        rec(3, 40, "b", None),
        rec(4, 50, "c", None),  # tombstone of an id whose value was compacted away
    ]
    latest = txlog.latest_states(records)
    assert set(latest) == {"a", "b"}
    assert latest["a"].state == "Ongoing"
    assert (latest["b"].state, latest["b"].producer_id, latest["b"].last_update_ms) == ("Dead", 2, 40)


def test_segment_roundtrip_with_both_value_versions(tmp_path):
    pdir = tmp_path / "__transaction_state-7"
    pdir.mkdir()
    first = [rec(0, 10, "a", meta("a", "Ongoing", pid=1, update=10))]
    second = [rec(1, 20, "a", meta("a", "PrepareCommit", pid=1, update=20)), rec(2, 30, "z", meta("z", pid=9))]
    txlog.write_segment(pdir / "00000000000000000000.log", first, version=0)
    txlog.write_segment(pdir / "00000000000000000001.log", second, version=1)
    states = txlog.read_transaction_log(pdir)
    assert {k: (v.state, v.producer_id) for k, v in states.items()} == {"a": ("PrepareCommit", 1), "z": ("Ongoing", 9)}
    row = txlog.to_row(states["z"], 3, 99, "transaction-log")
    assert row["partitions"] == [{"topic": "a", "partition": 0}] and row["coordinator_id"] == 3


def test_gzip_batches_of_the_transaction_log(tmp_path):
    pdir = tmp_path / "__transaction_state-1"
    pdir.mkdir()
    value = txlog.encode_value(meta("g", pid=4, parts=[("orders", i) for i in range(40)]), 1)  # compressible
    batch = gzip_batch([(5, encode_key("g"), value)])
    (pdir / "00000000000000000000.log").write_bytes(batch)
    assert txlog.read_transaction_log(pdir)["g"].producer_id == 4


def test_bad_record_names_file_and_offset(tmp_path):
    pdir = tmp_path / "__transaction_state-1"
    pdir.mkdir()
    batch = build_batch([(encode_key("g"), b"\x00\x01\x00")], timestamp_ms=5, base_offset=6)
    (pdir / "00000000000000000006.log").write_bytes(batch)
    with pytest.raises(txlog.TransactionLogError, match=r"00000000000000000006\.log: record at offset 6"):
        txlog.read_transaction_log(pdir)
