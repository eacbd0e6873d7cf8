"""Every command at 80 columns, as an operator's terminal is: each run in its own process with COLUMNS=80, stdout
and stderr checked for what must never happen there: a reason left out (decoration goes first), a value or a
`command in backticks` split across lines, a line wider than the terminal (but for a single word longer than
it). The reasons themselves come from the same command's JSON.

One node: the partition-side scenarios' hanging transactions, a transaction its coordinator holds in
PrepareCommit with its marker rejected (KAFKA-19999 emulated: WAITING FOR MARKERS), and a live transaction.
kafka-transactions keeps upstream's exact output whatever the width.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.testing.scenarios import ScenarioOptions, run_scenario
from kafka_txn_tools.cli import exit_codes
from tests.e2e.cli_support import ZOMBIE_TIMEOUT_MS, kafka_txn, open_transaction

WIDTH = 80


@dataclass
class World:
    bs: str
    stuck_id: str
    live_start: int


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with EmbeddedCluster(nodes=1, data_dir=tmp_path_factory.mktemp("kafka"),
                         config={"transaction.partition.verification.enable": False,
                                 "transaction.abort.timed.out.transaction.cleanup.interval.ms": 200}) as c:
        bs = c.bootstrap_servers
        run_scenario("partition-side", bs, ScenarioOptions(backdate_ms=30 * 60_000, healthy=False,
                                                           zombie_timeout_ms=ZOMBIE_TIMEOUT_MS, wait_s=30))
        [stuck] = run_scenario("marker-retry-rejected", bs, ScenarioOptions(wait_s=20, healthy=False))
        c.create_topic("live", 1, 1)
        producer = open_transaction(bs, "live-app", "live", [0])
        [row] = kafka_txn(bs, "describe-producers", "--topic", "live", "--open-only", "-o", "json").json()["producers"]
        yield World(bs, stuck.stuck[0].transactional_id, row["current_txn_start_offset"])
        producer.abort_transaction(30)


@pytest.fixture(autouse=True)
def audit_log(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA_TXN_AUDIT_LOG", str(tmp_path / "audit.log"))


def at_80(*args: str, command: str = "kafka_txn_tools") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": str(WIDTH), "NO_COLOR": "1"}
    module = [sys.executable, "-m", command] if command == "kafka_txn_tools" else [
        sys.executable, "-c", "from kafka_txn_tools.cli.upstream import main; main()"]
    return subprocess.run([*module, *args], capture_output=True, text=True, env=env, timeout=120)


def words(text: str) -> str:
    return " ".join(text.split())


def fits(text: str) -> None:
    """No line wider than the terminal unless it is one unbreakable word or a whole command line to run (printed
    whole on its own line so that a copy runs as printed); no `command` split across lines."""
    for line in text.splitlines():
        assert line.count("`") % 2 == 0, f"a command in backticks is split: {line!r}"
        command_line = line.strip().startswith("kafka-txn ")
        assert len(line) <= WIDTH or len(line.strip().split()) == 1 or "`" in line or command_line, \
            f"too wide: {line!r}"


def shows(text: str, prose: str) -> None:
    """`prose` is all there, its words in order (wrapping only moved them to other lines)."""
    assert words(prose) in words(text), f"missing or split: {prose!r}"


def test_find_hanging_keeps_every_reason_and_detail(world: World) -> None:
    args = ["find-hanging", "--all", "--max-prepare-time", "0", "-b", world.bs]
    doc = kafka_txn(world.bs, *args[:-2], "-o", "json").json()
    r = at_80(*args)
    assert r.returncode == 0, r.stderr
    fits(r.stdout)
    fits(r.stderr)
    rows = doc["hanging"]
    assert {row["kind"] for row in rows} >= {"partition", "coordinator"}
    lines = r.stdout.splitlines()
    for row in rows:
        assert row["reason"] in r.stdout  # the REASON column is never left out
        shows(r.stdout, row["detail"])
        for command in row.get("commands", []):  # each suggested command whole, on a line of its own
            assert any(command in line for line in lines), command


def test_describe_keeps_what_a_transaction_waits_for(world: World) -> None:
    r = at_80("describe", "--all", "-b", world.bs)
    assert r.returncode == 0, r.stderr
    fits(r.stdout)
    assert "WAITING FOR MARKERS" in r.stdout and "(marker-rejected)" in r.stdout
    described = kafka_txn(world.bs, "describe", "-t", world.stuck_id, "-o", "json").json()["transactions"][0]
    pending = ", ".join(f"{p['topic']}-{p['partition']} ({p['reason']})" for p in described["pending_partitions"])
    shows(r.stdout, pending)
    for described in kafka_txn(world.bs, "describe", "--all", "-o", "json").json()["transactions"]:
        assert described["transactional_id"] in r.stdout and described["state"] in r.stdout


def test_describe_producers_and_list(world: World) -> None:
    producers = at_80("describe-producers", "--all", "--open-only", "-b", world.bs)
    assert producers.returncode == 0, producers.stderr
    fits(producers.stdout)
    fits(producers.stderr)
    for p in kafka_txn(world.bs, "describe-producers", "--all", "--open-only", "-o", "json").json()["producers"]:
        assert p["topic"] in producers.stdout, p
    # LAST TIMESTAMP is ISO-8601 UTC with its age where it is shown, else its leaving out is said.
    assert " ago)" in producers.stdout or "LAST TIMESTAMP" in producers.stderr
    listed = at_80("list", "-b", world.bs)
    assert listed.returncode == 0 and "live-app" in listed.stdout and world.stuck_id in listed.stdout
    fits(listed.stdout)


def test_a_refused_abort_and_fence_keep_their_whole_reason_on_stderr(world: World) -> None:
    offsets = kafka_txn(world.bs, "describe-producers", "--topic", "live", "-o", "json").json()
    refused = at_80("abort", "--topic", "live", "--partition", "0", "--start-offset", str(world.live_start + 1),
                    "--yes", "-b", world.bs)
    assert refused.returncode == exit_codes.ERROR
    fits(refused.stderr)
    shows(refused.stderr, f"error: Could not find any open transactions starting at offset {world.live_start + 1} "
                          "on partition live-0: offset {0} is inside the open transaction".format(world.live_start + 1))
    shows(refused.stderr, f"abort it with --start-offset {world.live_start}")
    live = at_80("abort", "--topic", "live", "--partition", "0", "--start-offset", str(world.live_start), "--yes",
                 "-b", world.bs)
    assert live.returncode == exit_codes.ERROR
    fits(live.stderr)
    shows(live.stderr, "the coordinator still holds 'live-app' as ongoing with live-0: it is live and aborting it "
                       "would fail the producer's commit")
    fence = at_80("force-terminate", "-t", "live-app", "--yes", "-b", world.bs)
    assert fence.returncode == exit_codes.ERROR
    fits(fence.stderr)
    shows(fence.stderr, "'live-app' is Ongoing and live")
    assert kafka_txn(world.bs, "describe-producers", "--topic", "live", "-o", "json").json() == offsets


def test_kafka_transactions_keeps_upstreams_exact_output_at_any_width(world: World) -> None:
    args = ["--bootstrap-server", world.bs, "describe-producers", "--topic", "live", "--partition", "0"]
    narrow = at_80(*args, command="upstream")
    wide = subprocess.run([sys.executable, "-c", "from kafka_txn_tools.cli.upstream import main; main()", *args],
                          capture_output=True, text=True, env={k: v for k, v in os.environ.items() if k != "COLUMNS"},
                          timeout=120)
    assert narrow.returncode == wide.returncode == 0
    assert narrow.stdout == wide.stdout  # byte for byte: upstream's tab-padded columns, never narrowed
    assert narrow.stdout.splitlines()[0].split("\t")[0].rstrip() == "ProducerId"
    assert narrow.stdout.splitlines()[1].split("\t")[4].strip().isdigit()  # LastTimestamp: epoch ms, as upstream
