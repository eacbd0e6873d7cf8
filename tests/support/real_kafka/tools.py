"""Upstream's command-line tools of a release, run as users run them (`kafka-transactions.sh` is
`java -cp libs/* org.apache.kafka.tools.TransactionsCommand`), with the release's logging quiet."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

TRANSACTIONS_COMMAND = "org.apache.kafka.tools.TransactionsCommand"


@dataclass(frozen=True)
class UpstreamTool:
    """`main_class` of the release whose jars are in `libs`."""

    libs: Path
    main_class: str = TRANSACTIONS_COMMAND

    def command(self, *args: str) -> list[str]:
        return ["java", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx256m", "-cp", f"{self.libs}/*",
                "-Dlog4j2.level=error", "-Dlog4j.configuration=none", self.main_class, *args]

    def run(self, *args: str, timeout_s: float = 120.0) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.command(*args), capture_output=True, text=True, timeout=timeout_s)
