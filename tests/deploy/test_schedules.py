"""deploy/cron and deploy/systemd, documented as run: the command lines of the shipped crontab and units are
parsed from the files and run as cron (/bin/sh -c, the crontab's variables) and systemd (Environment=, ${VAR}
expansion, ExecStartPre/ExecStart in order, SuccessExitStatus) would, against the embedded cluster with a
hanging transaction; only the settings the files tell the operator to edit are changed (paths, the
profiles file), and `kafka-txn` is the checkout's."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.testing.scenarios import ScenarioOptions, ScenarioResult, run_scenario
from tests.e2e.monitor_support import http_get

ROOT = Path(__file__).resolve().parents[2]
CRONTAB = ROOT / "deploy" / "cron" / "kafka-txn.crontab"
UNITS = ROOT / "deploy" / "systemd"
CONFIG = {"transaction.partition.verification.enable": False}

needs_java = pytest.mark.needs("java")  # the sweep runs Spark


@pytest.fixture(scope="module")
def hanging(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, ScenarioResult]]:
    with EmbeddedCluster(nodes=1, data_dir=tmp_path_factory.mktemp("kafka"), config=CONFIG) as cluster:
        [result] = run_scenario("late-write-after-abort", cluster.bootstrap_servers,
                                ScenarioOptions(backdate_ms=30 * 60_000, healthy=False))
        yield cluster.bootstrap_servers, result


def setting(tmp_path: Path, bootstrap: str) -> dict[str, str]:
    """What an operator edits: where state goes, and the `prod` profile (here: the embedded cluster); plus a
    `kafka-txn` on PATH that runs this checkout."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "kafka-txn"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m kafka_txn_tools "$@"\n')
    shim.chmod(0o755)
    profiles = tmp_path / "profiles.yaml"
    profiles.write_text(yaml.safe_dump({"profiles": {"prod": {"bootstrap_servers": bootstrap}}}))
    return {"KAFKA_TXN_HISTORY": str(tmp_path / "state" / "history.db"), "SWEEP_DIR": str(tmp_path / "sweep"),
            "KAFKA_TXN_PROFILES": str(profiles), "BIN": str(bin_dir)}


def base_env(tmp_path: Path) -> dict[str, str]:
    keep = ("PYTHONPATH", "JAVA_HOME", "LANG", "KAFKA_TXN_AUDIT_LOG")
    return {"HOME": str(tmp_path / "home"), "SHELL": "/bin/sh", **{k: os.environ[k] for k in keep if k in os.environ}}


def check_outputs(tmp_path: Path, edits: dict[str, str], result: ScenarioResult) -> None:
    """The history holds the hang; the sweep's report and plan have it; the report shows the history."""
    hang = result.hanging[0]
    listed = subprocess.run([sys.executable, "-m", "kafka_txn_tools", "history", "--history",
                             edits["KAFKA_TXN_HISTORY"], "-o", "json"], capture_output=True, text=True, check=True)
    assert [(i["topic"], i["partition"]) for i in json.loads(listed.stdout)["incidents"]] == [
        (hang.topic, hang.partition)]
    report = Path(edits["SWEEP_DIR"]) / "report"
    summary = json.loads((report / "summary.json").read_text())
    assert summary["hanging"] == 1 and summary["history"]["incidents"] == 1
    plan = yaml.safe_load((report / "abort-plan.yaml").read_text())
    assert [(e["topic"], e["partition"], e["start_offset"]) for e in plan["entries"]] == [
        (hang.topic, hang.partition, hang.start_offset)]
    assert 'id="history"' in (report / "report.html").read_text()


# ---- cron -----------------------------------------------------------------------------------------------
def crontab(path: Path) -> tuple[dict[str, str], list[str]]:
    """The crontab's variables and its jobs' command lines (a user crontab: five time fields, then the
    command)."""
    env: dict[str, str] = {}
    jobs: list[str] = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", line):
            key, value = line.split("=", 1)
            env[key] = value
            continue
        fields = line.split(None, 5)
        assert len(fields) == 6, f"not a crontab job: {line!r}"
        assert "%" not in fields[5], "cron turns % into a newline"
        jobs.append(fields[5])
    return env, jobs


