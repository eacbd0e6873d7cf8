"""The project works as installed: the wheel built from this checkout, installed with [spark] into a fresh venv
by the line docs/install.md gives, run from a folder outside the checkout with nothing set in the environment
(tests/support/installed.py). Each command is the venv's own entry point, as a user without an activated venv
(or pipx) runs it."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from tests.support import generator as gen
from tests.support.installed import INSTALL_LINE, ROOT, Installation

pytestmark = pytest.mark.slow

VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def test_the_docs_install_line_is_the_one_tested() -> None:
    assert INSTALL_LINE in (ROOT / "docs" / "install.md").read_text()


def test_versions_and_what_is_installed(installation: Installation) -> None:
    for argv in ([installation.bin("kafka-txn"), "--version"], [installation.bin("python"), "-m", "kafka_txn_tools",
                                                               "--version"]):
        done = installation.run(*argv)
        assert (done.returncode, done.stdout, done.stderr) == (0, f"kafka-txn {VERSION}\n", ""), argv
    code = """if True:
        import importlib.metadata as md, importlib.util, json, kafka_txn_broker, kafka_txn_tools
        meta = md.metadata("kafka-txn-tools")
        print(json.dumps({
            "files": [kafka_txn_tools.__file__, kafka_txn_broker.__file__],
            "generator": importlib.util.find_spec("kafka_txn_tools.dumps.generator") is not None,
            "license": meta["License-Expression"], "license_files": meta.get_all("License-File"),
            "classifiers": meta.get_all("Classifier"), "requires_python": meta["Requires-Python"],
        }))"""
    done = installation.run(installation.bin("python"), "-c", code)
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout)
    site = str(installation.venv / "lib")
    assert all(f.startswith(site) for f in info["files"]), info["files"]  # the wheel's copy, not this checkout
    assert not info["generator"]  # test data stays in the tests
    assert (info["license"], info["license_files"]) == ("Apache-2.0", ["LICENSE"])
    assert f"Programming Language :: Python :: {sys.version_info.major}.{sys.version_info.minor}" in info["classifiers"]
    assert info["requires_python"] == ">=3.11"


def test_broker_start_and_find_hanging(installation: Installation) -> None:
    broker = installation.popen(installation.bin("kafka-txn"), "broker", "start", "--nodes", "1", "--port", "0",
                                "--data-dir", str(installation.work / "kafka"),
                                "--set", "transaction.partition.verification.enable=false")
    try:
        assert broker.stdout is not None
        first = broker.stdout.readline().strip()
        assert first.startswith("bootstrap.servers="), first + (broker.stderr.read() if broker.stderr else "")
        bootstrap = first.split("=", 1)[1]
        # A real hanging transaction, made through the protocol by the installed scenario command.
        made = installation.run(installation.bin("kafka-txn"), "broker", "scenario", "late-write-after-abort",
                                "--bootstrap-server", bootstrap, "--backdate-minutes", "30", "--no-healthy")
        assert made.returncode == 0, made.stderr
        [hanging] = json.loads(made.stdout)["scenarios"][0]["hanging"]
        found = installation.run(installation.bin("kafka-txn"), "find-hanging", "--all", "-b", bootstrap,
                                 "-o", "json")
        assert found.returncode == 0, found.stderr
        rows = json.loads(found.stdout)["hanging"]
        assert [(r["topic"], r["partition"], r["producer_id"], r["start_offset"]) for r in rows] == [
            (hanging["topic"], hanging["partition"], hanging["producer_id"], hanging["start_offset"])]
    finally:
        broker.send_signal(signal.SIGTERM)
        assert broker.wait(timeout=60) == 0


def test_sweep_on_local_spark(installation: Installation) -> None:
    # The log dirs come from this checkout's generator; the installed tool only reads them. `python3` on PATH
    # lacks the tool: local Spark's workers must run the venv's interpreter all the same.
    cfg = gen.GeneratorConfig(seed=11, topics=2, partitions_per_topic=4)
    logs = gen.write_logdirs(cfg, installation.work / "logs")
    expected = gen.expected_plan(gen.Cluster(cfg), "logdir")
    assert expected  # the generator injected hanging transactions to find
    out = installation.work / "sweep"
    done = installation.run(installation.bin("kafka-txn"), "sweep", str(logs), "--out", str(out),
                            "--master", "local[2]", timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    plan = yaml.safe_load((out / "abort-plan.yaml").read_text())
    assert (plan["as_of_ms"], plan["max_transaction_timeout_ms"]) == (cfg.capture_time_ms,
                                                                     cfg.max_transaction_timeout_ms)
    assert sorted(plan["entries"], key=lambda e: (e["topic"], e["partition"], e["producer_id"])) == expected
    assert done.stderr.strip().splitlines()[-1].startswith(f"{len(expected)} hanging, ")


USER_TEST = '''
import socket


def test_my_app_against_a_cluster(kafka_cluster):
    for address in kafka_cluster.bootstrap_servers.split(","):
        host, port = address.rsplit(":", 1)
        socket.create_connection((host, int(port)), timeout=10).close()
'''


# The user's pytest settings: deprecations are errors, and so is any warning this project's modules raise.
USER_PYTEST_INI = r"""[pytest]
filterwarnings =
    error::DeprecationWarning
    error:::kafka_txn_broker(\..*)?
    error:::kafka_txn_tools(\..*)?
"""


def test_the_pytest_fixture_in_a_users_test_file(installation: Installation) -> None:
    folder = installation.work / "user-tests"
    folder.mkdir()
    (folder / "test_app.py").write_text(USER_TEST)
    (folder / "pytest.ini").write_text(USER_PYTEST_INI)
    # Deprecations are errors for the interpreter too: imports before pytest's capture (its plugins) included.
    done = subprocess.run(
        [installation.bin("python"), "-W", "error::DeprecationWarning", "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "--kafka-nodes", "1", "test_app.py"],
        cwd=folder, env=installation.env(), capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert re.fullmatch(r"1 passed in [\d.]+s", done.stdout.strip().splitlines()[-1]), done.stdout[-3000:]
    assert "warning" not in (done.stdout + done.stderr).lower()


def test_the_checkout_is_not_on_the_path(installation: Installation) -> None:
    # What makes the checks above about the installation: the commands run where this checkout cannot be imported.
    done = installation.run(installation.bin("python"), "-c", "import tests.support.generator")
    assert done.returncode == 1 and "No module named 'tests" in done.stderr
    assert not Path(installation.work).resolve().is_relative_to(ROOT)
