"""TX_PENDING holds (KIP-1289) from Prometheus text, as plain data: the exposition format's rules
(comments, escaped label values, other metrics), the two gauges joined per share-partition and
transaction, find-hanging's strict timeout, the scan's scope, and an endpoint that cannot be read."""

from __future__ import annotations

from kafka_txn_tools.admin import advice
from kafka_txn_tools.admin import share_pending as SP
from kafka_txn_tools.models import (
    SHARE_ACKS_PENDING,
    HangingReason,
    HangingTransaction,
    ProducerState,
    TopicPartition,
    TransactionDescription,
)

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
        "end the transaction: its producer commits or aborts it, or fencing its transactional id (force-terminate) "
        "aborts it and gives the 10 records back to their member, delivered again once its lock runs out; if its "
        "coordinator lost it, abort its open transaction on the group's __share_group_state partition")
    assert row["commands"] == []  # not judged: its transaction was not described


NOW = 1_700_000_000_000


def test_what_ends_a_hold_depends_on_its_transaction() -> None:
    hold = SP.holds(TEXT)[0]
    inv = advice.Invocation("k:9092")

    def described(state: str = "Ongoing", started_ago: int = 600_000, timeout_ms: int = 900_000,
                  pid: int = 7) -> TransactionDescription:
        return TransactionDescription("etl", 1, state, pid, 3, timeout_ms, NOW - started_ago, frozenset())

    # Within its timeout: force-terminate refuses without --force, so the command carries it.
    live = SP.advise(hold, described(), False, NOW, inv)
    assert live.commands == ("kafka-txn force-terminate --transactional-id etl --force --bootstrap-server k:9092",)
    assert "--force: it is still within its transaction timeout" in live.action
    # Past its timeout: no --force needed.
    late = SP.advise(hold, described(started_ago=1_000_000), False, NOW, inv)
    assert late.commands == ("kafka-txn force-terminate --transactional-id etl --bootstrap-server k:9092",)
    # A prepared 2PC transaction: its manager decides; nothing to run.
    two_pc = SP.advise(hold, described(timeout_ms=2**31 - 1), False, NOW, inv)
    assert two_pc.commands == () and "external transaction manager" in two_pc.action
    # Its coordinator no longer knows it: the abort of its open transaction on __share_group_state, as the scan's
    # partition row for that producer gives it.
    state_tp = TopicPartition("__share_group_state", 4)
    row = HangingTransaction(state_tp, ProducerState(7, 3, 0, NOW, 0, 12), HangingReason.TRANSACTIONAL_ID_NOT_FOUND,
                             "d", 1, commands=("kafka-txn abort --topic __share_group_state --partition 4 "
                                               "--start-offset 12 --bootstrap-server k:9092",))
    lost = SP.advise(hold, None, True, NOW, inv, [row])
    assert lost.commands == row.commands and lost.action.startswith("its coordinator does not know it")
    assert SP.advise(hold, None, True, NOW, inv).commands == ()  # no such row: said in words only
    assert SP.advise(hold, described(state="CompleteAbort"), False, NOW, inv, [row]).commands == row.commands


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
