"""The console scripts (pyproject's [project.scripts]) and `python -m kafka_txn_tools`: the interpreter set up for
one command line, then the command run.

- kafka-python's package is registered without running its ``__init__`` (connection/kafka_package.py), and its
  protocol classes are built through a cache kept across runs (connection/protocol_cache.py).
- Python's cyclic garbage collector is off while the CLI's modules import. Imports make classes, functions and
  tables that live until the process exits, so a collection then frees nothing; about 75 of them walked those
  objects in a find-hanging run, 10-15 ms of it (measured 2026-12-07). What is alive when the imports end is
  frozen (``gc.freeze``): later collections skip it. session.connect freezes again once a command has imported
  what it uses, before its first request, in a process that froze once (``freeze_again``): a test process that
  runs commands in-process never has its objects frozen.

Threading: runs on the main thread before any other thread starts.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def importing() -> Iterator[None]:
    """Imports inside: the collector off, kafka-python's package registered first and its protocol cache in place,
    everything frozen after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        from kafka_txn_tools.connection import protocol_cache
        from kafka_txn_tools.connection.kafka_package import load_lazily

        load_lazily()
        protocol_cache.install()
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def kafka_txn() -> None:
    """`kafka-txn`."""
    with importing():
        from kafka_txn_tools.cli.app import main
    main()


def kafka_transactions() -> None:
    """`kafka-transactions`: upstream's syntax."""
    with importing():
        from kafka_txn_tools.cli.upstream import main
    main()
