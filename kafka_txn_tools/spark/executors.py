"""What a cluster's executors need to run the sweep's tasks: this project's code, shipped with the job
(ship_package), and a Python that can import it with its dependencies, checked by one small job
before the sweep starts (check_executors), so a wrong interpreter is one clear error instead of a
failed stage and a worker's traceback.

Local masters need neither: their workers run the driver's own interpreter (session.worker_python).
"""

from __future__ import annotations

import importlib
import re
import tempfile
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# The modules whose functions the sweep's tasks run on executors: the log-dir and dump-log text readers,
# which decode segments with the broker's formats (and so need crc32c).
EXECUTOR_MODULES = (
    "kafka_txn_tools.spark.ingest", "kafka_txn_tools.dumps.logdir", "kafka_txn_tools.dumps.dump_log_text",
)
INSTALL_HINT = "install kafka-txn-tools[spark] into one Python on every worker and name it with --executor-python PATH"


class ExecutorPythonError(RuntimeError):
    """A cluster's executors cannot import this project with the Python they were told to run."""


def ship_package(spark: SparkSession) -> None:
    """Send this project's code to a cluster's executors (they may not have it installed): the
    log-dir readers run there and decode segments with Kafka's formats (kafka_txn_broker.formats).
    Their dependency crc32c must be installed on the executors."""
    spark.sparkContext.addPyFile(str(package_zip(Path(tempfile.mkdtemp(prefix="kafka-txn-pkg-")))))


def package_zip(directory: Path) -> Path:
    """kafka_txn_tools and the broker's formats package (wherever each is installed from) in one zip:
    the broker itself (its server, coordinators, security) never runs on an executor."""
    import kafka_txn_broker
    import kafka_txn_broker.formats
    import kafka_txn_broker.gc_pause
    import kafka_txn_tools

    target = directory / "kafka_txn_tools.zip"
    with zipfile.ZipFile(target, "w") as zf:
        for package in (kafka_txn_tools, kafka_txn_broker.formats):
            root = Path(str(package.__file__)).resolve().parent
            for path in root.rglob("*.py"):
                zf.write(path, Path(*package.__name__.split(".")) / path.relative_to(root))
        # The parent package of formats, so `import kafka_txn_broker.formats` resolves inside the zip, and the
        # one module formats imports beside itself (the garbage collector paused around big messages).
        zf.write(str(kafka_txn_broker.__file__), Path("kafka_txn_broker") / "__init__.py")
        zf.write(str(kafka_txn_broker.gc_pause.__file__), Path("kafka_txn_broker") / "gc_pause.py")
    return target


def check_executors(spark: SparkSession) -> None:
    """Import EXECUTOR_MODULES on an executor with the interpreter the sweep's tasks will run; raise
    ExecutorPythonError naming that interpreter, the master, what failed and the fix."""
    context = spark.sparkContext
    # A failed attempt is logged by the driver as an error with the worker's traceback; the one line
    # below says it all, so the driver's log is off while the check runs.
    context.setLogLevel("OFF")
    try:
        # importlib.import_module and repr pickle by reference to the standard library: the check itself
        # needs nothing an executor might lack but pyspark.
        context.parallelize(list(EXECUTOR_MODULES), 1).map(importlib.import_module).map(repr).collect()
    except Exception as exc:
        if not type(exc).__module__.startswith(("pyspark", "py4j")):
            raise
        raise ExecutorPythonError(
            f"the executors of {context.master} cannot import kafka_txn_tools with {context.pythonExec} "
            f"({failure_reason(str(exc))}): {INSTALL_HINT}"
        ) from None
    finally:
        context.setLogLevel("ERROR")


_REASONS = (
    # (pattern in the failed task's text, what to say with its groups)
    (re.compile(r"No module named '([^']+)'"), "no module named {0}"),
    (re.compile(r'Cannot run program "[^"]*": error=\d+, ([^\n\r]+)'), "cannot start it: {0}"),
    (re.compile(r"Python in worker has different version:? (\d+\.\d+) than that in driver:? (\d+\.\d+)"),
     "it runs Python {0}, the driver Python {1}: they need the same minor version"),
)


def failure_reason(text: str) -> str:
    """The cause of a failed check, from Spark's text of the task failure (a Java exception whose
    message carries the worker's Python traceback or the launcher's error)."""
    for pattern, template in _REASONS:
        found = pattern.search(text)
        if found:
            return template.format(*(group.strip() for group in found.groups()))
    lines = [line.strip() for line in text.splitlines() if re.match(r"\s*[\w.]+(Error|Exception): ", line)]
    return lines[-1] if lines else "its Python worker failed"
