"""Log-dir trees: broker ids, latest snapshot plus replayed segments, coordinator rows."""

from __future__ import annotations

import os

import pytest

from kafka_txn_broker.formats import producer_snapshot as snap
from kafka_txn_broker.formats.record_batch import build_batch, build_control_batch
from kafka_txn_tools.dumps import logdir
from kafka_txn_tools.dumps import transaction_log as txlog

T0 = 1_700_000_000_000


def partition(root, name, entries=(), offset=100, segment=b""):
    pdir = root / name
    pdir.mkdir(parents=True)
    snap.write_snapshot(pdir, offset, entries)
    (pdir / f"{offset:020d}.log").write_bytes(segment)
    return pdir


def by_pid(rows):
    return {r["producer_id"]: r for r in rows}


def test_node_id_from_meta_properties_or_path(tmp_path):
    a = tmp_path / "disk1"
    partition(a, "orders-0")
    (a / "meta.properties").write_text("#comment\nversion=1\nbroker.id=7\n")
    b = tmp_path / "kafka" / "broker-3" / "data"
    partition(b, "orders-0")
    c = tmp_path / "node-5"
    partition(c, "orders-1")
    (c / "meta.properties").write_text("version=1\nnode.id=9\ncluster.id=x\n")  # meta.properties wins
    found = {(d.topic, d.partition, d.broker_id) for d in logdir.list_partition_dirs(tmp_path)}
    assert found == {("orders", 0, 7), ("orders", 0, 3), ("orders", 1, 9)}


def test_unknown_broker_is_a_clear_error(tmp_path):
    partition(tmp_path / "copy", "orders-0")
    with pytest.raises(logdir.LogDirError, match="meta.properties .*node-<id>"):
        logdir.list_partition_dirs(tmp_path)
    assert logdir.list_partition_dirs(tmp_path, broker_id=2)[0].broker_id == 2


def test_missing_root(tmp_path):
    with pytest.raises(logdir.LogDirError, match="not a directory"):
        logdir.list_partition_dirs(tmp_path / "nope")


def test_deleting_and_future_dirs_are_skipped(tmp_path):
    node = tmp_path / "node-1"
    partition(node, "orders-0", [snap.SnapshotEntry(1, 0, 0, 5, 0, T0, -1, 3)])
    partition(node, "orders-1.6f1e2d3c4b5a69788796a5b4c3d2e1f0-delete", [snap.SnapshotEntry(2, 0, 0, 5, 0, T0, -1, 3)])
    partition(node, "orders-2.6f1e2d3c4b5a69788796a5b4c3d2e1f0-future", [snap.SnapshotEntry(3, 0, 0, 5, 0, T0, -1, 3)])
    producers, _ = logdir.read_tree(tmp_path)
    assert [r["producer_id"] for r in producers] == [1]


def test_snapshot_alone_and_capture_time_from_mtime(tmp_path):
    pdir = partition(tmp_path / "node-1", "orders-0", [snap.SnapshotEntry(1, 2, 9, 99, 3, T0, 4, 90)])
    for f in pdir.iterdir():
        os.utime(f, ns=(T0 * 1_000_000, (T0 + 5_000) * 1_000_000))
    [row] = logdir.producer_rows(logdir.list_partition_dirs(tmp_path)[0])
    assert row == {
        "broker_id": 1, "topic": "orders", "partition": 0, "is_leader": None, "producer_id": 1,
        "producer_epoch": 2, "last_sequence": 9, "last_timestamp_ms": T0, "coordinator_epoch": 4,
        "current_txn_start_offset": 90, "snapshot_offset": 100, "capture_time_ms": T0 + 5_000, "source": "snapshot",
    }
    [told] = logdir.producer_rows(logdir.list_partition_dirs(tmp_path)[0], capture_time_ms=42)
    assert told["capture_time_ms"] == 42


def test_segments_after_the_snapshot_are_replayed(tmp_path):
    stale = [snap.SnapshotEntry(1, 0, 4, 95, 4, T0, 2, 90), snap.SnapshotEntry(2, 1, 0, 96, 0, T0, -1, -1)]
    segment = (
        build_control_batch(1, 0, True, 3, T0 + 60_000, base_offset=100)  # closes pid 1
        + build_batch([(None, b"x")] * 2, timestamp_ms=T0 + 70_000, base_offset=101, producer_id=2, producer_epoch=1,
                      base_sequence=1, transactional=True)  # opens a transaction for pid 2
        + build_batch([(None, b"y")], timestamp_ms=T0 + 80_000, base_offset=103, producer_id=3, producer_epoch=0,
                      base_sequence=0)
        + build_batch([(None, b"z")], timestamp_ms=T0 + 90_000, base_offset=104)  # not idempotent: no producer state
    )
    partition(tmp_path / "node-1", "orders-0", stale, offset=100, segment=segment)
    rows = by_pid(logdir.producer_rows(logdir.list_partition_dirs(tmp_path)[0]))
    assert set(rows) == {1, 2, 3}
    assert (rows[1]["current_txn_start_offset"], rows[1]["coordinator_epoch"], rows[1]["last_timestamp_ms"]) == (
        -1, 3, T0 + 60_000)
    assert (rows[2]["current_txn_start_offset"], rows[2]["last_sequence"], rows[2]["last_timestamp_ms"]) == (
        101, 2, T0 + 70_000)
    assert (rows[3]["current_txn_start_offset"], rows[3]["coordinator_epoch"]) == (-1, -1)
    assert {r["snapshot_offset"] for r in rows.values()} == {105}
    assert {r["source"] for r in rows.values()} == {"snapshot+log"}


