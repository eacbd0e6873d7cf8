"""The tree mutmut runs in: this repository laid out as Python imports it.

mutmut names each mutant after the module path of its file and activates it by comparing that name with
the function's `__module__`. The staging tree holds `kafka_txn_broker/` (a copy of broker/kafka_txn_broker/),
`kafka_txn_tools/` and `tests/` side by side, and a pyproject.toml with this
project's pytest options and the target's mutmut settings.

mutmut skips decorated functions, properties included. The staging copies of the mutated files therefore
turn each property into plain methods plus `name = property(name__getter, name__setter)`, so property bodies
(the LSO, for one) are mutated like any method. The repository's files are never touched.
"""

from __future__ import annotations

import ast
import shutil
import tomllib
from pathlib import Path

from tests.mutation.targets import Target

REPO = Path(__file__).resolve().parents[2]
PACKAGES = {"broker/kafka_txn_broker": "kafka_txn_broker", "kafka_txn_tools": "kafka_txn_tools", "tests": "tests"}
_IGNORE = shutil.ignore_patterns("__pycache__", ".hypothesis", "*.pyc", "fixtures_out")


def staged_path(repo_path: str) -> str:
    """broker/kafka_txn_broker/log/producer_state.py -> kafka_txn_broker/log/producer_state.py"""
    top, _, rest = repo_path.partition("/")
    return f"{PACKAGES.get(top, top)}/{rest}"


def module_of(repo_path: str) -> str:
    return staged_path(repo_path).removesuffix(".py").replace("/", ".")


def stage(target: Target, root: Path, max_children: int) -> Path:
    """A fresh staging tree for `target` under `root`; returns its directory."""
    where = root / target.name
    if where.exists():
        shutil.rmtree(where)
    where.mkdir(parents=True)
    for src, dst in PACKAGES.items():
        shutil.copytree(REPO / src, where / dst, ignore=_IGNORE)
    for source in target.sources:
        path = where / staged_path(source.path)
        path.write_text(properties_as_methods(path.read_text()))
    (where / "pyproject.toml").write_text(_pyproject(target, max_children))
    return where


def _pyproject(target: Target, max_children: int) -> str:
    pytest_ini = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    addopts = pytest_ini["addopts"]
    lines = [
        "[tool.pytest.ini_options]",
        f"addopts = {_toml(addopts)}",
        f"timeout = {pytest_ini.get('timeout', 600)}",
        f"markers = {_toml(pytest_ini.get('markers', []))}",
        f"filterwarnings = {_toml(pytest_ini.get('filterwarnings', []))}",
        "",
        "[tool.mutmut]",
        f"source_paths = {_toml([staged_path(s.path) for s in target.sources])}",
        f"pytest_add_cli_args_test_selection = {_toml(list(target.tests))}",
        # The plugin from this tree, not from the shared editable install (as check.sh does).
        "pytest_add_cli_args = " + _toml(["-p", "no:kafka_txn_broker", "-p", "kafka_txn_broker.testing.pytest_plugin",
                                          "-q", "-p", "no:randomly", *target.extra]),
        f"also_copy = {_toml(list(PACKAGES.values()))}",
        # Log calls are not behaviour anyone depends on.
        "do_not_mutate_patterns = " + _toml([r"^\s*(log|logger|logging)\.(debug|info|warning|error|critical)\("]),
        f"max_children = {max_children}",
        "",
    ]
    return "\n".join(lines)


def _toml(value: object) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return str(value)


def properties_as_methods(source: str) -> str:
    """Rewrite `@property` / `@x.setter` methods as plain methods and a `property(...)` assignment."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    edits: list[tuple[int, int, list[str]]] = []  # (first line index, end line index exclusive, replacement)
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        props: dict[str, dict[str, ast.FunctionDef]] = {}
        for fn in cls.body:
            kind = _property_kind(fn)
            if kind is not None and isinstance(fn, ast.FunctionDef):
                props.setdefault(fn.name, {})[kind] = fn
        for name, parts in props.items():
            for kind, fn in parts.items():
                first = fn.decorator_list[0].lineno - 1
                def_line = lines[fn.lineno - 1].replace(f"def {name}(", f"def {name}__{kind}(", 1)
                body = lines[fn.lineno:fn.end_lineno]
                tail = []
                if kind == max(parts):  # the last part written: assign the property after it
                    indent = def_line[: len(def_line) - len(def_line.lstrip())]
                    args = ", ".join(f"{name}__{k}" for k in ("getter", "setter") if k in parts)
                    tail = [f"{indent}{name} = property({args})\n"]
                edits.append((first, fn.end_lineno or fn.lineno, [def_line, *body, *tail]))
    for first, end, replacement in sorted(edits, reverse=True):
        lines[first:end] = replacement
    return "".join(lines)


def _property_kind(fn: ast.stmt) -> str | None:
    if not isinstance(fn, ast.FunctionDef) or len(fn.decorator_list) != 1:
        return None
    deco = fn.decorator_list[0]
    if isinstance(deco, ast.Name) and deco.id == "property":
        return "getter"
    if isinstance(deco, ast.Attribute) and deco.attr == "setter":
        return "setter"
    return None
