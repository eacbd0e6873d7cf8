"""Transactional vs idempotent throughput with librdkafka against the embedded broker, side by side.

For 1, 10 and 100 records per transaction over 3 partitions (RF 3, acks=all), the same number of
100-byte records is produced once by an idempotent producer (one flush at the end) and once by a
transactional producer (begin, produce, commit per transaction); 1000 per transaction shows where
the curve goes. The seeds quote 50-70% of non-transactional throughput on real Kafka; the target
here is at least 50% at 100 per transaction. Both producers connect (and get their producer id)
before the clock starts, so the ratio compares steady-state throughput only.
The broker runs as a child process (`kafka-txn broker start`) so the client does not share its GIL.

    python -m tests.benchmarks.bench_transactions [--scale 1.0]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.e2e.helpers import BrokerProcess, free_port_block

PARTITIONS = 3
VALUE = b"x" * 100
# records per transaction -> records per run (each run takes a few seconds on a 2-core machine)
RUNS = {1: 1_000, 10: 5_000, 100: 30_000, 1000: 60_000}


def _produce(p: Producer, topic: str, i: int, errors: list[object]) -> None:
    while True:
        try:
            p.produce(topic, value=VALUE, partition=i % PARTITIONS,
                      on_delivery=lambda e, m: errors.append(e) if e else None)
            return
        except BufferError:
            p.poll(0.01)


def idempotent_rate(bootstrap: str, topic: str, records: int) -> float:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 5,
                  "log_level": 3})
    errors: list[object] = []
    _produce(p, topic, 0, errors)  # connect and get a producer id first, as init_transactions does
    p.flush(30)
    start = time.perf_counter()
    for i in range(records):
        _produce(p, topic, i, errors)
    assert p.flush(300) == 0 and not errors, errors[:3]
    return records / (time.perf_counter() - start)


def transactional_rate(bootstrap: str, topic: str, records: int, per_txn: int, txn_id: str) -> float:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, "linger.ms": 5, "log_level": 3})
    p.init_transactions(30)
    errors: list[object] = []
    start = time.perf_counter()
    for first in range(0, records, per_txn):
        p.begin_transaction()
        for i in range(first, min(first + per_txn, records)):
            _produce(p, topic, i, errors)
        p.commit_transaction(60)
    elapsed = time.perf_counter() - start
    assert not errors, errors[:3]
    return records / elapsed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=1.0, help="multiply the record counts")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        broker = BrokerProcess(Path(tmp), 3, free_port_block(3))
        bootstrap = broker.start()
        try:
            admin = AdminClient({"bootstrap.servers": bootstrap})
            topics = [f"bench-{k}" for k in RUNS]
            for f in admin.create_topics([NewTopic(t, PARTITIONS, 3) for t in topics]).values():
                f.result(30)
            print(f"{'records/txn':>11} {'records':>8} {'idempotent rec/s':>17} {'transactional rec/s':>20} "
                  f"{'ratio':>6}")
            for per_txn, records in RUNS.items():
                n = max(int(records * args.scale), per_txn)
                idem = idempotent_rate(bootstrap, f"bench-{per_txn}", n)
                txn = transactional_rate(bootstrap, f"bench-{per_txn}", n, per_txn, f"bench-txn-{per_txn}")
                print(f"{per_txn:>11} {n:>8} {idem:>17,.0f} {txn:>20,.0f} {txn / idem:>6.2f}", flush=True)
        finally:
            broker.terminate()


if __name__ == "__main__":
    main()
