"""What `kafka-txn monitor` costs the cluster per scan, next to one `find-hanging --all`, same cluster, same run.

Setup: a 3-node embedded cluster in a child process (bench_find_hanging's), PARTITIONS partitions x RF 3,
OPEN late-but-live open transactions and the partition-side scenarios' hanging ones.

Measured, each in a fresh process of its own:
- find-hanging: `kafka-txn find-hanging --all -o json`, as a cron job runs it (process start, connect,
  DescribeAcls, scan): requests sent by API, bytes received, wall time, the broker process's CPU time during
  it; and the same with `--full-scan` (every replica), the steady state's yardstick;
- monitor: the monitor's scan loop (monitor/exporter.py, one connection kept) for CYCLES scans back to back:
  per scan, requests by API, bytes received, wall time and the broker's CPU time; the first scan and the
  steady state (what the loop keeps between passes: admin/scan_memory.py).
The broker's idle CPU (its timers) is measured over a quiet period and subtracted ("net").

    python tests/benchmarks/bench_monitor.py [--partitions 20000] [--open 2000] [--cycles 5]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))

CHILD = r"""
import collections, json, os, sys, time
mode, bootstrap, broker_pid, cycles = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
TICK = os.sysconf("SC_CLK_TCK")

def broker_cpu():
    with open(f"/proc/{broker_pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime

from kafka_txn_tools.connection import client as client_module
sent = collections.Counter()
original = client_module.AdminClient._start
def counting(self, request, *rest):
    sent[type(request).__name__.removesuffix("Request").split("_")[0]] += 1
    return original(self, request, *rest)
client_module.AdminClient._start = counting
from kafka.net import transport
received = [0]
original_recv = transport.KafkaTCPTransport._sock_recv
def receiving(self):
    data, err = original_recv(self)
    received[0] += len(data or b"")
    return data, err
transport.KafkaTCPTransport._sock_recv = receiving

def measured(fn):
    sent.clear()
    received[0] = 0
    cpu, wall = broker_cpu(), time.perf_counter()
    result = fn()
    return {"wall_s": time.perf_counter() - wall, "broker_cpu_s": broker_cpu() - cpu,
            "requests": sum(sent.values()), "by_api": dict(sorted(sent.items())), "bytes_received": received[0]}, result

if mode.startswith("find-hanging"):
    from kafka_txn_tools.cli.app import app
    extra = ["--full-scan"] if mode == "find-hanging-full" else []
    def run():
        try:
            app(["find-hanging", "--all", *extra, "-o", "json", "-b", bootstrap, "--timeout", "120s"],
                prog_name="kafka-txn", standalone_mode=False)
        except SystemExit:
            pass
    import io, contextlib
    with contextlib.redirect_stdout(io.StringIO()) as out:
        stats, _ = measured(run)
    stats["found"] = len(json.loads(out.getvalue())["hanging"])
    print(json.dumps(stats))
else:
    from kafka_txn_tools.admin.scan import ScanOptions
    from kafka_txn_tools.admin.findings import findings_document
    from kafka_txn_tools.cli.session import Connection, connect
    from kafka_txn_tools.monitor.exporter import Monitor, MonitorConfig
    # As `kafka-txn monitor` builds them (an older checkout, --compare-with, has no such option).
    options = ScanOptions(**({"explain_unreported": False} if "explain_unreported" in ScanOptions.__dataclass_fields__
                             else {}))
    monitor = Monitor(bootstrap, lambda: connect(Connection(bootstrap, None, None, "120s")),
                      lambda r: findings_document(r, options.max_timeout_ms, options.max_prepare_ms),
                      MonitorConfig(30.0, options, 50))
    out = []
    for _ in range(cycles):
        stats, outcome = measured(monitor.scan_once)
        stats["result"] = outcome.result
        stats["found"] = len(outcome.rows)
        out.append(stats)
    print(json.dumps(out))
"""


def run_child(mode: str, bootstrap: str, broker_pid: int, cycles: int = 1) -> object:
    done = subprocess.run([sys.executable, "-c", CHILD, mode, bootstrap, str(broker_pid), str(cycles)],
                          capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": f"{ROOT}:"
                                                                         f"{ROOT / 'broker'}"})
    if done.returncode != 0:
        raise RuntimeError(f"{mode} failed: {done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def idle_cpu_rate(broker_pid: int, seconds: float = 10.0) -> float:
    tick = os.sysconf("SC_CLK_TCK")

    def cpu() -> float:
        with open(f"/proc/{broker_pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / tick

    before = cpu()
    time.sleep(seconds)
    return (cpu() - before) / seconds


def main() -> int:
    from bench_find_hanging import create_topics, open_transactions, start_broker

    from kafka_txn_broker.testing.scenarios import ScenarioOptions, run_scenario

    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", type=int, default=20_000)
    ap.add_argument("--per-topic", type=int, default=100)
    ap.add_argument("--open", type=int, default=2_000)
    ap.add_argument("--cycles", type=int, default=5)
    ap.add_argument("--idle-seconds", type=float, default=10.0,
                    help="how long the broker's idle CPU rate is measured (subtracted from each scan's)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        proc, bootstrap = start_broker(Path(tmp))
        try:
            t0 = time.perf_counter()
            topics = create_topics(bootstrap, args.partitions, args.per_topic)
            open_transactions(bootstrap, topics, args.per_topic, args.open)
            run_scenario("partition-side", bootstrap, ScenarioOptions(backdate_ms=30 * 60_000, zombie_timeout_ms=500,
                                                                      wait_s=30))
            setup = time.perf_counter() - t0
            idle = idle_cpu_rate(proc.pid, args.idle_seconds)
            once = run_child("find-hanging", bootstrap, proc.pid)
            full = run_child("find-hanging-full", bootstrap, proc.pid)
            cycles = run_child("monitor", bootstrap, proc.pid, args.cycles)
        finally:
            proc.terminate()
            proc.wait(60)
    assert isinstance(once, dict) and isinstance(full, dict) and isinstance(cycles, list)

    def net(stats: dict) -> float:
        return max(0.0, stats["broker_cpu_s"] - idle * stats["wall_s"])

    steady = cycles[1:] or cycles
    median = sorted(steady, key=lambda s: s["wall_s"])[len(steady) // 2]
    report = {"partitions": args.partitions, "replicas": args.partitions * 3, "open_transactions": args.open,
              "setup_s": round(setup, 1), "broker_idle_cpu_per_s": round(idle, 4),
              "find_hanging_all": {**once, "broker_cpu_net_s": round(net(once), 3)},
              "find_hanging_full_scan": {**full, "broker_cpu_net_s": round(net(full), 3)},
              "monitor_first_scan": {**cycles[0], "broker_cpu_net_s": round(net(cycles[0]), 3)},
              "monitor_steady_scan_median": {**median, "broker_cpu_net_s": round(net(median), 3)},
              "monitor_scans": [{k: s[k] for k in ("wall_s", "broker_cpu_s", "requests", "bytes_received", "result",
                                                   "found")}
                                for s in cycles]}
    print(json.dumps(report, indent=2))
    print(f"\nper scan at {args.partitions} partitions x RF 3: monitor {median['requests']} requests, "
          f"{median['wall_s']:.2f} s, broker CPU {net(median):.2f} s net; one find-hanging --all "
          f"{once['requests']} requests, {once['wall_s']:.2f} s, broker CPU {net(once):.2f} s net")
    print(f"monitor steady state / find-hanging --full-scan: requests {median['requests']}/{full['requests']} = "
          f"{median['requests'] / full['requests']:.3f}, broker CPU {net(median):.3f}/{net(full):.3f} s = "
          f"{net(median) / max(net(full), 1e-9):.3f}, bytes {median['bytes_received']}/{full['bytes_received']} = "
          f"{median['bytes_received'] / max(full['bytes_received'], 1):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
