"""find-hanging over a big cluster: kafka-txn's strategy vs upstream's vs kafka-python's, same run.

Setup (a 3-node embedded cluster in a child process, transaction verification off so the scenarios
can hang transactions): PARTITIONS partitions x RF 3, OPEN open transactions spread over them with
backdated writes (late but live: the coordinator still holds each, so they are candidates that must
be cleared with the coordinator), and the three hanging-transaction scenarios (`scenarios all`).

Each strategy runs in its own fresh process, reporting wall time (the whole process: imports,
connecting, scan), scan time (after connecting), peak RSS and what it found:

- kafka-txn: `find-hanging --all`: every replica, DescribeProducers in 2000-partition batches,
  3 in flight per broker, all brokers at once; then the coordinators, then the re-check.
- upstream: upstream's strategy on the same client (`upstream_strategy`: its requests in its order,
  sequential 500-partition DescribeProducers batches, one `--broker-id` run per broker, since
  there is no whole-cluster mode).
- kafka-python: KafkaAdminClient.find_hanging_transactions (coordinator-side).

Target: kafka-txn at least 3x faster than upstream's strategy, finding the same or more of the
true hanging transactions.

    python tests/benchmarks/bench_find_hanging.py [--partitions 20000] [--open 2000]
    python tests/benchmarks/bench_find_hanging.py --compare-with ../other-checkout [--rounds 5]

--compare-with DIR: kafka-txn's find-hanging from another checkout (its kafka_txn_tools and broker packages)
and from this one take turns against the same cluster, `--rounds` times each, old first; the ratio of the
medians says what a change costs; this checkout also runs without the coordinator side (the coordinator
side, `__transaction_state` and the groups), which says what those checks cost.
The cluster then also holds transactions stuck at their coordinator (`scenario coordinator-side`), so the
coordinator-side checks have something to find.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

CHILD = r"""
import json, resource, sys, time
strategy, bootstrap = sys.argv[1], sys.argv[2]
start = time.perf_counter()
found = set()
if strategy == "kafka-python":
    from kafka.admin import KafkaAdminClient
    admin = KafkaAdminClient(bootstrap_servers=bootstrap.split(","), request_timeout_ms=120000)
    for r in admin.find_hanging_transactions(max_transaction_timeout_ms=900000):
        for tp in r["topic_partitions"]:
            found.add((tp.topic, tp.partition, r["producer_id"], -1))
    admin.close()
else:
    from kafka_txn_tools.connection.client import AdminClient
    from kafka_txn_tools.connection.config import ClientSettings
    now = lambda: time.time_ns() // 1_000_000
    with AdminClient(ClientSettings(bootstrap_servers=bootstrap), timeout_ms=120000) as client:
        connected = time.perf_counter()
        if strategy.startswith("kafka-txn"):
            from kafka_txn_tools.admin.scan import ScanOptions, Scope, find_hanging
            # kafka-txn-partition-side: without the coordinator side, `__transaction_state` and groups
            options = ScanOptions(coordinator_side=False) if strategy == "kafka-txn-partition-side" else ScanOptions()
            report = find_hanging(client, Scope(all=True), now, options)
            assert not report.errors, report.errors[:3]
            found = {(h.partition.topic, h.partition.partition, h.producer.producer_id,
                      h.producer.current_txn_start_offset) for h in report.hanging}
        else:
            sys.path.insert(0, sys.argv[3])
            from bench_find_hanging import upstream_strategy
            for broker in client.metadata([]).broker_ids():  # no whole-cluster mode: one run per broker
                found |= upstream_strategy(client, broker, now)
        scan = time.perf_counter() - connected
wall = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"wall_s": wall, "scan_s": scan if strategy != "kafka-python" else wall, "peak_mb": peak,
                  "found": sorted(found)}))
