"""Upstream's command-line tools of a release, run as users run them (`kafka-transactions.sh` is
`java -cp libs/* org.apache.kafka.tools.TransactionsCommand`), with the release's logging quiet."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

TRANSACTIONS_COMMAND = "org.apache.kafka.tools.TransactionsCommand"


@dataclass(frozen=True)
class UpstreamTool:
    """`main_class` of the release whose jars are in `libs`; `jvm_options` as a user's KAFKA_OPTS (e.g. the
    krb5.conf, or the OAuth URLs the JVM may fetch)."""

    libs: Path
    main_class: str = TRANSACTIONS_COMMAND
    jvm_options: tuple[str, ...] = ()

    def command(self, *args: str) -> list[str]:
        return ["java", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx256m", "-cp", f"{self.libs}/*",
                *self.jvm_options, *self._logging(), self.main_class, *args]

    def _logging(self) -> list[str]:
        """As the release's bin/ scripts set it for tools: warnings and errors to stderr, stdout left to the
        tool's own output (log4j2 on 4.x, reload4j on 3.x; the files live beside the release's libs)."""
        log4j2 = self.libs.parent / "tools-log4j2.properties"
        if not log4j2.exists():
            log4j2.write_text("status = error\nappender.err.type = Console\nappender.err.name = ERR\n"
                              "appender.err.target = SYSTEM_ERR\nappender.err.layout.type = PatternLayout\n"
                              "appender.err.layout.pattern = [%d] %p %m (%c)%n\n"
                              "rootLogger.level = WARN\nrootLogger.appenderRef.err.ref = ERR\n")
        log4j = self.libs.parent / "tools-log4j.properties"
        if not log4j.exists():
            log4j.write_text("log4j.rootLogger=WARN, err\nlog4j.appender.err=org.apache.log4j.ConsoleAppender\n"
                             "log4j.appender.err.Target=System.err\n"
                             "log4j.appender.err.layout=org.apache.log4j.PatternLayout\n"
                             "log4j.appender.err.layout.ConversionPattern=[%d] %p %m (%c)%n\n")
        return [f"-Dlog4j2.configurationFile={log4j2}", f"-Dlog4j.configuration=file:{log4j}"]

    def run(self, *args: str, timeout_s: float = 120.0) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.command(*args), capture_output=True, text=True, timeout=timeout_s)
