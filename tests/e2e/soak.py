"""Crash soak: transactional producers under load, the broker killed with SIGKILL at random moments,
every restart checked against a ledger of what the clients were told.

Shared by tests/e2e/test_crash_soak.py (bounded, in the default run) and tests/benchmarks/crash_soak.py
(the full 200 producers x 20 kills). The broker is `kafka-txn broker start` in a child process
(tests/e2e/helpers.BrokerProcess), restarted on the same ports and data after each kill.

Each producer (confluent-kafka, its own transactional.id, one thread each) runs transactions of 1-5
records spread over the topic's partitions, aborting some on purpose. The ledger records each
transaction before it starts and then what the client learnt:
- COMMITTED: commit_transaction returned, so PREPARE_COMMIT was durable: must be visible exactly once;
- ABORTED: abort_transaction returned: must never be visible;
- UNKNOWN: the broker died under it (or the producer was fenced): all of its records or none, once.
A producer whose broker died re-creates its Producer and calls init_transactions again, as a client
must; that fences its old epoch and lets the coordinator abort what was left open.

After each restart the load runs on for a while, then pauses (each producer finishes its transaction
and parks with no transaction open) and the checks run:
- no transaction of the soak's ids is left in PrepareCommit/PrepareAbort/Ongoing (every PREPARE_*
  completed, nothing hanging) and every partition's last stable offset equals its high watermark;
- a read_committed consumer reads every partition to its end and the values match the ledger: every
  committed record exactly once, nothing aborted, unknown transactions whole or absent, no duplicates.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from confluent_kafka import Consumer, IsolationLevel, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec
from kafka.protocol.admin import ListTransactionsRequest, ListTransactionsResponse

from tests.broker.wire import roundtrip
from tests.e2e.helpers import BrokerProcess, free_port_block

log = logging.getLogger("soak")
# librdkafka logs fatal errors at level 0, which log_level cannot silence: route them to a logger.
_client_log = logging.getLogger("soak.librdkafka")
_client_log.propagate = False
_client_log.addHandler(logging.NullHandler())
QUIET = {"log_level": 0, "logger": _client_log}
OPEN_STATES = ["Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence"]


class Status(Enum):
    PENDING = "pending"  # being written right now (only while the load runs)
    COMMITTED = "committed"
    ABORTED = "aborted"
    UNKNOWN = "unknown"


@dataclass
class SoakConfig:
    producers: int = 20
    kills: int = 3
    partitions: int = 6
    nodes: int = 1
    run_before_kill: tuple[float, float] = (0.8, 2.0)  # seconds of load before a kill (uniform)
    # The broker stays down this long (uniform) before it is restarted: longer than the producers'
    # transaction timeout, their commits fail and they must re-create and re-init (UNKNOWN outcomes).
    down_time: tuple[float, float] = (0.0, 7.0)
    run_after_restart: float = 2.0  # load continues this long after a restart (producers re-init)
    abort_ratio: float = 0.2
    txn_timeout_ms: int = 5_000
    seed: int = 1
    topic: str = "soak"


@dataclass
class RoundReport:
    kill: int
    killed_after_s: float
    committed: int
    aborted: int
    unknown_visible: int
    unknown_invisible: int
    records_read: int
    aborted_in_log: int  # records of aborted transactions a read_uncommitted reader sees (the filter works)
    settle_s: float
    verify_s: float


@dataclass
class Ledger:
    txns: dict[tuple[int, int], tuple[Status, int]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def begin(self, producer: int, seq: int, records: int) -> None:
        with self.lock:
            self.txns[(producer, seq)] = (Status.PENDING, records)

    def settle(self, producer: int, seq: int, status: Status) -> None:
        with self.lock:
            self.txns[(producer, seq)] = (status, self.txns[(producer, seq)][1])

    def snapshot(self) -> dict[tuple[int, int], tuple[Status, int]]:
        with self.lock:
            return dict(self.txns)


class SoakFailure(AssertionError):
    pass


def close_all(producers: list[Producer], timeout_s: float = 30.0) -> None:
    """Close every Producer the soak made, the replaced ones too (a client is closed, not dropped), side by side
    while the broker still runs: close() aborts what a producer left open and flushes; one stuck on a dead
    connection is left after `timeout_s` (the run's client check then names it)."""
    threads = [threading.Thread(target=_close, args=(p,), daemon=True) for p in producers]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout_s
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))


def _close(producer: Producer) -> None:
    """close(); a producer its successor fenced ends with its fatal error (FENCED): what a replaced one does."""
    from confluent_kafka import KafkaException

    try:
        producer.close()
    except KafkaException as exc:
        if not exc.args[0].fatal():
            raise


