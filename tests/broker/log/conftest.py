"""Shared fixtures for the storage-layer tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_txn_broker.clock import ManualClock
from kafka_txn_broker.configs.broker_config import BrokerConfig


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def config() -> BrokerConfig:
    # Small segments and index interval so rolls and index entries happen within a few batches.
    return BrokerConfig({"log.segment.bytes": 4096, "log.index.interval.bytes": 256})


@pytest.fixture
def part_dir(tmp_path: Path) -> Path:
    return tmp_path / "topic-0"
