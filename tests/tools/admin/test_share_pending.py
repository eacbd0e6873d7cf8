"""TX_PENDING holds (KIP-1289) from Prometheus text, as plain data: the exposition format's rules
(comments, escaped label values, other metrics), the two gauges joined per share-partition and
transaction, find-hanging's strict timeout, the scan's scope, and an endpoint that cannot be read."""

from __future__ import annotations

from kafka_txn_tools.admin import share_pending as SP
from kafka_txn_tools.models import SHARE_ACKS_PENDING

LABELS = 'node="1",group="orders-workers",topic="orders",partition="{p}",producer_id="{pid}",transactional_id="{t}"'


def gauge(name: str, value: int, p: int = 0, pid: int = 7, t: str = "etl") -> str:
    return f"{name}{{{LABELS.format(p=p, pid=pid, t=t)}}} {value}"


TEXT = "\n".join([
    f"# HELP {SP.PENDING_RECORDS} Share records a transaction holds TX_PENDING on a share-partition.",
    f"# TYPE {SP.PENDING_RECORDS} gauge",
    gauge(SP.PENDING_RECORDS, 10), gauge(SP.PENDING_AGE, 960_000),
    gauge(SP.PENDING_RECORDS, 3, p=1, pid=8, t=""), gauge(SP.PENDING_AGE, 2_000, p=1, pid=8, t=""),
    gauge(SP.PENDING_RECORDS, 0, p=2), gauge(SP.PENDING_AGE, 5, p=2),  # nothing held: not a hold
    'kafka_server_replicamanager_partitionswithlatetransactionscount{node="1"} 4',
    "",
])


def test_the_two_gauges_are_joined_per_share_partition_and_transaction() -> None:
    assert SP.holds(TEXT) == [
        SP.ShareHold("1", "orders-workers", "orders", 0, 7, "etl", 10, 960_000),
        SP.ShareHold("1", "orders-workers", "orders", 1, 8, None, 3, 2_000),  # no transactional id known
    ]


def test_label_values_follow_the_exposition_formats_escapes() -> None:
    text = (f'{SP.PENDING_RECORDS}{{node="2",group="a \\"quoted\\" g\\\\x",topic="t",partition="4",'
            f'producer_id="9",transactional_id="id"}} 2\n'
            f'{SP.PENDING_AGE}{{node="2",group="a \\"quoted\\" g\\\\x",topic="t",partition="4",'
            f'producer_id="9",transactional_id="id"}} 7.0\n')
    (hold,) = SP.holds(text)
    assert (hold.group, hold.partition, hold.records, hold.oldest_age_ms) == ('a "quoted" g\\x', 4, 2, 7)


def test_a_hold_older_than_the_timeout_is_past_it_strictly() -> None:
    held = SP.holds(TEXT)[0]
    assert SP.past([held], 960_000) == []
    assert SP.past([held], 959_999) == [held]


def test_the_scope_of_the_scan_applies() -> None:
    found = SP.holds(TEXT)
    assert [h.partition for h in SP.in_scope(found, "orders", None)] == [0, 1]
    assert [h.partition for h in SP.in_scope(found, "orders", 1)] == [1]
    assert SP.in_scope(found, "payments", None) == []
    assert len(SP.in_scope(found, None, None)) == 2


def test_a_row_names_the_reason_the_group_and_what_to_do() -> None:
    row = SP.holds(TEXT)[0].to_row()
    assert (row["kind"], row["reason"], row["stalled_groups"], row["records"]) == (
        "share", SHARE_ACKS_PENDING, ["orders-workers"], 10)
    assert row["action"] == (
        "end the transaction: its producer commits or aborts it, or `kafka-txn force-terminate --transactional-id "
        "etl` aborts it and gives the 10 records back to their member, delivered again once its lock runs out "
        "(if its coordinator lost it: `kafka-txn abort` of its open transaction on the group's "
        "__share_group_state partition)")


def test_an_endpoint_that_cannot_be_read_is_an_error_not_an_empty_answer() -> None:
    found, errors = SP.read_metrics(["http://127.0.0.1:9/metrics"], 2.0)
    assert found == []
    assert [(e.error, e.api) for e in errors] == [("METRICS_UNREADABLE", "metrics")]
    assert errors[0].message.startswith("metrics endpoint http://127.0.0.1:9/metrics could not be read: ")


def test_a_transactions_holds_are_found_by_producer_id_unless_another_id_is_named() -> None:
    found = SP.holds(TEXT)
    assert [h.partition for h in SP.of_transaction(found, 7, "etl")] == [0]
    assert [h.partition for h in SP.of_transaction(found, 8, "loader")] == [1]  # the broker named no id
    assert SP.of_transaction(found, 7, "another") == []  # the producer id is now another id's
    assert SP.hold_row(found[0]) == {"group": "orders-workers", "topic": "orders", "partition": 0, "records": 10,
                                     "oldest_age_ms": 960_000, "node": "1"}


def test_a_share_partitions_holders_are_listed_by_transaction() -> None:
    found = SP.holds(TEXT)
    assert SP.of_share_partition(found, "orders-workers", "orders", 1) == [
        {"producer_id": 8, "transactional_id": None, "records": 3, "oldest_age_ms": 2_000, "node": "1"}]
    assert SP.of_share_partition(found, "other-group", "orders", 1) == []
