"""Abort plans end to end: made by find-hanging (stamped with the cluster id and the capture time), applied all or
nothing, `--skip-refused`, a plan from another cluster, a plan from before plans recorded the cluster, and what
an operator sees of each refusal on a terminal (the prompt, and stderr at 80 columns).

One node, replication factor 1 (a stray marker shows in the log end offset at once), verification off (the
hangs need it): the partition-side scenarios' hanging transactions, a live transaction, and a topic that never
had one. Every refusal is proven to write nothing: each partition's log end offset and LSO, read with
librdkafka, are unchanged. The tests run in file order; the writes come last.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.testing.scenarios import ScenarioOptions, run_scenario
from kafka_txn_tools.cli import exit_codes
from tests.e2e.cli_support import ZOMBIE_TIMEOUT_MS, kafka_txn, many_log_offsets, open_transaction

CLUSTER_ID = "plans-e2e-cluster"


@dataclass
class World:
    bs: str
    plan: dict[str, Any]  # find-hanging -o plan, as made
    made_between: tuple[int, int]
    partitions: list[tuple[str, int]]  # every hanging transaction's partition, the live one's last
    reader: Any

    def offsets(self) -> list[tuple[int, int]]:
        return many_log_offsets(self.bs, self.partitions, self.reader)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    from confluent_kafka.admin import AdminClient

    with EmbeddedCluster(nodes=1, data_dir=tmp_path_factory.mktemp("kafka"),
                         config={"transaction.partition.verification.enable": False, "cluster.id": CLUSTER_ID,
                                 "transaction.abort.timed.out.transaction.cleanup.interval.ms": 200}) as c:
        bs = c.bootstrap_servers
        run_scenario("partition-side", bs, ScenarioOptions(backdate_ms=30 * 60_000, healthy=False,
                                                           zombie_timeout_ms=ZOMBIE_TIMEOUT_MS, wait_s=30))
        c.create_topic("live", 1, 1)
        producer = open_transaction(bs, "live-app", "live", [0])
        before = int(time.time() * 1000)
        r = kafka_txn(bs, "find-hanging", "--all", "-o", "plan")
        after = int(time.time() * 1000)
        assert r.code == 0, r.err
        plan = yaml.safe_load(r.out)
        partitions = [(e["topic"], e["partition"]) for e in plan["entries"]] + [("live", 0)]
        reader = AdminClient({"bootstrap.servers": bs, "log_level": 0})
        yield World(bs, plan, (before, after), partitions, reader)
        del reader
        producer.commit_transaction(30)


@pytest.fixture(autouse=True)
def audit_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA_TXN_AUDIT_LOG", str(tmp_path / "audit.log"))


def plan_file(path: Path, plan: dict[str, Any], **changes: Any) -> str:
    path.write_text(yaml.safe_dump({**plan, **changes}, sort_keys=False))
    return str(path)


def with_wrong_producer(plan: dict[str, Any], index: int = 1) -> dict[str, Any]:
    entries = [dict(e) for e in plan["entries"]]
    entries[index]["producer_id"] = 999_999  # an edited producer id: a stale or wrong entry
    return {**plan, "entries": entries}


def run_cli(args: list[str], columns: int = 80) -> subprocess.CompletedProcess[str]:
    """kafka-txn in its own process, as on a terminal of `columns` columns (COLUMNS), stdout piped."""
    env = {**os.environ, "COLUMNS": str(columns), "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "kafka_txn_tools", *args], capture_output=True, text=True,
                          env=env, timeout=120)


def unwrapped(stderr: str) -> str:
    """stderr with word-wrapped continuation lines joined back (they start with two spaces)."""
    return stderr.replace("\n  ", " ")


def test_find_hanging_plans_record_the_cluster_and_the_capture_time(world: World) -> None:
    plan = world.plan
    assert (plan["version"], plan["cluster_id"], plan["generated_by"]) == (2, CLUSTER_ID, "kafka-txn find-hanging")
    assert world.made_between[0] <= plan["capture_time_ms"] <= world.made_between[1]
    assert len(plan["entries"]) >= 3 and all(e["producer_id"] >= 0 for e in plan["entries"])


def test_one_refused_entry_and_nothing_is_written(world: World, tmp_path: Path) -> None:
    before = world.offsets()
    plan = with_wrong_producer(world.plan)
    wrong = plan["entries"][1]
    r = kafka_txn(world.bs, "abort", "--plan", plan_file(tmp_path / "p.yaml", plan), "--yes", "-o", "json")
    assert r.code == exit_codes.ERROR, r.err
    results = [row["result"] for row in r.json()["aborts"]]
    assert results[1] == "refused" and set(results[:1] + results[2:]) == {"not-written"}
    total = len(plan["entries"])
    assert (f"refused: entry 2 of {total} ({wrong['topic']}-{wrong['partition']} at offset {wrong['start_offset']}): "
            f"the open transaction of producer ") in r.err
    assert "producer id 999999 (the partition has" in r.err
    assert f"1 of the plan's {total} entries were refused: nothing was written" in r.err
    assert world.offsets() == before


def test_at_80_columns_each_refusal_reason_is_on_stderr_whole(world: World, tmp_path: Path) -> None:
    before = world.offsets()
    plan = with_wrong_producer(world.plan)
    r = run_cli(["abort", "--plan", plan_file(tmp_path / "p.yaml", plan), "--yes", "-b", world.bs])
    assert r.returncode == exit_codes.ERROR, r.stderr
    lines = r.stderr.splitlines()
    assert all(len(line) <= 80 or "`" in line for line in lines), r.stderr  # wrapped at words, commands whole
    reason = next(line for line in unwrapped(r.stderr).splitlines() if line.startswith("refused: entry 2"))
    assert reason.endswith("read them again with `kafka-txn find-hanging` or `describe-producers`")
    # At 80 columns each entry's result and whole reason are on stdout, wrapped only between words (a table
    # with the reason wrapped in its column, or a block per entry when the topic names are this long).
    assert all(len(line) <= 80 for line in r.stdout.splitlines()), r.stdout
    rows = kafka_txn(world.bs, "abort", "--plan", plan_file(tmp_path / "p.yaml", plan), "--yes", "-o",
                     "json").json()["aborts"]
    shown = " ".join(r.stdout.split())
    for row in rows:
        assert f"{row['result']} " in shown + " " and " ".join(row["message"].split()) in shown, row
    assert world.offsets() == before


def test_the_prompt_names_what_is_left_out(world: World, tmp_path: Path) -> None:
    from tests.e2e.test_cli_write_safety import run_on_terminal

    before = world.offsets()
    plan = with_wrong_producer(world.plan)
    total = len(plan["entries"])
    args = ["abort", "--plan", plan_file(tmp_path / "p.yaml", plan), "--skip-refused", "-b", world.bs]
    code, terminal, _stdout = run_on_terminal(args, "n", tmp_path)
    assert code == exit_codes.ERROR, terminal
    assert f"About to write {total - 1} changes:" in terminal
    assert "Left out, 1 refused (not written):" in terminal
    assert "refused: entry 2 of" in terminal and "producer id 999999" in terminal
    assert "cancelled: nothing was written" in terminal
    assert world.offsets() == before


def test_a_plan_made_on_another_cluster_is_refused(world: World, tmp_path: Path) -> None:
    before = world.offsets()
    path = plan_file(tmp_path / "p.yaml", world.plan, cluster_id="another-cluster")
    for extra in ([], ["--skip-refused"], ["--force"], ["--dry-run"]):
        r = kafka_txn(world.bs, "abort", "--plan", path, "--yes", *extra)
        assert (r.code, r.out) == (exit_codes.ERROR, ""), r.err
        assert (f"error: the plan was made on cluster another-cluster, and this is cluster {CLUSTER_ID}: a plan "
                "applies only to the cluster it was made on; nothing was written") in r.err
    assert world.offsets() == before


def test_a_plan_from_before_plans_recorded_the_cluster_is_checked_entry_by_entry(world: World,
                                                                                tmp_path: Path) -> None:
    before = world.offsets()
    old = {"version": 1, "kind": "kafka-txn-abort-plan", "entries": world.plan["entries"]}
    r = kafka_txn(world.bs, "abort", "--plan", plan_file(tmp_path / "old.yaml", old), "--dry-run", "-o", "json")
    assert r.code == exit_codes.OK, r.err
    assert {row["result"] for row in r.json()["aborts"]} == {"dry-run"}
    assert "the plan does not say which cluster it was made on (it was written before plans recorded it" in r.err
    assert world.offsets() == before


def test_skip_refused_writes_the_valid_entries_and_exits_7(world: World, tmp_path: Path) -> None:
    before = world.offsets()
    plan = with_wrong_producer(world.plan)
    r = kafka_txn(world.bs, "abort", "--plan", plan_file(tmp_path / "p.yaml", plan), "--skip-refused", "--yes",
                  "-o", "json")
    assert r.code == exit_codes.PARTLY_APPLIED, r.err
    results = [row["result"] for row in r.json()["aborts"]]
    assert results[1] == "refused" and set(results[:1] + results[2:]) == {"aborted"}
    after = world.offsets()
    for i, ((end, _lso), (end_after, lso_after)) in enumerate(zip(before, after, strict=True)):
        if i == 1 or i == len(after) - 1:  # the refused entry and the live transaction: untouched
            assert (end_after, lso_after) == (end, _lso)
        else:  # a marker, and the LSO up to the log end
            assert (end_after, lso_after) == (end + 1, end + 1)