"""


def upstream_strategy(client, broker_id, now_ms, max_timeout_ms=900_000):  # type: ignore[no-untyped-def]
    """TransactionsCommand.FindHangingTransactionsCommand's requests, in its order, over our client:
    listTopics, describeTopics in batches of 500 topics, DescribeProducers in sequential batches of
    500 partitions to the broker, then ListTransactions(producer ids) and DescribeTransactions, and
    upstream's rule (no id, unknown id, or partition not in the transaction). No re-check."""
    from kafka_txn_tools.admin import hanging

    names = sorted({i.partition.topic for i in client.metadata(None).partitions})
    partitions = []
    for i in range(0, len(names), 500):
        for info in client.metadata(names[i:i + 500]).partitions:
            if broker_id in info.replicas:
                partitions.append(info.partition)
    replicas = []
    for i in range(0, len(partitions), 500):
        got, errors = client.describe_producers({broker_id: partitions[i:i + 500]}, batch_size=500, in_flight=1)
        assert not errors, errors[:3]
        replicas += got
    candidates = hanging.select_candidates(replicas, now_ms(), max_timeout_ms)
    if not candidates:
        return set()
    pids = sorted({c.producer.producer_id for c in candidates})
    listed = client.list_transactions(client.metadata([]).broker_ids(), producer_ids=pids)
    by_pid = {t.producer_id: t.transactional_id for t in listed.listings}
    described = client.describe_transactions(set(by_pid.values()))
    found = set()
    for c in candidates:
        txn_id = by_pid.get(c.producer.producer_id)
        d = described.descriptions.get(txn_id) if txn_id is not None else None
        if d is None or c.partition not in d.partitions:
            found.add((c.partition.topic, c.partition.partition, c.producer.producer_id,
                       c.producer.current_txn_start_offset))
    return found


