"""Every `kafka-txn` command, registered one way: each module has `register(app)`, and COMMANDS is the
only wiring (cli/app.py calls `register_all`).

Command modules turn options into a call of the command's flow in kafka_txn_tools/admin/ and render
its result; they import only light modules at import time (typer, stdlib, the cli helpers) and never
the app, so there is no import cycle and `kafka-txn --help` starts fast.
"""

from __future__ import annotations

import typer

from kafka_txn_tools.cli.commands import (
    abort,
    broker,
    commit,
    demo,
    describe,
    describe_producers,
    dump,
    find_hanging,
    force_terminate,
    history,
    listing,
    monitor,
    move_coordinator,
    share_group,
    sweep,
)

COMMANDS = (listing, describe, describe_producers, find_hanging, abort, commit, force_terminate, move_coordinator,
            dump, sweep, monitor, history, broker, demo, share_group)


def register_all(app: typer.Typer) -> None:
    for module in COMMANDS:
        module.register(app)
