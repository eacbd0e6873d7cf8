"""find-hanging over a big cluster: the first pass vs the full scan vs upstream's strategy, same cluster, same run.

Setup: a 3-node embedded cluster in a child process (transaction verification off, so transactions can be
left hanging), PARTITIONS partitions x RF 3, and --open-share of them (1% by default) holding an open
transaction with its writes backdated 30 minutes: --hanging of those hanging (a commit that never reaches a
partition the transaction wrote to without adding it: no coordinator will end it), the rest late but live
(the coordinator still holds each as Ongoing). That injected truth is what each strategy is scored against.

Each strategy runs in a fresh process of its own, the strategies taking turns for --rounds rounds:

- kafka-txn: `find-hanging --all` (ScanOptions as the CLI gives them): the first pass (ListOffsets on every
  leader, read_committed and read_uncommitted, one request per leader and isolation level), then
  DescribeProducers only where the LSO is below the high watermark; then the coordinators, the re-check.
- kafka-txn-full: `find-hanging --all --full-scan`: DescribeProducers on every replica (2000-partition
  batches, 3 in flight per broker, all brokers at once).
- upstream: upstream's strategy on the same client (`upstream_strategy`: its requests in its order,
  sequential 500-partition DescribeProducers batches, one `--broker-id` run per broker, since there is no
  whole-cluster mode).
- monitor: one process, one connection, as a scan loop keeps it: a first-pass scan, then the steady state (a
  second and a third), and a full scan between them, each measured alone.

Reported per strategy: wall time (the whole process: imports, connecting, scan), scan time (after
connecting), requests sent (by API), bytes received, the broker process's CPU time during the scan (less its
idle rate), the tool's peak RSS, and precision and recall of its hanging rows against the injected truth
(and of its late rows against the late ones). Goals: the first pass >= 10x upstream's strategy on scan time,
precision and recall 1.0; the monitor's steady-state scan <= 1/10 of a full scan's requests and broker CPU.

    python tests/benchmarks/bench_find_hanging.py [--partitions 20000] [--open-share 0.01] [--hanging 20]
        [--rounds 3] [--strategies kafka-txn,kafka-txn-full,upstream,monitor]
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
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

CHILD = r"""
import collections, json, os, resource, sys, time
strategy, bootstrap, broker_pid = sys.argv[1], sys.argv[2], int(sys.argv[3])
TICK = os.sysconf("SC_CLK_TCK")


