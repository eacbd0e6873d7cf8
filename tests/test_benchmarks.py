"""The benchmarks that drive the tools through scripts of their own (child processes importing the tools'
modules by name) run here at their smallest size: each must finish and score what it injected. A module
moved or renamed breaks them only at run time, so this is where it shows, not in a long run. Nothing
here is timed; the figures the benchmarks print are not checked (so the broker's idle CPU rate, which they
subtract, is measured over half a second, not their default 5-10 s).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def bench(script: str, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "broker")])}
    done = subprocess.run([sys.executable, str(ROOT / "tests" / "benchmarks" / script), *args], capture_output=True,
                          text=True, env=env, timeout=240, cwd=ROOT)
    # Exit 1 is a goal missed, which a cluster this small always does; anything else is a failure.
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done.stdout + done.stderr
    return done.stdout


def test_bench_find_hanging_scores_every_strategy_against_what_it_injected() -> None:
    out = bench("bench_find_hanging.py", "--partitions", "60", "--per-topic", "20", "--open-share", "0.1",
                "--hanging", "2", "--rounds", "1", "--idle-seconds", "0.5")
    # The summary table's last three columns: precision, recall, late found.
    row = re.compile(r"^(kafka-txn-full|kafka-txn|upstream)\s.*?\s(\S+)\s+(\S+)\s+(\S+)$", re.MULTILINE)
    rows = {m[1]: m.groups()[1:] for m in row.finditer(out)}
    assert set(rows) == {"kafka-txn", "kafka-txn-full", "upstream"}, out
    # 6 open transactions, 2 of them hanging: every strategy finds exactly the hanging ones, and the tool's
    # two scans name the 4 late ones too (upstream's strategy has no coordinator view).
    assert rows["kafka-txn"] == rows["kafka-txn-full"] == ("1.00", "1.00", "4/4"), out
    assert rows["upstream"][:2] == ("1.00", "1.00"), out
    assert "monitor steady-state scan vs full scan, replicas asked" in out


def test_bench_monitor_measures_a_find_hanging_run_and_the_scan_loop() -> None:
    out = bench("bench_monitor.py", "--partitions", "60", "--per-topic", "20", "--open", "4", "--cycles", "2",
                "--idle-seconds", "0.5")
    report = json.loads(out[:out.index("\nper scan at")])
    once, scans = report["find_hanging_all"], report["monitor_scans"]
    # The partition-side scenario's 3 hanging transactions; find-hanging also names the 4 late but live ones,
    # which the monitor leaves out of its incidents.
    assert once["found"] == 3 + 4 and [s["found"] for s in scans] == [3, 3], out
    assert all(s["result"] == "complete" and s["requests"] > 0 for s in scans), out
    assert report["find_hanging_full_scan"]["found"] == once["found"], out
    # The monitor's first scan is find-hanging's, over a connection the monitor keeps: all but the ACL probe and
    # the summary's listing of young Prepare states (one ListTransactions a broker: the monitor has no summary).
    first = report["monitor_first_scan"]["by_api"]
    assert {**first, "DescribeAcls": 1, "ListTransactions": first["ListTransactions"] + 3} == once["by_api"], out
    # Its steady state re-asks only what can have changed (admin/scan_memory.py): no Metadata, FindCoordinator
    # or ListGroups; ListTransactions by state and age only (each candidate's id is known), one per broker; and
    # DescribeProducers only for the re-check (the held partitions' answers stand: their offsets did not move).
    steady = report["monitor_steady_scan_median"]["by_api"]
    kept = {k: v for k, v in first.items() if k not in ("Metadata", "FindCoordinator", "ListGroups")}
    assert steady == {**kept, "ListTransactions": 3, "DescribeProducers": 3}, out
    assert "monitor steady state / find-hanging --full-scan: requests" in out