def start_broker(data_dir: Path) -> tuple[subprocess.Popen[str], str]:
    cmd = [sys.executable, "-m", "kafka_txn_tools", "broker", "start", "--nodes", "3", "--port", "0",
           "--data-dir", str(data_dir), "--set", "transaction.partition.verification.enable=false"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("bootstrap.servers="):
            return proc, line.split("=", 1)[1].strip()
    raise RuntimeError("the embedded broker did not start")


def create_topics(bootstrap: str, partitions: int, per_topic: int) -> list[str]:
    from kafka_txn_broker.testing.raw_client import RawKafkaClient

    topics = [f"bench-{i:04d}" for i in range(max(1, partitions // per_topic))]
    with RawKafkaClient(bootstrap, timeout_s=120) as client:
        for topic in topics:
            client.create_topic(topic, per_topic, 3)
    return topics


def open_transactions(bootstrap: str, topics: list[str], per_topic: int, count: int, threads: int = 4) -> None:
    """`count` open, late-but-live transactions (backdated 30 min), one partition each."""
    from kafka_txn_broker.testing.raw_client import RawKafkaClient

    old = int(time.time() * 1000) - 30 * 60_000

    def work(worker: int) -> None:
        with RawKafkaClient(bootstrap, timeout_s=120) as client:
            client.broker_count()
            for i in range(worker, count, threads):
                topic, partition = topics[i % len(topics)], (i // len(topics)) % per_topic
                txn_id = f"bench-open-{i}"
                code, pe = client.init_producer_id(txn_id, 600_000)  # <= transaction.max.timeout.ms
                assert code == 0, code
                assert client.add_partitions(txn_id, pe, topic, [partition]) == 0
                assert client.produce_transactional(txn_id, pe, topic, partition, 0, [b"x"], old)[0] == 0

    pool = [threading.Thread(target=work, args=(w,)) for w in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()


def run_strategy(strategy: str, bootstrap: str, tree: Path | None = None) -> dict[str, object]:
    """One strategy in a fresh process; `tree`: another checkout's packages instead of this one's."""
    import os

    env = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="bench-tree-") as links:
        if tree is not None:  # the import names point at that checkout's packages, ahead of the editable install
            # An older checkout may still have the package's files directly under broker/.
            broker = tree / "broker" / "kafka_txn_broker"
            (Path(links) / "kafka_txn_broker").symlink_to(broker if broker.is_dir() else tree / "broker")
            (Path(links) / "kafka_txn_tools").symlink_to(tree / "kafka_txn_tools")
            env["PYTHONPATH"] = f"{links}:{tree}"
        done = subprocess.run([sys.executable, "-c", CHILD, strategy, bootstrap, str(Path(__file__).parent)],
                              capture_output=True, text=True, cwd=tree or ROOT, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"{strategy} failed: {done.stderr[-2000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", type=int, default=20_000)
    ap.add_argument("--per-topic", type=int, default=100)
    ap.add_argument("--open", type=int, default=2_000)
    ap.add_argument("--compare-with", type=Path, default=None, help="another checkout to compare kafka-txn with")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    from kafka_txn_broker.testing.scenarios import ScenarioOptions, run_scenario

    with tempfile.TemporaryDirectory() as tmp:
        proc, bootstrap = start_broker(Path(tmp))
        try:
            t0 = time.perf_counter()
            topics = create_topics(bootstrap, args.partitions, args.per_topic)
            open_transactions(bootstrap, topics, args.per_topic, args.open)
            truth_runs = run_scenario("all", bootstrap, ScenarioOptions(backdate_ms=30 * 60_000, zombie_timeout_ms=500,
                                                                              wait_s=60))
            truth = {(h.topic, h.partition, h.producer_id, h.start_offset) for r in truth_runs for h in r.hanging}
            print(f"setup: {args.partitions} partitions x RF 3, {args.open} open late transactions, "
                  f"{len(truth)} hanging, {time.perf_counter() - t0:.0f} s")
            if args.compare_with is not None:
                stuck = run_scenario("coordinator-side", bootstrap, ScenarioOptions(zombie_timeout_ms=500, wait_s=120,
                                                                                   healthy=False))
                print(f"+ {sum(len(r.stuck) for r in stuck)} transactions stuck at their coordinator")
                return compare(bootstrap, args.compare_with.resolve(), args.rounds, truth)
            results = {s: run_strategy(s, bootstrap) for s in ("kafka-txn", "upstream", "kafka-python")}
        finally:
            proc.terminate()
            try:
                proc.wait(180)  # 60k replicas take a while to close
            except subprocess.TimeoutExpired:
                proc.kill()
    print(f"{'strategy':<14}{'wall s':>9}{'scan s':>9}{'peak MB':>10}{'true hanging found':>20}")
    for name, r in results.items():
        found = {tuple(f) for f in r["found"]}  # type: ignore[attr-defined]
        hits = len({t for t in truth if t in found or (t[0], t[1], t[2], -1) in found})
        print(f"{name:<14}{r['wall_s']:>9.2f}{r['scan_s']:>9.2f}{r['peak_mb']:>10.0f}{f'{hits}/{len(truth)}':>20}")
    ours, upstream = results["kafka-txn"], results["upstream"]
    speedup = float(upstream["wall_s"]) / float(ours["wall_s"])  # type: ignore[arg-type]
    scan_speedup = float(upstream["scan_s"]) / float(ours["scan_s"])  # type: ignore[arg-type]
    print(f"scan only (after connecting): {scan_speedup:.1f}x")
    same_or_more = {tuple(f) for f in ours["found"]} >= {tuple(f) for f in upstream["found"]}  # type: ignore[attr-defined]
    print(f"speed-up vs upstream's strategy: {speedup:.1f}x (target >= 3x); finds the same or more: {same_or_more}")
    return 0 if speedup >= 3 and same_or_more else 1


def compare(bootstrap: str, other: Path, rounds: int, truth: set[tuple[str, int, int, int]]) -> int:
    """kafka-txn from `other` (old) and from this checkout (new), alternating, old first; then this checkout
    without the coordinator side (partition side only: what the new checks cost)."""
    import statistics

    times: dict[str, list[float]] = {"old": [], "new": [], "new-partition-side": []}
    runs = (("old", "kafka-txn", other), ("new", "kafka-txn", None),
            ("new-partition-side", "kafka-txn-partition-side", None))
    for i in range(rounds):
        for name, strategy, tree in runs:
            r = run_strategy(strategy, bootstrap, tree)
            times[name].append(float(r["scan_s"]))  # type: ignore[arg-type]
            hits = len(truth & {tuple(f) for f in r["found"]})  # type: ignore[attr-defined]
            print(f"round {i + 1} {name}: scan {float(r['scan_s']):.2f} s, wall {float(r['wall_s']):.2f} s, "  # type: ignore[arg-type]
                  f"{hits}/{len(truth)} hanging")
    old, new = statistics.median(times["old"]), statistics.median(times["new"])
    side = statistics.median(times["new-partition-side"])
    print(f"median scan: old {old:.2f} s, new {new:.2f} s: new/old = {new / old:.2f}; new without the coordinator "
          f"side {side:.2f} s: the new checks cost {new - side:+.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
