"""list's fallback for brokers without ListTransactions v1 (duration) / v2 (pattern), against the embedded
cluster. kafka-python is told the brokers are Kafka 3.0 (`api_version=(3, 0)`: ListTransactions v0 only), so
both filters go client-side with a warning, and the answers must equal the broker-side ones. (The v1-only
case, pattern client-side and duration on the broker, is covered in tests/tools/admin/test_listing.py.)"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_tools.admin.listing import ListFilters, list_transactions
from kafka_txn_tools.connection.client import AdminClient
from kafka_txn_tools.connection.config import ClientSettings
from tests.e2e.cli_support import open_transaction


@pytest.fixture(scope="module")
def bs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with EmbeddedCluster(nodes=2, data_dir=tmp_path_factory.mktemp("kafka")) as c:
        c.create_topic("orders", 2, 2)
        done = open_transaction(c.bootstrap_servers, "orders-done", "orders", [1])
        done.commit_transaction(30)
        live = open_transaction(c.bootstrap_servers, "orders-live", "orders", [0])
        other = open_transaction(c.bootstrap_servers, "payments-live", "orders", [1])
        time.sleep(0.5)  # the live ones now run longer than the 300 ms filter below
        yield c.bootstrap_servers
        live.abort_transaction(30)
        other.abort_transaction(30)


def listed(bs: str, kafka_3_0: bool, filters: ListFilters) -> tuple[list[str], list[str]]:
    kwargs = {"api_version": (3, 0)} if kafka_3_0 else {}
    with AdminClient(ClientSettings(bootstrap_servers=bs, kwargs=kwargs)) as client:
        result = list_transactions(client, filters, lambda: time.time_ns() // 1_000_000)
    return sorted(t.transactional_id for t in result.listings), result.warnings


@pytest.mark.parametrize("filters, expected, dropped", [
    (ListFilters(pattern="orders-.*"), ["orders-done", "orders-live"], "pattern"),
    # Kafka keeps a completed transaction's start time, so it passes a duration filter (KIP-994's caveat).
    (ListFilters(duration_ms=300), ["orders-done", "orders-live", "payments-live"], "duration"),
    (ListFilters(duration_ms=300, pattern="orders-.*", states=("Ongoing",)), ["orders-live"], "duration, pattern"),
])
def test_v0_brokers_give_the_same_answer_with_a_warning(bs: str, filters: ListFilters, expected: list[str],
                                                        dropped: str) -> None:
    assert listed(bs, False, filters) == (expected, [])
    ids, warnings = listed(bs, True, filters)
    assert ids == expected
    assert len(warnings) == 2 and all(w.endswith(f"filtered client-side ({dropped})") for w in warnings)
