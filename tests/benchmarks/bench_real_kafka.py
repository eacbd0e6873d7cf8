"""Real against real: kafka-txn against upstream's own tool on the same Apache Kafka cluster,
and the embedded broker against Apache Kafka on the same machine.

1. find-hanging. A KRaft cluster of Apache Kafka (`--release`, jars from Maven Central; `--nodes` combined
   nodes, RF min(3, nodes)) with `--partitions` partitions (topics of `--per-topic`), `--producers` idempotent
   producers' state on every partition, and `--open-share` of the partitions hanging (late writes after an
   abort, backdated 30 minutes, tests/support/real_kafka/hang.py; one transactional id per 10 partitions;
   partition verification off so Kafka takes them). Once the brokers' CPU has settled after the staging, and after
   one uncounted run of each tool, each round, in turn:
   - upstream: `kafka-transactions.sh find-hanging --broker-id N` (TransactionsCommand by `java -cp`, the
     release's jars, as bin/ runs it) once per broker, a fresh JVM each (there is no whole-cluster mode);
   - kafka-txn: `kafka-txn find-hanging --all`, a fresh process.
   Reported for each: wall time as a user runs it (the sum over upstream's per-broker runs), the time inside
   the runtime (from the JVM's `main` or the Python program's first line to its exit: class loading and imports
   included, the JVM's or interpreter's own start not), the wall time less a startup baseline (median of
   `TransactionsCommand --help` / `kafka-txn --help` runs), and the requests sent (upstream: the admin client's
   own `request-total` metric, sampled in the JVM by a small wrapper class compiled here; kafka-txn: requests
   counted at its client's send). Both must name the same partitions, which must be the staged ones.
   Goals: >= 10x upstream's wall time, >= 3x its time inside the runtime.
2. start: the time from nothing to a usable cluster (a record produced with acks=all to a new topic): Apache
   Kafka (a cluster id, storage formatted, the JVMs started) against `kafka-txn broker start` (a fresh data dir).
   Goal >= 10x sooner.
3. CPU: broker CPU (utime + stime of every broker process, from /proc, less its idle rate measured just before)
   per 100-record transaction, librdkafka's transactional producer (the same client for both), after a warm-up;
   reported as a multiple of Kafka's.
Parts 2 and 3 run on the same fresh cluster each round, Kafka and the embedded broker taking turns.
Every JVM runs with the options of Kafka's bin/ scripts (kafka-run-class.sh: G1, C2, -Xmx256M for the tool,
`--heap` for brokers as kafka-server-start.sh's -Xmx1G), not the test harness's leaner ones.

    python tests/benchmarks/bench_real_kafka.py [--nodes 1] [--partitions 10000] [--per-topic 1000]
        [--open-share 0.01] [--producers 2] [--rounds 3] [--transactions 300] [--parts find-hanging,start,cpu]
        [--release 4.4.0] [--heap 1g] [--json out.json]

Exit 0: every goal met; 1: a goal missed (or the tools disagree). Results as JSON with --json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "broker")]

from kafka_txn_broker.testing.raw_client import RawKafkaClient  # noqa: E402
from tests.benchmarks.as_installed import installed_env  # noqa: E402
from tests.support.real_kafka import DEFAULT_RELEASE, KafkaCluster, UpstreamTool, release_libs  # noqa: E402
from tests.support.real_kafka import cluster as cluster_module  # noqa: E402
from tests.support.real_kafka.hang import seed_idempotent, stage_hangs, wait_for_leaders  # noqa: E402
from tests.support.real_kafka.tools import TRANSACTIONS_COMMAND  # noqa: E402

# kafka-run-class.sh's KAFKA_JVM_PERFORMANCE_OPTS, which bin/kafka-server-start.sh and bin/kafka-transactions.sh
# run with (the test harness starts its JVMs leaner, for speed on a test machine; users do not).
SCRIPT_JVM_OPTS = ["-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35",
                   "-XX:+ExplicitGCInvokesConcurrent", "-XX:MaxInlineLevel=15", "-Djava.awt.headless=true"]
# The children's environment: the checkout on the path, bytecode compiled as pip install compiles a wheel's
# (as_installed: set in main, which compiles first).
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "broker")])}
TICK = os.sysconf("SC_CLK_TCK")

# Runs a tool's main class and reports, at JVM exit, how long it ran after the JVM started it (`main` entry to
# exit) and the admin client's request-total metric (sampled: the client unregisters its metrics when closed).
TIMED_MAIN = r"""
import java.lang.management.ManagementFactory;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicLong;
import javax.management.MBeanServer;
import javax.management.ObjectName;

