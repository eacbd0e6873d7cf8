"""The transaction coordinator on fakes (tests/broker/txn/fakes.py): no sockets, no cluster."""

from __future__ import annotations

import pytest

from tests.broker.txn.fakes import FakeCoordinator


@pytest.fixture
def coordinator() -> FakeCoordinator:
    return FakeCoordinator()
