"""Kafka's own Java tools of a release, pointed at the embedded broker: the class of each tool as that release
names it (several moved from `kafka_2.13` to `kafka-tools` between 3.9 and 4.0), run with the release's jars
and quiet logging (tests/support/real_kafka/tools.py). No Java code is ours."""

from __future__ import annotations

import queue
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.support.real_kafka import UpstreamTool

_TOOLS = "org.apache.kafka.tools."
# Tool -> class, where the class is the same in every release this suite runs.
_COMMON = {
    "topics": _TOOLS + "TopicCommand",
    "transactions": _TOOLS + "TransactionsCommand",
    "consumer-groups": _TOOLS + "consumer.group.ConsumerGroupCommand",
    "producer-perf": _TOOLS + "ProducerPerformance",
    "console-consumer": _TOOLS + "consumer.ConsoleConsumer",
    "verifiable-producer": _TOOLS + "VerifiableProducer",
    "copier": _TOOLS + "TransactionalMessageCopier",
}
# 4.0 moved these into kafka-tools; 3.9 still has them in the core jar (kafka_2.13).
_MOVED_IN_4 = {"configs": "ConfigCommand", "acls": "AclCommand", "console-producer": "ConsoleProducer"}
_CORE_IN_3 = {"configs": "kafka.admin.ConfigCommand", "acls": "kafka.admin.AclCommand",
              "console-producer": "kafka.tools.ConsoleProducer"}
# Share groups (KIP-932) are production-ready in 4.x only.
_SHARE = {"share-groups": _TOOLS + "consumer.group.ShareGroupCommand",
          "console-share-consumer": _TOOLS + "consumer.ConsoleShareConsumer"}


def major(release: str) -> int:
    return int(release.split(".")[0])


@dataclass(frozen=True)
class JavaTools:
    """The tools of `release` (its jars in `libs`) against `bootstrap`. Stateless: safe from any thread."""

    libs: Path
    release: str
    bootstrap: str

    def main_class(self, tool: str) -> str:
        if tool in _COMMON:
            return _COMMON[tool]
        if tool in _MOVED_IN_4:
            return _TOOLS + _MOVED_IN_4[tool] if major(self.release) >= 4 else _CORE_IN_3[tool]
        if tool in _SHARE and major(self.release) >= 4:
            return _SHARE[tool]
        raise KeyError(f"Apache Kafka {self.release} has no {tool} tool")

    def props(self, tool: str) -> str:
        """The option that passes a client property: 4.x renamed --consumer-property and --producer-props to
        --command-property (the old names print a deprecation notice to stdout, among the records)."""
        if major(self.release) >= 4:
            return "--command-property"
        return "--producer-props" if tool == "producer-perf" else "--consumer-property"

    def line_props(self, tool: str) -> str:
        """The console tools' option for their line reader's or formatter's properties (renamed in 4.x)."""
        if major(self.release) < 4:
            return "--property"
        return "--reader-property" if tool == "console-producer" else "--formatter-property"

    def command(self, tool: str, *args: str) -> list[str]:
        return UpstreamTool(self.libs, self.main_class(tool)).command(*args)

    def run(self, tool: str, *args: str, stdin: str | None = None, timeout_s: float = 120.0,
            check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run `tool` with `--bootstrap-server` and `args`; `check` fails with its output on a non-zero exit."""
        # The copier takes --broker-list; ProducerPerformance of 3.x only bootstrap.servers among its properties.
        server = [] if tool == "producer-perf" else ["--broker-list" if tool == "copier" else "--bootstrap-server",
                                                     self.bootstrap]
        run = subprocess.run(self.command(tool, *server, *args), input=stdin, capture_output=True,
                             text=True, timeout=timeout_s)
        if check and run.returncode != 0:
            raise AssertionError(f"{tool} {' '.join(args)} exited {run.returncode}:\n{run.stdout}\n{run.stderr}")
        return run

    def consume(self, topic: str, *args: str, isolation: str = "read_committed", idle_ms: int = 8000,
                timeout_s: float = 120.0) -> list[str]:
        """The values the console consumer prints for `topic` from the beginning, until `idle_ms` pass with no
        new record (its --timeout-ms: it then exits non-zero by design, so the exit code is not checked)."""
        run = self.run("console-consumer", "--topic", topic, "--isolation-level", isolation,
                       "--timeout-ms", str(idle_ms), *args, timeout_s=timeout_s, check=False)
        if "Processed a total of" not in run.stderr:
            raise AssertionError(f"console consumer on {topic} failed:\n{run.stderr}")
        return run.stdout.splitlines()

    def consume_until(self, topic: str, done: Callable[[list[str]], bool], *args: str,
                      isolation: str = "read_committed", timeout_s: float = 120.0) -> list[str]:
        """The values the console consumer prints for `topic`, up to the first moment `done(values)` holds; then
        it is stopped. With a last record the caller appended (a mark that ends the partition), the read is
        complete exactly when the mark arrives: no quiet spell to wait out, as `consume` must."""
        proc = subprocess.Popen(self.command("console-consumer", "--bootstrap-server", self.bootstrap, "--topic",
                                             topic, "--isolation-level", isolation, *args),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=_pump, args=(proc, lines), daemon=True).start()
        values: list[str] = []
        deadline = time.monotonic() + timeout_s
        try:
            while not done(values):
                try:
                    line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    raise AssertionError(f"console consumer on {topic}: no end after {timeout_s:g}s, "
                                         f"{len(values)} values read") from None
                if line is None:
                    proc.wait(30)
                    assert proc.stderr is not None
                    raise AssertionError(f"console consumer on {topic} exited {proc.returncode} before its end "
                                         f"({len(values)} values read):\n{proc.stderr.read()[-3000:]}")
                values.append(line)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait(30)
        return values


def _pump(proc: subprocess.Popen[str], lines: queue.Queue[str | None]) -> None:
    """A child's stdout, line by line, into `lines`; None at its end (the queue is the only shared state)."""
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.put(line.rstrip("\n"))
    lines.put(None)


def append_marks(bootstrap: str, topic: str, marks: dict[int, str]) -> None:
    """Each partition's mark (partition -> value), non-transactional and acknowledged by every in-sync replica,
    as its last record: a read_committed reader reaches it once no transaction before it is open."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    try:
        for partition, value in marks.items():
            producer.produce(topic, value=value.encode(), partition=partition)
        assert producer.flush(60) == 0, f"the end marks on {topic} were not acknowledged"
    finally:
        producer.close()


def table(text: str) -> list[dict[str, str]]:
    """Rows of the tab- or space-aligned tables the tools print (first non-empty line is the header)."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return []
    header = lines[0].split()
    return [dict(zip(header, line.split(), strict=False)) for line in lines[1:] if not line.startswith(header[0] + " ")]
