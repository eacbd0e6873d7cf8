"""Kafka's exactly-once system test workload (tests/kafkatest/tests/core/transactions_test.py upstream) run with
Kafka's own Java tools against a 3-node embedded cluster:

- an input topic of 2 partitions and an output topic of 3, both RF 3 and min.insync.replicas=2;
- VerifiableProducer (idempotent, acks=all) seeds the integers 0..N-1 into the input;
- one TransactionalMessageCopier per input partition (`copier-<i>`, random aborts on) copies them to the output,
  committing its input offsets in each transaction;
- while they copy, embedded nodes are stopped and restarted while the others run (cleanly, or as kill -9
  would), and copiers are stopped (SIGTERM) or killed (SIGKILL) and started again;
- a read_committed console consumer reads the output during the run, another one after it.

It passes when neither read holds a duplicate and the final read equals the input. `run_eos` is shared by the
CI-sized test (test_eos.py) and the soak (tests/benchmarks/java_eos_soak.py)."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from kafka_txn_broker.embedded import EmbeddedCluster
from tests.external.java_clients.tools import JavaTools, append_marks, major

INPUT, OUTPUT = "eos-input", "eos-output"
OUTPUT_PARTITIONS = 3
END = "end-of-run"  # the output partitions' last records, appended after the run (not integers: never input)
TOPIC_CONFIG = {"min.insync.replicas": "2"}
# The internal topics get RF 3 on three nodes (their defaults) and min ISR 2, as a production cluster sets them;
# fewer of their partitions than Kafka's 50 keep the 2-core CI machine's bounces short.
CLUSTER_CONFIG = {"min.insync.replicas": 2, "offsets.topic.num.partitions": 5,
                  "transaction.state.log.num.partitions": 5}


@dataclass(frozen=True)
class EosConfig:
    messages: int = 2000
    # Node bounces in order, each "clean" or "hard" (kill -9); copier bounces, each "clean" (SIGTERM) or "kill".
    broker_bounces: tuple[str, ...] = ("hard",)
    copier_bounces: tuple[str, ...] = ("kill",)
    transaction_size: int = 100
    deadline_s: float = 240.0


@dataclass
class EosReport:
    seeded: int = 0
    copied_read_after: int = 0
    read_during: int = 0
    duplicates_during: int = 0
    duplicates_after: int = 0
    missing_after: int = 0
    unexpected_after: int = 0
    bounces: list[str] = field(default_factory=list)
    copier_starts: int = 0
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return (self.seeded > 0 and self.duplicates_during == 0 and self.duplicates_after == 0
                and self.missing_after == 0 and self.unexpected_after == 0)

    def summary(self) -> str:
        return json.dumps({**self.__dict__, "passed": self.passed})


class _Lines:
    """A child process's stdout, collected line by line on a thread of its own (only `lines` is shared; list
    appends are atomic under the GIL)."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.lines: list[str] = []
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def join(self) -> None:
        self._thread.join(10)


class _Copier:
    """One TransactionalMessageCopier (`copier-<partition>`): restartable, its progress from its JSON lines."""

    def __init__(self, java: JavaTools, partition: int, config: EosConfig, log_dir: Path) -> None:
        self.java, self.partition, self.config, self.log_dir = java, partition, config, log_dir
        self.runs: list[_Lines] = []

    def start(self) -> None:
        args = ["--broker-list", self.java.bootstrap, "--input-topic", INPUT, "--input-partition",
                str(self.partition), "--output-topic", OUTPUT, "--transactional-id", f"copier-{self.partition}",
                "--consumer-group", "eos-copiers", "--transaction-size", str(self.config.transaction_size),
                "--transaction-timeout", "40000", "--enable-random-aborts"]
        if major(self.java.release) >= 3:
            args.append("--use-group-metadata")
        err = open(self.log_dir / f"copier-{self.partition}-{len(self.runs)}.err", "w")  # noqa: SIM115
        proc = subprocess.Popen(self.java.command("copier", *args), stdout=subprocess.PIPE, stderr=err, text=True)
        self.runs.append(_Lines(proc))

    @property
    def proc(self) -> subprocess.Popen[str]:
        return self.runs[-1].proc

    def progress(self) -> tuple[int, int]:
        """(consumed, remaining) as the running copier last reported them ((0, -1) before its first report)."""
        for line in reversed(self.runs[-1].lines):
            if line.startswith("{"):
                status = json.loads(line)
                if "remaining" in status:
                    return int(status.get("consumed", 0)), int(status["remaining"])
        return 0, -1

    def bounce(self, how: str) -> None:
        self.proc.send_signal(signal.SIGTERM if how == "clean" else signal.SIGKILL)
        self.proc.wait(60)
        self.runs[-1].join()
        self.start()

    def done(self) -> bool:
        return self.proc.poll() is not None

    def stop(self) -> None:
        for run in self.runs:
            if run.proc.poll() is None:
                run.proc.kill()
                run.proc.wait(30)


