"""PartitionsWithLateTransactionsCount and LastStableOffsetLag, from Python and over HTTP."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest

from kafka_txn_broker.formats.transactions import DEFAULT_MAX_TRANSACTION_TIMEOUT_MS, LATE_TRANSACTION_BUFFER_MS
from kafka_txn_broker.server import metrics
from tests.broker.harness import Harness

LATE_MS = DEFAULT_MAX_TRANSACTION_TIMEOUT_MS + LATE_TRANSACTION_BUFFER_MS


def counts(h: Harness) -> dict[int, int]:
    return h.run(lambda: {n.node_id: metrics.partitions_with_late_transactions_count(n) for n in h.core.nodes.values()})


def test_late_transaction_rule_counts_leaders_only(harness: Harness) -> None:
    leader = harness.core.metadata.partition("t", 0).leader
    # A transactional write the coordinator never heard of (a hanging transaction): nobody aborts it.
    harness.produce("t", 0, 4242, 0, 0, n=3)
    harness.produce("t", 1, 4243, 0, 0, transactional=False)
    assert set(counts(harness).values()) == {0}
    harness.clock.advance(LATE_MS)
    assert set(counts(harness).values()) == {0}  # not more than max timeout + 5 minutes yet
    harness.clock.advance(1)
    assert counts(harness) == {n: int(n == leader) for n in harness.core.nodes}


def test_last_stable_offset_lag(harness: Harness) -> None:
    harness.produce("t", 0, 4242, 0, 0, n=3)
    harness.produce("t", 0, 4243, 0, 0, n=2, transactional=False)
    part = harness.run(lambda: harness.leader_log("t", 0))
    assert harness.run(lambda: metrics.last_stable_offset_lag(part)) == 5
    samples = harness.run(lambda: metrics.collect(harness.core))
    lag = [s for s in samples if s.name == metrics.LSO_LAG and dict(s.labels)["topic"] == "t"]
    assert sorted((dict(s.labels)["partition"], s.value) for s in lag) == [("0", 5), ("1", 0), ("2", 0)]


def test_prometheus_text_over_http(harness: Harness) -> None:
    harness.produce("t", 0, 4242, 0, 0)
    harness.clock.advance(LATE_MS + 1)
    server = harness.cluster.call(metrics.serve_metrics(harness.core, "127.0.0.1", 0))
    port = server.sockets[0].getsockname()[1]
    try:
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
        leader = harness.core.metadata.partition("t", 0).leader
        assert f'{metrics.LATE_TXNS}{{node="{leader}"}} 1' in body
        assert f'{metrics.LSO_LAG}{{node="{leader}",topic="t",partition="0"}} 2' in body
        assert f"# TYPE {metrics.LATE_TXNS} gauge" in body
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/nope", timeout=10)
        assert err.value.code == 404
    finally:
        harness.cluster.call_soon(server.close)
