"""Share session epochs (plain data). Codes: SHARE_SESSION_NOT_FOUND 122, INVALID_SHARE_SESSION_EPOCH 123,
SHARE_SESSION_LIMIT_REACHED 133."""

from __future__ import annotations

import uuid

import pytest

from kafka_txn_broker.formats.errors import (
    InvalidShareSessionEpochError,
    ShareSessionLimitReachedError,
    ShareSessionNotFoundError,
)
from kafka_txn_broker.share.share_session import ShareSessionCache

T = uuid.UUID(int=1)


def test_epochs_advance_one_by_one():
    cache = ShareSessionCache()
    session, old = cache.open("g", "m")
    assert old is None and session.epoch == 1
    assert cache.advance("g", "m", 1) is session and session.epoch == 2
    with pytest.raises(InvalidShareSessionEpochError):
        cache.advance("g", "m", 1)
    with pytest.raises(InvalidShareSessionEpochError):
        cache.advance("g", "m", 3)
    with pytest.raises(ShareSessionNotFoundError):
        cache.advance("g", "other", 1)


def test_reopening_replaces_the_session_and_closing_ends_it():
    cache = ShareSessionCache()
    first, _ = cache.open("g", "m")
    first.add([(T, 0), (T, 1), (T, 0)])
    assert first.partitions == [(T, 0), (T, 1)]
    second, old = cache.open("g", "m")
    assert old is first and second.partitions == []
    assert cache.close("g", "m") is second
    assert cache.close("g", "m") is None


def test_the_session_limit():
    cache = ShareSessionCache(max_sessions=1)
    cache.open("g", "m1")
    with pytest.raises(ShareSessionLimitReachedError) as err:
        cache.open("g", "m2")
    assert err.value.errno == 133
    cache.open("g", "m1")  # replacing one's own session is fine at the limit
