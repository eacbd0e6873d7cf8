"""Why a cluster's executors could not run the sweep, read from Spark's text of the failed check. The texts are
the ones Spark and PySpark 4 produce (the launcher's IOException, the worker's Python traceback, PySpark's
PYTHON_VERSION_MISMATCH); the standalone cluster test gets the first one from a real worker."""

from __future__ import annotations

import pytest

from kafka_txn_tools.spark.executors import failure_reason

_TASK_FAILED = "An error occurred while calling z:org.apache.spark.api.python.PythonRDD.collectAndServe.\n"


@pytest.mark.parametrize(("text", "reason"), [
    (_TASK_FAILED + 'java.io.IOException: Cannot run program "/srv/venv/bin/python": error=2, No such file or '
     "directory\n\tat java.base/java.lang.ProcessBuilder.start(ProcessBuilder.java:1143)",
     "cannot start it: No such file or directory"),
    (_TASK_FAILED + "org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
     '  File "/usr/lib/python3.11/importlib/__init__.py", line 126, in import_module\n'
     "ModuleNotFoundError: No module named 'crc32c'\n", "no module named crc32c"),
    (_TASK_FAILED + "pyspark.errors.exceptions.base.PySparkRuntimeError: [PYTHON_VERSION_MISMATCH] Python in worker "
     "has different version: 3.12 than that in driver: 3.11, PySpark cannot run with different minor versions.",
     "it runs Python 3.12, the driver Python 3.11: they need the same minor version"),
    (_TASK_FAILED + "Traceback (most recent call last):\nValueError: bad magic\n", "ValueError: bad magic"),
    ("Job aborted due to stage failure", "its Python worker failed"),
])
def test_failure_reason_names_the_cause(text, reason):
    assert failure_reason(text) == reason
