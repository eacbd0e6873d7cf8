"""The formats package is pure: no other broker package but the neutral gc_pause utility (the layering contract
checks that too) and no third-party import at module level but crc32c, so the tools and Spark executors can use
it alone (with gc_pause, which imports only the standard library: the executors' zip carries both)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import kafka_txn_broker.formats

FORMATS = Path(kafka_txn_broker.formats.__file__).resolve().parent
_STDLIB = {"base64", "contextlib", "dataclasses", "enum", "functools", "gc", "gzip", "importlib", "logging", "os",
           "pathlib", "struct", "collections", "threading", "types", "typing", "uuid", "warnings"}


def imports(path: Path) -> Iterator[tuple[str, bool]]:
    """(imported module, at module level?) of every absolute import in a file."""
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


NEUTRAL = "kafka_txn_broker.gc_pause"


def test_the_neutral_utility_imports_only_the_standard_library() -> None:
    path = Path(kafka_txn_broker.formats.__file__).resolve().parents[1] / "gc_pause.py"
    assert {name.split(".")[0] for name, _ in imports(path)} - {"__future__"} <= _STDLIB


def test_the_formats_package_is_pure() -> None:
    found = []
    for path in sorted(FORMATS.rglob("*.py")):
        for name, top_level in imports(path):
            root = name.split(".")[0]
            if name.startswith("kafka_txn_broker.formats") or name == NEUTRAL or root in {"__future__", "crc32c"}:
                continue
            if root == "kafka_txn_broker" or (top_level and root not in _STDLIB):
                found.append(f"{path.name}: {name}")
    assert found == []
