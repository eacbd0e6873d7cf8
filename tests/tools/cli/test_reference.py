"""docs/cli.md is the generated CLI reference: exactly what the generator prints, and complete."""

from __future__ import annotations

import argparse
import difflib
import subprocess
import sys
from pathlib import Path

import typer
from typer._click import Context
from typer.core import TyperGroup

from kafka_txn_tools.cli.app import app
from kafka_txn_tools.cli.reference import REGENERATE, _prose, render
from kafka_txn_tools.cli.upstream.parser import build_parser

ROOT = Path(__file__).resolve().parents[3]
PAGE = ROOT / "docs" / "cli.md"


def _sections(text: str) -> dict[str, str]:
    """Each `### heading` of the page with its text up to the next heading."""
    sections = {}
    for chunk in text.split("\n### ")[1:]:
        heading, _, body = chunk.partition("\n")
        sections[heading.strip()] = body.split("\n## ")[0]
    return sections


def _option_lines(section: str) -> str:
    """The table rows and the shared-options line of a section (not its examples, which name options too)."""
    return "\n".join(line for line in section.splitlines() if line.startswith(("| `", "Also takes ")))


def test_checked_in_page_is_what_the_generator_prints() -> None:
    # The command the failure message gives, run as printed (from the checkout, output to stdout).
    done = subprocess.run([sys.executable, "-m", "kafka_txn_tools.cli.reference"], cwd=ROOT,
                          capture_output=True, text=True, check=True)
    current = PAGE.read_text() if PAGE.exists() else ""
    diff = "".join(list(difflib.unified_diff(current.splitlines(True), done.stdout.splitlines(True),
                                             "docs/cli.md", "generated"))[:40])
    assert current == done.stdout, f"docs/cli.md is stale: run `{REGENERATE}` from the checkout\n{diff}"


def test_every_kafka_txn_command_and_option_is_documented() -> None:
    sections = _sections(render())
    root = typer.main.get_command(app)
    pending = [("kafka-txn", root, None)]
    seen = 0
    while pending:
        path, command, parent = pending.pop()
        ctx = Context(command, info_name=path.rsplit(" ", 1)[-1], parent=parent)
        if isinstance(command, TyperGroup):
            for name in command.list_commands(ctx):
                pending.append((f"{path} {name}", command.get_command(ctx, name), ctx))
        if path == "kafka-txn":
            continue
        assert path in sections, f"no section for {path}"
        for param in command.params:
            if getattr(param, "hidden", False):  # kept for old scripts, not offered: `--help` hides it too
                continue
            for opt in param.opts + param.secondary_opts:
                if opt.startswith("-"):
                    assert opt in _option_lines(sections[path]), f"{path}: {opt} is not in its section"
        seen += 1
    # list, describe, describe-producers, find-hanging, abort, force-terminate, dump, sweep, demo,
    # describe-share-group, broker and its start, config and scenario
    assert seen >= 14


def test_every_kafka_transactions_command_and_option_is_documented() -> None:
    sections = _sections(render())
    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert set(subparsers.choices) == {"list", "describe", "describe-producers", "abort", "find-hanging",
                                       "forceTerminateTransaction"}
    for name, sub in subparsers.choices.items():
        section = sections[f"kafka-transactions {name}"]
        for action in sub._actions:
            for opt in action.option_strings:
                if opt not in ("-h", "--help"):
                    assert opt in _option_lines(section), f"kafka-transactions {name}: {opt} is not in its section"


def test_rows_carry_type_default_and_help() -> None:
    sections = _sections(render())
    start = sections["kafka-txn broker start"]
    assert "| `--nodes` | integer, 1 to 64 | `3` | broker nodes in the cluster |" in start
    assert "| `--data-dir` | path | required |" in start
    # kafka-transactions.sh's own defaults and Java integer types, as upstream declares them.
    hanging = sections["kafka-transactions find-hanging"]
    assert "`--max-transaction-timeout MAX_TRANSACTION_TIMEOUT` | Integer (Java) | `15` |" in hanging
    scenario = sections["kafka-txn broker scenario"]
    assert "| `--healthy / --no-healthy` | flag | `--healthy` |" in scenario
    # Options several commands share are listed once and named in each command's section.
    assert "[connection options](#connection-options) `-b, --bootstrap-server HOST:PORT[,...]`" in sections[
        "kafka-txn abort"]
    assert "| `-y, --yes` | flag | off |" in sections["Safety options"]


def test_help_text_is_literal_markdown_outside_code_spans() -> None:
    assert _prose("log dirs go to DIR/node-<id>/ and sasl.* `a_b|c`") == \
        "log dirs go to DIR/node-\\<id\\>/ and sasl.\\* `a_b|c`"
    assert _prose("x | y `p|q`", in_table=True) == "x \\| y `p\\|q`"
    assert _prose("one ` backtick_here") == "one ` backtick\\_here"
