"""The one way this project starts Spark: java check, quiet logs, no UI, small shuffles locally."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

JAVA_MISSING = "java not found: install a JRE 17, e.g. apt-get install openjdk-17-jre-headless, or set JAVA_HOME"


class JavaNotFoundError(RuntimeError):
    """No java executable: Spark cannot start."""


def find_java() -> str | None:
    """Path of the java Spark would use: $JAVA_HOME/bin/java, else java on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("java")


def require_java() -> str:
    java = find_java()
    if java is None:
        raise JavaNotFoundError(JAVA_MISSING)
    return java


_QUIET_LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
# Spark prints "Setting default log level" unless the REPL logger's level equals the root's.
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = error
"""


def quiet_log_config() -> str:
    """A log4j2 config that prints errors only (Spark's default prints INFO/WARN banners)."""
    path = Path(tempfile.gettempdir()) / "kafka-txn-tools-log4j2.properties"
    if not path.is_file() or path.read_text() != _QUIET_LOG4J2:
        path.write_text(_QUIET_LOG4J2)
    return str(path)


def is_local(master: str | None) -> bool:
    """True for local[...] masters; None (spark-submit decides) may be a cluster."""
    return master is not None and master.startswith("local")


def get_session(
    master: str | None = "local[2]", app_name: str = "kafka-txn-sweep", shuffle_partitions: int | None = None
) -> SparkSession:
    """A SparkSession (reused if one is active). master=None keeps what spark-submit set."""
    require_java()
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    local = is_local(master)
    builder = (
        builder.config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        # Adaptive execution pays off on big shuffles; locally the shuffled tables are tiny and its
        # re-planning costs more than it saves.
        .config("spark.sql.adaptive.enabled", "false" if local else "true")
        # Locally, joins of the small tables shuffle within one partition rather than broadcast:
        # each broadcast is a Spark job of its own. (Joins against big tables carry explicit hints.)
        .config("spark.sql.autoBroadcastJoinThreshold", "-1" if local else str(10 * 1024 * 1024))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{quiet_log_config()}")
        # Executors run this interpreter, which has kafka_txn_tools and its dependencies.
        .config("spark.pyspark.python", os.environ.get("PYSPARK_PYTHON", sys.executable))
    )
    if local:
        # Local runs bind to loopback: no "hostname resolves to a loopback address" warnings.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        builder = builder.config("spark.driver.memory", os.environ.get("KAFKA_TXN_SPARK_DRIVER_MEMORY", "2g"))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    if shuffle_partitions is None and not spark.sparkContext.getConf().contains("spark.sql.shuffle.partitions"):
        # The tables that get shuffled are the small, filtered ones (open transactions): a couple of
        # partitions per core suffice; Spark's default of 200 would mostly schedule empty tasks.
        shuffle_partitions = max(2, min(200, spark.sparkContext.defaultParallelism * 2)) if not local else 1
    if shuffle_partitions is not None:
        spark.conf.set("spark.sql.shuffle.partitions", str(shuffle_partitions))
    return spark
