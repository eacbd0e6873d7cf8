#!/usr/bin/env python3
"""Regenerate the completion scripts from the installed `kafka-txn` entry point.

    python completions/generate.py            # write completions/*
    python completions/generate.py --check    # exit 1 if a checked-in script is stale

Each script is what `_KAFKA_TXN_COMPLETE=source_<shell> kafka-txn` prints (typer's own generator).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kafka_txn_tools.cli.completion import COMPLETE_VAR, PROG, SCRIPTS  # noqa: E402

HERE = Path(__file__).resolve().parent


def generate(shell: str) -> str:
    env = {**os.environ, COMPLETE_VAR: f"source_{shell}"}
    # Run the module the console script runs, so a stale or missing `kafka-txn` on PATH cannot matter.
    code = "import sys; sys.argv[0] = 'kafka-txn'; from kafka_txn_tools.cli.app import main; main()"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    if not done.stdout.strip():
        raise SystemExit(f"{PROG} printed no {shell} completion script: {done.stderr.strip()}")
    return done.stdout


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for shell, name in SCRIPTS.items():
        text = generate(shell)
        path = HERE / name
        if check:
            if not path.exists() or path.read_text() != text:
                stale.append(name)
        else:
            path.write_text(text)
    if stale:
        print(f"stale completion scripts: {', '.join(stale)}; run python completions/generate.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
