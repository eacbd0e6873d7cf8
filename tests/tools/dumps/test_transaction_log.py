"""__transaction_state: keys, values v0/v1, tombstones, latest state per id, partitioning."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_txn_broker.log.record_batch import build_batch
from kafka_txn_tools.dumps import transaction_log as txlog
from kafka_txn_tools.dumps.schema import TXN_STATES
from tests.tools.dumps.batches import gzip_batch

# An Ongoing record written by a transaction-version-1 coordinator (flexible value v1):
# pid 0, epoch 0, timeout 60000, Ongoing, [txtest-0], last update = start = 0x019e7b4b367a.
V1_ONGOING = bytes.fromhex(
    "0001" "0000000000000000" "0000" "0000ea60" "01" "02" "07" "747874657374" "02" "00000000" "00"
    "0000019e7b4b367a" "0000019e7b4b367a" "00"
)


def meta(tid="t", state="Ongoing", parts=(("a", 0),), pid=5, epoch=1, update=100, start=90, tagged=None):
    return txlog.TxnMetadata(tid, pid, epoch, 60_000, state, tuple(parts), update, start, tagged or {})


def test_decode_flexible_v1_vector():
    m = txlog.decode_value("my-txn-id", V1_ONGOING)
    assert (m.producer_id, m.producer_epoch, m.timeout_ms, m.state) == (0, 0, 60_000, "Ongoing")
    assert m.partitions == (("txtest", 0),)
    assert m.last_update_ms == m.start_time_ms == 0x019E7B4B367A
    assert txlog.encode_value(m, version=1) == V1_ONGOING


def test_v1_tagged_fields_known_read_unknown_skipped():
    base = V1_ONGOING[:-1]
    tags = (b"\x03"  # three tagged fields
            + b"\x00\x08" + struct.pack(">q", 41)  # PreviousProducerId
            + b"\x02\x02" + struct.pack(">h", 2)  # ClientTransactionVersion
            + b"\x09\x03abc")  # unknown tag 9: skipped
    m = txlog.decode_value("x", base + tags)
    assert m.tagged == {0: 41, 2: 2}
    assert m.state == "Ongoing"


def test_decode_v0_by_hand():
    value = (struct.pack(">hqhib", 0, 77, 3, 30_000, 3) + struct.pack(">i", 1) + struct.pack(">h", 6) + b"orders"
             + struct.pack(">iii", 2, 0, 4) + struct.pack(">qq", 1_000, -1))
    m = txlog.decode_value("v0", value)
    assert (m.producer_id, m.producer_epoch, m.state, m.start_time_ms) == (77, 3, "PrepareAbort", -1)
    assert m.partitions == (("orders", 0), ("orders", 4))


@given(
    st.sampled_from(TXN_STATES),
    st.lists(st.tuples(st.sampled_from(["a", "b-c", "ü"]), st.integers(0, 1000)), unique=True, max_size=6),
    st.integers(0, 2**62), st.integers(0, 2**15 - 1), st.sampled_from([0, 1]),
)
def test_value_roundtrip(state, parts, pid, epoch, version):
    m = meta(state=state, parts=sorted(parts), pid=pid, epoch=epoch)
    decoded = txlog.decode_value("t", txlog.encode_value(m, version))
    assert decoded == m
    assert sorted(decoded.partitions) == sorted(parts)


def test_truncated_value_names_the_field():
    with pytest.raises(txlog.TransactionLogError, match="TransactionTimeoutMs"):
        txlog.decode_value("t", V1_ONGOING[:13])
    with pytest.raises(txlog.TransactionLogError, match="status 9"):
        txlog.decode_value("t", struct.pack(">hqhib", 0, 1, 0, 1, 9))


def test_key():
    assert txlog.decode_key(txlog.encode_key("my-id")) == "my-id"
    with pytest.raises(txlog.TransactionLogError, match="key version 2"):
        txlog.decode_key(struct.pack(">hh", 2, 1) + b"x")


@pytest.mark.parametrize(("tid", "partition"), [("my-unique-static-tid", 33), ("kafka-txn-0", 30)])
def test_partition_for(tid, partition):
    assert txlog.partition_for(tid) == partition


def test_min_value_hash_maps_to_partition_zero():
    assert txlog.partition_for("polygenelubricants") == 0  # hashCode is Integer.MIN_VALUE: Utils.abs -> 0


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
    batch = gzip_batch([(5, txlog.encode_key("g"), value)])
    (pdir / "00000000000000000000.log").write_bytes(batch)
    assert txlog.read_transaction_log(pdir)["g"].producer_id == 4


def test_bad_record_names_file_and_offset(tmp_path):
    pdir = tmp_path / "__transaction_state-1"
    pdir.mkdir()
    batch = build_batch([(txlog.encode_key("g"), b"\x00\x01\x00")], timestamp_ms=5, base_offset=6)
    (pdir / "00000000000000000006.log").write_bytes(batch)
    with pytest.raises(txlog.TransactionLogError, match=r"00000000000000000006\.log: record at offset 6"):
        txlog.read_transaction_log(pdir)