class Worker(threading.Thread):
    """One transactional producer: transactions back to back while the load runs; parks when paused."""

    def __init__(self, soak: CrashSoak, index: int) -> None:
        super().__init__(name=f"soak-producer-{index}", daemon=True)
        self.soak = soak
        self.index = index
        self.rng = random.Random(soak.config.seed * 1000 + index)
        self.seq = 0
        self.producer: Producer | None = None
        self.parked = threading.Event()
        self.inits = 0
        self.errors: Counter[str] = Counter()
        self.samples: dict[str, str] = {}  # one message per error name, for the report
        self.made: list[Producer] = []  # every Producer it made, closed when the soak ends (close_all)

    def _new_producer(self) -> Producer | None:
        cfg = self.soak.config
        p = Producer({"bootstrap.servers": self.soak.bootstrap, "transactional.id": f"soak-{self.index}",
                      "transaction.timeout.ms": cfg.txn_timeout_ms, "linger.ms": 2,
                      "message.timeout.ms": cfg.txn_timeout_ms, **QUIET})
        self.made.append(p)
        try:
            p.init_transactions(15)
        except KafkaException as exc:
            self.errors[f"init:{exc.args[0].name()}"] += 1
            return None
        self.inits += 1
        return p

    def run(self) -> None:
        soak = self.soak
        while not soak.stopped.is_set():
            if not soak.running.is_set() and self.producer is not None:
                # Park only with a usable producer and no transaction open.
                self.parked.set()
                soak.running.wait(0.2)
                continue
            self.parked.clear()
            if self.producer is None:
                self.producer = self._new_producer()
                if self.producer is None:
                    time.sleep(0.2)
                    continue
            if not self._one_transaction(self.producer):
                self.producer = None  # re-create and re-init, as a client must after a fatal error
        self.parked.set()

    def _one_transaction(self, p: Producer) -> bool:
        """Run one transaction and settle its ledger entry; False when the producer must be replaced."""
        cfg = self.soak.config
        self.seq += 1
        n = self.rng.randint(1, 5)
        abort = self.rng.random() < cfg.abort_ratio
        self.soak.ledger.begin(self.index, self.seq, n)
        try:
            p.begin_transaction()
            for i in range(n):
                p.produce(cfg.topic, key=b"%d" % self.rng.randrange(1 << 30),
                          value=b"%d:%d:%d:%d" % (self.index, self.seq, i, n))
            if abort:
                # Flush first, or librdkafka drops the unsent records and the abort leaves nothing in
                # the log for read_committed consumers to skip.
                p.flush(cfg.txn_timeout_ms / 1000)
                p.abort_transaction(cfg.txn_timeout_ms / 1000)
                self.soak.ledger.settle(self.index, self.seq, Status.ABORTED)
            else:
                self._commit(p)
                self.soak.ledger.settle(self.index, self.seq, Status.COMMITTED)
            return True
        except KafkaException as exc:
            err: KafkaError = exc.args[0]
            self.errors[err.name()] += 1
            self.samples.setdefault(err.name(), err.str())
            return self._after_failure(p, err)
        except BufferError:
            self.errors["BufferError"] += 1
            self.soak.ledger.settle(self.index, self.seq, Status.UNKNOWN)
            return False

    def _commit(self, p: Producer) -> None:
        deadline = time.monotonic() + self.soak.config.txn_timeout_ms / 1000
        while True:
            try:
                p.commit_transaction(max(0.5, deadline - time.monotonic()))
                return
            except KafkaException as exc:
                # librdkafka: a retriable commit error may be retried with the same call.
                if not exc.args[0].retriable() or time.monotonic() > deadline:
                    raise

    def _after_failure(self, p: Producer, err: KafkaError) -> bool:
        if err.txn_requires_abort() and not err.fatal():
            try:
                p.abort_transaction(self.soak.config.txn_timeout_ms / 1000)
            except KafkaException:
                self.soak.ledger.settle(self.index, self.seq, Status.UNKNOWN)
                return False
            # The coordinator accepted the abort, so nothing of this transaction may ever show.
            self.soak.ledger.settle(self.index, self.seq, Status.ABORTED)
            return True
        self.soak.ledger.settle(self.index, self.seq, Status.UNKNOWN)
        return False


