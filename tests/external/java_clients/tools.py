"""Kafka's own Java tools of a release, pointed at the embedded broker: the class of each tool as that release
names it (several moved from `kafka_2.13` to `kafka-tools` between 3.9 and 4.0), run with the release's jars
and quiet logging (tests/support/real_kafka/tools.py). No Java code is ours."""

from __future__ import annotations

import subprocess
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


def table(text: str) -> list[dict[str, str]]:
    """Rows of the tab- or space-aligned tables the tools print (first non-empty line is the header)."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return []
    header = lines[0].split()
    return [dict(zip(header, line.split(), strict=False)) for line in lines[1:] if not line.startswith(header[0] + " ")]
