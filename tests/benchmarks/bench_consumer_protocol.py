"""The new consumer protocol (KIP-848, `group.protocol=consumer`) vs the classic one, reading the same
records in the same run.

Both sides read every record of one topic (6 partitions, RF 3, 3 nodes) from the start with librdkafka's
`Consumer` in a fresh group (auto.offset.reset=earliest, auto commit), from subscribe() to the last record:
the join (server-side assignment with ConsumerGroupHeartbeat vs JoinGroup/SyncGroup with a client-side
assignor) and the consumption. Rounds alternate classic/consumer, and which goes first alternates too;
each side's median records/s is reported, and the median of the per-round ratios consumer/classic.

    python -m tests.benchmarks.bench_consumer_protocol [--records 200000] [--size 100] [--rounds 6]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from confluent_kafka import Consumer

from kafka_txn_broker import EmbeddedCluster
from tests.benchmarks.bench_share_group import PARTITIONS, TOPIC, fill

# The new protocol's heartbeat interval paces its join; both sides use their defaults otherwise.
GROUP_CONFIG = {"group.consumer.heartbeat.interval.ms": 5000}


def read_all(bootstrap: str, group: str, records: int, protocol: str) -> float:
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
            "enable.auto.commit": True, "log_level": 3}
    if protocol == "consumer":
        conf["group.protocol"] = "consumer"
    c = Consumer(conf)
    start = time.perf_counter()
    c.subscribe([TOPIC])
    got = 0
    while got < records:
        got += sum(1 for m in c.consume(1000, 1.0) if m.error() is None)
    elapsed = time.perf_counter() - start
    c.close()
    return records / elapsed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=6)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, EmbeddedCluster(nodes=3, data_dir=tmp, config=GROUP_CONFIG) as cluster:
        cluster.create_topic(TOPIC, PARTITIONS, 3)
        bs = cluster.bootstrap_servers
        fill(bs, args.records, args.size)
        rates: dict[str, list[float]] = {"classic": [], "consumer": []}
        for i in range(args.rounds):
            order = ("classic", "consumer") if i % 2 == 0 else ("consumer", "classic")
            for protocol in order:
                rates[protocol].append(read_all(bs, f"{protocol}-{i}", args.records, protocol))
            print(f"round {i + 1}: classic {rates['classic'][-1]:,.0f} rec/s, "
                  f"consumer {rates['consumer'][-1]:,.0f} rec/s", flush=True)
        cl, co = statistics.median(rates["classic"]), statistics.median(rates["consumer"])
        paired = statistics.median(n / o for n, o in zip(rates["consumer"], rates["classic"], strict=True))
        print(f"{args.records} records of {args.size} B: classic {cl:,.0f} rec/s, consumer (KIP-848) {co:,.0f} "
              f"rec/s (medians); median per-round ratio consumer/classic {paired:.2f}")


if __name__ == "__main__":
    main()
