"""Shell completion for `kafka-txn` (scripts in completions/, made by completions/generate.py).

The app is built with add_completion=False (no --install-completion option), so typer does not
register its shell classes; the scripts call back into `kafka-txn` with `_KAFKA_TXN_COMPLETE` set,
and this registers them for exactly those calls. Without the variable it costs one dict lookup.
"""

from __future__ import annotations

import os

PROG = "kafka-txn"
COMPLETE_VAR = "_KAFKA_TXN_COMPLETE"
# shell -> file name in completions/
SCRIPTS = {"bash": "kafka-txn.bash", "zsh": "_kafka-txn", "fish": "kafka-txn.fish", "powershell": "kafka-txn.ps1"}


def enable_if_requested() -> None:
    if COMPLETE_VAR in os.environ:
        from typer.completion import completion_init

        completion_init()
