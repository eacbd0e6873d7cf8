"""list with client-side fallback filtering for old brokers (admin/listing.py)."""

from __future__ import annotations

import pytest

from kafka_txn_tools.admin.listing import ListFilters, list_transactions, normalize_states
from kafka_txn_tools.errors import UsageError
from tests.tools.admin.fakes import MIN, NOW, cluster, txn


def populated(versions=None):
    c = cluster()
    c.transactions = {
        "orders-1": txn("orders-1", 1, coordinator=0, start_ms=NOW - 30 * MIN),
        "orders-2": txn("orders-2", 2, coordinator=1, start_ms=NOW - 1 * MIN),
        "payments-1": txn("payments-1", 3, coordinator=2, start_ms=NOW - 30 * MIN),
        "idle": txn("idle", 4, "Empty", coordinator=1),
    }
    c.list_versions = versions or {}
    return c


def ids(listed):
    return sorted(t.transactional_id for t in listed.listings)


@pytest.mark.parametrize("versions", [{}, {0: 0, 1: 1, 2: 0}], ids=["new brokers", "old brokers"])
def test_filters_give_the_same_answer_on_old_and_new_brokers(versions) -> None:
    c = populated(versions)
    run = lambda f: list_transactions(c, f, lambda: NOW)  # noqa: E731
    assert ids(run(ListFilters(pattern="orders-.*"))) == ["orders-1", "orders-2"]
    assert ids(run(ListFilters(pattern="orders"))) == []  # full match, as Java's matches()
    assert ids(run(ListFilters(duration_ms=10 * MIN))) == ["orders-1", "payments-1"]
    assert ids(run(ListFilters(states=("Empty",)))) == ["idle"]


def test_old_brokers_warn() -> None:
    listed = list_transactions(populated({1: 0}), ListFilters(duration_ms=1), lambda: NOW)
    assert listed.warnings == ["broker 1 does not support ListTransactions v1 (duration filter): "
                               "filtered client-side (duration)"]


def test_states_are_normalized_and_checked() -> None:
    assert normalize_states(["ongoing", "PREPARE_COMMIT"]) == ("Ongoing", "PrepareCommit")
    with pytest.raises(UsageError, match="unknown transaction state 'running'"):
        normalize_states(["running"])


def test_bad_pattern_and_unknown_broker() -> None:
    with pytest.raises(UsageError, match="not a valid regular expression"):
        list_transactions(populated(), ListFilters(pattern="("), lambda: NOW)
    with pytest.raises(UsageError, match="broker 7 is not in the cluster"):
        list_transactions(populated(), ListFilters(broker_ids=(7,)), lambda: NOW)
