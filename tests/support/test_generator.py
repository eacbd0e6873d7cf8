"""The generator: the three input kinds describe the same cluster; ground truth is consistent."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from kafka_txn_broker.formats.transactions import LATE_TRANSACTION_BUFFER_MS
from kafka_txn_tools.dumps import logdir, schema
from kafka_txn_tools.dumps.dump_log_text import parse_dump_log_text
from kafka_txn_tools.dumps.plan import HANGING_REASONS
from tests.support import generator as gen

CFG = gen.GeneratorConfig(seed=11, brokers=4, topics=2, partitions_per_topic=5, replication_factor=3)
STATE = ("producer_epoch", "last_timestamp_ms", "coordinator_epoch", "current_txn_start_offset")


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    out = tmp_path_factory.mktemp("gen")
    gen.write_dump(CFG, out / "dump")
    gen.write_dump(CFG, out / "jsonl", "jsonl")
    gen.write_logdirs(CFG, out / "logdir")
    gen.write_dump_log_text(CFG, out / "text")
    return out


def replica_state(rows):
    return {(r["broker_id"], r["topic"], r["partition"], r["producer_id"]): tuple(r[k] for k in STATE) for r in rows}


def test_every_kind_holds_the_same_replica_state(generated):
    dump = replica_state(schema.read_rows(generated / "dump", schema.PRODUCERS))
    assert replica_state(schema.read_rows(generated / "jsonl", schema.PRODUCERS)) == dump
    assert replica_state(logdir.read_tree(generated / "logdir")[0]) == dump
    text_rows = [r for f in sorted((generated / "text").glob("*.txt")) for r in parse_dump_log_text(f)[0]]
    assert replica_state(text_rows) == dump
    truth = json.loads((generated / "dump" / "ground-truth.json").read_text())
    assert truth["producer_rows"] == len(dump)


def test_stale_snapshots_need_the_replay(generated):
    """Closed-after-snapshot cases: the snapshot alone shows them open; the segments close them."""
    cluster = gen.Cluster(CFG)
    closed = {i.producer_id for i in cluster.injected if i.case == "closed-after-snapshot"}
    assert closed
    replayed = [r for r in logdir.read_tree(generated / "logdir")[0] if r["producer_id"] in closed]
    snapshot_only = [r for d in logdir.list_partition_dirs(generated / "logdir")
                     for r in logdir.producer_rows(d, replay=False) if r["producer_id"] in closed]
    assert all(r["current_txn_start_offset"] == -1 for r in replayed)
    assert snapshot_only and all(r["current_txn_start_offset"] >= 0 for r in snapshot_only)


def test_ground_truth_covers_every_reason_and_depends_on_the_kind(generated):
    dump = json.loads((generated / "dump" / "ground-truth.json").read_text())
    text = json.loads((generated / "text" / "ground-truth.json").read_text())
    reasons = {r["reason"] for r in dump["expected"]}
    assert reasons == {*HANGING_REASONS, "late"}
    # An expired id is "not found" when listed live, but simply absent from the logs.
    assert "transactional-id-not-found" not in {r["reason"] for r in text["expected"]}
    assert len(text["expected"]) == len(dump["expected"])
    assert {d["kind"] for d in dump["divergence"]} == {"open-on-follower-not-leader", "open-on-leader-not-follower"}
    assert sum(dump["late_partitions_by_broker"].values()) >= 1


def test_injected_ages_straddle_the_thresholds():
    cluster = gen.Cluster(CFG)
    now, timeout = CFG.capture_time_ms, CFG.max_transaction_timeout_ms
    ages = {i.case: [] for i in cluster.injected}
    for i in cluster.injected:
        ages[i.case].append(now - i.last_timestamp_ms)
    assert ages["boundary"] == [timeout]  # strict rule: not late
    assert max(ages["healthy"]) < timeout
    late = ages["late"]
    metric_threshold = timeout + LATE_TRANSACTION_BUFFER_MS
    assert any(a <= metric_threshold for a in late) and any(a > metric_threshold for a in late)


def test_large_dumps_are_written_in_chunks(tmp_path):
    cfg = gen.GeneratorConfig.for_rows(60_000, seed=3, chunk_partitions=1_000)
    out = gen.write_dump(cfg, tmp_path / "big")
    files = sorted((out / "producers").glob("*.parquet"))
    assert len(files) > 3
    total = sum(pq.read_metadata(f).num_rows for f in files)
    truth = json.loads((out / "ground-truth.json").read_text())
    assert total == truth["producer_rows"] == schema.Manifest.read(out).counts["producers"]
    assert 30_000 < total < 120_000
    counts = gen.Cluster(cfg).counts
    assert counts.max() > 5 * counts.mean()  # a heavy tail


def test_cli(tmp_path, capsys):
    assert gen.main([str(tmp_path), "--kind", "text", "--topics", "1", "--partitions-per-topic", "3"]) == 0
    assert (tmp_path / "ground-truth.json").is_file()
    assert "wrote text" in capsys.readouterr().out
