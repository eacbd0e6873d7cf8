"""Fixtures of the end-to-end tests: brokers nobody here wrote."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.tansu import Tansu, tansu_binary
from tests.support.tiers import require


@pytest.fixture(scope="module")
def tansu() -> Iterator[Tansu]:
    """A Tansu broker (Rust, Kafka-compatible, no KIP-664 admin APIs) for the module's tests."""
    if tansu_binary() is None:
        require("tansu")
    with Tansu() as broker:
        yield broker
