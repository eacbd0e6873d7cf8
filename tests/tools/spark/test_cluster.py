"""The Spark standalone cluster path: a master and a worker started from pyspark's own launcher
classes on this machine, the sweep submitted to them with pyspark's spark-submit."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import kafka_txn_tools.spark.job as job_module
from kafka_txn_tools.spark.session import find_java

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
        pytest.skip("java not found: install a JRE 17, e.g. apt-get install openjdk-17-jre-headless")
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


def test_sweep_submitted_to_a_standalone_cluster(standalone, generated, tmp_path):
    import pyspark

    master_url, work_dir = standalone
    inputs, truth = generated["dump"]
    submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    out = tmp_path / "out"
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable}
    done = subprocess.run(
        [str(submit), "--master", master_url, "--conf", "spark.executor.memory=512m",
         "--conf", "spark.ui.enabled=false", job_module.__file__, *inputs, "--out", str(out),
         "--max-transaction-timeout", "15m"],
        env=env, capture_output=True, timeout=600, check=False,
    )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["hanging"] == sum(1 for r in truth["expected"] if r["verdict"] == "hanging")
    assert summary["late_partitions_by_broker"] == truth["late_partitions_by_broker"]
    assert json.loads(done.stdout.decode().strip().splitlines()[-1])["hanging"] == summary["hanging"]
    # The work ran in an executor the worker launched, not in a local driver.
    assert list(work_dir.glob("app-*/*/stderr"))
