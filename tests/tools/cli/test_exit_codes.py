"""The exit codes are documented where users read them, and the same everywhere: each code of cli/exit_codes.py
has a row in docs/abort-and-plans.md's table and a place in every command's --help."""

from __future__ import annotations

import re
from pathlib import Path

from kafka_txn_tools.cli import exit_codes

DOC = Path(__file__).resolve().parents[3] / "docs" / "abort-and-plans.md"


def codes() -> dict[str, int]:
    return {name: value for name, value in vars(exit_codes).items() if name.isupper() and isinstance(value, int)}


def test_every_code_has_one_meaning_and_a_row_in_the_documented_table() -> None:
    values = sorted(codes().values())
    assert values == list(range(len(values)))  # 0..7, one name each
    section = DOC.read_text().split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    rows = [int(m.group(1)) for m in re.finditer(r"^\| (\d+) \| ", section, re.MULTILINE)]
    assert rows == values


def test_help_names_every_code() -> None:
    for value in codes().values():
        assert f" {value} " in exit_codes.HELP_TEXT, value
