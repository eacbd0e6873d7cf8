"""Python as an installed kafka-txn runs it: every module's bytecode compiled before the first start.

`pip install` compiles each module of the wheels it installs to a .pyc (its default), so a user's `kafka-txn`
never compiles its own source. A checkout run from a shell with PYTHONDONTWRITEBYTECODE set (this project's
machines set it) compiles every module it imports, on every start: about 0.2 s of the broker's start and of a
find-hanging run, which a JVM never pays (it loads compiled classes from the jars). The benchmarks that time
a fresh process therefore compile the checkout first and run their children with bytecode caching on.
"""

from __future__ import annotations

import compileall
import importlib.util
import os
from pathlib import Path

# The packages a kafka-txn command or the embedded broker imports at start, outside the checkout; pip compiled
# them at install already, unless they were installed with --no-compile (compiling again is a no-op then).
DEPENDENCIES = ("kafka", "typer", "click", "rich", "crc32c", "yaml")


def installed_env(root: Path, base: dict[str, str] | None = None) -> dict[str, str]:
    """`base` (os.environ by default) with bytecode caching on, after compiling the checkout at `root` and the
    dependencies as pip install would have."""
    for package in (root / "kafka_txn_tools", root / "broker" / "kafka_txn_broker"):
        compileall.compile_dir(package, quiet=1)
    for name in DEPENDENCIES:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            for location in spec.submodule_search_locations:
                compileall.compile_dir(location, quiet=1)
    env = dict(os.environ if base is None else base)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env
