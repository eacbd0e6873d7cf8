"""cli/entry.py and app.narrowed: how a command line starts. The narrowed app must behave as the whole app for the
command it keeps (same help, same errors, same exit codes), and every other command line must get the whole app."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import textwrap

import pytest
from typer.testing import CliRunner

from kafka_txn_tools.cli.app import app, narrowed
from kafka_txn_tools.cli.completion import COMPLETE_VAR


def names(typer_app: object) -> list[str]:
    commands = [c.name for c in typer_app.registered_commands]  # type: ignore[attr-defined]
    return [*commands, *(g.name for g in typer_app.registered_groups)]  # type: ignore[attr-defined]


@pytest.mark.unit
@pytest.mark.parametrize(("args", "kept"), [
    (["find-hanging", "--all"], ["find-hanging"]),
    (["broker", "start", "--nodes", "1"], ["broker"]),
    (["describe-producers", "--help"], ["describe-producers"]),
])
def test_a_command_line_builds_only_its_command(args: list[str], kept: list[str]) -> None:
    assert names(narrowed(args)) == kept
    assert len(names(app)) > 10  # the app itself is left whole


@pytest.mark.unit
@pytest.mark.parametrize("args", [[], ["--help"], ["-h", "find-hanging"], ["--version"], ["find-hangin"],
                                  ["FIND-HANGING"]])
def test_any_other_command_line_gets_the_whole_app(args: list[str]) -> None:
    assert narrowed(args) is app


@pytest.mark.unit
def test_tab_completion_gets_the_whole_app(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(COMPLETE_VAR, "bash_complete")
    assert narrowed(["find-hanging"]) is app


@pytest.mark.unit
@pytest.mark.parametrize("args", [
    ["find-hanging", "--help"],
    ["find-hanging", "-b", "x:1"],  # no scope: a usage error
    ["find-hanging", "--all", "--max-transaction-timeout", "-5", "-b", "x:1"],
    ["abort", "--topic", "t", "-b", "x:1"],
    ["broker", "--help"],
    ["broker", "start", "--nodes", "0"],
    ["describe", "--no-such-option"],
])
def test_the_narrowed_app_answers_as_the_whole_app(args: list[str]) -> None:
    whole, narrow = (CliRunner().invoke(a, args) for a in (app, narrowed(args)))
    assert (narrow.exit_code, narrow.stdout, narrow.stderr) == (whole.exit_code, whole.stdout, whole.stderr)


PROBE = textwrap.dedent("""
    import gc, json, sys
    collections = []
    gc.callbacks.append(lambda phase, info: collections.append(1) if phase == "start" else None)
    from kafka_txn_tools.cli.entry import importing
    with importing():
        import kafka_txn_tools.cli.app
        import kafka_txn_tools.connection.client
        import kafka_txn_broker.formats.record_batch  # the record batch code, which checksums with crc32c
        during = (len(collections), gc.isenabled())
    frozen = gc.get_freeze_count()
    from kafka_txn_tools.cli.session import freeze_again
    more = [[] for _ in range(1000)]
    freeze_again()
    print(json.dumps({"during": during, "after": gc.isenabled(), "frozen": frozen,
                      "again": gc.get_freeze_count() - frozen,
                      "crc32c_init": "crc32c" in vars(sys.modules["crc32c"]),
                      "kafka_init": "kafka.consumer" in sys.modules}))
""")


@pytest.mark.e2e  # a child interpreter: this process's collector and modules are not touched
def test_imports_run_without_the_collector_and_are_frozen_after() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["during"] == [0, False]  # no collection while importing
    assert got["after"] is True and got["frozen"] > 10_000  # the collector back on; the modules' objects frozen
    assert got["again"] >= 1000  # before a command's first request, what it made since is frozen too
    assert got["crc32c_init"] is False and got["kafka_init"] is False  # neither package's __init__ ran
    assert gc.isenabled()


@pytest.mark.unit
def test_a_process_no_entry_point_started_is_never_frozen() -> None:
    from kafka_txn_tools.cli.session import freeze_again

    assert gc.get_freeze_count() == 0  # pytest's process: no entry point froze it
    kept: list[list[int]] = [[] for _ in range(100)]  # tracked objects that a freeze would move
    freeze_again()
    assert gc.get_freeze_count() == 0, kept[:0]
