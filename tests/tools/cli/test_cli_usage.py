"""`kafka-txn` argument handling, errors and exit codes that need no cluster."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from kafka_txn_tools.cli import exit_codes
from kafka_txn_tools.cli.app import app

UNREACHABLE = ["-b", "127.0.0.1:1", "--timeout", "0.3s"]


@pytest.fixture
def run(tmp_path, monkeypatch):
    monkeypatch.delenv("KAFKA_BOOTSTRAP_SERVERS", raising=False)
    monkeypatch.delenv("KAFKA_TXN_PROFILE", raising=False)
    monkeypatch.setenv("KAFKA_TXN_PROFILES", str(tmp_path / "no-profiles.yaml"))
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(app, list(args))

    return invoke


@pytest.mark.parametrize("args, code, message", [
    (["find-hanging", *UNREACHABLE], exit_codes.USAGE, "find-hanging needs a scope"),
    (["find-hanging", "--partition", "1", *UNREACHABLE], exit_codes.USAGE, "--partition needs --topic"),
    (["find-hanging", "--all", "--max-transaction-timeout", "15x"], exit_codes.USAGE, "unknown unit 'x'"),
    (["find-hanging", "--all", "--full-scan-every", "5", *UNREACHABLE], exit_codes.USAGE, "use it with --watch"),
    (["find-hanging", "--all", "--watch", "--full-scan", "--full-scan-every", "5", *UNREACHABLE], exit_codes.USAGE,
     "without --full-scan"),
    (["find-hanging", "--all", "--watch", "--full-scan-every", "-1", *UNREACHABLE], exit_codes.USAGE,
     "greater than or equal to 0"),
    (["abort", "--topic", "t", "--partition", "0"], exit_codes.USAGE, "identified either with --start-offset"),
    (["abort", "--plan", "p.yaml", "--topic", "t"], exit_codes.USAGE, "do not combine it"),
    (["describe"], exit_codes.USAGE, "give --transactional-id ID"),
    (["describe-producers"], exit_codes.USAGE, "give --topic TOPIC"),
    (["list"], exit_codes.USAGE, "no cluster to connect to"),
    (["list", "--duration-filter", "5", "--min-duration", "5m"], exit_codes.USAGE, "not both"),
    (["list", "--state", "running", *UNREACHABLE], exit_codes.USAGE, "unknown transaction state 'running'"),
    (["dump", "--out", "d"], exit_codes.USAGE, "dump needs --all"),
])
def test_usage_errors(run, args, code, message) -> None:
    result = run(*args)
    assert result.exit_code == code, result.output
    assert message in result.output
    assert "Traceback" not in result.output


def test_unreachable_cluster_is_a_message_not_a_traceback(run, tmp_path) -> None:
    props = tmp_path / "admin.properties"
    props.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config="
                     "org.apache.kafka.common.security.plain.PlainLoginModule required "
                     "username=u password=TOPSECRET;\n")
    result = run("list", *UNREACHABLE, "--command-config", str(props))
    assert result.exit_code == exit_codes.ERROR
    assert "error: cannot connect to the cluster: 127.0.0.1:1 refused the connection" in result.output
    assert "TOPSECRET" not in result.output and "Traceback" not in result.output


def test_help_documents_exit_codes(run) -> None:
    result = run("--help")
    assert result.exit_code == 0 and "3 hanging transactions found" in result.output
    for command in ("list", "describe", "describe-producers", "find-hanging", "abort", "force-terminate", "dump"):
        assert command in result.output


def test_help_loads_no_heavy_module() -> None:
    import subprocess
    import sys

    code = ("import sys; sys.argv[1:] = ['--help']\n"
            "from kafka_txn_tools.cli.entry import kafka_txn\n"  # as the console script starts
            "try:\n    kafka_txn()\nexcept SystemExit:\n    pass\n"
            # kafka.consumer and kafka.producer: what kafka-python's __init__ imports (the entry point defers it);
            # kafka.protocol.api_message: the message classes (the entry point imports only the schema fields, for
            # the protocol cache)
            "heavy = [m for m in ('kafka.consumer', 'kafka.producer', 'kafka.errors', 'kafka.protocol.api_message',"
            " 'kafka.net', 'pyarrow', 'yaml', 'rich.table', 'kafka_txn_tools.connection.client')"
            " if m in sys.modules]\n"
            "print(heavy, file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stderr.strip().splitlines()[-1] == "[]"


COMMANDS = ["list", "describe", "describe-producers", "find-hanging", "abort", "force-terminate", "dump", "sweep",
            "monitor", "history"]


def test_version(run) -> None:
    from kafka_txn_tools import __version__

    result = run("--version")
    assert (result.exit_code, result.stdout) == (0, f"kafka-txn {__version__}\n")


def test_help_teaches_the_runbook_and_the_profiles_file(run) -> None:
    text = run("--help").stdout
    steps = ("1. kafka-txn find-hanging --all", "2. run each printed command as printed",
             "3. kafka-txn find-hanging --all -b kafka-1:9092 --watch")
    runbook = [text.index(step) for step in steps]
    assert runbook == sorted(runbook)
    for line in ("profiles:", "bootstrap_servers:", "command_config:", "properties:", "${VAR}", "audit log",
                 "NO_COLOR"):
        assert line in text


@pytest.mark.parametrize("command", ["", *COMMANDS])
def test_help_fits_80_columns(run, monkeypatch, command: str) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    text = run(*([command] if command else []), "--help").stdout
    assert max(len(line) for line in text.splitlines()) <= 80, text


@pytest.mark.parametrize("command", COMMANDS)
def test_command_help_has_examples_and_no_python_type_names(run, command: str) -> None:
    import re

    text = run(command, "--help").stdout
    assert not re.search(r"<(list\[|str>|int>|Path>|float>)", text), text
    assert "Usage: kafka-txn " + command in text
    if command not in ("sweep",):
        assert "Examples:" in text or "The runbook:" in text
        assert "required" in text.lower()


@pytest.mark.parametrize("args, message", [
    (["abort", "--partition", "x"], "error: invalid value for '--partition'"),
    (["list", "--nope"], "error: no such option: --nope"),
    (["no-such-command"], "error: no such command 'no-such-command'"),
    (["abort", "--topic", "t", "--partition", "0", "--start-offset", "1", "--timeout", "1x"],
     "error: invalid value for --timeout"),
])
def test_parser_errors_use_the_one_error_style(run, args: list[str], message: str) -> None:
    result = run(*args)
    assert result.exit_code == exit_codes.USAGE
    assert result.stderr.startswith(message), result.stderr
    assert "Usage:" not in result.stderr and "Traceback" not in result.output
    assert result.stderr.rstrip().endswith("--help`)")