def test_without_a_snapshot_the_whole_log_is_replayed(tmp_path):
    pdir = tmp_path / "node-2" / "t-0"
    pdir.mkdir(parents=True)
    (pdir / "00000000000000000000.log").write_bytes(
        build_batch([(None, b"a")], timestamp_ms=T0, producer_id=8, producer_epoch=0, base_sequence=0,
                    transactional=True))
    [row] = logdir.producer_rows(logdir.list_partition_dirs(tmp_path)[0])
    assert (row["producer_id"], row["current_txn_start_offset"], row["source"], row["snapshot_offset"]) == (
        8, 0, "log", 1)


def test_older_snapshots_are_ignored(tmp_path):
    pdir = partition(tmp_path / "node-1", "orders-0", [snap.SnapshotEntry(1, 0, 0, 5, 0, T0, -1, -1)], offset=100)
    snap.write_snapshot(pdir, 50, [snap.SnapshotEntry(1, 0, 0, 5, 0, T0, -1, 3)])
    [row] = logdir.producer_rows(logdir.list_partition_dirs(tmp_path)[0])
    assert row["current_txn_start_offset"] == -1


def test_coordinator_rows_from_transaction_state(tmp_path):
    pdir = tmp_path / "node-4" / "__transaction_state-33"
    pdir.mkdir(parents=True)
    m = txlog.TxnMetadata("my-unique-static-tid", 2000, 3, 60_000, "Ongoing", (("orders", 7),), T0, T0 - 10)
    txlog.write_segment(pdir / "00000000000000000000.log",
                        [txlog.TxnLogRecord(0, T0, m.transactional_id, m)], version=1)
    producers, coordinators = logdir.read_tree(tmp_path, capture_time_ms=T0 + 1)
    assert producers == []
    assert coordinators == [{
        "coordinator_id": 4, "transactional_id": "my-unique-static-tid", "producer_id": 2000, "producer_epoch": 3,
        "state": "Ongoing", "timeout_ms": 60_000, "start_time_ms": T0 - 10, "last_update_ms": T0,
        "partitions": [{"topic": "orders", "partition": 7}], "capture_time_ms": T0 + 1, "source": "transaction-log",
    }]


def test_prepare_records_of_transaction_state_are_the_coordinators_decisions(tmp_path):
    """Every PrepareCommit / PrepareAbort record, not only each id's newest: the newest here is CompleteCommit."""
    pdir = tmp_path / "node-4" / "__transaction_state-33"
    pdir.mkdir(parents=True)
    parts = (("orders", 7), ("orders", 8))

    def rec(offset, state, epoch, ps=parts):
        m = txlog.TxnMetadata("app", 2000, epoch, 60_000, state, ps, T0 + offset, T0 - 10, client_transaction_version=2)
        return txlog.TxnLogRecord(offset, T0 + offset, "app", m)

    txlog.write_segment(pdir / "00000000000000000000.log",
                        [rec(0, "Ongoing", 3), rec(1, "PrepareCommit", 4), rec(2, "CompleteCommit", 4, ()),
                         rec(3, "Ongoing", 4), rec(4, "PrepareAbort", 5), rec(5, "CompleteAbort", 5, ())], version=1)
    decisions: list[dict] = []
    _, coordinators = logdir.read_tree(tmp_path, capture_time_ms=T0 + 9, decisions=decisions)
    assert [c["state"] for c in coordinators] == ["CompleteAbort"]
    assert [(d["state"], d["producer_epoch"], d["offset"], d["txn_partition"], d["coordinator_id"],
             d["client_transaction_version"]) for d in decisions] == [
        ("PrepareCommit", 4, 1, 33, 4, 2), ("PrepareAbort", 5, 4, 33, 4, 2)]
    assert decisions[0]["partitions"] == [{"topic": "orders", "partition": 7}, {"topic": "orders", "partition": 8}]
    assert decisions[0]["last_update_ms"] == T0 + 1
    # What Spark tasks yield: the same rows, as their own kind.
    [txn_dir] = logdir.list_partition_dirs(tmp_path)
    assert [row for kind, row in logdir.read_partition(txn_dir, T0 + 9) if kind == "decisions"] == decisions


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
    assert logdir.parse_partition_dir(name) == expected


def test_the_cluster_of_copied_log_dirs_is_their_meta_properties_cluster_id(tmp_path):
    for node in (0, 1):
        d = tmp_path / f"node-{node}"
        d.mkdir()
        (d / "meta.properties").write_text(f"version=1\nnode.id={node}\ncluster.id=7ZyqV1DkQ3aHh1hWm2sJ9A\n")
    assert logdir.cluster_ids(tmp_path) == {"7ZyqV1DkQ3aHh1hWm2sJ9A"}
    (tmp_path / "node-1" / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=other\n")
    assert logdir.cluster_ids(tmp_path) == {"7ZyqV1DkQ3aHh1hWm2sJ9A", "other"}
    assert logdir.cluster_ids(tmp_path / "node-0" / "missing") == set()
