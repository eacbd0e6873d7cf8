"""docs/architecture.md's code layout is the tree's: every package and module it names exists where it says,
and every package of kafka_txn_tools and kafka_txn_broker is named.

The layout is a code block of rows `path  description`, a child row indented under its parent. A row's path
(`name/` a package, `name.py` a module) is relative to its parent row's; so are the `name/` and `name.py`
words of its description (which go on over the following, further-indented lines)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
PACKAGES = (ROOT / "kafka_txn_tools", ROOT / "broker" / "kafka_txn_broker")
# A package or module word in a description: `messages/`, `abort.py`, `segment.py`.
NAMED = re.compile(r"(?<![\w./`])([a-z_][a-z0-9_]*(?:/|\.py))(?![\w/])")


@dataclass
class Row:
    indent: int
    path: Path
    text: str = ""
    children: list[Row] = field(default_factory=list)


def layout_rows(markdown: str) -> list[Row]:
    """The rows of the code block under `## Code layout`, each with its full path and its description."""
    section = markdown.split("## Code layout", 1)[1]
    block = section.split("```\n", 2)[1]
    rows: list[Row] = []
    stack: list[Row] = []
    for line in block.splitlines():
        indent = len(line) - len(line.lstrip())
        first, _, rest = line.strip().partition(" ")
        is_path = first.endswith("/") or first.endswith(".py") or first.startswith("scripts/")
        if rows and (not is_path or indent > stack[-1].indent + 2):
            rows[-1].text += " " + line.strip()  # a description's next line
            continue
        while stack and stack[-1].indent >= indent:
            stack.pop()
        parent = stack[-1].path if stack else ROOT
        row = Row(indent, parent / first.rstrip("/"), rest)
        rows.append(row)
        stack.append(row)
    return rows


def _named(row: Row) -> list[Path]:
    base = row.path if row.path.suffix != ".py" else row.path.parent
    return [base / word.rstrip("/") for word in NAMED.findall(row.text)]


def test_every_package_and_module_named_exists() -> None:
    missing = []
    for row in layout_rows(DOC.read_text()):
        for path in [row.path, *_named(row)]:
            if not path.exists():
                missing.append(f"{path.relative_to(ROOT)} (row {row.path.relative_to(ROOT)})")
    assert not missing, "docs/architecture.md's layout names what is not there: " + ", ".join(missing)


def test_every_package_is_named() -> None:
    named = set()
    for row in layout_rows(DOC.read_text()):
        named.add(row.path)
        named.update(_named(row))
    packages = {init.parent for top in PACKAGES for init in top.rglob("__init__.py")
                if "__pycache__" not in init.parts}
    unnamed = sorted(str(p.relative_to(ROOT)) for p in packages - named)
    assert not unnamed, "docs/architecture.md's layout leaves out packages: " + ", ".join(unnamed)


def test_every_top_level_module_is_named() -> None:
    named = set()
    for row in layout_rows(DOC.read_text()):
        named.add(row.path)
        named.update(_named(row))
    modules = {m for top in PACKAGES for m in top.glob("*.py") if not m.name.startswith("_")}
    unnamed = sorted(str(m.relative_to(ROOT)) for m in modules - named)
    assert not unnamed, "docs/architecture.md's layout leaves out modules: " + ", ".join(unnamed)


def test_the_parser_reads_children_under_their_parents() -> None:
    """The check itself: a nested row and a description's module words resolve under their row."""
    rows = layout_rows("## Code layout\n\n```\npkg/   a\n  sub/   b.py and c/\n         d.py\nother/   x\n```\n")
    paths = {row.path.relative_to(ROOT).as_posix(): [p.relative_to(ROOT).as_posix() for p in _named(row)]
             for row in rows}
    assert paths == {"pkg": [], "pkg/sub": ["pkg/sub/b.py", "pkg/sub/c", "pkg/sub/d.py"], "other": []}
