"""Apache Kafka releases from Maven Central: `kafka_2.13` (the broker, StorageTool, ConfigCommand) and
`kafka-tools` (TransactionsCommand, ProducerPerformance, the console clients, the EOS copier) with their runtime
dependencies, copied by `mvn dependency:copy-dependencies` into one folder per release. The distribution tarball
is not reachable from the project's machines; the jars are.

Kafka's POMs carry no logging binding for slf4j 1.7, so each release also gets one (log4j2's on 4.x, reload4j's on
3.x): without it the broker logs nothing, and a failure leaves no trace in the logs the fixtures keep.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

# The newest 4.x, the newest 3.9.x and the oldest KRaft release (3.3, production-ready KRaft) that resolve on
# Maven Central (tried on 2026-12-06). The default run uses the newest; the rest is `dev.sh test-kafka-matrix`.
RELEASES = ("4.4.0", "3.9.2", "3.3.2")
DEFAULT_RELEASE = RELEASES[0]

CACHE = Path(os.environ.get("KAFKA_TXN_KAFKA_CACHE", Path.home() / ".cache" / "kafka-txn-tools" / "kafka"))


def _binding(version: str) -> str:
    """The slf4j 1.7 binding each release's own distribution ships."""
    if int(version.split(".")[0]) >= 4:
        return """<dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId>
      <version>2.24.3</version></dependency>"""
    return """<dependency><groupId>org.slf4j</groupId><artifactId>slf4j-reload4j</artifactId>
      <version>1.7.36</version></dependency>"""


def _pom(version: str) -> str:
    return f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kafka-txn-tools.test</groupId><artifactId>apache-kafka</artifactId><version>{version}</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>{version}</version>
    </dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-tools</artifactId><version>{version}</version>
    </dependency>
    {_binding(version)}
  </dependencies>
</project>
"""


def java_missing() -> str | None:
    """What is missing to run real Kafka here (java, mvn), or None."""
    missing = [tool for tool in ("java", "mvn") if shutil.which(tool) is None]
    return f"{' and '.join(missing)} not found: run `bash scripts/dev.sh setup`" if missing else None


def release_libs(version: str = DEFAULT_RELEASE, cache: Path = CACHE) -> Path:
    """The folder of `version`'s jars, fetched from Maven Central on first use (a lock keeps concurrent runs from
    fetching twice). Raises RuntimeError naming the fix when it cannot be fetched."""
    home = cache / version
    libs = home / "libs"
    done = home / ".complete"
    if done.exists():
        return libs
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists():
            return libs
        problem = java_missing()
        if problem:
            raise RuntimeError(problem)
        (home / "pom.xml").write_text(_pom(version))
        shutil.rmtree(libs, ignore_errors=True)
        run = subprocess.run(["mvn", "-B", "-q", "dependency:copy-dependencies", f"-DoutputDirectory={libs}",
                              "-DincludeScope=runtime"], cwd=home, capture_output=True, text=True)
        if run.returncode != 0:
            tail = (run.stdout + run.stderr).strip().splitlines()[-15:]
            raise RuntimeError(f"could not fetch Apache Kafka {version} from Maven Central:\n" + "\n".join(tail))
        done.write_text(version + "\n")
    return libs


def main(argv: list[str]) -> int:
    """`python -m tests.support.real_kafka [VERSION...]`: fetch releases (dev.sh's set-up calls it)."""
    for version in argv or [DEFAULT_RELEASE]:
        print(f"Apache Kafka {version}: {release_libs(version)}")
    return 0