def broker_cpu():
    with open(f"/proc/{broker_pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime


start = time.perf_counter()
sent = collections.Counter()
received = [0]
if strategy != "kafka-python":
    from kafka.net import transport
    from kafka_txn_tools.connection import client as client_module

    original_start = client_module.AdminClient._start

    def counting(self, request, *rest):
        sent[type(request).__name__.removesuffix("Request").split("_")[0]] += 1
        return original_start(self, request, *rest)

    client_module.AdminClient._start = counting
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
    return {"scan_s": time.perf_counter() - wall, "broker_cpu_s": broker_cpu() - cpu, "requests": sum(sent.values()),
            "by_api": dict(sorted(sent.items())), "bytes_received": received[0]}, result


def rows(report):
    key = lambda h: (h.partition.topic, h.partition.partition, h.producer.producer_id,
                     h.producer.current_txn_start_offset)
    return sorted(map(key, report.hanging)), sorted(map(key, report.held))


out = {}
if strategy == "kafka-python":
    from kafka.admin import KafkaAdminClient
    admin = KafkaAdminClient(bootstrap_servers=bootstrap.split(","), request_timeout_ms=120000)
    cpu = broker_cpu()
    found = set()
    for r in admin.find_hanging_transactions(max_transaction_timeout_ms=900000):
        for tp in r["topic_partitions"]:
            found.add((tp.topic, tp.partition, r["producer_id"], -1))
    admin.close()
    out = {"scan_s": time.perf_counter() - start, "broker_cpu_s": broker_cpu() - cpu, "hanging": sorted(found),
           "held": []}
else:
    from kafka_txn_tools.connection.client import AdminClient
    from kafka_txn_tools.connection.config import ClientSettings
    now = lambda: time.time_ns() // 1_000_000
    with AdminClient(ClientSettings(bootstrap_servers=bootstrap), timeout_ms=300000) as client:
        from kafka_txn_tools.admin.scan import ScanOptions, Scope, find_hanging
        if strategy == "monitor":  # one connection and one ScanLoop, as a scan loop keeps them
            from kafka_txn_tools.admin.scan_loop import ScanLoop
            kept, loop = ScanLoop(), ScanOptions(include_late=True)
            full = ScanOptions(include_late=True, first_pass=False)
            for name, options in (("first", loop), ("steady-1", loop), ("full", full), ("steady-2", loop)):
                stats, report = measured(lambda: find_hanging(client, Scope(all=True), now, options, loop=kept))
                assert not report.errors, report.errors[:3]
                stats["hanging"], stats["held"] = rows(report)
                stats["replicas_asked"] = report.scanned_replicas
                out[name] = stats
        elif strategy.startswith("kafka-txn"):
            # kafka-txn-partition-side: without the coordinator side, `__transaction_state` and groups
            try:
                from kafka_txn_tools.admin.scan_loop import ScanLoop  # noqa: F401 - which API this checkout has
                extra = {"first_pass": strategy != "kafka-txn-full"}
            except ImportError:  # an older checkout (--compare-with): its own defaults
                extra = {}
            options = ScanOptions(include_late=True, coordinator_side=strategy != "kafka-txn-partition-side", **extra)
            out, report = measured(lambda: find_hanging(client, Scope(all=True), now, options))
            assert not report.errors, report.errors[:3]
            out["hanging"], out["held"] = rows(report)
            out["replicas_asked"] = report.scanned_replicas
        else:
            sys.path.insert(0, sys.argv[4])
            from bench_find_hanging import upstream_strategy

            def upstream():
                found = set()
                for broker in client.metadata([]).broker_ids():  # no whole-cluster mode: one run per broker
                    found |= upstream_strategy(client, broker, now)
                return found

            out, found = measured(upstream)
            out["hanging"], out["held"] = sorted(found), []
out["wall_s"] = time.perf_counter() - start
out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
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


# Long enough for the late transactions to outlive a run at 100,000 partitions (the coordinator's timeout runs
# from their start, not from their backdated writes).
TXN_TIMEOUT_MS = 4 * 3600_000
BACKDATE_MS = 30 * 60_000


def start_broker(data_dir: Path) -> tuple[subprocess.Popen[str], str]:
    cmd = [sys.executable, "-m", "kafka_txn_tools", "broker", "start", "--nodes", "3", "--port", "0",
           "--data-dir", str(data_dir), "--set", "transaction.partition.verification.enable=false",
           "--set", f"transaction.max.timeout.ms={TXN_TIMEOUT_MS}"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("bootstrap.servers="):
            return proc, line.split("=", 1)[1].strip()
    raise RuntimeError("the embedded broker did not start")


def create_topics(bootstrap: str, partitions: int, per_topic: int) -> list[str]:
    from kafka_txn_broker.testing.raw_client import RawKafkaClient

    topics = [f"bench-{i:04d}" for i in range(max(1, partitions // per_topic))]
    with RawKafkaClient(bootstrap, timeout_s=300) as client:
        for topic in topics:
            client.create_topic(topic, per_topic, 3)
    return topics


Truth = set[tuple[str, int, int, int]]  # (topic, partition, producer id, start offset)


def open_transactions(bootstrap: str, topics: list[str], per_topic: int, count: int, threads: int = 4,
                      hanging: int = 0) -> tuple[Truth, Truth]:
    """`count` open transactions with writes backdated 30 minutes, one partition each, spread over the topics:
    the first `hanging` of them hanging (the transaction also wrote to a partition it never added, then
    committed: the commit's markers never reach that partition), the others late but live. (hanging, late)."""
    from kafka_txn_broker.testing.raw_client import RawKafkaClient

    old = int(time.time() * 1000) - BACKDATE_MS
    found: list[tuple[bool, tuple[str, int, int, int]]] = []

    def work(worker: int) -> None:
        with RawKafkaClient(bootstrap, timeout_s=300) as client:
            client.broker_count()
            for i in range(worker, count, threads):
                topic, partition = topics[i % len(topics)], (i // len(topics)) % per_topic
                txn_id = f"bench-open-{i}"
                code, pe = client.init_producer_id(txn_id, TXN_TIMEOUT_MS)
                assert code == 0, code
                if i < hanging:  # its registered partition is the next one of the topic, which stays clean
                    own = (partition + 1) % per_topic
                    assert client.add_partitions(txn_id, pe, topic, [own]) == 0
                    assert client.produce_transactional(txn_id, pe, topic, own, 0, [b"x"], old)[0] == 0
                    code, offset = client.produce_transactional(txn_id, pe, topic, partition, 0, [b"x"], old)
                    assert code == 0, code
                    assert client.end_txn(txn_id, pe, commit=True) == 0
                else:
                    assert client.add_partitions(txn_id, pe, topic, [partition]) == 0
                    code, offset = client.produce_transactional(txn_id, pe, topic, partition, 0, [b"x"], old)
                    assert code == 0, code
                found.append((i < hanging, (topic, partition, pe.producer_id, offset)))

    pool = [threading.Thread(target=work, args=(w,)) for w in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    assert len(found) == count, f"{count - len(found)} transactions could not be opened"
    return {t for h, t in found if h}, {t for h, t in found if not h}


def idempotent_producers(bootstrap: str, count: int) -> float:
    """`count` idempotent producers that each wrote one batch to every partition, as a cluster's applications
    leave them (every producer is idempotent by default since Kafka 3.0, and its state stays for
    producer.id.expiration.ms, a day): each replica then describes `count` producers. Seconds taken."""
    from kafka.protocol.producer import InitProducerIdRequest, ProduceRequest

    from kafka_txn_broker.formats.record_batch import build_batch
    from kafka_txn_broker.testing.raw_client import V_INIT_PID, V_PRODUCE, RawKafkaClient
    from kafka_txn_tools.connection.client import AdminClient
    from kafka_txn_tools.connection.config import ClientSettings

    t0 = time.perf_counter()
    with AdminClient(ClientSettings(bootstrap_servers=bootstrap), timeout_ms=300_000) as admin:
        partitions = [i for i in admin.metadata().partitions if not i.internal]
    by_leader: dict[int, dict[str, list[int]]] = {}
    for info in partitions:
        by_leader.setdefault(info.leader, {}).setdefault(info.partition.topic, []).append(info.partition.partition)
    Topic = ProduceRequest.TopicProduceData
    with RawKafkaClient(bootstrap, timeout_s=600) as client:
        client.broker_count()
        for _ in range(count):
            init = client.send(InitProducerIdRequest[V_INIT_PID](transactional_id=None, transaction_timeout_ms=-1,
                                                                 producer_id=-1, producer_epoch=-1), V_INIT_PID)
            assert init.error_code == 0, init.error_code
            batch = build_batch([(None, b"x")], timestamp_ms=int(time.time() * 1000), producer_id=init.producer_id,
                                producer_epoch=init.producer_epoch, base_sequence=0)
            for leader, topics in by_leader.items():
                data = [Topic(name=t, partition_data=[Topic.PartitionProduceData(index=p, records=batch) for p in ps])
                        for t, ps in topics.items()]
                answer = client.send(ProduceRequest[V_PRODUCE](transactional_id=None, acks=-1, timeout_ms=300_000,
                                                               topic_data=data), V_PRODUCE, leader)
                codes = {p.error_code for t in answer.responses for p in t.partition_responses}
                assert codes == {0}, codes
    return time.perf_counter() - t0


def run_strategy(strategy: str, bootstrap: str, broker_pid: int, tree: Path | None = None) -> dict[str, Any]:
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
        done = subprocess.run([sys.executable, "-c", CHILD, strategy, bootstrap, str(broker_pid),
                               str(Path(__file__).parent)], capture_output=True, text=True, cwd=tree or ROOT, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"{strategy} failed: {done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def cpu_rate(pid: int, seconds: float = 5.0) -> float:
    """The broker process's CPU seconds per second while nothing asks it anything (its timers)."""
    import os

    tick = os.sysconf("SC_CLK_TCK")

    def cpu() -> float:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / tick

    before = cpu()
    time.sleep(seconds)
    return (cpu() - before) / seconds


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024


def score(found: list[Any], truth: Truth) -> tuple[float, float]:
    """(precision, recall) of rows against the injected truth; upstream-style rows without a start offset
    (-1) match on the rest."""
    got = {tuple(f) for f in found}
    hits = {t for t in truth if t in got or (*t[:3], -1) in got}
    matched = {g for g in got if g in truth or any(g[:3] == t[:3] and g[3] == -1 for t in truth)}
    return (len(matched) / len(got) if got else 1.0), (len(hits) / len(truth) if truth else 1.0)


def main() -> int:
    import statistics

    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", type=int, default=20_000)
    ap.add_argument("--per-topic", type=int, default=100)
    ap.add_argument("--open-share", type=float, default=0.01, help="the share of partitions with an open transaction")
    ap.add_argument("--hanging", type=int, default=20, help="how many of the open transactions hang")
    ap.add_argument("--producers", type=int, default=0,
                    help="idempotent producers that each wrote to every partition (their state on every replica)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--idle-seconds", type=float, default=5.0,
                    help="how long the broker's idle CPU rate is measured (subtracted from each scan's)")
    ap.add_argument("--strategies", default="kafka-txn,kafka-txn-full,upstream,monitor")
    ap.add_argument("--compare-with", type=Path, default=None, help="another checkout to compare kafka-txn with")
    args = ap.parse_args()
    from kafka_txn_broker.testing.scenarios import ScenarioOptions, run_scenario

    strategies = args.strategies.split(",")
    results: dict[str, list[dict[str, Any]]] = {s: [] for s in strategies}
    with tempfile.TemporaryDirectory() as tmp:
        proc, bootstrap = start_broker(Path(tmp))
        try:
            t0 = time.perf_counter()
            topics = create_topics(bootstrap, args.partitions, args.per_topic)
            created = time.perf_counter() - t0
            if args.producers:
                took = idempotent_producers(bootstrap, args.producers)
                print(f"setup: {args.producers} idempotent producers wrote to every partition in {took:.0f} s",
                      flush=True)
            count = max(1, round(args.partitions * args.open_share))
            t1 = time.perf_counter()
            hanging, late = open_transactions(bootstrap, topics, args.per_topic, count, hanging=args.hanging)
            print(f"setup: {args.partitions} partitions x RF 3 created in {created:.0f} s; {count} open "
                  f"transactions ({len(hanging)} hanging, {len(late)} late) in {time.perf_counter() - t1:.0f}"
                  f" s; broker RSS {rss_mb(proc.pid):.0f} MB", flush=True)
            if args.compare_with is not None:
                run_scenario("partition-side", bootstrap, ScenarioOptions(backdate_ms=BACKDATE_MS,
                                                                           zombie_timeout_ms=500, wait_s=60))
                stuck = run_scenario("coordinator-side", bootstrap, ScenarioOptions(zombie_timeout_ms=500, wait_s=120,
                                                                                   healthy=False))
                print(f"+ {sum(len(r.stuck) for r in stuck)} transactions stuck at their coordinator")
                return compare(bootstrap, proc.pid, args.compare_with.resolve(), args.rounds, hanging)
            idle = cpu_rate(proc.pid, args.idle_seconds)
            for round_ in range(args.rounds):
                for strategy in strategies:
                    r = run_strategy(strategy, bootstrap, proc.pid)
                    results[strategy].append(r)
                    print(f"round {round_ + 1} {strategy}: {summary(r, idle)}", flush=True)
        finally:
            proc.terminate()
            try:
                proc.wait(600)  # 300k replicas take a while to close
            except subprocess.TimeoutExpired:
                proc.kill()
    return report(results, hanging, late, idle, statistics.median)


def summary(r: dict[str, Any], idle: float) -> str:
    if "steady-1" in r:
        return " / ".join(f"{k} {summary(r[k], idle)}" for k in ("first", "steady-1", "full", "steady-2"))
    return (f"scan {r['scan_s']:.2f} s (wall {r.get('wall_s', r['scan_s']):.2f}), {r.get('requests', '?')} requests, "
            f"{r.get('bytes_received', 0) / 1e6:.2f} MB in, broker CPU {net_cpu(r, idle):.2f} s, "
            f"peak {r.get('peak_mb', 0):.0f} MB, {len(r['hanging'])} hanging, {len(r['held'])} late")


def net_cpu(r: dict[str, Any], idle: float) -> float:
    return max(0.0, float(r["broker_cpu_s"]) - idle * float(r["scan_s"]))


def report(results: dict[str, list[dict[str, Any]]], hanging: Truth, late: Truth, idle: float,
           median: Any) -> int:
    ok = True
    print(f"\nmedians over {max(map(len, results.values()))} rounds (broker idle CPU {idle:.3f} s/s subtracted):")
    print(f"{'strategy':<16}{'scan s':>8}{'wall s':>8}{'requests':>10}{'MB in':>8}{'broker CPU s':>14}"
          f"{'peak MB':>9}{'precision':>11}{'recall':>8}{'late':>10}")
    scans = {}
    for name, runs in results.items():
        if name == "monitor" or not runs:
            continue
        precision, recall = zip(*(score(r["hanging"], hanging) for r in runs), strict=True)
        late_found = [len({tuple(x) for x in r["held"]} & late) for r in runs]
        scans[name] = median([r["scan_s"] for r in runs])
        print(f"{name:<16}{scans[name]:>8.2f}{median([r['wall_s'] for r in runs]):>8.2f}"
              f"{median([r.get('requests', 0) for r in runs]):>10.0f}"
              f"{median([r.get('bytes_received', 0) for r in runs]) / 1e6:>8.2f}"
              f"{median([net_cpu(r, idle) for r in runs]):>14.2f}{median([r['peak_mb'] for r in runs]):>9.0f}"
              f"{min(precision):>11.2f}{min(recall):>8.2f}{f'{min(late_found)}/{len(late)}':>10}")
        if name.startswith("kafka-txn"):
            ok = ok and min(precision) == 1.0 and min(recall) == 1.0
    if "kafka-txn" in scans and "upstream" in scans:
        speedup = scans["upstream"] / scans["kafka-txn"]
        print(f"first pass vs upstream's strategy (scan time): {speedup:.1f}x (goal >= 10x)")
        if "kafka-txn-full" in scans:
            print(f"first pass vs the full scan: {scans['kafka-txn-full'] / scans['kafka-txn']:.1f}x")
        ok = ok and speedup >= 10
    for r in results.get("monitor", []):
        for k in ("first", "steady-1", "full", "steady-2"):
            p, rc = score(r[k]["hanging"], hanging)
            ok = ok and p == rc == 1.0
    if results.get("monitor"):
        runs = results["monitor"]
        steady = [r[k] for r in runs for k in ("steady-1", "steady-2")]
        full = [r["full"] for r in runs]
        for what, get in (("requests", lambda x: x["requests"]), ("bytes in", lambda x: x["bytes_received"]),
                          ("broker CPU", lambda x: net_cpu(x, idle)), ("scan time", lambda x: x["scan_s"]),
                          ("replicas asked", lambda x: x["replicas_asked"])):
            a, b = median([get(x) for x in steady]), median([get(x) for x in full])
            print(f"monitor steady-state scan vs full scan, {what}: {a:.3g} vs {b:.3g} = {a / b if b else 0:.3f}"
                  + (" (goal <= 0.1)" if what in ("requests", "broker CPU") else ""))
        by_api = {k: median([x["by_api"].get(k, 0) for x in steady]) for x in steady for k in x["by_api"]}
        full_api = {k: median([x["by_api"].get(k, 0) for x in full]) for x in full for k in x["by_api"]}
        print(f"  requests by API, steady: {by_api}\n  requests by API, full:   {full_api}")
    return 0 if ok else 1


def compare(bootstrap: str, broker_pid: int, other: Path, rounds: int, truth: Truth) -> int:
    """kafka-txn from `other` (old) and from this checkout (new), alternating, old first; then this checkout
    without the coordinator side (partition side only: what the new checks cost)."""
    import statistics

    times: dict[str, list[float]] = {"old": [], "new": [], "new-partition-side": []}
    runs = (("old", "kafka-txn", other), ("new", "kafka-txn", None),
            ("new-partition-side", "kafka-txn-partition-side", None))
    for i in range(rounds):
        for name, strategy, tree in runs:
            r = run_strategy(strategy, bootstrap, broker_pid, tree)
            times[name].append(float(r["scan_s"]))
            found = r.get("hanging", r.get("found", []))  # an older checkout's child says "found"
            hits = len(truth & {tuple(f) for f in found})
            print(f"round {i + 1} {name}: scan {float(r['scan_s']):.2f} s, wall {float(r['wall_s']):.2f} s, "
                  f"{hits}/{len(truth)} hanging")
    old, new = statistics.median(times["old"]), statistics.median(times["new"])
    side = statistics.median(times["new-partition-side"])
    print(f"median scan: old {old:.2f} s, new {new:.2f} s: new/old = {new / old:.2f}; new without the coordinator "
          f"side {side:.2f} s: the new checks cost {new - side:+.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
