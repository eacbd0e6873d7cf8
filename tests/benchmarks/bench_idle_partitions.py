"""Memory of a 3-node embedded cluster holding 20,000 partitions x RF 3 (60,000 replicas), idle, then
the memory that writing costs.

Target: under 1.5 GB RSS for the whole process. Prints RSS before and after, the per-replica cost,
and the time to create the partitions and to restart the cluster over them. Then --write-mb MiB of
records go to a 12-partition topic (RF 3: three times that on disk), and the RSS growth is reported
per GiB written: with Kafka's default segment sizes nothing rolls, so this is what the active segments'
indexes cost (Kafka: 20 bytes per 4 KiB, 5 MiB per GiB).

    python tests/benchmarks/bench_idle_partitions.py [--partitions 20000] [--write-mb 512]
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

WRITE_TOPIC = "written"
WRITE_PARTITIONS = 12
RECORD = b"x" * 1000
# Batches of 2 KB, each with a later timestamp: an index entry every few batches in both indexes, as a
# producer's small batches give (a batch larger than log.index.interval.bytes gets one entry of its own).
BATCH_RECORDS = 2
BATCHES_PER_CALL = 256  # appends per trip to the broker's loop


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def bytes_on_disk(directory: Path) -> int:
    total = 0
    for d, _dirs, names in os.walk(directory):
        total += sum(os.path.getsize(os.path.join(d, n)) for n in names)
    return total


def write(cluster: Any, mib: int) -> float:
    """Append `mib` MiB of records to the leaders of WRITE_TOPIC (replicated to RF 3); seconds taken."""
    from kafka_txn_broker.formats.record_batch import build_batch

    core = cluster.cluster
    cluster.create_topic(WRITE_TOPIC, WRITE_PARTITIONS, 3)
    start_ms = int(time.time() * 1000)
    batches = mib * 2**20 // len(build_batch([(None, RECORD)] * BATCH_RECORDS, timestamp_ms=start_ms))

    def append(first: int, count: int) -> None:
        for i in range(first, first + count):
            state = core.metadata.partition(WRITE_TOPIC, i % WRITE_PARTITIONS)
            batch = build_batch([(None, RECORD)] * BATCH_RECORDS, timestamp_ms=start_ms + i)
            core.nodes[state.leader].replica_manager.get(WRITE_TOPIC, state.partition).append_as_leader(batch, -1)

    t0 = time.perf_counter()
    for first in range(0, batches, BATCHES_PER_CALL):
        cluster.call_soon(append, first, min(BATCHES_PER_CALL, batches - first))
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", type=int, default=20_000)
    ap.add_argument("--per-topic", type=int, default=100)
    ap.add_argument("--write-mb", type=int, default=512, help="MiB of records to write after the idle part")
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
        on_disk = bytes_on_disk(Path(tmp))
        seconds = write(cluster, args.write_mb)
        gc.collect()
        time.sleep(2)
        written = (bytes_on_disk(Path(tmp)) - on_disk) / 2**30
        after_write = rss_mb()
        cluster.close()
    replicas = args.partitions * 3
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"partitions={args.partitions} replicas={replicas}")
    print(f"RSS empty cluster {base:.0f} MB, idle with partitions {after:.0f} MB, after restart "
          f"{after_restart:.0f} MB, peak {peak:.0f} MB (target < 1536 MB)")
    print(f"per replica {(after - base) * 1024 / replicas:.1f} KB; create {created:.1f} s; restart {restarted:.1f} s")
    growth = after_write - after_restart
    print(f"wrote {args.write_mb} MiB of records ({written:.2f} GiB on disk, RF 3) in {seconds:.1f} s: RSS "
          f"{after_restart:.0f} -> {after_write:.0f} MB, {growth / written if written else float('nan'):.1f} "
          "MiB per GiB written")
    print("PASS" if max(after, after_restart) < 1536 else "FAIL")


if __name__ == "__main__":
    main()
