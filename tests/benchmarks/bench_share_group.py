"""Share-group consumption vs a classic consumer group reading the same records, in the same run.

Both sides read every record of one topic (6 partitions, RF 3, 3 nodes) from the start with librdkafka:
the classic side a `Consumer` in a fresh group (auto.offset.reset=earliest), the share side a
`ShareConsumer` in a fresh share group (share.auto.offset.reset=earliest, implicit acknowledgement: each
poll accepts the previous one's records, and the acknowledgements are written to __share_group_state
before they are answered). Rounds alternate classic/share; each side's median records/s is reported, and
the median of the per-round ratios share/classic (each round's two runs are back to back). Target: >= 0.5.

Both consumers get the same fetch.wait.max.ms (100 ms by default). librdkafka's share consumer fetches from
one broker at a time, in turn, so once a broker has handed out all its records each fetch from it waits
fetch.wait.max.ms (the broker long-polls, as Kafka's does); the classic consumer fetches from every leader
at once and never waits that way. `--wait-ms 500` (librdkafka's default) shows that cost.

    python -m tests.benchmarks.bench_share_group [--records 200000] [--size 100] [--rounds 5] [--wait-ms 100]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from confluent_kafka import Consumer, Producer, ShareConsumer

from kafka_txn_broker import EmbeddedCluster
from tests.e2e.share_support import set_group_configs

TOPIC = "bench"
PARTITIONS = 6


def fill(bootstrap: str, records: int, size: int) -> None:
    # Batches of at most 1,000 records: a share fetch acquires whole batches, and librdkafka fetches one
    # broker at a time, so equal batches keep the brokers draining at the same pace.
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.num.messages": 1000, "acks": "all"})
    value = b"x" * size
    for i in range(records):
        while True:
            try:
                p.produce(TOPIC, value=value, partition=i % PARTITIONS)
                break
            except BufferError:
                p.poll(0.01)
    assert p.flush(300) == 0


def classic(bootstrap: str, group: str, records: int, wait_ms: int) -> float:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": True, "fetch.wait.max.ms": wait_ms, "log_level": 3})
    start = time.perf_counter()
    c.subscribe([TOPIC])
    got = 0
    while got < records:
        got += sum(1 for m in c.consume(1000, 1.0) if m.error() is None)
    elapsed = time.perf_counter() - start
    c.close()
    return records / elapsed


def share(bootstrap: str, group: str, records: int, members: int, wait_ms: int) -> float:
    set_group_configs(bootstrap, group, share_auto_offset_reset="earliest")
    consumers = [ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, "fetch.wait.max.ms": wait_ms,
                                "log_level": 3}) for _ in range(members)]
    start = time.perf_counter()
    for c in consumers:
        c.subscribe([TOPIC])
    got = 0
    while got < records:
        for c in consumers:
            got += sum(1 for m in c.poll(0.2) if m.error() is None)
    for c in consumers:
        c.commit_sync(30)
    elapsed = time.perf_counter() - start
    for c in consumers:
        c.close()
    return records / elapsed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--members", type=int, default=1, help="share consumers in the share group")
    ap.add_argument("--wait-ms", type=int, default=100,
                    help="fetch.wait.max.ms of both consumers (librdkafka's default, 500, makes every share fetch "
                         "from a broker with nothing left wait that long)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, EmbeddedCluster(nodes=3, data_dir=tmp) as cluster:
        cluster.create_topic(TOPIC, PARTITIONS, 3)
        bs = cluster.bootstrap_servers
        fill(bs, args.records, args.size)
        classic_rates, share_rates = [], []
        for i in range(args.rounds):
            classic_rates.append(classic(bs, f"classic-{i}", args.records, args.wait_ms))
            share_rates.append(share(bs, f"share-{i}", args.records, args.members, args.wait_ms))
            print(f"round {i + 1}: classic {classic_rates[-1]:,.0f} rec/s, share {share_rates[-1]:,.0f} rec/s",
                  flush=True)
        c, s = statistics.median(classic_rates), statistics.median(share_rates)
        # Each round's pair ran back to back: the median of the per-round ratios resists the machine's noise.
        paired = statistics.median(sh / cl for sh, cl in zip(share_rates, classic_rates, strict=True))
        print(f"{args.records} records of {args.size} B, {args.members} share member(s), fetch.wait.max.ms "
              f"{args.wait_ms}: classic {c:,.0f} rec/s, share {s:,.0f} rec/s (medians); median per-round ratio "
              f"{paired:.2f} (target >= 0.50)")


if __name__ == "__main__":
    main()
