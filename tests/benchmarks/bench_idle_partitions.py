"""Memory of a 3-node embedded cluster holding 20,000 partitions x RF 3 (60,000 replicas), idle.

Target: under 1.5 GB RSS for the whole process. Prints RSS before and after, the per-replica cost,
and the time to create the partitions and to restart the cluster over them.

    python tests/benchmarks/bench_idle_partitions.py [--partitions 20000]
"""

from __future__ import annotations

import argparse
import gc
import resource
import tempfile
import time


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", type=int, default=20_000)
    ap.add_argument("--per-topic", type=int, default=100)
    args = ap.parse_args()
    from kafka_txn_broker import EmbeddedCluster

    with tempfile.TemporaryDirectory() as tmp:
        cluster = EmbeddedCluster(nodes=3, data_dir=tmp).start()
        base = rss_mb()
        t0 = time.perf_counter()
        for i in range(args.partitions // args.per_topic):
            cluster.create_topic(f"idle-{i:05d}", args.per_topic, 3)
        created = time.perf_counter() - t0
        gc.collect()
        time.sleep(2)
        after = rss_mb()
        t1 = time.perf_counter()
        cluster.restart()
        restarted = time.perf_counter() - t1
        gc.collect()
        after_restart = rss_mb()
        cluster.close()
    replicas = args.partitions * 3
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"partitions={args.partitions} replicas={replicas}")
    print(f"RSS empty cluster {base:.0f} MB, idle with partitions {after:.0f} MB, after restart "
          f"{after_restart:.0f} MB, peak {peak:.0f} MB (target < 1536 MB)")
    print(f"per replica {(after - base) * 1024 / replicas:.1f} KB; create {created:.1f} s; restart {restarted:.1f} s")
    print("PASS" if max(after, after_restart) < 1536 else "FAIL")


if __name__ == "__main__":
    main()
