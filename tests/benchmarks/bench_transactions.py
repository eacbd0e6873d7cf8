"""Transactional vs idempotent throughput with librdkafka against the embedded broker, side by side.

For 1, 10 and 100 records per transaction over 3 partitions (RF 3, acks=all), the same number of
100-byte records is produced once by an idempotent producer (one flush at the end) and once by a
transactional producer (begin, produce, commit per transaction); 1000 per transaction shows where
the curve goes. The seeds quote 50-70% of non-transactional throughput on real Kafka; the target
here is at least 50% at 100 per transaction. Both producers connect (and get their producer id)
before the clock starts, so the ratio compares steady-state throughput only. The broker's CPU per record on
each side is printed too: their quotient is the ratio a broker-bound run (many producers) would reach.
The broker runs as a child process (`kafka-txn broker start`) so the client does not share its GIL.

    python -m tests.benchmarks.bench_transactions [--scale 1.0] [--producers 1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
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


def _run_producers(count: int, setup: Callable[[int], Producer], work: Callable[[int, Producer], None]) -> float:
    """Seconds from the moment all `count` producers are ready (connected, producer id held) until the
    last one is done. Each runs in its own thread: librdkafka releases the GIL while it waits."""
    ready = threading.Barrier(count)
    spans: list[tuple[float, float]] = []
    failures: list[BaseException] = []

    def one(index: int) -> None:
        try:
            p = setup(index)
            ready.wait()
            began = time.perf_counter()
            work(index, p)
            spans.append((began, time.perf_counter()))
        except BaseException as exc:  # reported below: a silent thread would skew the rate
            failures.append(exc)
            ready.abort()

    threads = [threading.Thread(target=one, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise failures[0]
    return max(e for _, e in spans) - min(b for b, _ in spans)


def _shares(records: int, count: int) -> list[range]:
    """The record numbers each producer sends: the same records in total, whatever the count."""
    return [range(i, records, count) for i in range(count)]


def idempotent_rate(bootstrap: str, topic: str, records: int, producers: int = 1) -> float:
    errors: list[object] = []
    shares = _shares(records, producers)

    def setup(_index: int) -> Producer:
        p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 5,
                      "log_level": 3})
        _produce(p, topic, 0, errors)  # connect and get a producer id first, as init_transactions does
        p.flush(30)
        return p

    def work(index: int, p: Producer) -> None:
        for i in shares[index]:
            _produce(p, topic, i, errors)
        assert p.flush(300) == 0

    elapsed = _run_producers(producers, setup, work)
    assert not errors, errors[:3]
    return records / elapsed


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far (Linux /proc; 0.0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def transactional_rate(bootstrap: str, topic: str, records: int, per_txn: int, txn_id: str,
                       producers: int = 1) -> float:
    errors: list[object] = []
    shares = _shares(records, producers)

    def setup(index: int) -> Producer:
        p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{txn_id}-{index}", "linger.ms": 5,
                      "log_level": 3})
        p.init_transactions(30)
        return p

    def work(index: int, p: Producer) -> None:
        mine = shares[index]
        for first in range(0, len(mine), per_txn):
            p.begin_transaction()
            for i in mine[first:first + per_txn]:
                _produce(p, topic, i, errors)
            p.commit_transaction(60)

    elapsed = _run_producers(producers, setup, work)
    assert not errors, errors[:3]
    return records / elapsed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=1.0, help="multiply the record counts")
    ap.add_argument("--producers", type=int, default=1,
                    help="producers per side, each in its own thread (many make the broker the limit)")
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
                # The idempotent side takes only ~0.1 s per run: the median of three steadies it.
                idem = statistics.median(idempotent_rate(bootstrap, f"bench-{per_txn}", n, args.producers)
                                         for _ in range(3))
                cpu_mid = cpu_seconds(pid)
                txn = transactional_rate(bootstrap, f"bench-{per_txn}", n, per_txn, f"bench-txn-{per_txn}",
                                         args.producers)
                cpu_end = cpu_seconds(pid)
                txns = -(-n // per_txn)
                idem_us, txn_us = (cpu_mid - cpu_start) * 1e6 / (3 * n), (cpu_end - cpu_mid) * 1e6 / n
                cpu_ratio = idem_us / txn_us if txn_us else float("nan")
                print(f"{per_txn:>11} {n:>8} {idem:>17,.0f} {txn:>20,.0f} {txn / idem:>6.2f} "
                      f"{n / txn / txns * 1000:>7.2f} {txn_us * n / txns / 1000:>18.2f} "
                      f"{idem_us:>9.1f}/{txn_us:<10.1f} {cpu_ratio:>9.2f}", flush=True)
        finally:
            broker.terminate()


if __name__ == "__main__":
    main()
