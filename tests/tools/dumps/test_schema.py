"""The dump format: row checks, JSONL and Parquet writers and readers, the dump directory."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from kafka_txn_tools.dumps import parquet, schema

PRODUCER = {
    "broker_id": 1, "topic": "orders", "partition": 3, "is_leader": True, "producer_id": 2000, "producer_epoch": 3,
    "last_sequence": 4, "last_timestamp_ms": 1_700_000_005_000, "coordinator_epoch": 7,
    "current_txn_start_offset": 116, "capture_time_ms": 1_700_000_010_000, "source": "describe-producers",
}
TXN = {
    "coordinator_id": 2, "transactional_id": "t", "producer_id": 2000, "producer_epoch": 3, "state": "Ongoing",
    "timeout_ms": 60_000, "start_time_ms": 1_700_000_000_000, "partitions": ["orders-3", "a-b-0"],
    "capture_time_ms": 1_700_000_010_000, "source": "describe-transactions",
}
ERROR = {"broker_id": 3, "api": "DescribeProducers", "topic": "orders", "partition": 1, "error_code": 6,
         "error_name": "NOT_LEADER_OR_FOLLOWER", "message": "moved", "capture_time_ms": 1}


def test_conform_fills_nullable_and_parses_partitions():
    row = schema.conform_row(schema.TRANSACTIONS, TXN)
    assert row["last_update_ms"] is None
    assert row["partitions"] == [{"topic": "orders", "partition": 3}, {"topic": "a-b", "partition": 0}]
    assert schema.conform_row(schema.PRODUCERS, PRODUCER)["snapshot_offset"] is None


@pytest.mark.parametrize(("kind", "row", "message"), [
    (schema.PRODUCERS, {**PRODUCER, "producer_id": None}, "missing required column 'producer_id'"),
    (schema.PRODUCERS, {**PRODUCER, "pid": 1}, r"unknown columns \['pid'\]"),
    (schema.TRANSACTIONS, {**TXN, "state": "ONGOING"}, "unknown transaction state 'ONGOING'"),
    (schema.TRANSACTIONS, {**TXN, "partitions": ["orders"]}, "expected TOPIC-N"),
])
def test_bad_rows_name_the_problem(kind, row, message):
    with pytest.raises(schema.DumpFormatError, match=message):
        schema.conform_row(kind, row)


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_dump_writer_roundtrip_and_manifest(tmp_path, fmt):
    writer = schema.DumpWriter(tmp_path / "d", fmt, capture_time_ms=1_700_000_000_000)
    writer.add(schema.PRODUCERS, [PRODUCER, {**PRODUCER, "broker_id": 2, "is_leader": False}])
    writer.add_table(schema.PRODUCERS, parquet.rows_to_table(schema.PRODUCERS, [{**PRODUCER, "broker_id": 3}]))
    writer.add(schema.TRANSACTIONS, [TXN])
    writer.add(schema.ERRORS, [ERROR])
    writer.cluster_id = "7ZyqV1DkQ3aHh1hWm2sJ9A"  # the sweep's plan records it
    manifest = writer.close()
    d = tmp_path / "d"
    assert sorted(p.name for p in (d / "producers").iterdir()) == [f"part-00000.{fmt}", f"part-00001.{fmt}"]
    assert manifest.counts == {"producers": 3, "transactions": 1, "errors": 1}
    assert manifest.brokers == [1, 2, 3]
    assert manifest.max_capture_time_ms == 1_700_000_010_000
    assert schema.Manifest.read(d) == manifest and manifest.cluster_id == "7ZyqV1DkQ3aHh1hWm2sJ9A"
    assert json.loads((d / "manifest.json").read_text())["format"] == fmt
    producers = list(schema.read_rows(d, schema.PRODUCERS))
    assert [r["broker_id"] for r in producers] == [1, 2, 3]
    assert producers[0] == schema.conform_row(schema.PRODUCERS, PRODUCER)
    [txn] = schema.read_rows(d, schema.TRANSACTIONS)
    assert txn["partitions"][1] == {"topic": "a-b", "partition": 0}
    assert schema.is_dump_dir(d) and not schema.is_dump_dir(tmp_path)


def test_parquet_files_carry_the_documented_schema(tmp_path):
    path = tmp_path / "p.parquet"
    parquet.write_parquet([PRODUCER], path, schema.PRODUCERS)
    assert pq.read_schema(path).equals(parquet.PRODUCER_SCHEMA, check_metadata=False)


def test_jsonl_errors_name_file_and_line(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text(json.dumps(PRODUCER) + "\n" + json.dumps({**PRODUCER, "topic": None}) + "\n")
    with pytest.raises(schema.DumpFormatError, match=r"x\.jsonl:2: .*'topic'"):
        list(schema.read_jsonl(path, schema.PRODUCERS))


def test_mixed_formats_are_refused(tmp_path):
    (tmp_path / "producers").mkdir()
    (tmp_path / "producers" / "a.parquet").write_bytes(b"")
    (tmp_path / "producers" / "b.jsonl").write_text("")
    with pytest.raises(schema.DumpFormatError, match="mixes"):
        schema.dump_files(tmp_path, schema.PRODUCERS)


def test_bad_manifest(tmp_path):
    (tmp_path / "manifest.json").write_text("{}")
    with pytest.raises(schema.DumpFormatError, match="capture_time_ms"):
        schema.Manifest.read(tmp_path)