@needs_java
def test_the_crontab_lines_run_as_cron_runs_them(hanging: tuple[str, ScenarioResult], tmp_path: Path) -> None:
    bootstrap, result = hanging
    variables, jobs = crontab(CRONTAB)
    edits = setting(tmp_path, bootstrap)
    assert {"KAFKA_TXN_PROFILE", "KAFKA_TXN_HISTORY", "SWEEP_DIR", "PATH"} <= set(variables)
    assert len(jobs) == 2 and "find-hanging --all --history" in jobs[0] and "sweep" in jobs[1]
    env = {**base_env(tmp_path), **variables, **{k: v for k, v in edits.items() if k in variables},
           "KAFKA_TXN_PROFILES": edits["KAFKA_TXN_PROFILES"], "PATH": f"{edits['BIN']}:{variables['PATH']}"}
    for job in jobs:
        done = subprocess.run(["/bin/sh", "-c", job], env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{job}\n{done.stderr[-3000:]}"
    check_outputs(tmp_path, edits, result)


# ---- systemd --------------------------------------------------------------------------------------------
def unit(path: Path) -> tuple[dict[str, str], list[tuple[str, list[str]]], set[int]]:
    """A unit's Environment=, its Exec lines (ExecStartPre first, then ExecStart, in order) and its success
    exit statuses."""
    env: dict[str, str] = {}
    execs: list[tuple[str, str]] = []
    success = {0}
    for line in path.read_text().splitlines():
        key, sep, value = line.partition("=")
        if not sep or line.startswith("#"):
            continue
        if key == "Environment":
            for assignment in shlex.split(value):
                name, _, val = assignment.partition("=")
                env[name] = val
        elif key in ("ExecStartPre", "ExecStart"):
            execs.append((key, value))
        elif key == "SuccessExitStatus":
            success |= {int(v) for v in value.split()}
    ordered = [e for e in execs if e[0] == "ExecStartPre"] + [e for e in execs if e[0] == "ExecStart"]
    return env, [(kind, shlex.split(line)) for kind, line in ordered], success


def expand(argv: list[str], env: dict[str, str]) -> list[str]:
    """systemd's expansion: ${VAR} is one word, $VAR alone is split on whitespace."""
    out: list[str] = []
    for word in argv:
        if re.fullmatch(r"\$[A-Za-z_][A-Za-z0-9_]*", word):
            out += env.get(word[1:], "").split()
        else:
            out.append(re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: env.get(m.group(1), ""), word))
    return out


def run_as(argv: list[str], bin_dir: str) -> list[str]:
    """The unit's absolute kafka-txn is the checkout's `kafka-txn` here."""
    return [str(Path(bin_dir) / "kafka-txn"), *argv[1:]] if Path(argv[0]).name == "kafka-txn" else argv


