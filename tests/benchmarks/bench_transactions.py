"""Transactional vs idempotent throughput with librdkafka against the embedded broker, side by side.

For 1, 10 and 100 records per transaction over 3 partitions (RF 3, acks=all), the same number of
100-byte records is produced once by an idempotent producer (one flush at the end) and once by a
transactional producer (begin, produce, commit per transaction); 1000 per transaction shows where
the curve goes. The seeds quote 50-70% of non-transactional throughput on real Kafka; the target
here is at least 50% at 100 per transaction. Both producers connect (and get their producer id)
before the clock starts, so the ratio compares steady-state throughput only. The broker's CPU per record on
each side is printed too: their quotient is the ratio a broker-bound run (many producers) would reach.
The broker runs as a child process (`kafka-txn broker start`) so the client does not share its GIL.

    python -m tests.benchmarks.bench_transactions [--scale 1.0]
"""

from __future__ import annotations

import argparse
import os
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


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far (Linux /proc; 0.0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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
            assert broker.proc is not None
            pid = broker.proc.pid
            # ms/txn: the transactional producer's wall time per transaction. CPU us/rec: broker CPU
            # per record on each side; their quotient is the ratio once the broker, not the round trips
            # of one producer, is the limit (many producers).
            print(f"{'records/txn':>11} {'records':>8} {'idempotent rec/s':>17} {'transactional rec/s':>20} "
                  f"{'ratio':>6} {'ms/txn':>7} {'broker CPU ms/txn':>18} {'CPU us/rec idem/txn':>20} "
                  f"{'CPU ratio':>9}")
            for per_txn, records in RUNS.items():
                n = max(int(records * args.scale), per_txn)
                cpu_start = cpu_seconds(pid)
                idem = idempotent_rate(bootstrap, f"bench-{per_txn}", n)
                cpu_mid = cpu_seconds(pid)
                txn = transactional_rate(bootstrap, f"bench-{per_txn}", n, per_txn, f"bench-txn-{per_txn}")
                cpu_end = cpu_seconds(pid)
                txns = -(-n // per_txn)
                idem_us, txn_us = (cpu_mid - cpu_start) * 1e6 / n, (cpu_end - cpu_mid) * 1e6 / n
                cpu_ratio = idem_us / txn_us if txn_us else float("nan")
                print(f"{per_txn:>11} {n:>8} {idem:>17,.0f} {txn:>20,.0f} {txn / idem:>6.2f} "
                      f"{n / txn / txns * 1000:>7.2f} {txn_us * n / txns / 1000:>18.2f} "
                      f"{idem_us:>9.1f}/{txn_us:<10.1f} {cpu_ratio:>9.2f}", flush=True)
        finally:
            broker.terminate()


if __name__ == "__main__":
    main()
