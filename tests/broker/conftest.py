"""Fixtures shared by the broker's tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.broker.harness import Harness, make_harness


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[Harness]:
    """A 3-node cluster on a manual clock with topic `t` (3 partitions, RF 3)."""
    with make_harness(tmp_path) as h:
        yield h
