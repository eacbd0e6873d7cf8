"""docs/security-auth.md's property blocks are the ones the tests run: each block it marks is read by a test."""

from __future__ import annotations

import re
from pathlib import Path

from tests.e2e.auth_support import DOC


def test_every_marked_block_of_the_page_is_run_by_a_test() -> None:
    marked = re.findall(r"<!-- test: ([\w-]+) -->\n```", DOC.read_text())
    assert len(marked) == 5, marked
    sources = "\n".join(p.read_text() for p in Path(__file__).parent.glob("test_*.py"))
    used = set(re.findall(r'(?:doc_block|broker_block)\("([\w-]+)"', sources))
    assert set(marked) <= used, f"blocks no test runs: {sorted(set(marked) - used)}"
