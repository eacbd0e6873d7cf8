"""`kafka-txn monitor` over a long run on a cluster with churn: does its memory stay flat?

A 3-node embedded cluster (a child process) with churn the whole time:
- a transactional producer committing small transactions without pause;
- every --hang-every seconds a new hanging transaction (the late-write-after-abort scenario, on a new topic),
  aborted --hang-for seconds later with the command the monitor prints, so incidents open and close and the
  history grows;
- /metrics scraped every second and the status page read every 10 s, as Prometheus and a person would.

The monitor runs as it does in production (`kafka-txn monitor`, a child process, --interval 2s). Its RSS
(/proc/PID/status VmRSS) is sampled every 10 s; the report gives the slope of a least-squares line over the
second half of the run (after warm-up), in MB per hour, and the incidents it recorded. The goal is flat.

    python tests/benchmarks/monitor_soak.py [--duration 3600] [--hang-every 60] [--hang-for 20]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def slope_mb_per_hour(samples: list[tuple[float, float]]) -> float:
    n = len(samples)
    if n < 2:
        return 0.0
    mean_t = sum(t for t, _ in samples) / n
    mean_m = sum(m for _, m in samples) / n
    var = sum((t - mean_t) ** 2 for t, _ in samples)
    cov = sum((t - mean_t) * (m - mean_m) for t, m in samples)
    return cov / var * 3600 if var else 0.0


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as r:  # noqa: S310 (a local test server)
        return r.read().decode()


def committer(bootstrap: str, stop: threading.Event, counts: dict[str, int]) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": "soak-committer", "log_level": 0})
    p.init_transactions(30)
    while not stop.is_set():
        p.begin_transaction()
        for i in range(10):
            p.produce("soak-churn", value=b"v%d" % i, partition=i % 6)
        p.commit_transaction(30)
        counts["committed"] = counts.get("committed", 0) + 1
        stop.wait(0.05)


def main() -> int:
    from bench_find_hanging import start_broker

    from kafka_txn_broker.testing.raw_client import RawKafkaClient
    from kafka_txn_broker.testing.scenarios import ScenarioOptions, run_scenario

    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=float, default=3600)
    ap.add_argument("--hang-every", type=float, default=60)
    ap.add_argument("--hang-for", type=float, default=20)
    args = ap.parse_args()
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'broker'}", "PYTHONUNBUFFERED": "1"}
    with tempfile.TemporaryDirectory() as tmp:
        broker, bootstrap = start_broker(Path(tmp) / "kafka")
        with RawKafkaClient(bootstrap) as raw:
            raw.create_topic("soak-churn", 6, 3)
        history = Path(tmp) / "history.db"
        monitor = subprocess.Popen(
            [sys.executable, "-m", "kafka_txn_tools", "monitor", "-b", bootstrap, "--listen", "127.0.0.1:0",
             "--interval", "2s", "--history", str(history), "--audit-log", str(Path(tmp) / "audit.log")],
            stderr=subprocess.PIPE, text=True, env=env)
        assert monitor.stderr is not None
        line = ""
        while "serving http://" not in line:
            line = monitor.stderr.readline()
        url = line.split("serving ", 1)[1].split("/ ", 1)[0]
        threading.Thread(target=lambda: [None for _ in monitor.stderr], daemon=True).start()  # drain its log
        stop = threading.Event()
        counts: dict[str, int] = {}
        threading.Thread(target=committer, args=(bootstrap, stop, counts), daemon=True).start()
        samples: list[tuple[float, float]] = []
        pending: list[tuple[float, str]] = []  # (abort at, topic)
        start = time.monotonic()
        next_hang = start + 5
        next_sample = start
        next_page = start
        try:
            while (now := time.monotonic()) - start < args.duration:
                if now >= next_hang:
                    [result] = run_scenario("late-write-after-abort", bootstrap, ScenarioOptions(
                        backdate_ms=30 * 60_000, healthy=False, topic_prefix="soak"))
                    pending.append((now + args.hang_for, result.topics[0]))
                    counts["hangs"] = counts.get("hangs", 0) + 1
                    next_hang = now + args.hang_every
                for due, topic in [p for p in pending if p[0] <= now]:
                    rows = [r for r in json.loads(get(url + "/api/findings"))["hanging"] if r.get("topic") == topic]
                    for row in rows:
                        command = shlex.split(row["action"].split(" (", 1)[0])
                        subprocess.run([sys.executable, "-m", "kafka_txn_tools", *command[1:], "-b", bootstrap,
                                        "--yes"], env={**env, "KAFKA_TXN_AUDIT_LOG": str(Path(tmp) / "audit.log")},
                                       capture_output=True, check=False)
                        counts["aborted"] = counts.get("aborted", 0) + 1
                    if rows:
                        pending.remove((due, topic))
                get(url + "/metrics")
                if now >= next_page:
                    get(url + "/")
                    next_page = now + 10
                if now >= next_sample:
                    samples.append((now - start, rss_mb(monitor.pid)))
                    next_sample = now + 10
                time.sleep(1)
        finally:
            stop.set()
            monitor.terminate()
            code = monitor.wait(60)
            broker.terminate()
            broker.wait(60)
        incidents = json.loads(subprocess.run(
            [sys.executable, "-m", "kafka_txn_tools", "history", "--history", str(history), "--since", "1d", "-o",
             "json"], capture_output=True, text=True, env=env, check=True).stdout)["incidents"]
    second_half = [s for s in samples if s[0] >= args.duration / 2]
    report = {"duration_s": args.duration, "rss_samples": len(samples), "rss_first_mb": round(samples[0][1], 1),
              "rss_peak_mb": round(max(m for _, m in samples), 1), "rss_last_mb": round(samples[-1][1], 1),
              "rss_slope_mb_per_hour_second_half": round(slope_mb_per_hour(second_half), 2),
              "rss_slope_mb_per_hour_whole": round(slope_mb_per_hour(samples), 2),
              "committed_transactions": counts.get("committed", 0), "hangs_made": counts.get("hangs", 0),
              "aborted_as_printed": counts.get("aborted", 0), "incidents_recorded": len(incidents),
              "resolved_by_audited_write": sum(1 for i in incidents if i["resolution"] == "audited write"),
              "monitor_exit_code": code}
    print(json.dumps(report, indent=2))
    return 0 if code == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