class CrashSoak:
    def __init__(self, config: SoakConfig, data_dir: Path,
                 on_round: Callable[[RoundReport], None] | None = None) -> None:
        self.config = config
        self.on_round = on_round
        self.data_dir = data_dir
        self.rng = random.Random(config.seed)
        self.ledger = Ledger()
        self.running = threading.Event()
        self.stopped = threading.Event()
        self.broker = BrokerProcess(data_dir, config.nodes, free_port_block(config.nodes), sets=[
            # The reaper checks every second, so a transaction orphaned by a crash ends quickly.
            "transaction.abort.timed.out.transaction.cleanup.interval.ms=1000",
            f"offsets.topic.num.partitions={min(10, config.partitions)}",
            "transaction.state.log.num.partitions=10",
        ])
        self.bootstrap = ""
        self.workers: list[Worker] = []
        self.reports: list[RoundReport] = []

    # ---- driving ---------------------------------------------------------------------------------
    def run(self) -> list[RoundReport]:
        self.bootstrap = self.broker.start()
        try:
            admin = AdminClient({"bootstrap.servers": self.bootstrap, **QUIET})
            rf = min(3, self.config.nodes)
            admin.create_topics([NewTopic(self.config.topic, self.config.partitions, rf)])[self.config.topic].result(30)
            self.workers = [Worker(self, i) for i in range(self.config.producers)]
            for w in self.workers:
                w.start()
            for kill in range(1, self.config.kills + 1):
                self.running.set()
                ran = self.rng.uniform(*self.config.run_before_kill)
                time.sleep(ran)
                self.broker.kill9()
                time.sleep(self.rng.uniform(*self.config.down_time))
                self.bootstrap = self.broker.start()
                time.sleep(self.config.run_after_restart)
                self._pause()
                self.reports.append(self.verify(kill, ran))
                if self.on_round is not None:
                    self.on_round(self.reports[-1])
        finally:
            self.stopped.set()
            self.running.set()
            for w in self.workers:
                w.join(30)
            close_all([p for w in self.workers for p in w.made])
            if self.broker.proc is not None and self.broker.proc.poll() is None:
                self.broker.terminate()
        return self.reports

    def _pause(self, timeout: float = 120.0) -> None:
        self.running.clear()
        deadline = time.monotonic() + timeout
        for w in self.workers:
            if not w.parked.wait(max(0.0, deadline - time.monotonic())):
                raise SoakFailure(f"producer {w.index} did not finish its transaction within {timeout}s "
                                  f"(errors {dict(w.errors)})")

    # ---- checks ----------------------------------------------------------------------------------
    def verify(self, kill: int, killed_after: float) -> RoundReport:
        t0 = time.monotonic()
        self._wait_nothing_open()
        settle = time.monotonic() - t0
        ends = self._stable_ends()
        values = self._read(ends, committed=True)
        report = self._compare(kill, killed_after, values, settle)
        ledger = self.ledger.snapshot()
        report.aborted_in_log = sum(1 for v in self._read(ends, committed=False)
                                    if ledger.get(_txn_of(v), (None, 0))[0] is Status.ABORTED)
        report.verify_s = time.monotonic() - t0
        return report

    def _addresses(self) -> list[str]:
        return self.bootstrap.split(",")

    def _open_transactions(self) -> list[tuple[str, str]]:
        out = []
        for address in self._addresses():
            req = ListTransactionsRequest[0](state_filters=OPEN_STATES, producer_id_filters=[])
            resp = roundtrip(address, req, ListTransactionsResponse)
            out.extend((t.transactional_id, t.transaction_state) for t in resp.transaction_states
                       if t.transactional_id.startswith("soak-"))
        return out

    def _wait_nothing_open(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            left = self._open_transactions()
            if not left:
                return
            if time.monotonic() > deadline:
                raise SoakFailure(f"transactions still open {timeout}s after the pause: {left[:10]}")
            time.sleep(0.2)

    def _stable_ends(self) -> dict[int, int]:
        """Per partition: the high watermark, after checking the last stable offset has reached it."""
        admin = AdminClient({"bootstrap.servers": self.bootstrap, **QUIET})
        tps = [TopicPartition(self.config.topic, p) for p in range(self.config.partitions)]
        ends = {}
        deadline = time.monotonic() + 30
        for tp in tps:
            while True:
                hw = admin.list_offsets({tp: OffsetSpec.latest()},
                                        isolation_level=IsolationLevel.READ_UNCOMMITTED)[tp].result(30).offset
                lso = admin.list_offsets({tp: OffsetSpec.latest()},
                                         isolation_level=IsolationLevel.READ_COMMITTED)[tp].result(30).offset
                if lso == hw:
                    ends[tp.partition] = hw
                    break
                if time.monotonic() > deadline:
                    raise SoakFailure(f"partition {tp.partition}: last stable offset {lso} stuck below the "
                                      f"high watermark {hw} with every producer idle (a hanging transaction)")
                time.sleep(0.2)
        return ends

    def _read(self, ends: dict[int, int], committed: bool) -> list[bytes]:
        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "soak-verifier", "enable.auto.commit": False,
                      "isolation.level": "read_committed" if committed else "read_uncommitted",
                      "fetch.max.bytes": 8 << 20, **QUIET})
        c.assign([TopicPartition(self.config.topic, p, 0) for p in ends if ends[p] > 0])
        values: list[bytes] = []
        done = {p for p, end in ends.items() if end == 0}
        deadline = time.monotonic() + 120
        try:
            while len(done) < len(ends):
                if time.monotonic() > deadline:
                    raise SoakFailure(f"consumer stuck: partitions {set(ends) - done} unfinished")
                for m in c.consume(10_000, 0.5):
                    if m.error() is not None:
                        continue
                    values.append(m.value())
                for tp in c.position([TopicPartition(self.config.topic, p) for p in ends if p not in done]):
                    if tp.offset >= ends[tp.partition]:
                        done.add(tp.partition)
        finally:
            c.close()
        return values

    def _compare(self, kill: int, killed_after: float, values: list[bytes], settle: float) -> RoundReport:
        seen: Counter[tuple[int, int]] = Counter()
        records: Counter[bytes] = Counter(values)
        dup = [v for v, n in records.items() if n > 1]
        if dup:
            raise SoakFailure(f"after kill {kill}: {len(dup)} records visible more than once, e.g. {dup[:5]}")
        for v in values:
            seen[_txn_of(v)] += 1
        ledger = self.ledger.snapshot()
        problems = []
        counts = Counter[str]()
        for key, (status, n) in ledger.items():
            got = seen.pop(key, 0)
            if status is Status.COMMITTED and got != n:
                problems.append(f"committed txn {key} shows {got} of {n} records")
            elif status is Status.ABORTED and got:
                problems.append(f"aborted txn {key} shows {got} records")
            elif status in (Status.UNKNOWN, Status.PENDING) and got not in (0, n):
                problems.append(f"txn {key} of unknown outcome is partly visible ({got} of {n})")
            if status is Status.PENDING:
                problems.append(f"txn {key} still pending while the load is paused")
            if status is Status.UNKNOWN:
                counts["unknown_visible" if got else "unknown_invisible"] += 1
            else:
                counts[status.value] += 1
        if seen:
            problems.append(f"records of transactions the ledger never saw: {list(seen)[:5]}")
        if problems:
            raise SoakFailure(f"after kill {kill} ({len(problems)} problems): " + "; ".join(problems[:10]))
        return RoundReport(kill, killed_after, counts["committed"], counts["aborted"], counts["unknown_visible"],
                           counts["unknown_invisible"], len(values), 0, settle, 0.0)


