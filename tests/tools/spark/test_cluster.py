"""The Spark standalone cluster path: a master and a worker started from pyspark's own launcher classes on this
machine; the installed package (tests/support/installed.py) sweeps on them, submitted with spark-submit and run by
`kafka-txn sweep --master spark://...`, and a Python on the workers that cannot import it is one clear error."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kafka_txn_tools.spark.executors import INSTALL_HINT
from kafka_txn_tools.spark.session import JAVA_MISSING, find_java
from tests.support.installed import Installation

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for(predicate: Callable[[], bool], what: str, timeout: float = 45.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """(master URL, the worker's work dir)."""
    java = find_java()
    if java is None:
        pytest.fail(f"{JAVA_MISSING}; `bash scripts/dev.sh setup` installs it", pytrace=False)
    import pyspark

    home = Path(pyspark.__file__).parent
    logs = tmp_path_factory.mktemp("standalone")
    # A pip-installed pyspark has jars/ but no RELEASE file: the worker's executor launcher then needs
    # the Scala version spelled out, or it looks for a source build's directories.
    scala = next(home.glob("jars/spark-core_*.jar")).name.split("_")[1].split("-")[0]
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_SCALA_VERSION": scala}
    classpath = str(home / "jars" / "*")
    port = _free_port()
    master_url = f"spark://127.0.0.1:{port}"
    procs: list[subprocess.Popen[bytes]] = []
    try:
        master_log = open(logs / "master.log", "wb")  # noqa: SIM115 - closed with the process
        procs.append(subprocess.Popen(
            [java, "-Xmx256m", "-cp", classpath, "org.apache.spark.deploy.master.Master",
             "--host", "127.0.0.1", "--port", str(port), "--webui-port", "0"],
            env=env, stdout=master_log, stderr=subprocess.STDOUT))
        _wait_for(lambda: _listening(port), "the master's port")
        worker_log = open(logs / "worker.log", "wb")  # noqa: SIM115
        procs.append(subprocess.Popen(
            [java, "-Xmx256m", "-cp", classpath, "org.apache.spark.deploy.worker.Worker", master_url,
             "--cores", "1", "--memory", "1g", "--webui-port", "0", "--work-dir", str(logs / "work")],
            env=env, stdout=worker_log, stderr=subprocess.STDOUT))
        _wait_for(lambda: b"Registering worker" in (logs / "master.log").read_bytes(), "the worker to register")
        yield master_url, logs / "work"
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


# The cluster runs on loopback; the driver must offer the executors an address on it too.
LOOPBACK = {"SPARK_LOCAL_IP": "127.0.0.1"}


def sorted_entries(plan_file: Path) -> list[dict[str, Any]]:
    entries = yaml.safe_load(plan_file.read_text())["entries"]
    return sorted(entries, key=lambda e: (e["topic"], e["partition"], e["producer_id"]))


def test_installed_job_submitted_with_spark_submit(standalone, generated, installation: Installation) -> None:
    # The job file of the installed package, submitted by the venv's spark-submit, told only which Python to run.
    master_url, work_dir = standalone
    inputs, truth = generated["logdir"]
    job = installation.run(installation.bin("python"), "-c",
                           "import kafka_txn_tools.spark.job as j, pyspark; print(j.__file__); print(pyspark.__file__)")
    job_file, pyspark_init = job.stdout.split()
    submit = Path(pyspark_init).parent / "bin" / "spark-submit"
    out = installation.work / "submitted"
    done = installation.run(
        str(submit), "--master", master_url, "--conf", f"spark.pyspark.python={installation.python}",
        "--conf", "spark.executor.memory=512m", "--conf", "spark.ui.enabled=false", job_file, *inputs,
        "--out", str(out), timeout=600, extra_env=LOOPBACK)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert json.loads(done.stdout.strip().splitlines()[-1])["hanging"] == summary["hanging"] == len(truth["plan"])
    assert summary["late_partitions_by_broker"] == truth["late_partitions_by_broker"]
    assert sorted_entries(out / "abort-plan.yaml") == truth["plan"]
    # The work ran in an executor the worker launched, not in a local driver.
    assert list(work_dir.glob("app-*/*/stderr"))


def test_installed_cli_sweeps_on_a_standalone_cluster(standalone, generated, installation: Installation) -> None:
    # `kafka-txn sweep --master spark://...`: the executors run the driver's interpreter (the venv's, which the
    # worker on this machine has), import the shipped code, and decode the log dirs.
    master_url, _ = standalone
    inputs, truth = generated["logdir"]
    out = installation.work / "cluster-sweep"
    done = installation.run(installation.bin("kafka-txn"), "sweep", *inputs, "--out", str(out),
                            "--master", master_url, timeout=150, extra_env=LOOPBACK)
    assert done.returncode == 0, done.stderr[-3000:]
    assert sorted_entries(out / "abort-plan.yaml") == truth["plan"]


def test_executors_without_the_tool_are_one_clear_error(standalone, generated, installation: Installation) -> None:
    # A Python on the workers that lacks the tool's dependencies (a bare venv): one line naming it, the master and
    # the fix, exit 1, no traceback, nothing written.
    master_url, _ = standalone
    inputs, _ = generated["logdir"]
    out = installation.work / "bad-python"
    done = installation.run(installation.bin("kafka-txn"), "sweep", *inputs, "--out", str(out),
                            "--master", master_url, "--executor-python", str(installation.bare_python),
                            timeout=150, extra_env=LOOPBACK)
    assert (done.returncode, done.stdout) == (1, ""), done.stderr[-3000:]
    assert done.stderr.splitlines() == [
        f"error: the executors of {master_url} cannot import kafka_txn_tools with {installation.bare_python} "
        f"(no module named crc32c): {INSTALL_HINT}"]
    assert not out.exists()
