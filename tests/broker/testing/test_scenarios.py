"""Hanging-transaction scenarios: their ground truth matches what the brokers hold, and a verifying
broker prevents each of them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kafka_txn_broker.embedded import EmbeddedCluster
from kafka_txn_broker.testing.scenarios import (
    HANGING_PARTITION,
    OPEN_PARTITION,
    PARTITION_SIDE,
    ScenarioError,
    ScenarioOptions,
    ScenarioPrevented,
    ScenarioResult,
    run_scenario,
)
from kafka_txn_tools.cli.app import app
from tests.e2e.cli_support import ZOMBIE_TIMEOUT_MS

LEGACY = {"transaction.partition.verification.enable": False,
          "transaction.abort.timed.out.transaction.cleanup.interval.ms": 200,
          "transaction.state.log.num.partitions": 5}


@pytest.fixture(scope="module")
def legacy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(nodes=3, data_dir=tmp_path_factory.mktemp("legacy"), config=LEGACY) as c:
        yield c


def _partition(cluster: EmbeddedCluster, topic: str, index: int) -> object:
    assert cluster.cluster is not None
    leader = cluster.cluster.metadata.partition(topic, index).leader
    return cluster.cluster.nodes[leader].replica_manager.get(topic, index)


def _check_ground_truth(cluster: EmbeddedCluster, result: ScenarioResult) -> None:
    (h,) = result.hanging
    part = _partition(cluster, h.topic, HANGING_PARTITION)
    rows = cluster.call_soon(lambda: part.log.producer_state.active_producers())  # type: ignore[attr-defined]
    assert [(r.producer_id, r.producer_epoch, r.current_txn_start_offset) for r in rows
            if r.current_txn_start_offset >= 0] == [(h.producer_id, h.producer_epoch, h.start_offset)]
    lso = cluster.call_soon(lambda: part.log.last_stable_offset)  # type: ignore[attr-defined]
    assert lso == h.start_offset
    assert f"{h.topic}-{HANGING_PARTITION}" not in h.coordinator_partitions
    assert h.coordinator_state in ("CompleteAbort", "CompleteCommit")
    states = {x.state for x in result.healthy}
    assert states == {"CompleteCommit", "CompleteAbort", "Ongoing"}
    open_part = _partition(cluster, h.topic, OPEN_PARTITION)
    assert cluster.call_soon(lambda: open_part.log.last_stable_offset) == 0  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", PARTITION_SIDE)
def test_scenario_ground_truth(legacy: EmbeddedCluster, name: str) -> None:
    (result,) = run_scenario(name, legacy.bootstrap_servers, ScenarioOptions(zombie_timeout_ms=ZOMBIE_TIMEOUT_MS,
                                                                               wait_s=30))
    assert result.name == name and "coordinator" in result.incident
    _check_ground_truth(legacy, result)


def test_backdated_batches_carry_old_create_times(legacy: EmbeddedCluster) -> None:
    (result,) = run_scenario("unregistered-partition-commit", legacy.bootstrap_servers,
                             ScenarioOptions(backdate_ms=30 * 60_000, healthy=False))
    (h,) = result.hanging
    part = _partition(legacy, h.topic, HANGING_PARTITION)
    rows = legacy.call_soon(lambda: part.log.producer_state.active_producers())  # type: ignore[attr-defined]
    (row,) = [r for r in rows if r.producer_id == h.producer_id]
    assert legacy.cluster is not None
    assert legacy.cluster.clock.millis() - row.last_timestamp >= 30 * 60_000


def test_cli_prints_the_ground_truth(legacy: EmbeddedCluster) -> None:
    out = CliRunner().invoke(app, ["broker", "scenario", "partition-side", "--bootstrap-server",
                                   legacy.bootstrap_servers, "--no-healthy", "--zombie-timeout-ms", "300",
                                   "--wait-seconds", "20"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    assert [s["name"] for s in doc["scenarios"]] == list(PARTITION_SIDE)
    assert all(len(s["hanging"]) == 1 and s["healthy"] == [] for s in doc["scenarios"])


def test_unknown_scenario() -> None:
    with pytest.raises(ScenarioError, match="unknown scenario"):
        run_scenario("nope", "127.0.0.1:1")


@pytest.mark.parametrize("name", PARTITION_SIDE)
def test_a_verifying_broker_prevents_each_scenario(tmp_path: Path, name: str) -> None:
    cfg = {**LEGACY, "transaction.partition.verification.enable": True}
    with EmbeddedCluster(nodes=1, data_dir=tmp_path, config=cfg) as cluster:
        with pytest.raises(ScenarioPrevented, match="verification"):
            run_scenario(name, cluster.bootstrap_servers, ScenarioOptions(zombie_timeout_ms=ZOMBIE_TIMEOUT_MS,
                                                                           wait_s=30, healthy=False))
        out = CliRunner().invoke(app, ["broker", "scenario", name, "--bootstrap-server", cluster.bootstrap_servers,
                                       "--zombie-timeout-ms", str(ZOMBIE_TIMEOUT_MS)])
        assert out.exit_code == 1 and "transaction.partition.verification.enable=false" in out.output


def test_a_coordinator_side_scenario_prints_its_ground_truth_and_the_bug_it_emulates(legacy: EmbeddedCluster) -> None:
    out = CliRunner().invoke(app, ["broker", "scenario", "marker-retry-rejected", "--bootstrap-server",
                                   legacy.bootstrap_servers, "--no-healthy", "-o", "table"])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert lines[0].startswith("# find it: kafka-txn find-hanging --all --bootstrap-server ")  # how to see it
    assert "KAFKA-19999" in lines[1]  # the incident names the upstream bug
    [stuck] = [line for line in out.output.splitlines() if line.startswith("STUCK")]
    assert "PrepareCommit" in stuck and "(marker-rejected)" in stuck and "emulates=KAFKA-19999" in stuck