public class TimedMain {
    static final AtomicLong MAX = new AtomicLong();

    static void sample(MBeanServer server, ObjectName pattern) {
        long sum = 0;
        try {
            for (ObjectName name : server.queryNames(pattern, null)) {
                sum += ((Number) server.getAttribute(name, "request-total")).longValue();
            }
        } catch (Exception e) {
            return;
        }
        long seen = sum;
        MAX.accumulateAndGet(seen, Math::max);
    }

    public static void main(String[] args) throws Throwable {
        long start = System.nanoTime();
        long jvmUpMs = ManagementFactory.getRuntimeMXBean().getUptime();
        MBeanServer server = ManagementFactory.getPlatformMBeanServer();
        ObjectName pattern = new ObjectName("kafka.admin.client:type=admin-client-metrics,client-id=*");
        Thread sampler = new Thread(() -> {
            while (true) {
                sample(server, pattern);
                try { Thread.sleep(1); } catch (InterruptedException e) { return; }
            }
        });
        sampler.setDaemon(true);
        sampler.start();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            sample(server, pattern);
            System.err.println("TIMED {\"in_runtime_s\": " + (System.nanoTime() - start) / 1e9
                + ", \"runtime_start_s\": " + jvmUpMs / 1e3 + ", \"requests\": " + MAX.get() + "}");
        }));
        Class.forName(args[0]).getMethod("main", String[].class)
            .invoke(null, (Object) Arrays.copyOfRange(args, 1, args.length));
    }
}
"""

# kafka-txn as its console script runs it, timed from the program's first line, its requests counted at send.
OURS = r"""
import atexit, json, sys, time
start = time.perf_counter()
sent = [0]
from kafka_txn_tools.cli.entry import importing, kafka_txn
with importing():  # as kafka-txn's entry point imports (kafka-python's package first, the collector off)
    from kafka_txn_tools.connection import client as client_module
original = client_module.AdminClient._start
def counting(self, request, *rest):
    sent[0] += 1
    return original(self, request, *rest)
client_module.AdminClient._start = counting
atexit.register(lambda: print("TIMED " + json.dumps({"in_runtime_s": time.perf_counter() - start,
                                                    "requests": sent[0]}), file=sys.stderr))
sys.argv = ["kafka-txn", *sys.argv[1:]]
kafka_txn()
"""


class ScriptsCluster(KafkaCluster):
    """A cluster whose JVMs run with the options of Kafka's own bin/ scripts (G1, C2), as users run brokers."""

    def java_command(self, *args: str) -> list[str]:
        return ["java", *SCRIPT_JVM_OPTS, "-cp", f"{self.libs}/*", *args]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def timed_main(libs: Path, work: Path) -> Path:
    """TimedMain compiled into `work` (no Kafka class at compile time: it calls the tool by reflection)."""
    (work / "TimedMain.java").write_text(TIMED_MAIN)
    subprocess.run(["javac", "-d", str(work), str(work / "TimedMain.java")], check=True, capture_output=True)
    return work


def run_timed(command: list[str], any_exit: bool = False) -> dict[str, Any]:
    """One fresh process: its wall time, stdout, and the TIMED line it wrote to stderr (`any_exit`: a --help
    run, whose exit code is the tool's own business)."""
    start, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800, env=ENV)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # the child's CPU, all its threads: what it costs
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    timed = [line for line in done.stderr.splitlines() if line.startswith("TIMED ")]
    if (done.returncode not in (0, 3) and not any_exit) or not timed:
        raise RuntimeError(f"{' '.join(command[:6])}... exited {done.returncode}:\n{done.stdout[-2000:]}"
                           f"{done.stderr[-3000:]}")
    return {"wall_s": wall, "cpu_s": cpu, **json.loads(timed[-1][6:]), "stdout": done.stdout}


