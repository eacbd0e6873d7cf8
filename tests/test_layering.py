"""The house's layering, checked on every import (those under `if TYPE_CHECKING:` and inside functions too):

- the import-linter contracts declared once in pyproject.toml ([tool.importlinter]): the broker's ranked
  layers, request handlers that reach other nodes only through the inter-broker channel, a broker that
  reaches its wire codec (kafka-python) only through formats.messages, tools that import only the broker's
  formats package, and the tools' own layers (the connection under the flows, the monitor, the sweep and the
  CLI; the flows under the CLI; models and errors at the bottom);
- no package cycles: for every package of both distributions, the import graph of its children (each
  subpackage with everything under it) has no cycle through a subpackage, and the top-level children of
  kafka_txn_broker and kafka_txn_tools (its layers) have no cycle at all.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("kafka_txn_broker", "kafka_txn_tools")


def test_the_layering_contracts_hold() -> None:
    # This checkout's packages, whatever is installed; no cache written into the tree.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "broker")])}
    run = subprocess.run(
        [sys.executable, "-c", "from importlinter.cli import lint_imports_command; lint_imports_command()",
         "--config", str(ROOT / "pyproject.toml"), "--no-cache", "--no-logo"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout


def test_the_tools_layers_are_declared() -> None:
    """The tools' contracts say what docs/architecture.md promises: removing or loosening one fails here, not
    silently (the contracts themselves are checked by the test above)."""
    contracts = {c["id"]: c for c in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
                 ["contracts"]}
    layers = contracts["tools-layers"]
    assert layers["containers"] == ["kafka_txn_tools"] and layers["exhaustive"] is True
    # A strict order, each a layer of its own (no `:`, which would let siblings import each other).
    assert [set(layer.replace(" ", "").split("|")) for layer in layers["layers"]] == [
        {"__main__"}, {"cli"}, {"demo"}, {"monitor"}, {"spark"}, {"history"}, {"admin"}, {"dumps"}, {"clients"},
        {"connection"}, {"models", "errors", "batches", "timestamps"}, {"durations"}]
    flows = contracts["flows-under-cli"]
    assert (flows["source_modules"], flows["forbidden_modules"]) == (["kafka_txn_tools.admin"], ["kafka_txn_tools.cli"])
    bottom = contracts["tools-vocabulary-at-the-bottom"]
    assert "kafka_txn_tools.models" in bottom["source_modules"] and bottom["forbidden_modules"] == ["kafka_txn_tools.*"]
    assert not any(c.get("ignore_imports") for c in (layers, flows, bottom))


def _graph() -> grimp.ImportGraph:
    return grimp.build_graph(*PACKAGES, cache_dir=None)  # TYPE_CHECKING imports included (grimp's default)


def _children_graph(graph: grimp.ImportGraph, package: str) -> dict[str, set[str]]:
    """child -> the children it imports, each child standing for itself and everything under it."""
    owner = {}
    for child in graph.find_children(package):
        owner[child] = child
        owner.update(dict.fromkeys(graph.find_descendants(child), child))
    edges: dict[str, set[str]] = {child: set() for child in set(owner.values())}
    for module, child in owner.items():
        for imported in graph.find_modules_directly_imported_by(module):
            target = owner.get(imported)
            if target is not None and target != child:
                edges[child].add(target)
    return edges


def _cycles(edges: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_package_imports_itself_through_another() -> None:
    graph = _graph()
    problems = []
    for package in sorted(m for m in graph.modules if graph.find_children(m)):
        for cycle in _cycles(_children_graph(graph, package)):
            # Modules of one package may use each other; a cycle through a subpackage, or among the top
            # layers, is a package cycle.
            if package in PACKAGES or any(graph.find_children(m) for m in cycle):
                chains = [" -> ".join(chain) for a in cycle for b in cycle if a != b
                          for chain in sorted(graph.find_shortest_chains(a, b, as_packages=True))[:1]]
                problems.append(f"{package}: {cycle}\n    " + "\n    ".join(chains))
    assert problems == [], "\n".join(problems)


# kafka-python's private names the tools could reach for: its admin client's connection manager and request
# path, and its producer's transaction manager.
KAFKA_PYTHON_PRIVATE = {"_manager", "_conns", "_net", "_send", "_run", "_start", "_client", "_transaction_manager",
                        "_lock", "_current_state", "_transaction_started", "_sender", "_accumulator"}
# The one module outside connection/ allowed them, and why: the transactional share producer extends
# kafka-python's own producer transaction (its state and lock), which no public API exposes (pinned version).
PRIVATE_ALLOWED = {"kafka_txn_tools/clients/producer.py"}


def test_only_the_connection_package_touches_kafka_pythons_private_names() -> None:
    import ast

    found = []
    for path in sorted((ROOT / "kafka_txn_tools").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("kafka_txn_tools/connection/") or rel in PRIVATE_ALLOWED:
            continue
        for node in ast.walk(ast.parse(path.read_text(), rel)):
            # `self._x` is the class's own attribute; any other object's private attribute is someone else's.
            if (isinstance(node, ast.Attribute) and node.attr in KAFKA_PYTHON_PRIVATE
                    and not (isinstance(node.value, ast.Name) and node.value.id in {"self", "cls"})):
                found.append(f"{rel}:{node.lineno}: .{node.attr}")
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
                    and len(node.args) > 1 and isinstance(node.args[1], ast.Constant)
                    and node.args[1].value in KAFKA_PYTHON_PRIVATE):
                found.append(f"{rel}:{node.lineno}: getattr {node.args[1].value}")
    assert not found, "kafka-python's private names outside connection/ (use connection.transport's send()):\n" + \
        "\n".join(found)
