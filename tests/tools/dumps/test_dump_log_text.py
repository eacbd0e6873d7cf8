"""kafka-dump-log.sh text in every style: snapshots (2.x, 3.1-3.4, 3.5+) and transaction logs."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from kafka_txn_broker.formats.producer_snapshot import SnapshotEntry
from kafka_txn_tools.dumps import dump_log_text as dlt
from kafka_txn_tools.dumps import transaction_log as txlog
from tests.support import dump_log_render as render

FIXTURES = Path(__file__).parent / "fixtures"
EXPECTED = {
    1000: {"producer_epoch": 0, "coordinator_epoch": -1, "current_txn_start_offset": -1,
           "last_timestamp_ms": 1700000000000, "last_sequence": 9},
    2000: {"producer_epoch": 3, "coordinator_epoch": 7, "current_txn_start_offset": 116,
           "last_timestamp_ms": 1700000005000, "last_sequence": 4},
}


def rows_by_pid(rows):
    return {r["producer_id"]: r for r in rows}


@pytest.mark.parametrize("style", ["2.x", "3.1", "3.5"])
def test_snapshot_styles(style):
    producers, coordinators = dlt.parse_dump_log_text(FIXTURES / f"snapshot-{style}.txt", broker_id=4,
                                                      capture_time_ms=1)
    assert coordinators == []
    got = rows_by_pid(producers)
    assert set(got) == {1000, 2000, 3000}  # 3.5: the older snapshot (pid 9) and the -delete dir are ignored
    for pid, fields in EXPECTED.items():
        assert {k: got[pid][k] for k in fields} == fields
        assert (got[pid]["broker_id"], got[pid]["topic"], got[pid]["partition"]) == (4, "orders", 7)
        assert got[pid]["snapshot_offset"] == 121 and got[pid]["source"] == "dump-log-text"
    # No batch metadata: 2.x has no timestamp at all, later versions print lastTimestamp.
    assert got[3000]["last_timestamp_ms"] == (-1 if style == "2.x" else 1699999990000)
    assert got[3000]["last_sequence"] == -1


def test_broker_from_dumped_path_file_name_or_argument(tmp_path):
    producers, _ = dlt.parse_dump_log_text(FIXTURES / "snapshot-2.x.txt")  # .../node-4/orders-7/...
    assert {r["broker_id"] for r in producers} == {4}
    named = tmp_path / "broker-12-snapshots.txt"
    shutil.copy(FIXTURES / "snapshot-3.1.txt", named)
    assert {r["broker_id"] for r in dlt.parse_dump_log_text(named)[0]} == {12}
    with pytest.raises(dlt.DumpLogTextError, match="cannot tell which broker .*broker-<id>"):
        dlt.parse_dump_log_text(FIXTURES / "snapshot-3.1.txt")


def test_capture_time_is_the_file_mtime(tmp_path):
    copy = tmp_path / "broker-1.txt"
    shutil.copy(FIXTURES / "snapshot-3.5.txt", copy)
    os.utime(copy, ns=(0, 1_700_000_123_000 * 1_000_000))
    assert {r["capture_time_ms"] for r in dlt.parse_dump_log_text(copy)[0]} == {1_700_000_123_000}


def test_transaction_log_pre_4_0_text():
    _, coordinators = dlt.parse_dump_log_text(FIXTURES / "txnlog-3.x.txt", capture_time_ms=5)
    by_id = {r["transactional_id"]: r for r in coordinators}
    assert set(by_id) == {"my-unique-static-tid", "gone-away"}
    row = by_id["my-unique-static-tid"]
    assert (row["coordinator_id"], row["producer_id"], row["producer_epoch"], row["state"]) == (2, 2000, 3, "Ongoing")
    assert row["partitions"] == [{"topic": "orders", "partition": 7}, {"topic": "audit-log", "partition": 0}]
    assert (row["timeout_ms"], row["last_update_ms"], row["start_time_ms"]) == (60000, 1700000005090, None)
    # The tombstone: Dead, keeping the producer id, stamped with the tombstone record's time.
    gone = by_id["gone-away"]
    assert (gone["state"], gone["producer_id"], gone["last_update_ms"]) == ("Dead", 55, 1700000009000)


def test_transaction_log_4_0_json_numbers_and_names():
    _, coordinators = dlt.parse_dump_log_text(FIXTURES / "txnlog-4.0.txt", broker_id=1, capture_time_ms=5)
    by_id = {r["transactional_id"]: r for r in coordinators}
    first = by_id["kafka-txn-0"]
    assert (first["state"], first["producer_id"], first["start_time_ms"]) == ("Ongoing", 12, 1700000005000)
    assert first["partitions"] == [{"topic": "payments", "partition": 0}, {"topic": "payments", "partition": 2}]
    named = by_id["named"]
    assert (named["state"], named["producer_epoch"], named["partitions"]) == (
        "PrepareCommit", 4, [{"topic": "a-b", "partition": 1}])


def test_transaction_log_4_0_prepare_records_are_the_coordinators_decisions():
    decisions: list[dict] = []
    dlt.parse_dump_log_text(FIXTURES / "txnlog-4.0.txt", broker_id=1, capture_time_ms=5, decisions=decisions)
    assert decisions == [{
        "coordinator_id": 1, "transactional_id": "named", "state": "PrepareCommit", "producer_id": 13,
        "producer_epoch": 4, "prev_producer_id": -1, "client_transaction_version": 0,
        "partitions": [{"topic": "a-b", "partition": 1}], "last_update_ms": 1700000006990, "txn_partition": 30,
        "offset": 2}]


def test_not_dump_log_output(tmp_path):
    other = tmp_path / "notes.txt"
    other.write_text("hello\n")
    assert not dlt.looks_like_dump_log_text(other)
    with pytest.raises(dlt.DumpLogTextError, match="no 'Dumping <file>' line"):
        dlt.parse_dump_log_text(other, broker_id=1)
    assert dlt.looks_like_dump_log_text(FIXTURES / "txnlog-4.0.txt")


def test_bad_offset_token_is_reported():
    with pytest.raises(dlt.DumpLogTextError, match="currentTxnFirstOffset 'Optional"):
        dlt.parse_snapshot_line(
            "producerId: 1 producerEpoch: 0 coordinatorEpoch: 0 currentTxnFirstOffset: Optional[5] lastTimestamp: 1")


@pytest.mark.parametrize("style", render.SNAPSHOT_STYLES)
def test_rendered_snapshot_styles_parse_back(tmp_path, style):
    entries = [SnapshotEntry(1, 2, 3, 40, 3, 1_700_000_000_000, 5, 37), SnapshotEntry(6, 0, -1, -1, 0, 9, -1, -1)]
    path = tmp_path / "broker-3.txt"
    path.write_text(render.render_snapshot("/d/t-x-2/00000000000000000050.snapshot", entries, style))
    got = rows_by_pid(dlt.parse_dump_log_text(path, capture_time_ms=0)[0])
    assert (got[1]["current_txn_start_offset"], got[1]["last_timestamp_ms"], got[1]["topic"]) == (
        37, 1_700_000_000_000, "t-x")
    assert got[6]["current_txn_start_offset"] == -1


@pytest.mark.parametrize("style", render.TXN_LOG_STYLES)
def test_rendered_transaction_logs_parse_back(tmp_path, style):
    m = txlog.TxnMetadata("id-1", 3, 2, 1000, "PrepareAbort", (("t", 1), ("u-v", 0)), 50, 40)
    records = [txlog.TxnLogRecord(0, 50, "id-1", m), txlog.TxnLogRecord(1, 60, "id-2", None)]
    path = tmp_path / "x.txt"
    path.write_text(render.render_transaction_log("/k/node-6/__transaction_state-3/00000000000000000000.log",
                                                  records, style))
    [row] = dlt.parse_dump_log_text(path, capture_time_ms=0)[1]
    assert (row["coordinator_id"], row["state"], row["producer_epoch"]) == (6, "PrepareAbort", 2)
    assert row["partitions"] == [{"topic": "t", "partition": 1}, {"topic": "u-v", "partition": 0}]
