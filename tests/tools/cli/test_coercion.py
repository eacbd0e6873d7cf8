"""cli/coercion.py: the quick path gives what typer's own coercion gives, value by value, errors included,
and a command line of the CLI's own is parsed without typer's pydantic adapters."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Annotated, Any

import pytest
import typer
import typer.core
from typer import _coercion
from typer.testing import CliRunner

from kafka_txn_tools.cli import coercion


class Colour(enum.Enum):
    RED = "red"
    DEEP_BLUE = "deep-blue"


def _probe_app() -> typer.Typer:
    """One option of each kind the quick path takes; the command prints what it received."""
    app = typer.Typer(add_completion=False)

    @app.command()
    def probe(
        text: Annotated[str | None, typer.Option()] = None,
        number: Annotated[int | None, typer.Option()] = None,
        ranged: Annotated[int | None, typer.Option(min=1, max=10)] = None,
        flag: Annotated[bool, typer.Option()] = False,
        from_env: Annotated[bool, typer.Option(envvar="PROBE_FLAG")] = False,
        path: Annotated[Path | None, typer.Option()] = None,
        existing: Annotated[Path | None, typer.Option(exists=True, dir_okay=False)] = None,
        colour: Annotated[Colour | None, typer.Option(case_sensitive=False)] = None,
        texts: Annotated[list[str] | None, typer.Option("--texts")] = None,
        numbers: Annotated[list[int] | None, typer.Option("--numbers")] = None,
    ) -> None:
        values = [text, number, ranged, flag, from_env, path, existing, colour, texts, numbers]
        typer.echo(repr([(type(v).__name__, v) for v in values]))

    @app.command()
    def other() -> None:
        """A second command, so that probe is a subcommand as the CLI's are."""

    return app


def _spy_on_typers_own(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The annotations the quick path handed to typer's own coercion."""
    slow: list[Any] = []

    def spy(descriptor: _coercion.TypeDescriptor) -> _coercion.RuntimeParam:
        slow.append(descriptor.annotation)
        return _coercion.build_runtime_param(descriptor)

    monkeypatch.setattr(coercion, "_typers_own", spy)
    return slow


def _run(args: list[str], quick: bool, monkeypatch: pytest.MonkeyPatch, env: dict[str, str] | None = None
         ) -> tuple[int, str]:
    builder = coercion.quick_build_runtime_param if quick else _coercion.build_runtime_param
    monkeypatch.setattr(typer.core, "build_runtime_param", builder)
    result = CliRunner().invoke(_probe_app(), ["probe", *args], env=env)
    return result.exit_code, result.output


CASES = [
    [], ["--text", "a b"], ["--text", ""], ["--number", "42"], ["--number", "-7"], ["--number", "007"],
    ["--number", "+5"], ["--number", " 12 "], ["--number", "1_000"], ["--number", "x"], ["--number", "1.5"],
    ["--number", "99999999999999999999999"], ["--ranged", "1"], ["--ranged", "10"], ["--ranged", "0"],
    ["--ranged", "11"], ["--flag"], ["--no-flag"], ["--path", "some/where"], ["--path", ""],
    ["--existing", "/nonexistent/file"], ["--existing", "/"], ["--existing", __file__], ["--colour", "red"],
    ["--colour", "DEEP-BLUE"], ["--colour", "green"], ["--texts", "a", "--texts", "b"],
    ["--numbers", "1", "--numbers", "2"], ["--numbers", "1", "--numbers", "two"],
]


@pytest.mark.parametrize("args", CASES, ids=[" ".join(c) or "nothing" for c in CASES])
def test_quick_path_gives_typers_result(args: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    assert _run(args, quick=True, monkeypatch=monkeypatch) == _run(args, quick=False, monkeypatch=monkeypatch)


@pytest.mark.parametrize("value", ["yes", "0", "TRUE", "off", "", "maybe"])
def test_a_flag_from_the_environment_is_read_as_typer_reads_it(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A flag's value from its environment variable is text, not a bool: typer's reading of it decides."""
    env = {"PROBE_FLAG": value}
    quick = _run([], quick=True, monkeypatch=monkeypatch, env=env)
    assert quick == _run([], quick=False, monkeypatch=monkeypatch, env=env)


def test_valid_values_take_the_quick_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every option above, given a value that converts cleanly, never reaches typer's adapters."""
    slow = _spy_on_typers_own(monkeypatch)
    given = ["--text", "t", "--number", "3", "--ranged", "4", "--flag", "--path", "p", "--existing", __file__,
             "--colour", "red", "--texts", "a", "--numbers", "5"]
    code, output = _run(given, quick=True, monkeypatch=monkeypatch)
    assert code == 0, output
    assert "('int', 3)" in output and "('Colour', <Colour.RED: 'red'>)" in output and "('PosixPath'" in output
    assert slow == []


def test_a_value_that_does_not_convert_goes_to_typer(monkeypatch: pytest.MonkeyPatch) -> None:
    slow = _spy_on_typers_own(monkeypatch)
    code, output = _run(["--number", "x"], quick=True, monkeypatch=monkeypatch)
    assert code == 2 and "--number" in output
    assert slow == [int]


def test_the_cli_parses_its_own_command_line_without_typers_adapters(monkeypatch: pytest.MonkeyPatch) -> None:
    """find-hanging's options as the runbook gives them, parsed up to the connection (refused: nothing listens)."""
    from kafka_txn_tools.cli.app import app

    slow = _spy_on_typers_own(monkeypatch)
    monkeypatch.setattr(typer.core, "build_runtime_param", coercion.quick_build_runtime_param)
    result = CliRunner().invoke(app, ["find-hanging", "--topic", "t", "--partition", "0", "-b", "127.0.0.1:1", "-o",
                                      "json", "--timeout", "2s", "--max-transaction-timeout", "15m"])
    assert "cannot connect" in result.output, result.output
    assert slow == []


def test_the_seam_is_where_typer_looks() -> None:
    """typer.core calls build_runtime_param by that name; install() replaces it there."""
    import kafka_txn_tools.cli.app  # noqa: F401  (installs)

    assert typer.core.build_runtime_param is coercion.quick_build_runtime_param
    assert callable(_coercion.build_runtime_param) and coercion._typers_own is _coercion.build_runtime_param