# ---- 1. find-hanging ------------------------------------------------------------------------------------------
def stage(cluster: KafkaCluster, partitions: int, per_topic: int, producers: int, open_share: float
          ) -> set[tuple[str, int, int, int]]:
    """Topics, idempotent state everywhere, hangs on an even spread of partitions: the staged hangs."""
    bs = cluster.bootstrap_servers
    rf = min(3, len(cluster.nodes))
    topics = [(f"bench-{i:03d}", min(per_topic, partitions - i * per_topic))
              for i in range((partitions + per_topic - 1) // per_topic)]
    started = time.perf_counter()
    with RawKafkaClient(bs, timeout_s=300) as client:
        for name, count in topics:
            client.create_topic(name, count, rf)
        for name, count in topics:
            wait_for_leaders(client, name, count, timeout_s=600)
    print(f"created {len(topics)} topics, {partitions} partitions x RF {rf} in {time.perf_counter() - started:.1f} s")
    started = time.perf_counter()
    for name, count in topics:
        seed_idempotent(bs, name, count, producers)
    print(f"{producers} idempotent producers on every partition in {time.perf_counter() - started:.1f} s")
    hanging = max(1, round(partitions * open_share))
    step = partitions / hanging
    chosen: dict[str, list[int]] = {}
    for k in range(hanging):
        index = int(k * step)
        chosen.setdefault(topics[index // per_topic][0], []).append(index % per_topic)
    truth = set()
    for topic, parts in chosen.items():
        for i in range(0, len(parts), 10):
            for h in stage_hangs(bs, topic, parts[i:i + 10], f"{topic}-late-{i // 10}"):
                truth.add((h.topic, h.partition, h.producer_id, h.start_offset))
    print(f"{len(truth)} hanging partitions staged")
    return truth


def upstream_rows(stdout: str) -> set[tuple[str, int, int, int]]:
    """TransactionsCommand find-hanging's table: Topic Partition ProducerId ProducerEpoch CoordinatorEpoch
    StartOffset ..."""
    rows = set()
    for line in stdout.splitlines()[1:]:
        cells = line.split()
        if len(cells) >= 6 and cells[1].isdigit():
            rows.add((cells[0], int(cells[1]), int(cells[2]), int(cells[5])))
    return rows


def settle(pids: list[int], idle_cpu: float = 0.1, quiet_s: int = 5, limit_s: int = 300) -> None:
    """Until the brokers' CPU stays below `idle_cpu` per broker (CPU seconds per second) for `quiet_s` seconds in a
    row, or `limit_s` passed. After staging, a broker of 10,000 partitions works on for a while (producer-state
    snapshots, the JIT), and rounds measured then measured that work: the first of five went 1.49 s in the JVM
    and 0.65 s in Python, the last 1.14 s and 0.34 s (2026-12-07). Per broker: three idle brokers together
    never went below 0.1."""
    started = time.monotonic()
    quiet, last = 0, cpu_s(pids)
    while quiet < quiet_s and time.monotonic() - started < limit_s:
        time.sleep(1)
        now = cpu_s(pids)
        quiet = quiet + 1 if now - last < idle_cpu * len(pids) else 0
        last = now
    print(f"brokers settled in {time.monotonic() - started:.0f} s" + (" (limit reached)" if quiet < quiet_s else ""))


def find_hanging(cluster: KafkaCluster, libs: Path, work: Path, rounds: int,
                 truth: set[tuple[str, int, int, int]]) -> tuple[dict[str, Any], bool]:
    bs = cluster.bootstrap_servers
    wrapper = timed_main(libs, work)
    harness = UpstreamTool(libs, main_class="TimedMain").command(TRANSACTIONS_COMMAND)
    cp = harness.index("-cp")
    # As bin/kafka-transactions.sh runs it: kafka-run-class.sh's heap for tools and its JVM options.
    base = ["java", "-Xmx256M", *SCRIPT_JVM_OPTS, "-cp", f"{harness[cp + 1]}{os.pathsep}{wrapper}",
            *harness[cp + 2:]]

    def upstream(*args: str) -> list[str]:
        return [*base, *args]

    ours = [sys.executable, "-c", OURS]
    baselines: dict[str, list[float]] = {"upstream": [], "kafka-txn": []}
    runs: dict[str, list[dict[str, Any]]] = {"upstream": [], "kafka-txn": []}
    agree = True
    settle([n.proc.pid for n in cluster.nodes.values() if n.proc is not None])
    # One run of each, not counted: the page cache holds both tools' files, as on a machine that ran them before.
    for node in cluster.nodes:
        run_timed(upstream("--bootstrap-server", bs, "find-hanging", "--broker-id", str(node)))
    run_timed([*ours, "find-hanging", "--all", "-b", bs, "-o", "json", "--timeout", "300s"])
    for r in range(rounds):
        baselines["upstream"].append(run_timed(upstream("--help"), any_exit=True)["wall_s"])
        per_broker = [run_timed(upstream("--bootstrap-server", bs, "find-hanging", "--broker-id", str(node)))
                      for node in cluster.nodes]
        found = set().union(*(upstream_rows(p["stdout"]) for p in per_broker))
        runs["upstream"].append({k: sum(p[k] for p in per_broker)
                                 for k in ("wall_s", "cpu_s", "in_runtime_s", "runtime_start_s", "requests")})
        baselines["kafka-txn"].append(run_timed([*ours, "--help"], any_exit=True)["wall_s"])
        mine = run_timed([*ours, "find-hanging", "--all", "-b", bs, "-o", "json", "--timeout", "300s"])
        rows = {(h["topic"], h["partition"], h["producer_id"], h["start_offset"])
                for h in json.loads(mine["stdout"])["hanging"]}
        runs["kafka-txn"].append({k: mine[k] for k in ("wall_s", "cpu_s", "in_runtime_s", "requests")})
        same = found == rows == truth
        agree = agree and same
        print(f"round {r + 1}: upstream {runs['upstream'][-1]['wall_s']:.2f} s wall "
              f"({runs['upstream'][-1]['in_runtime_s']:.2f} in the JVM), kafka-txn {mine['wall_s']:.2f} s wall "
              f"({mine['in_runtime_s']:.2f} in Python); found {len(found)} / {len(rows)} of {len(truth)}"
              + ("" if same else f" DIFFER: upstream-only {sorted(found - rows)[:5]}, kafka-txn-only "
                                 f"{sorted(rows - found)[:5]}, missed {sorted(truth - rows)[:5]}"))
    nodes = len(cluster.nodes)
    summary: dict[str, Any] = {}
    for name in runs:
        startup = median(baselines[name]) * (nodes if name == "upstream" else 1)  # one JVM per broker
        summary[name] = {"wall_s": median([x["wall_s"] for x in runs[name]]),
                         "in_runtime_s": median([x["in_runtime_s"] for x in runs[name]]),
                         "startup_baseline_s": startup,
                         "wall_less_baseline_s": median([x["wall_s"] - startup for x in runs[name]]),
                         "cpu_s": median([x["cpu_s"] for x in runs[name]]),
                         "requests": median([x["requests"] for x in runs[name]]), "runs": runs[name]}
    up, me = summary["upstream"], summary["kafka-txn"]
    summary["speedup_wall"] = up["wall_s"] / me["wall_s"]
    summary["speedup_in_runtime"] = up["in_runtime_s"] / me["in_runtime_s"]
    summary["speedup_less_baseline"] = up["wall_less_baseline_s"] / max(me["wall_less_baseline_s"], 1e-3)
    summary["speedup_cpu"] = up["cpu_s"] / me["cpu_s"]
    summary["same_partitions"] = agree
    print(f"\n{'find-hanging':<12}{'wall s':>9}{'in runtime s':>14}{'startup s':>11}{'wall-startup s':>16}"
          f"{'requests':>10}{'CPU s':>8}")
    for name in ("upstream", "kafka-txn"):
        s = summary[name]
        print(f"{name:<12}{s['wall_s']:>9.2f}{s['in_runtime_s']:>14.2f}{s['startup_baseline_s']:>11.2f}"
              f"{s['wall_less_baseline_s']:>16.2f}{s['requests']:>10.0f}{s['cpu_s']:>8.2f}")
    print(f"speedup: wall {summary['speedup_wall']:.1f}x (goal >= 10x), in the runtime "
          f"{summary['speedup_in_runtime']:.1f}x (goal >= 3x), wall less startup "
          f"{summary['speedup_less_baseline']:.1f}x, CPU {summary['speedup_cpu']:.1f}x; same partitions: {agree}")
    ok = agree and summary["speedup_wall"] >= 10 and summary["speedup_in_runtime"] >= 3
    return summary, ok


# ---- 2 and 3. start and CPU -------------------------------------------------------------------------------------
def cpu_s(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / TICK
    return total


def usable(bootstrap: str, topic: str, rf: int, deadline_s: float = 300.0) -> None:
    """Until a new topic takes a record with acks=all (retrying while the cluster settles)."""
    deadline = time.monotonic() + deadline_s
    last: object = None
    while time.monotonic() < deadline:
        try:
            with RawKafkaClient(bootstrap, timeout_s=10) as client:
                try:
                    client.create_topic(topic, 3, rf)
                except Exception as exc:  # noqa: BLE001 - already created by an earlier attempt
                    if "error 36" not in str(exc):
                        raise
                wait_for_leaders(client, topic, 3, timeout_s=30)
                code, _ = client.produce(topic, 0, [b"ready"], int(time.time() * 1000))
                if code == 0:
                    return
                last = code
        except Exception as exc:  # noqa: BLE001 - not up yet
            last = exc
        time.sleep(0.05)
    raise TimeoutError(f"cluster at {bootstrap} not usable after {deadline_s} s (last: {last})")


def transactions(bootstrap: str, topic: str, count: int, per_txn: int = 100) -> float:
    """`count` transactions of `per_txn` 100-byte records with librdkafka: the wall time."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"bench-{time.time_ns()}", "linger.ms": 5,
                  "log_level": 0})
    p.init_transactions(60)
    value = b"v" * 100
    start = time.perf_counter()
    for _ in range(count):
        p.begin_transaction()
        for i in range(per_txn):
            p.produce(topic, value, partition=i % 3)
        p.commit_transaction(60)
    return time.perf_counter() - start


def measure_cpu(bootstrap: str, pids: list[int], topic: str, count: int) -> dict[str, float]:
    transactions(bootstrap, topic, count)  # warm-up (the JVM's JIT compiles its hot paths; both sides' caches)
    before, t0 = cpu_s(pids), time.perf_counter()
    time.sleep(3)
    idle_rate = (cpu_s(pids) - before) / (time.perf_counter() - t0)
    before = cpu_s(pids)
    wall = transactions(bootstrap, topic, count)
    used = cpu_s(pids) - before - idle_rate * wall
    return {"cpu_ms_per_txn": 1000 * used / count, "wall_ms_per_txn": 1000 * wall / count,
            "idle_cpu_per_s": idle_rate}


def kafka_round(libs: Path, work: Path, nodes: int, count: int, cpu: bool) -> dict[str, float]:
    start = time.perf_counter()
    cluster = ScriptsCluster(libs, work / f"kafka-{time.time_ns()}", nodes=nodes)
    try:
        cluster.start()
        usable(cluster.bootstrap_servers, "ready", min(3, nodes))
        out = {"start_s": time.perf_counter() - start}
        if cpu:
            pids = [n.proc.pid for n in cluster.nodes.values() if n.proc is not None]
            out.update(measure_cpu(cluster.bootstrap_servers, pids, "ready", count))
        return out
    finally:
        cluster.stop()
        shutil.rmtree(cluster.base, ignore_errors=True)


def embedded_round(work: Path, nodes: int, count: int, cpu: bool) -> dict[str, float]:
    data = work / f"embedded-{time.time_ns()}"
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "kafka_txn_tools", "broker", "start", "--nodes", str(nodes),
                             "--port", "0", "--data-dir", str(data)], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env=ENV)
    try:
        assert proc.stdout is not None
        bootstrap = ""
        for line in proc.stdout:
            if line.startswith("bootstrap.servers="):
                bootstrap = line.strip().split("=", 1)[1]
                break
        if not bootstrap:
            raise RuntimeError(f"kafka-txn broker start exited {proc.wait()} without a bootstrap.servers line")
        usable(bootstrap, "ready", min(3, nodes))
        out = {"start_s": time.perf_counter() - start}
        if cpu:
            out.update(measure_cpu(bootstrap, [proc.pid], "ready", count))
        return out
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(data, ignore_errors=True)


def brokers(libs: Path, work: Path, nodes: int, rounds: int, count: int, cpu: bool) -> tuple[dict[str, Any], bool]:
    runs: dict[str, list[dict[str, float]]] = {"kafka": [], "embedded": []}
    for r in range(rounds):
        runs["kafka"].append(kafka_round(libs, work, nodes, count, cpu))
        runs["embedded"].append(embedded_round(work, nodes, count, cpu))
        print(f"round {r + 1}: " + "; ".join(f"{k} " + ", ".join(f"{m} {v:.3g}" for m, v in x[-1].items())
                                               for k, x in runs.items()))
    summary: dict[str, Any] = {k: {m: median([x[m] for x in v]) for m in v[0]} for k, v in runs.items()}
    summary["runs"] = runs
    summary["start_speedup"] = summary["kafka"]["start_s"] / summary["embedded"]["start_s"]
    print(f"\nstart to a usable {nodes}-node cluster: Apache Kafka {summary['kafka']['start_s']:.2f} s, embedded "
          f"{summary['embedded']['start_s']:.2f} s: {summary['start_speedup']:.1f}x sooner (goal >= 10x)")
    if cpu:
        k, e = summary["kafka"]["cpu_ms_per_txn"], summary["embedded"]["cpu_ms_per_txn"]
        summary["cpu_multiple_of_kafka"] = e / k
        print(f"broker CPU per 100-record transaction: Apache Kafka {k:.2f} ms, embedded {e:.2f} ms: "
              f"{e / k:.2f}x Kafka's (wall per transaction {summary['kafka']['wall_ms_per_txn']:.2f} vs "
              f"{summary['embedded']['wall_ms_per_txn']:.2f} ms)")
    return summary, summary["start_speedup"] >= 10


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--release", default=os.environ.get("KAFKA_TXN_KAFKA_RELEASE", DEFAULT_RELEASE))
    ap.add_argument("--nodes", type=int, default=1)
    ap.add_argument("--partitions", type=int, default=10_000)
    ap.add_argument("--per-topic", type=int, default=1000)
    ap.add_argument("--open-share", type=float, default=0.01)
    ap.add_argument("--producers", type=int, default=2, help="idempotent producers' state on every partition")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--transactions", type=int, default=300, help="100-record transactions per CPU measurement")
    ap.add_argument("--parts", default="find-hanging,start,cpu")
    ap.add_argument("--heap", default="1g", help="each Kafka node's -Xmx")
    ap.add_argument("--json", type=Path, help="write the results here")
    args = ap.parse_args(argv)
    parts = set(args.parts.split(","))
    installed = installed_env(ROOT, ENV)
    ENV.clear()
    ENV.update(installed)
    libs = release_libs(args.release)
    cluster_module.HEAP = f"-Xmx{args.heap}"  # as kafka-server-start.sh's -Xmx1G; the tests' heap is smaller
    results: dict[str, Any] = {"release": args.release, "nodes": args.nodes, "date": time.strftime("%Y-%m-%d"),
                               "cpus": os.cpu_count(), "load": os.getloadavg()}
    ok = True
    with tempfile.TemporaryDirectory(prefix="bench-real-kafka-") as tmp:
        work = Path(tmp)
        if "find-hanging" in parts:
            config = {"transaction.partition.verification.enable": "false"}
            with ScriptsCluster(libs, work / "find-hanging", nodes=args.nodes, config=config,
                              version=args.release) as cluster:
                truth = stage(cluster, args.partitions, args.per_topic, args.producers, args.open_share)
                results["find_hanging"], good = find_hanging(cluster, libs, work, args.rounds, truth)
                results["find_hanging"].update(partitions=args.partitions, producers=args.producers,
                                               hanging=len(truth))
                ok = ok and good
        if parts & {"start", "cpu"}:
            results["brokers"], good = brokers(libs, work, args.nodes, args.rounds, args.transactions,
                                               "cpu" in parts)
            ok = ok and good
    results["load_end"] = os.getloadavg()
    print(f"load average at the start {results['load'][0]:.1f}, at the end {results['load_end'][0]:.1f} "
          f"({os.cpu_count()} CPUs)")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
