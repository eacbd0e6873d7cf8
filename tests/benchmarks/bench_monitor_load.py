"""`kafka-txn monitor` under many concurrent scrapers and page views: does the scan interval hold, and how
long does /metrics take?

The embedded cluster (1 node, in this process) holds --hangs hanging transactions, each holding back a
read_committed group, so /metrics, /api/findings and the status page have rows to render. The monitor runs
as in production (a child process, `--interval`), optionally behind --web-config (TLS and basic auth, the
test PKI of tests/support/pki.py). Then, for --duration seconds, --scrapers threads read /metrics and
--viewers threads read the status page, each in a loop without pause (a new connection per request, as the
monitor's HTTP/1.0 server answers), all on loopback. Reported:
- /metrics and / latency: p50, p99, max, requests per second, non-200 answers;
- the scans during the load (the history's scan log): how many, and the gaps between them against --interval.

    python tests/benchmarks/bench_monitor_load.py [--scrapers 32] [--viewers 8] [--duration 60]
        [--interval 2s] [--hangs 5] [--tls]

Bounded by design: threads and duration are capped, and everything stays on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import sqlite3
import ssl
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

MAX_THREADS = 256
MAX_DURATION_S = 1800


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class Load:
    """Threads reading one URL in a loop until `stop`; latencies and statuses under a lock."""

    def __init__(self, url: str, context: ssl.SSLContext | None, auth: str | None) -> None:
        self.url, self.context, self.auth = url, context, auth
        self.latencies: list[float] = []
        self.failures: dict[str, int] = {}
        self._lock = threading.Lock()

    def loop(self, stop: threading.Event) -> None:
        while not stop.is_set():
            request = urllib.request.Request(self.url)  # noqa: S310 - loopback only
            if self.auth:
                request.add_header("Authorization", self.auth)
            began = time.perf_counter()
            outcome = "200"
            try:
                with urllib.request.urlopen(request, timeout=30, context=self.context) as response:  # noqa: S310
                    response.read()
                    outcome = str(response.status)
            except urllib.error.HTTPError as exc:
                outcome = str(exc.code)
            except OSError as exc:
                outcome = type(exc).__name__
            elapsed = time.perf_counter() - began
            with self._lock:
                if outcome == "200":
                    self.latencies.append(elapsed)
                else:
                    self.failures[outcome] = self.failures.get(outcome, 0) + 1

    def summary(self, duration: float) -> dict[str, Any]:
        ms = [x * 1000 for x in self.latencies]
        return {"requests": len(ms), "per_second": round(len(ms) / duration, 1), "p50_ms": round(percentile(ms, .5), 1),
                "p99_ms": round(percentile(ms, .99), 1), "max_ms": round(max(ms, default=float("nan")), 1),
                "failures": self.failures}


def scan_times(history: Path, since_ms: int, until_ms: int) -> list[int]:
    with contextlib.closing(sqlite3.connect(history, timeout=30)) as db:
        rows = db.execute("SELECT time_ms FROM scans WHERE time_ms BETWEEN ? AND ? ORDER BY time_ms",
                          (since_ms, until_ms)).fetchall()
    return [r[0] for r in rows]


def run(scrapers: int = 32, viewers: int = 8, duration: float = 60, interval: str = "2s", hangs: int = 5,
        tls: bool = False, work: Path | None = None) -> dict[str, Any]:
    from kafka_txn_broker import EmbeddedCluster
    from tests.e2e.monitor_support import MonitorProcess, wait_for
    from tests.e2e.test_monitor import hang
    from tests.e2e.test_monitor_prometheus import hold_group

    scrapers, viewers = min(scrapers, MAX_THREADS), min(viewers, MAX_THREADS)
    duration = min(duration, MAX_DURATION_S)
    work = work or Path(tempfile.mkdtemp(prefix="monitor-load-"))
    extra, context, auth = _security(work) if tls else ([], None, None)
    with EmbeddedCluster(nodes=1, data_dir=work / "kafka", config={"transaction.partition.verification.enable":
                                                                    False}) as cluster:
        bs = cluster.bootstrap_servers
        for i in range(hangs):
            truth = hang(bs).hanging[0]
            hold_group(bs, truth.topic, f"held-{i}", truth.start_offset)
        history = work / "history.db"
        with MonitorProcess(bs, history, *extra, interval=interval) as monitor:
            monitor.context = context
            if auth:
                monitor.auth = ("load", "load-password")
            wait_for("the monitor's findings", lambda: len((monitor.findings() or {}).get("hanging", [])) >= hangs,
                     timeout=120)
            loads = {"/metrics": Load(monitor.url + "/metrics", context, auth),
                     "/": Load(monitor.url + "/", context, auth)}
            stop = threading.Event()
            threads = [threading.Thread(target=loads[p].loop, args=(stop,), daemon=True)
                       for p, n in (("/metrics", scrapers), ("/", viewers)) for _ in range(n)]
            began_ms = time.time_ns() // 1_000_000
            began = time.monotonic()
            for t in threads:
                t.start()
            time.sleep(duration)
            stop.set()
            for t in threads:
                t.join(60)
            elapsed = time.monotonic() - began
            ended_ms = time.time_ns() // 1_000_000
            monitor.terminate()
    times = scan_times(history, began_ms, ended_ms)
    gaps = [(b - a) / 1000 for a, b in zip(times, times[1:], strict=False)]
    return {"scrapers": scrapers, "viewers": viewers, "duration_s": round(elapsed, 1), "interval": interval,
            "tls_and_basic_auth": tls, "hangs": hangs,
            "metrics": loads["/metrics"].summary(elapsed), "page": loads["/"].summary(elapsed),
            "scans": {"count": len(times), "mean_gap_s": round(sum(gaps) / len(gaps), 2) if gaps else None,
                      "max_gap_s": round(max(gaps), 2) if gaps else None}}


def _security(work: Path) -> tuple[list[str], ssl.SSLContext, str]:
    """A web config with TLS (no client certificate) and one basic auth user, bcrypt cost 12."""
    import bcrypt
    import yaml

    from tests.support.pki import make_pki

    pki = make_pki(work / "pki")
    hashed = bcrypt.hashpw(b"load-password", bcrypt.gensalt(rounds=12)).decode()
    config = work / "web.yml"
    config.write_text(yaml.safe_dump({"tls_server_config": {"cert_file": str(pki.server_cert),
                                                            "key_file": str(pki.server_key)},
                                      "basic_auth_users": {"load": hashed}}))
    context = ssl.create_default_context(cafile=str(pki.ca))
    return ["--web-config", str(config)], context, "Basic " + base64.b64encode(b"load:load-password").decode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scrapers", type=int, default=32)
    parser.add_argument("--viewers", type=int, default=8)
    parser.add_argument("--duration", type=float, default=60)
    parser.add_argument("--interval", default="2s")
    parser.add_argument("--hangs", type=int, default=5)
    parser.add_argument("--tls", action="store_true", help="TLS and basic auth (--web-config)")
    args = parser.parse_args()
    result = run(args.scrapers, args.viewers, args.duration, args.interval, args.hangs, args.tls)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
