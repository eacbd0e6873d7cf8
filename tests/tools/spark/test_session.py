"""Starting Spark quietly: the JVM's start-up notice is dropped from its stderr, nothing else."""

from __future__ import annotations

import os

from kafka_txn_tools.spark.session import relay_stderr, session_options


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
