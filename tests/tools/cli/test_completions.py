"""completions/: the checked-in scripts are what the app generates, and completion answers at runtime."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_checked_in_scripts_match_the_generator() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "completions" / "generate.py"), "--check"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    for name in ("kafka-txn.bash", "_kafka-txn", "kafka-txn.fish", "kafka-txn.ps1"):
        assert "_KAFKA_TXN_COMPLETE" in (ROOT / "completions" / name).read_text()


def complete(words: str) -> list[str]:
    env = {**os.environ, "_KAFKA_TXN_COMPLETE": "complete_bash", "COMP_WORDS": words,
           "COMP_CWORD": str(len(words.split()) - (0 if words.endswith(" ") else 1))}
    code = "import sys; sys.argv[0] = 'kafka-txn'; from kafka_txn_tools.cli.app import main; main()"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    return done.stdout.split()


def test_tab_completes_commands_and_choices() -> None:
    assert complete("kafka-txn find-h") == ["find-hanging"]
    assert complete("kafka-txn find-hanging --output ") == ["table", "json", "yaml", "csv", "tsv", "kafka", "plan"]
