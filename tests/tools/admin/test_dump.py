"""dump rows (admin/dump.py) match the dump schema helper-2 defines (kafka_txn_tools/dumps/schema.py)."""

from __future__ import annotations

from kafka_txn_tools.admin.dump import collect
from kafka_txn_tools.dumps.schema import ERRORS, PRODUCERS, TRANSACTIONS, conform_row
from kafka_txn_tools.models import TopicPartition
from tests.tools.admin.fakes import MIN, NOW, cluster, producer, txn

TP = TopicPartition("orders", 0)


def test_rows_conform_and_failures_become_rows() -> None:
    c = cluster()
    c.open_txn(TP, producer(10, 100, 30 * MIN))
    c.transactions = {"a": txn("a", 10, partitions=[TP]), "b": txn("b", 11, coordinator=2)}
    c.down = {2}
    rows = collect(c, lambda: NOW)
    for kind, batch in ((PRODUCERS, rows.producers), (TRANSACTIONS, rows.transactions), (ERRORS, rows.errors)):
        for row in batch:
            conform_row(kind, row)
    assert {(r["broker_id"], r["is_leader"]) for r in rows.producers} == {(0, True), (1, False)}
    assert [r["transactional_id"] for r in rows.transactions] == ["a"]
    assert rows.transactions[0]["partitions"] == [{"topic": "orders", "partition": 0}]
    assert {(r["api"], r["broker_id"]) for r in rows.errors} == {("DescribeProducers", 2), ("ListTransactions", 2)}
    assert all(r["capture_time_ms"] == NOW for r in rows.producers + rows.errors)
    assert rows.cluster_id == "fake-cluster-id"  # Metadata's, for the manifest (and the sweep's plan)
