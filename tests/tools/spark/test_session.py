"""Starting Spark quietly: the JVM's start-up notice is dropped from its stderr, nothing else."""

from __future__ import annotations

import os
import sys

import pytest

from kafka_txn_tools.spark.session import relay_stderr, session_options, worker_python


def test_relay_drops_only_the_jvm_start_up_notice(capfd):
    read_fd, write_fd = os.pipe()
    os.write(write_fd, b"WARNING: Using incubator modules: jdk.incubator.vector\n"
                       b"12:00:00 ERROR SparkContext: a real error\n"
                       b"WARNING: something else the JVM says\n")
    os.close(write_fd)
    relay_stderr(read_fd)
    assert capfd.readouterr().err == "12:00:00 ERROR SparkContext: a real error\nWARNING: something else the JVM says\n"


def test_options_quiet_local_and_overridable():
    options = session_options("local[2]", "app", {"spark.driver.maxResultSize": "32m"})
    assert options["spark.master"] == "local[2]" and options["spark.driver.maxResultSize"] == "32m"
    assert "log4j2.configurationFile" in options["spark.driver.extraJavaOptions"]
    assert "spark.master" not in session_options(None, "app")  # spark-submit's master stays


def test_local_workers_run_this_interpreter_whatever_the_environment_says(monkeypatch):
    # PySpark alone would start `python3` from PATH (or $PYSPARK_PYTHON), which may lack kafka_txn_tools.
    monkeypatch.setenv("PYSPARK_PYTHON", "/usr/bin/python3")
    assert worker_python("local[2]") == sys.executable
    assert worker_python("local[*]", "/opt/other/python") == sys.executable
    options = session_options("local[2]", "app", python=worker_python("local[2]"))
    assert options["spark.pyspark.python"] == sys.executable


@pytest.mark.parametrize(("given", "env", "expected"), [
    ("/opt/py/bin/python", "/usr/bin/python3", "/opt/py/bin/python"),  # the option first
    (None, "/usr/bin/python3", "/usr/bin/python3"),  # then Spark's own setting
    (None, None, sys.executable),  # then the driver's interpreter
])
def test_cluster_executors_run_the_named_python(monkeypatch, given, env, expected):
    if env is None:
        monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    else:
        monkeypatch.setenv("PYSPARK_PYTHON", env)
    assert worker_python("spark://h:7077", given) == expected
    assert session_options("spark://h:7077", "app", python=expected)["spark.pyspark.python"] == expected


def test_spark_submit_keeps_its_own_choice_unless_told(monkeypatch):
    monkeypatch.setenv("PYSPARK_PYTHON", "/usr/bin/python3")
    assert worker_python(None) is None
    assert "spark.pyspark.python" not in session_options(None, "app", python=None)
    assert worker_python(None, "/opt/py/bin/python") == "/opt/py/bin/python"
