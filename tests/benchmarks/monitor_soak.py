"""`kafka-txn monitor` over a long run on a cluster with churn: does its memory stay flat?

A 3-node embedded cluster (a child process) with churn the whole time:
- a transactional producer committing small transactions without pause;
- every --hang-every seconds a new hanging transaction (the late-write-after-abort scenario, on a new topic
  of 4 partitions x RF 3), aborted --hang-for seconds later with the command the monitor prints, so incidents
  open and close and the history grows;
- /metrics scraped every second and the status page read every 10 s, as Prometheus and a person would.

The monitor runs as it does in production (`kafka-txn monitor`, a child process, --interval 2s). Its RSS
(/proc/PID/status VmRSS) is sampled every 10 s; the report gives the slope of a least-squares line over the
second half of the run (after warm-up), in MB per hour, and the incidents it recorded. The goal is flat.

    python tests/benchmarks/monitor_soak.py [--duration 3600] [--hang-every 60] [--hang-for 20]
        [--reuse-topics N | --delete-topics] [--tracemalloc [--frames 12] [--warmup S]] [--progress S]

The long run docs/monitor.md asks for (3 hours, the hangs rotating over 4 topics, the heap traced after an
hour of warm-up; goal: under 0.1 MB an hour once the bounded parts are full):

    python tests/benchmarks/monitor_soak.py --duration 10800 --reuse-topics 4 --tracemalloc --warmup 3600

What the cluster holds grows with a new topic per hang, and so does what a scan reads. Two ways to tell that
from a leak:
- `--reuse-topics N`: the hangs rotate over N topics made at the start (each hang still has its own
  transactional id and producer id), so the cluster's metadata stays the same size;
- `--delete-topics`: each hang's new topic is deleted once its transaction is aborted, so partitions keep
  coming and going while their number stays bounded (what the monitor remembers of a partition must go
  with it).
`--tracemalloc` runs the monitor under tests/benchmarks/traced_command.py: tracing from the start, a
baseline snapshot after --warmup seconds (default a third of the run), another at the end, and the
allocation sites that grew in between printed largest first (the RSS figures then include tracemalloc's
own tables, and the monitor runs slower). Every --progress seconds (default 1800) a line on stderr gives the
figures so far (RSS, its slope since warm-up, the traced heap), so a run cut short still says something.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

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


class Tracer:
    """Drives tests/benchmarks/traced_command.py in the monitor process (see its docstring)."""

    def __init__(self, pid: int, dump_dir: Path) -> None:
        self.pid = pid
        self.dump_dir = dump_dir

        self.taken = 0  # snapshots taken: the next diff's number

    def start(self) -> None:
        os.kill(self.pid, signal.SIGUSR1)

    def snapshot(self, name: str) -> dict[str, Any]:
        """SIGUSR2, then wait for the file it writes: `base.json` the first time, `diff-N.json` after."""
        self.taken += 1
        os.kill(self.pid, signal.SIGUSR2)
        path = self.dump_dir / name
        deadline = time.monotonic() + 900  # a traced snapshot of a big heap takes minutes
        while not path.exists():
            if time.monotonic() > deadline:
                raise RuntimeError(f"the monitor wrote no {path}")
            time.sleep(0.2)
        data: dict[str, Any] = json.loads(path.read_text())
        return data


def progress(elapsed: float, samples: list[tuple[float, float]], warmup: float, traced: int | None,
             counts: dict[str, int]) -> None:
    after = [s for s in samples if s[0] >= warmup]
    heap = f", traced heap {traced / 2**20:.2f} MiB" if traced is not None else ""
    print(f"soak {elapsed / 60:.0f} min: RSS {samples[-1][1]:.1f} MB (peak {max(m for _, m in samples):.1f}), slope"
          f" since warm-up {slope_mb_per_hour(after):+.2f} MB/h{heap}; hangs {counts.get('hangs', 0)}, aborted"
          f" {counts.get('aborted', 0)}, committed {counts.get('committed', 0)}", file=sys.stderr, flush=True)


def print_sites(base: dict[str, Any], diff: dict[str, Any], seconds: float) -> None:
    print(f"tracemalloc: allocation sites that grew over the last {seconds:.0f} s (traced {base['traced'] / 2**20:.2f}"
          f" -> {diff['traced'] / 2**20:.2f} MiB; tracemalloc's own tables {diff['tracemalloc_overhead'] / 2**20:.1f}"
          " MiB):", file=sys.stderr)
    for site in diff["sites"]:
        if site["size_diff"] <= 0:
            continue
        frames = " <- ".join(_short(f) for f in reversed(site["frames"]))
        print(f"  {site['size_diff'] / 1024:+9.1f} KiB {site['count_diff']:+8d} blocks  {frames}", file=sys.stderr)


def _short(frame: str) -> str:
    for marker in ("/site-packages/", "/lib/python3.11/"):
        if marker in frame:
            return frame.split(marker, 1)[1]
    return frame.replace(str(ROOT) + "/", "")


def delete_topic(bootstrap: str, topic: str) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    admin.delete_topics([topic], operation_timeout=30)[topic].result(60)


def main() -> int:
    from bench_find_hanging import start_broker

    from kafka_txn_broker.testing.raw_client import RawKafkaClient
    from kafka_txn_broker.testing.scenarios import PARTITIONS, ScenarioOptions, run_scenario

    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=float, default=3600)
    ap.add_argument("--hang-every", type=float, default=60)
    ap.add_argument("--hang-for", type=float, default=20)
    ap.add_argument("--interval", default="2s", help="the monitor's --interval")
    topics = ap.add_mutually_exclusive_group()
    topics.add_argument("--reuse-topics", type=int, default=0, metavar="N",
                        help="rotate the hangs over N topics made at the start (default: a new topic per hang)")
    topics.add_argument("--delete-topics", action="store_true",
                        help="delete each hang's topic once its transaction is aborted")
    ap.add_argument("--tracemalloc", action="store_true", help="print what grew in the monitor after --warmup")
    ap.add_argument("--frames", type=int, default=12, help="frames per traced allocation")
    ap.add_argument("--warmup", type=float, default=None, help="seconds before the baseline snapshot")
    ap.add_argument("--progress", type=float, default=1800, help="seconds between progress lines on stderr")
    args = ap.parse_args()
    warmup = args.duration / 3 if args.warmup is None else args.warmup
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'broker'}", "PYTHONUNBUFFERED": "1"}
    with tempfile.TemporaryDirectory() as tmp:
        broker, bootstrap = start_broker(Path(tmp) / "kafka")
        reused = [f"soak-reused-{i}" for i in range(args.reuse_topics)]
        with RawKafkaClient(bootstrap) as raw:
            raw.create_topic("soak-churn", 6, 3)
            for topic in reused:
                raw.create_topic(topic, PARTITIONS, 3)
        history = Path(tmp) / "history.db"
        dump_dir = Path(tmp) / "tracemalloc"
        dump_dir.mkdir()
        launcher = [str(Path(__file__).with_name("traced_command.py")), "--dump-dir", str(dump_dir), "--frames",
                    str(args.frames), "--"] if args.tracemalloc else ["-m", "kafka_txn_tools"]
        monitor = subprocess.Popen(
            [sys.executable, *launcher, "monitor", "-b", bootstrap, "--listen", "127.0.0.1:0",
             "--interval", args.interval, "--history", str(history), "--audit-log", str(Path(tmp) / "audit.log")],
            stderr=subprocess.PIPE, text=True, env=env)
        tracer = Tracer(monitor.pid, dump_dir) if args.tracemalloc else None
        assert monitor.stderr is not None
        line = ""
        while "serving http://" not in line:
            line = monitor.stderr.readline()
        url = line.split("serving ", 1)[1].split("/ ", 1)[0]
        if tracer is not None:
            tracer.start()
        base: dict[str, Any] | None = None
        diff: dict[str, Any] | None = None
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
        next_progress = start + args.progress
        try:
            while (now := time.monotonic()) - start < args.duration:
                if tracer is not None and base is None and now - start >= warmup:
                    base = tracer.snapshot("base.json")
                    based_at = time.monotonic()
                if now >= next_hang:
                    topic = reused[counts.get("hangs", 0) % len(reused)] if reused else None
                    [result] = run_scenario("late-write-after-abort", bootstrap, ScenarioOptions(
                        backdate_ms=30 * 60_000, healthy=False, topic_prefix="soak", topic=topic))
                    pending.append((now + args.hang_for, result.topics[0]))
                    counts["hangs"] = counts.get("hangs", 0) + 1
                    next_hang = now + args.hang_every
                for due, topic in [p for p in pending if p[0] <= now]:
                    rows = [r for r in json.loads(get(url + "/api/findings"))["hanging"] if r.get("topic") == topic]
                    for row in rows:
                        for command in map(shlex.split, row["commands"]):  # as printed, with the monitor's -b
                            subprocess.run([sys.executable, "-m", "kafka_txn_tools", *command[1:], "--yes"],
                                           env={**env, "KAFKA_TXN_AUDIT_LOG": str(Path(tmp) / "audit.log")},
                                           capture_output=True, check=False)
                        counts["aborted"] = counts.get("aborted", 0) + 1
                    if rows:
                        pending.remove((due, topic))
                        if args.delete_topics:
                            delete_topic(bootstrap, topic)
                            counts["deleted"] = counts.get("deleted", 0) + 1
                get(url + "/metrics")
                if now >= next_page:
                    get(url + "/")
                    next_page = now + 10
                if now >= next_sample:
                    samples.append((now - start, rss_mb(monitor.pid)))
                    next_sample = now + 10
                if now >= next_progress:
                    traced = tracer.snapshot(f"diff-{tracer.taken}.json")["traced"] if tracer and base else None
                    progress(now - start, samples, warmup, traced, counts)
                    next_progress = now + args.progress
                time.sleep(1)
            if tracer is not None and base is not None:
                diff = tracer.snapshot(f"diff-{tracer.taken}.json")
                print_sites(base, diff, time.monotonic() - based_at)
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
    report: dict[str, Any] = {
              "duration_s": args.duration, "rss_samples": len(samples), "rss_first_mb": round(samples[0][1], 1),
              "rss_peak_mb": round(max(m for _, m in samples), 1), "rss_last_mb": round(samples[-1][1], 1),
              "rss_slope_mb_per_hour_second_half": round(slope_mb_per_hour(second_half), 2),
              "rss_slope_mb_per_hour_whole": round(slope_mb_per_hour(samples), 2),
              "committed_transactions": counts.get("committed", 0), "hangs_made": counts.get("hangs", 0),
              "aborted_as_printed": counts.get("aborted", 0), "topics_deleted": counts.get("deleted", 0),
              "topics": f"reused: {args.reuse_topics}" if reused else "deleted after each abort"
              if args.delete_topics else "a new one per hang", "interval": args.interval,
              "incidents_recorded": len(incidents),
              "resolved_by_audited_write": sum(1 for i in incidents if i["resolution"] == "audited write"),
              "monitor_exit_code": code}
    if diff is not None and base is not None:
        report["traced_mb_at_warmup"] = round(base["traced"] / 2**20, 2)
        report["traced_mb_at_end"] = round(diff["traced"] / 2**20, 2)
    print(json.dumps(report, indent=2))
    return 0 if code == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
