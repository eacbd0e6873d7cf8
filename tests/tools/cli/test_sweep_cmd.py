"""`kafka-txn sweep`: options, durations, errors that need no Spark, and one real run."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from kafka_txn_tools.cli import exit_codes
from kafka_txn_tools.cli.app import app
from kafka_txn_tools.durations import format_duration_ms, parse_duration_ms
from kafka_txn_tools.spark import job, session


@pytest.mark.parametrize(("text", "ms"), [
    ("15m", 900_000), ("900s", 900_000), ("2h", 7_200_000), ("1500ms", 1_500), ("15", 900_000), ("1d", 86_400_000),
    ("0.5s", 500), (" 20 min ", 1_200_000), ("10sec", 10_000), ("15M", 900_000),
])
def test_parse_duration(text, ms):
    assert parse_duration_ms(text) == ms


@pytest.mark.parametrize(("text", "message"), [
    ("", "invalid duration ''"), ("fast", "invalid duration 'fast'"), ("-5m", "invalid duration"),
    ("5 weeks", "unknown unit 'weeks'"),
])
def test_bad_durations_say_how_to_write_one(text, message):
    with pytest.raises(ValueError, match=message):
        parse_duration_ms(text)


def test_format_duration():
    assert [format_duration_ms(ms) for ms in (900_000, 7_200_000, 1_500, 0)] == ["15m", "2h", "1s 500ms", "0ms"]


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def test_help_lists_the_options():
    result = invoke("sweep", "--help")
    assert result.exit_code == 0
    for option in ("--out", "--master", "--max-transaction-timeout", "--as-of", "--include-late", "--output",
                   "--executor-python"):
        assert option in result.output


def test_bad_duration_is_a_usage_error(tmp_path):
    result = invoke("sweep", str(tmp_path), "--out", str(tmp_path / "o"), "--max-transaction-timeout", "soon")
    assert result.exit_code == exit_codes.USAGE
    assert "--max-transaction-timeout: invalid duration 'soon'" in result.output


def test_executor_python_with_a_local_master_is_a_usage_error(tmp_path, monkeypatch):
    # Local workers always run this interpreter: a Python named for them would be ignored, so it is refused.
    monkeypatch.setattr(job, "get_session", lambda *a, **k: pytest.fail("Spark started"))
    (tmp_path / "node-1").mkdir()
    result = invoke("sweep", str(tmp_path), "--out", str(tmp_path / "o"), "--executor-python", "/opt/py/bin/python")
    assert result.exit_code == exit_codes.USAGE
    assert result.output.strip().splitlines() == [
        f"error: --executor-python names the Python of a cluster's executors; local[*] runs its workers with this "
        f"Python ({sys.executable}): drop the option, or pass --master spark://HOST:PORT"]


def test_unknown_input_is_a_usage_error_before_spark_starts(tmp_path, monkeypatch):
    monkeypatch.setattr(job, "get_session", lambda *a, **k: pytest.fail("Spark started"))
    notes = tmp_path / "notes.txt"
    notes.write_text("not a dump\n")
    result = invoke("sweep", str(notes), "--out", str(tmp_path / "o"))
    assert result.exit_code == exit_codes.USAGE
    assert "cannot tell what" in result.output and "kafka-dump-log.sh" in result.output
    result = invoke("sweep", str(tmp_path / "missing"), "--out", str(tmp_path / "o"))
    assert result.exit_code == exit_codes.USAGE and "does not exist" in result.output


def test_missing_java_is_a_clear_message(tmp_path, monkeypatch):
    monkeypatch.setattr(session, "find_java", lambda: None)
    (tmp_path / "node-1").mkdir()
    result = invoke("sweep", str(tmp_path), "--out", str(tmp_path / "o"))
    assert result.exit_code == exit_codes.ERROR
    assert ("java not found: install a JRE 17, e.g. apt-get install openjdk-17-jre-headless, or set JAVA_HOME"
            in result.output)


def test_cli_start_does_not_import_pyspark():
    code = "import sys; import kafka_txn_tools.cli.app; print('pyspark' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"


@pytest.mark.spark
@pytest.mark.needs("java")
def test_sweep_json_output(tmp_path):
    from tests.support import generator as gen

    gen.write_logdirs(gen.GeneratorConfig(seed=2, topics=2, partitions_per_topic=4), tmp_path / "logs")
    truth = json.loads((tmp_path / "logs" / "ground-truth.json").read_text())
    result = CliRunner().invoke(app, ["sweep", str(tmp_path / "logs"), "--out", str(tmp_path / "out"),
                                      "--master", "local[2]", "--max-transaction-timeout", "15", "--output", "json"],
                                env={k: None for k in os.environ if k.startswith(("KAFKA_TXN_", "KAFKA_BOOTSTRAP"))})
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    hanging = {(r["topic"], r["partition"], r["producer_id"], r["reason"]) for r in truth["expected"]
               if r["verdict"] == "hanging"}
    assert {(r["topic"], r["partition"], r["producer_id"], r["reason"]) for r in doc["transactions"]} == hanging
    assert doc["summary"]["hanging"] == len(hanging)
    assert (tmp_path / "out" / "abort-plan.yaml").is_file()
    # Log dirs do not record how to reach their cluster, and the sweep was given none: a command line without a
    # cluster is refused as printed (`no cluster to connect to`), so none is printed, anywhere; it says once in
    # prose what to add instead.
    assert all(r["commands"] == [] for r in doc["transactions"])
    assert "kafka-txn abort" not in result.stdout + result.stderr
    assert result.stderr.count("no command is printed: these inputs do not record the cluster") == 1
    plan = (tmp_path / "out" / "abort-plan.yaml").read_text()
    assert "commands: []" in plan and "connection:" not in plan