def _txn_of(value: bytes) -> tuple[int, int]:
    producer, seq, _i, _n = value.split(b":")
    return int(producer), int(seq)


def summarize(reports: list[RoundReport], workers: list[Worker]) -> str:
    lines = [f"{'kill':>4} {'after_s':>7} {'committed':>9} {'aborted':>7} {'unk_vis':>7} {'unk_inv':>7} "
             f"{'records':>8} {'abrt_log':>8} {'settle_s':>8} {'verify_s':>8}"]
    for r in reports:
        lines.append(f"{r.kill:>4} {r.killed_after_s:>7.2f} {r.committed:>9} {r.aborted:>7} {r.unknown_visible:>7} "
                     f"{r.unknown_invisible:>7} {r.records_read:>8} {r.aborted_in_log:>8} {r.settle_s:>8.2f} "
                     f"{r.verify_s:>8.2f}")
    errors: Counter[str] = Counter()
    samples: dict[str, str] = {}
    for w in workers:
        errors.update(w.errors)
        for name, text in w.samples.items():
            samples.setdefault(name, text)
    lines.append(f"producer (re)initialisations: {sum(w.inits for w in workers)}; client errors seen: {dict(errors)}")
    lines.extend(f"  {name}: {text}" for name, text in sorted(samples.items()))
    return "\n".join(lines)


def run_soak(config: SoakConfig, data_dir: Path,
             on_round: Callable[[RoundReport], None] | None = None) -> tuple[list[RoundReport], str]:
    soak = CrashSoak(config, data_dir, on_round)
    reports = soak.run()
    return reports, summarize(reports, soak.workers)
