"""The nightly sweep's printed commands are accepted as printed.

`kafka-txn dump --all -b B` records the cluster it read; `kafka-txn sweep DUMP` prints commands that carry it;
each runs verbatim, as a shell runs it, in an empty environment (no KAFKA_* variable, a HOME without a profiles
file), and frees the partitions: LSO == high watermark. Log dirs copied from a broker record no way in: the
sweep prints no command line then (each would be refused: `no cluster to connect to`; tested in
tests/tools/cli/test_sweep_cmd.py) and says once in prose how to apply the plan; given -b, its lines carry it
and are accepted.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.testing.scenarios import ScenarioOptions, run_scenario
from kafka_txn_tools.cli import exit_codes
from kafka_txn_tools.cli.app import app
from tests.e2e.cli_support import kafka_txn

pytestmark = pytest.mark.needs("java")  # the sweep runs Spark

CONFIG = {"transaction.partition.verification.enable": False}
BACKDATE_MS = 30 * 60_000  # older than the default 15 min timeout, as the demo stages it
ROOT = Path(__file__).resolve().parents[2]


def empty_env(home: Path) -> dict[str, str]:
    """Nothing the tool reads: no KAFKA_* variable, a HOME with no profiles file. PATH finds `kafka-txn`;
    PYTHONPATH is the checkout under test."""
    home.mkdir(exist_ok=True)
    script = shutil.which("kafka-txn")
    assert script is not None, "the kafka-txn console script is not installed (pip install -e .)"
    path = os.pathsep.join([str(Path(script).parent), str(Path(sys.executable).parent), "/usr/bin", "/bin"])
    return {"PATH": path, "HOME": str(home), "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "broker")]),
            "LANG": "C.UTF-8"}


def sweep(*args: str) -> tuple[int, str]:
    """`kafka-txn sweep ARGS` in-process, without KAFKA_BOOTSTRAP_SERVERS or a profile; stdout + stderr."""
    env = {k: None for k in os.environ if k.startswith(("KAFKA_TXN_", "KAFKA_BOOTSTRAP"))}
    r = CliRunner().invoke(app, ["sweep", *args], env=env)
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    return r.exit_code, r.stdout + r.stderr


def printed_commands(output: str) -> list[str]:
    return [line.strip() for line in output.splitlines() if line.strip().startswith("kafka-txn ")]


def run_printed(line: str, home: Path) -> subprocess.CompletedProcess[str]:
    """The line as a shell runs it; --yes where no terminal can confirm (a write asks on a terminal)."""
    writes = " --dry-run" not in line and shlex.split(line)[1] == "abort"
    return subprocess.run(line + (" --yes" if writes else ""), shell=True, env=empty_env(home), capture_output=True,
                          text=True, timeout=120)


def lso_and_hw(bootstrap: str, topic: str, partition: int) -> tuple[int, int]:
    from confluent_kafka import IsolationLevel, TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    tp = TopicPartition(topic, partition)
    out = [admin.list_offsets({tp: OffsetSpec.latest()}, isolation_level=level)[tp].result(30).offset
           for level in (IsolationLevel.READ_COMMITTED, IsolationLevel.READ_UNCOMMITTED)]
    return out[0], out[1]


def test_dump_then_sweep_prints_commands_that_run_verbatim_and_free_the_lso(spark: Any, tmp_path: Path) -> None:
    home = tmp_path / "home"
    with EmbeddedCluster(nodes=1, data_dir=tmp_path / "kafka", config=CONFIG) as cluster:
        bs = cluster.bootstrap_servers
        hangs = [h for name in ("late-write-after-abort", "unregistered-partition-commit")
                 for r in run_scenario(name, bs, ScenarioOptions(topic_prefix="nightly", backdate_ms=BACKDATE_MS))
                 for h in r.hanging]
        assert len(hangs) == 2
        held = {(h.topic, h.partition) for h in hangs}
        assert all(lso < hw for lso, hw in (lso_and_hw(bs, *tp) for tp in held))

        dump = tmp_path / "dump"
        assert kafka_txn(bs, "dump", "--all", "--out", str(dump)).code == exit_codes.OK
        logs = tmp_path / "copied-logs"  # the broker's log dirs, copied elsewhere: no record of how to reach it
        shutil.copytree(tmp_path / "kafka", logs)

        # Copied log dirs record no way in (without -b: tests/tools/cli/test_sweep_cmd.py). Given -b, the sweep's
        # lines carry it and are accepted: the plan's check runs, writing nothing.
        code, out = sweep(str(logs), "--out", str(tmp_path / "from-logs-b"), "-b", bs)
        lines = printed_commands(out)
        assert code == exit_codes.OK and len(lines) == 4, out  # two aborts, the plan's check and its application
        assert all(shlex.split(line)[-2:] == ["--bootstrap-server", bs] for line in lines)
        check = run_printed(next(line for line in lines if "--dry-run" in line), home)
        assert check.returncode == exit_codes.OK, check.stderr
        assert all(lso < hw for lso, hw in (lso_and_hw(bs, *tp) for tp in held))  # a dry run writes nothing

        # The dump recorded the cluster: the sweep, given nothing, prints commands that reach it.
        code, out = sweep(str(dump), "--out", str(tmp_path / "from-dump"))
        assert code == exit_codes.OK, out
        lines = printed_commands(out)
        aborts = [line for line in lines if "--start-offset" in line]
        assert sorted(aborts) == sorted(shlex.join(["kafka-txn", "abort", "--topic", h.topic, "--partition",
                                                    str(h.partition), "--start-offset", str(h.start_offset),
                                                    "--bootstrap-server", bs]) for h in hangs)
        plan_lines = [line for line in lines if "--plan" in line]
        assert len(plan_lines) == 2
        done = [run_printed(line, home) for line in [plan_lines[0], *aborts]]  # the check, then each abort
        assert [d.returncode for d in done] == [exit_codes.OK] * 3, [d.stderr for d in done]
        for tp in held:
            lso, hw = lso_and_hw(bs, *tp)
            assert lso == hw, (tp, lso, hw)
        # The plan's application, run after: every entry is done already, and the command says so.
        after = run_printed(plan_lines[1], home)
        assert after.returncode == exit_codes.ALREADY_DONE, after.stderr
        plan = yaml.safe_load((tmp_path / "from-dump" / "abort-plan.yaml").read_text())
        assert plan["cluster_id"] == "kafka-txn-embedded"
        assert plan["connection"] == {"bootstrap_server": bs, "profile": None, "command_config": None}
        summary = yaml.safe_load((tmp_path / "from-dump" / "summary.json").read_text())
        assert summary["cluster"]["from"] == "dump" and summary["cluster"]["properties"] == {
            "security.protocol": "PLAINTEXT"}