def _seed(java: JavaTools, n: int, work: Path) -> set[str]:
    props = work / "seed.properties"
    props.write_text("enable.idempotence=true\nretries=2147483647\n")
    # Keys spread the integers over both input partitions (the default partitioner hashes them).
    run = java.run("verifiable-producer", "--topic", INPUT, "--max-messages", str(n), "--acks", "-1",
                   "--repeating-keys", "97", "--producer.config", str(props), "--throughput", "-1")
    acked = {json.loads(line)["value"] for line in run.stdout.splitlines()
             if line.startswith("{") and '"producer_send_success"' in line}
    assert len(acked) == n, f"VerifiableProducer acknowledged {len(acked)} of {n}:\n{run.stderr[-2000:]}"
    return acked


def _reader(java: JavaTools) -> _Lines:
    """A read_committed console consumer of the output, from the beginning, until it is stopped."""
    cmd = java.command("console-consumer", "--bootstrap-server", java.bootstrap, "--topic", OUTPUT,
                       "--from-beginning", "--isolation-level", "read_committed")
    return _Lines(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True))


def _duplicates(values: list[str]) -> int:
    return sum(count - 1 for count in Counter(values).values() if count > 1)


def run_eos(cluster: EmbeddedCluster, java: JavaTools, config: EosConfig, work: Path) -> EosReport:
    """The workload on a started 3-node `cluster` (topics are created here)."""
    started = time.monotonic()
    report = EosReport()
    cluster.create_topic(INPUT, 2, 3, TOPIC_CONFIG)
    cluster.create_topic(OUTPUT, OUTPUT_PARTITIONS, 3, TOPIC_CONFIG)
    expected = _seed(java, config.messages, work)
    report.seeded = len(expected)
    copiers = [_Copier(java, p, config, work) for p in (0, 1)]
    reader = _reader(java)
    try:
        for copier in copiers:
            copier.start()
        _bounce_while_copying(cluster, copiers, config, report, started)
        report.copier_starts = sum(len(c.runs) for c in copiers)
        _wait_for(lambda: len(set(reader.lines)) >= len(expected), started + config.deadline_s)
    finally:
        for copier in copiers:
            copier.stop()
        reader.proc.terminate()
        reader.proc.wait(30)
        reader.join()
    report.read_during = len(reader.lines)
    report.duplicates_during = _duplicates(reader.lines)
    # Read to a mark appended as every output partition's last record: once the marks of all of them have
    # arrived, everything committed before them has too (a partition is read in order), duplicates included.
    marks = {p: f"{END}-{p}" for p in range(OUTPUT_PARTITIONS)}
    append_marks(java.bootstrap, OUTPUT, marks)
    last = set(marks.values())
    after = [v for v in java.consume_until(OUTPUT, lambda seen: last <= set(seen), "--from-beginning")
             if v not in last]
    report.copied_read_after = len(after)
    report.duplicates_after = _duplicates(after)
    report.missing_after = len(expected - set(after))
    report.unexpected_after = len(set(after) - expected)
    report.seconds = round(time.monotonic() - started, 1)
    return report


def _bounce_while_copying(cluster: EmbeddedCluster, copiers: list[_Copier], config: EosConfig,
                          report: EosReport, started: float) -> None:
    """Each bounce once total progress passes its share of the run (copiers first, from 20%: a copier done
    cannot be bounced, and a node's bounce lets them run on meanwhile); then wait for both copiers to finish (a
    copier exits once it copied its partition to the end)."""
    plan = [("copier", how) for how in config.copier_bounces] + [("broker", how) for how in config.broker_bounces]
    deadline = started + config.deadline_s
    for i, (what, how) in enumerate(plan):
        threshold = config.messages * (0.2 + 0.6 * i / max(len(plan), 1))
        _wait_for(lambda t=threshold: sum(c.progress()[0] for c in copiers) >= t
                  or all(c.done() for c in copiers), deadline)
        if what == "broker":
            node = len(report.bounces) % 3
            cluster.stop_node(node, clean=how == "clean")
            time.sleep(2.0)  # the others serve meanwhile: leaders and coordinators move
            cluster.start_node(node)
            report.bounces.append(f"node {node} {how}")
        else:  # the copier with the most left to copy
            copier = max(copiers, key=lambda c: (not c.done(), c.progress()[1]))
            if not copier.done():
                copier.bounce(how)
                report.bounces.append(f"copier-{copier.partition} {how}")
    _wait_for(lambda: all(c.done() and c.progress()[1] == 0 for c in copiers) or _failed(copiers), deadline)
    failed = _failed(copiers)
    assert not failed, f"a copier failed: {failed}"


def _failed(copiers: list[_Copier]) -> list[str]:
    return [f"copier-{c.partition} exited {c.proc.returncode} (logs: {c.log_dir})" for c in copiers
            if c.done() and c.proc.returncode != 0]


def _wait_for(done: object, deadline: float) -> None:
    assert callable(done)
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError("the exactly-once workload ran past its deadline")
        time.sleep(0.2)
