"""Against the embedded broker: the sweep gives the same verdicts as a live
`find-hanging --all`, from a `kafka-txn dump` and from the broker's own data dir, and its abort plan
unblocks the stalled read_committed consumers."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_tools.cli import exit_codes
from tests.e2e.cli_support import kafka_txn
from tests.e2e.test_cli_hanging import CONFIG, committed_after_hang, read_committed, scenarios, truth

pytestmark = pytest.mark.needs("java")  # the sweep runs Spark

Verdict = tuple[str, int, int, int, str]


def verdicts(rows: list[dict]) -> set[Verdict]:
    return {(r["topic"], r["partition"], r["producer_id"], r["start_offset"], r["reason"]) for r in rows}


def sweep(inputs: list[Path], out: Path) -> set[Verdict]:
    from kafka_txn_tools.spark.job import run_sweep

    result = run_sweep([str(p) for p in inputs], out, master="local[2]")
    assert (out / "abort-plan.yaml").exists() and (out / "report.html").exists()
    return verdicts(result.hanging)


def test_sweep_matches_live_find_hanging_and_its_plan_unblocks_consumers(spark: object, tmp_path: Path) -> None:
    # `spark`: the run's one session (tests/conftest.py), which run_sweep reuses instead of starting its own.
    data = tmp_path / "kafka"
    with EmbeddedCluster(nodes=3, data_dir=data, config=CONFIG) as cluster:
        bs = cluster.bootstrap_servers
        results = scenarios(bs)
        for r in results:
            committed_after_hang(bs, r.topics[0])
        live = kafka_txn(bs, "find-hanging", "--all", "-o", "json")
        assert live.code == 0, live.err
        expected = verdicts(live.json()["hanging"])
        assert {v[:4] for v in expected} == truth(results)  # live find-hanging = ground truth

        dump = tmp_path / "dump"
        assert kafka_txn(bs, "dump", "--all", "--out", str(dump)).code == 0
        assert sweep([dump], tmp_path / "from-dump") == expected

    # The broker's own data dir is a Kafka log-dir tree (snapshots written at the clean shutdown).
    assert sweep([data], tmp_path / "from-logdirs") == expected
    # Both plans record the cluster they were made on (the dump's manifest; the log dirs' meta.properties) and
    # when its state was read: `abort --plan` refuses them on any other cluster.
    from kafka_txn_tools.dumps.plan import load_plan

    for made in ("from-dump", "from-logdirs"):
        plan_made = load_plan(tmp_path / made / "abort-plan.yaml")
        assert plan_made.cluster_id == "kafka-txn-embedded" and plan_made.capture_time_ms is not None

    with EmbeddedCluster(nodes=3, data_dir=data, config=CONFIG) as cluster:
        bs = cluster.bootstrap_servers
        for r in results:
            assert not any(v.endswith(b"-after-0") for v in read_committed(bs, r.topics[0]))  # stalled
        plan = tmp_path / "from-dump" / "abort-plan.yaml"
        applied = kafka_txn(bs, "abort", "--plan", str(plan), "--yes", "-o", "json")
        assert applied.code == exit_codes.OK, applied.err
        assert [a["result"] for a in applied.json()["aborts"]] == ["aborted"] * len(expected)
        for r in results:
            assert any(v.endswith(b"-after-2") for v in read_committed(bs, r.topics[0]))  # resumed
        after = kafka_txn(bs, "find-hanging", "--all", "--exit-code", "-o", "json")
        assert after.code == exit_codes.OK and after.json()["hanging"] == []
