"""The package boundaries the design card draws, checked on the source: the tools use the broker's formats
package only (the commands that run the broker import it inside the command), and the formats package
is pure (no other broker package, no third-party import but crc32c)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import kafka_txn_broker.formats
import kafka_txn_tools

TOOLS = Path(kafka_txn_tools.__file__).resolve().parent
FORMATS = Path(kafka_txn_broker.formats.__file__).resolve().parent
# The commands that run the broker, and the sweep's packaging of the formats package for executors.
RUN_THE_BROKER = {"cli/commands/broker.py", "demo.py", "spark/executors.py"}


def imports(path: Path) -> Iterator[tuple[str, bool]]:
    """(imported module, at module level?) of every import in a file, relative ones resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = set(map(id, tree.body))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        else:
            continue
        for name in names:
            yield name, id(node) in top


def test_the_tools_import_only_the_formats_of_the_broker() -> None:
    found = []
    for path in sorted(TOOLS.rglob("*.py")):
        rel = path.relative_to(TOOLS).as_posix()
        for name, top_level in imports(path):
            if not (name == "kafka_txn_broker" or name.startswith("kafka_txn_broker.")):
                continue
            if name.startswith("kafka_txn_broker.formats"):
                continue
            if rel in RUN_THE_BROKER and not top_level:
                continue
            found.append(f"{rel}: {name}")
    assert found == []


def test_the_formats_package_is_pure() -> None:
    found = []
    for path in sorted(FORMATS.rglob("*.py")):
        for name, top_level in imports(path):
            root = name.split(".")[0]
            if name.startswith("kafka_txn_broker.formats") or root in {"__future__", "crc32c"}:
                continue
            if root == "kafka_txn_broker" or (top_level and root not in _STDLIB):
                found.append(f"{path.name}: {name}")
    assert found == []


_STDLIB = {"base64", "contextlib", "dataclasses", "enum", "functools", "gzip", "logging", "os", "pathlib", "warnings",
           "struct", "collections", "typing", "uuid"}