# A platform skip, the one kind kept (docs/contributing.md#skips): no systemd, no unit files to check.
@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd here: systemd-analyze checks the units")
def test_systemd_accepts_the_units(tmp_path: Path) -> None:
    edits = setting(tmp_path, "127.0.0.1:1")
    for path in UNITS.iterdir():  # as installed, with the executable where it is here
        (tmp_path / path.name).write_text(path.read_text().replace("/usr/local/bin/kafka-txn",
                                                                   f"{edits['BIN']}/kafka-txn"))
    names = sorted(str(tmp_path / p.name) for p in UNITS.iterdir())
    done = subprocess.run(["systemd-analyze", "verify", *names], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(p.name for p in UNITS.iterdir()) == ["kafka-txn-monitor.service", "kafka-txn-sweep.service",
                                                       "kafka-txn-sweep.timer"]


@needs_java
def test_the_sweep_service_lines_run_as_systemd_runs_them(hanging: tuple[str, ScenarioResult],
                                                          tmp_path: Path) -> None:
    bootstrap, result = hanging
    variables, execs, success = unit(UNITS / "kafka-txn-sweep.service")
    edits = setting(tmp_path, bootstrap)
    assert {"KAFKA_TXN_PROFILE", "KAFKA_TXN_HISTORY", "SWEEP_DIR"} <= set(variables) and 5 in success
    env = {**base_env(tmp_path), "PATH": os.environ["PATH"], **variables,
           **{k: v for k, v in edits.items() if k in variables}, "KAFKA_TXN_PROFILES": edits["KAFKA_TXN_PROFILES"]}
    # What the monitor would have recorded: one find-hanging run into the same history.
    subprocess.run([sys.executable, "-m", "kafka_txn_tools", "find-hanging", "--all", "--history",
                    env["KAFKA_TXN_HISTORY"], "-o", "json"], env=env, capture_output=True, check=True)
    assert [kind for kind, _ in execs] == ["ExecStartPre", "ExecStart", "ExecStart", "ExecStart"]
    for _, argv in execs:
        done = subprocess.run(run_as(expand(argv, env), edits["BIN"]), env=env, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode in success, f"{argv}\n{done.stderr[-3000:]}"
    check_outputs(tmp_path, edits, result)


def test_the_monitor_service_line_runs_and_stops_on_sigterm(hanging: tuple[str, ScenarioResult],
                                                            tmp_path: Path) -> None:
    """The unit's command line with the shipped web config installed: https, a client certificate and basic
    auth on every endpoint, /healthz included."""
    import bcrypt

    from tests.support.pki import make_pki, shipped_web_config

    bootstrap, _ = hanging
    variables, execs, _ = unit(UNITS / "kafka-txn-monitor.service")
    edits = setting(tmp_path, bootstrap)
    assert variables["LISTEN"] == "0.0.0.0:8797" and variables["WEB_CONFIG"] == "/etc/kafka-txn/web-config.yml"
    pki = make_pki(tmp_path / "pki")
    web = shipped_web_config(pki, tmp_path / "etc", bcrypt.hashpw(b"pw", bcrypt.gensalt(rounds=4)).decode())
    env = {**base_env(tmp_path), "PATH": os.environ["PATH"], **variables,
           **{k: v for k, v in edits.items() if k in variables}, "KAFKA_TXN_PROFILES": edits["KAFKA_TXN_PROFILES"],
           "LISTEN": "127.0.0.1:0", "PYTHONUNBUFFERED": "1", "WEB_CONFIG": str(web)}
    [(_, argv)] = execs
    proc = subprocess.Popen(run_as(expand(argv, env), edits["BIN"]), env=env, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = ""
        while "serving https://" not in line:
            line = proc.stderr.readline()
            assert line or proc.poll() is None, "the monitor exited"
        url = line.split("serving ", 1)[1].split("/ ", 1)[0]
        context = ssl.create_default_context(cafile=str(pki.ca))
        context.load_cert_chain(pki.client_cert, pki.client_key)
        assert http_get(url + "/healthz", context=context)[0] == 401
        health = http_get(url + "/healthz", context=context, auth=("prometheus", "pw"))
        assert health[0] == 200, health
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(30)
    assert code == 0


def test_the_shipped_web_config_refuses_to_start_until_its_placeholder_is_replaced(tmp_path: Path) -> None:
    from tests.support.pki import PLACEHOLDER, make_pki, shipped_web_config

    web = shipped_web_config(make_pki(tmp_path / "pki"), tmp_path / "etc", PLACEHOLDER)  # installed, not edited
    done = subprocess.run([sys.executable, "-m", "kafka_txn_tools", "monitor", "-b", "127.0.0.1:1", "--no-history",
                           "--listen", "127.0.0.1:0", "--web-config", str(web)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "basic_auth_users.prometheus is not a bcrypt hash" in done.stderr, done.stderr


@pytest.mark.needs("promtool")
def test_promtool_accepts_the_shipped_scrape_config(tmp_path: Path) -> None:
    from tests.support.pki import make_pki, shipped_scrape_config

    config = shipped_scrape_config(make_pki(tmp_path / "pki"), tmp_path / "prom", "pw", "127.0.0.1:8797")
    done = subprocess.run(["promtool", "check", "config", str(config)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout + done.stderr
