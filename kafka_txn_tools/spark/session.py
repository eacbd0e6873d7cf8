"""The one way this project starts Spark: java check, quiet logs, no UI, small shuffles locally."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Mapping
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
# The root level stays at Spark's default (WARN): a different one makes Spark print a "Setting
# default log level" banner at start. The console prints errors only.
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.filter.threshold.type = ThresholdFilter
appender.console.filter.threshold.level = error
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""

# The JVM's own start-up notice (Spark's launcher always adds the incubating vector module, and no
# option silences the JVM about it). Only lines starting with these are dropped from its stderr.
_JVM_NOTICES = (b"WARNING: Using incubator modules: jdk.incubator.vector",)


def quiet_log_config() -> str:
    """A log4j2 config that prints errors only (Spark's default prints INFO/WARN banners)."""
    path = Path(tempfile.gettempdir()) / "kafka-txn-tools-log4j2.properties"
    if not path.is_file() or path.read_text() != _QUIET_LOG4J2:
        path.write_text(_QUIET_LOG4J2)
    return str(path)


def is_local(master: str | None) -> bool:
    """True for local[...] masters; None (spark-submit decides) may be a cluster."""
    return master is not None and master.startswith("local")


def relay_stderr(read_fd: int, notices: tuple[bytes, ...] = _JVM_NOTICES) -> None:
    """Copy the JVM's stderr to ours, line by line, without its start-up notices."""
    with os.fdopen(read_fd, "rb") as stream:
        for line in stream:
            if not line.startswith(notices):
                os.write(2, line)


def launch_jvm(options: Mapping[str, str]) -> None:
    """Start Spark's JVM (as SparkSession would, with the same settings) with its stderr relayed by
    relay_stderr. A no-op when it already runs, or when spark-submit started it."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return
    read_fd, write_fd = os.pipe()
    # Read before the JVM starts writing: a full pipe would stall its start-up.
    relay = threading.Thread(target=relay_stderr, args=(read_fd,), name="spark-jvm-stderr", daemon=True)
    relay.start()
    try:
        gateway = launch_gateway(SparkConf().setAll(list(options.items())), popen_kwargs={"stderr": write_fd})
    except Exception:
        os.close(write_fd)
        relay.join(timeout=2.0)  # the JVM's reason for failing comes before Python's traceback
        raise
    os.close(write_fd)  # the JVM holds its own copy: EOF reaches the relay when the JVM exits
    SparkContext._gateway = gateway
    SparkContext._jvm = gateway.jvm


def worker_python(master: str | None, executor_python: str | None = None) -> str | None:
    """The interpreter Spark's Python workers run, or None to keep what spark-submit chose.

    Local workers run this interpreter: it is the one that has kafka_txn_tools (a venv, pipx, conda),
    whatever `python3` on PATH or $PYSPARK_PYTHON may be. A cluster's executors run `executor_python`,
    else $PYSPARK_PYTHON (Spark's own setting), else this interpreter's path, which is right when the
    workers have the same installation at the same path."""
    if is_local(master):
        return sys.executable
    if executor_python:
        return executor_python
    if master is None:
        return None  # spark-submit: its spark.pyspark.python / PYSPARK_PYTHON already chose
    return os.environ.get("PYSPARK_PYTHON") or sys.executable


def session_options(
    master: str | None, app_name: str, conf: Mapping[str, str] | None = None, python: str | None = None
) -> dict[str, str]:
    """Every setting the session starts with; `conf` (e.g. spark.driver.maxResultSize) overrides.
    `python` is the workers' interpreter (worker_python)."""
    local = is_local(master)
    options = {
        "spark.app.name": app_name,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        # Adaptive execution pays off on big shuffles; locally the shuffled tables are tiny and its
        # re-planning costs more than it saves.
        "spark.sql.adaptive.enabled": "false" if local else "true",
        # Locally, joins of the small tables shuffle within one partition rather than broadcast:
        # each broadcast is a Spark job of its own. (Joins against big tables carry explicit hints.)
        "spark.sql.autoBroadcastJoinThreshold": "-1" if local else str(10 * 1024 * 1024),
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{quiet_log_config()}",
    }
    if python is not None:
        # Read by the JVM where it starts Python itself; the Python functions of a session created
        # in-process carry SparkContext.pythonExec instead (set by get_session).
        options["spark.pyspark.python"] = python
    if master is not None:
        options["spark.master"] = master
    if local:
        options["spark.driver.memory"] = os.environ.get("KAFKA_TXN_SPARK_DRIVER_MEMORY", "2g")
    return {**options, **(conf or {})}


def get_session(
    master: str | None = "local[2]",
    app_name: str = "kafka-txn-sweep",
    shuffle_partitions: int | None = None,
    conf: Mapping[str, str] | None = None,
    executor_python: str | None = None,
) -> SparkSession:
    """A SparkSession (reused if one is active). master=None keeps what spark-submit set.
    `executor_python`: the interpreter a cluster's executors run (worker_python)."""
    require_java()
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    local = is_local(master)
    if local:
        # Local runs bind to loopback: no "hostname resolves to a loopback address" warnings.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    python = worker_python(master, executor_python)
    options = session_options(master, app_name, conf, python)
    launch_jvm(options)
    builder = SparkSession.builder
    for key, value in options.items():
        builder = builder.config(key, value)
    created = SparkContext._active_spark_context is None
    spark = builder.getOrCreate()
    if created and python is not None:
        # The workers' interpreter travels with each Python function Spark runs. PySpark takes it from
        # $PYSPARK_PYTHON (default `python3` from PATH) when the context starts, and reads no setting
        # here: set it on the context instead of changing this process's environment.
        spark.sparkContext.pythonExec = python
    spark.sparkContext.setLogLevel("ERROR")
    if shuffle_partitions is None and not spark.sparkContext.getConf().contains("spark.sql.shuffle.partitions"):
        # The tables that get shuffled are the small, filtered ones (open transactions): a couple of
        # partitions per core suffice; Spark's default of 200 would mostly schedule empty tasks.
        shuffle_partitions = max(2, min(200, spark.sparkContext.defaultParallelism * 2)) if not local else 1
    if shuffle_partitions is not None:
        spark.conf.set("spark.sql.shuffle.partitions", str(shuffle_partitions))
    return spark
