"""README.md is a front door and docs/ holds the rest: pages that speak of the product (no build history, no
paths of one machine), whose relative links and anchors all lead somewhere, each reachable from README."""

from __future__ import annotations

import re
from pathlib import Path

from kafka_txn_tools.cli import exit_codes

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

# The first screen opens with the two commands; CI greps for the second one.
OPENING = """# kafka-txn-tools

```
bash scripts/dev.sh demo     # set-up + the end-to-end demo on an embedded 3-node Kafka cluster
bash scripts/dev.sh test     # set-up + lint (ruff, mypy) + the default test suite
```

Both commands do all set-up on a fresh machine"""
MAX_README_LINES = 165

# Pages other branches write, linked from here before they land. Once they exist their links are checked
# like any other; when all have landed this set is empty and can go.
BUILD_HISTORY = [
    re.compile(r"\bissues? #?\d+", re.IGNORECASE),
    re.compile(r"\bmain before\b", re.IGNORECASE),
    re.compile(r"\bthis round\b", re.IGNORECASE),
    re.compile(r"\bstop \d+\b", re.IGNORECASE),
    re.compile(r"\bsession \d+\b", re.IGNORECASE),
    re.compile(r"\bold/new\b", re.IGNORECASE),
    re.compile(r"\b(before|after) (this|the) (change|restructure)\b", re.IGNORECASE),
]
MACHINE_PATHS = [
    re.compile(r"(?<![\w.~])/(work|home|root|Users)/"),
    re.compile(r"/tmp/(pytest-of-|tmp[a-z0-9_]{8})"),  # pytest's and mkdtemp's directories
]

LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"`[^`\n]*`")


def _pages() -> list[Path]:
    return [README, *sorted((ROOT / "docs").rglob("*.md"))]


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _prose(text: str) -> str:
    """The text outside code blocks and code spans, where links and headings live."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: formatting and punctuation dropped, lower case, spaces as hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    found: set[str] = set()
    counts: dict[str, int] = {}
    for line in FENCE.sub("", text).splitlines():
        match = re.match(r"#{1,6} (.+)", line)
        if match:
            base = slug(match.group(1))
            n = counts.get(base, 0)
            counts[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
    return found


def links(page: Path) -> list[tuple[Path, str]]:
    """(target file, anchor) of every relative link and image of a page."""
    out = []
    for target in LINK.findall(_prose(page.read_text())):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        out.append(((page.parent / path).resolve() if path else page, anchor))
    return out


def test_readme_opens_with_the_two_commands_and_stays_short() -> None:
    text = README.read_text()
    assert text.startswith(OPENING), "README.md must open with the two commands and their set-up sentence"
    assert "bash scripts/dev.sh test" in text  # what .ci/run and newcomers run
    lines = text.count("\n")
    assert lines <= MAX_README_LINES, (
        f"README.md has {lines} lines: it is the front door (at most {MAX_README_LINES}); move details to docs/")


def test_readme_exit_codes_are_the_cli_exit_codes() -> None:
    table = re.findall(r"^\| (\d+) \| ", README.read_text(), re.MULTILINE)
    codes = {v for k, v in vars(exit_codes).items() if k.isupper() and isinstance(v, int)}
    assert sorted(int(c) for c in table) == sorted(codes)


def test_pages_do_not_tell_how_the_project_was_built() -> None:
    found = [f"{_rel(page)}:{n}: {m.group(0)!r}"
             for page in _pages()
             for n, line in enumerate(page.read_text().splitlines(), 1)
             for pattern in BUILD_HISTORY
             if (m := pattern.search(line))]
    assert not found, "build history in user-facing pages:\n" + "\n".join(found)


def test_tests_say_what_they_prove_not_how_they_were_built() -> None:
    """A test's docstrings and comments name what it proves; which issue or branch brought it is git's."""
    found = [f"{_rel(path)}:{n}: {m.group(0)!r}"
             for path in sorted((ROOT / "tests").rglob("*.py"))
             if "node_modules" not in path.parts and path != Path(__file__).resolve()
             for n, line in enumerate(path.read_text().splitlines(), 1)
             for pattern in BUILD_HISTORY
             if (m := pattern.search(line))]
    assert not found, "build history in tests:\n" + "\n".join(found)


def test_pages_name_no_path_of_one_machine() -> None:
    checkout = str(ROOT)
    found = [f"{_rel(page)}:{n}: {line.strip()[:100]}"
             for page in _pages()
             for n, line in enumerate(page.read_text().splitlines(), 1)
             if checkout in line or any(p.search(line) for p in MACHINE_PATHS)]
    assert not found, "machine paths in user-facing pages:\n" + "\n".join(found)


def test_relative_links_and_anchors_lead_somewhere() -> None:
    dead = []
    for page in _pages():
        for target, anchor in links(page):
            shown = f"{_rel(page)} -> {target.relative_to(ROOT).as_posix() if target.is_relative_to(ROOT) else target}"
            if not target.exists():
                dead.append(f"{shown}: no such file")
            elif anchor and target.suffix == ".md" and anchor not in anchors(target.read_text()):
                dead.append(f"{shown}#{anchor}: no such heading")
    assert not dead, "dead links:\n" + "\n".join(dead)


def test_every_docs_page_is_reachable_from_the_readme() -> None:
    seen, todo = {README}, [README]
    while todo:
        for target, _ in links(todo.pop()):
            if target.suffix == ".md" and target.exists() and target not in seen:
                seen.add(target)
                todo.append(target)
    orphans = [_rel(p) for p in _pages() if p not in seen and "docs" in p.relative_to(ROOT).parts[:1]]
    assert not orphans, f"pages no link from README.md leads to: {orphans}"


def test_link_checker_sees_headings_as_github_does() -> None:
    assert slug("The CLI: `kafka-txn`") == "the-cli-kafka-txn"
    assert slug("Exactly once through kill -9") == "exactly-once-through-kill--9"
    assert slug("The operator's view: describe-share-group") == "the-operators-view-describe-share-group"
    assert anchors("# A\n## A\n```\n# not a heading\n```\n") == {"a", "a-1"}
