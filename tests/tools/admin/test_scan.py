"""The find-hanging flow (admin/scan.py) over an in-memory cluster: scopes, partial failures, re-check."""

from __future__ import annotations

import pytest

from kafka_txn_tools.admin.errors import UsageError
from kafka_txn_tools.admin.scan import ScanOptions, Scope, find_hanging, plan_requests
from kafka_txn_tools.models import HangingReason, TopicPartition
from tests.tools.admin.fakes import MIN, NOW, cluster, producer, txn

T0, T1, T2 = (TopicPartition("orders", p) for p in range(3))


def scan(c, scope=Scope(all=True), **options):
    return find_hanging(c, scope, lambda: NOW, ScanOptions(**options))


def mixed():
    """One forgotten transaction (hanging), one live late one, one young one, one committed id."""
    c = cluster(internal=["__transaction_state"])
    c.open_txn(T0, producer(10, 100, 30 * MIN))                       # no coordinator knows 10
    c.open_txn(T1, producer(11, 200, 30 * MIN))                       # late but live
    c.transactions["live"] = txn("live", 11, partitions=[T1], coordinator=1)
    c.open_txn(T2, producer(12, 300, 1 * MIN))                        # young
    c.transactions["young"] = txn("young", 12, partitions=[T2], coordinator=2)
    c.open_txn(T2, producer(13, 310, 40 * MIN))                       # coordinator finished it
    c.transactions["done"] = txn("done", 13, "CompleteCommit", coordinator=0)
    c.offsets = {T0: (100, 150), T2: (300, 400)}
    return c


def test_reports_exactly_the_hanging_ones_with_reasons_and_offsets() -> None:
    report = scan(mixed())
    got = {(h.partition, h.producer.producer_id, h.reason) for h in report.results}
    assert got == {(T0, 10, HangingReason.NO_TRANSACTIONAL_ID), (T2, 13, HangingReason.TRANSACTION_NOT_ONGOING)}
    first = next(h for h in report.results if h.producer.producer_id == 10)
    assert first.brokers == (0, 1, 2) and first.offsets.last_stable_offset == 100
    assert first.offsets.high_watermark == 150 and report.errors == []


def test_include_late_adds_the_live_one_marked_late() -> None:
    report = scan(mixed(), include_late=True)
    late = [h for h in report.results if h.reason is HangingReason.LATE]
    assert [(h.producer.producer_id, h.transactional_id) for h in late] == [(11, "live")]
    assert len(report.hanging) == 2


def test_a_transaction_completing_during_the_scan_is_not_reported() -> None:
    c = mixed()
    # The coordinator finished `done` long ago, but suppose 10's marker lands after the coordinator
    # was read and before the re-check: the re-read no longer shows it open.
    c.before_describe = lambda call: c.complete(T0, 10) if call == 2 else None
    report = scan(c)
    assert {h.producer.producer_id for h in report.results} == {13}


def test_a_down_broker_is_reported_and_the_scan_goes_on() -> None:
    c = mixed()
    c.down = {1}
    report = scan(c)
    assert any(e.broker_id == 1 and e.error == "BROKER_UNREACHABLE" for e in report.errors)
    # 10 was seen on brokers 0 and 2; with broker 1's coordinator unreachable, "no transactional id"
    # is a guess and is held back; 13's coordinator (0) answered.
    assert {h.producer.producer_id for h in report.results} == {13}


def test_unreadable_partition_is_an_error_not_a_failure() -> None:
    c = mixed()
    c.partition_errors[(0, T0)] = "TOPIC_AUTHORIZATION_FAILED"
    report = scan(c, scope=Scope(broker_id=0))
    assert [e.partition for e in report.errors] == [T0]


def test_sequential_strategy_finds_the_same() -> None:
    assert [h.to_row() for h in scan(mixed(), sequential=True).results] == [h.to_row() for h in scan(mixed()).results]


def test_scopes() -> None:
    c = cluster(internal=["__transaction_state"])
    everything, _ = plan_requests(c.metadata(), Scope(all=True))
    assert sum(map(len, everything.values())) == 6 * 3  # every replica of 6 partitions
    on_broker, _ = plan_requests(c.metadata(), Scope(broker_id=1))
    assert set(on_broker) == {1} and TopicPartition("__transaction_state", 0) in on_broker[1]
    leaders, _ = plan_requests(c.metadata(["orders"]), Scope(topic="orders"))
    assert leaders == {0: [T0], 1: [T1], 2: [T2]}
    one, _ = plan_requests(c.metadata(["orders"]), Scope(topic="orders", partition=2, broker_id=0))
    assert one == {0: [T2]}


@pytest.mark.parametrize("scope, message", [
    (Scope(), "needs a scope"),
    (Scope(partition=1), "--partition needs --topic"),
    (Scope(all=True, topic="orders"), "cannot be combined"),
    (Scope(broker_id=9), "broker 9 is not in the cluster"),
    (Scope(topic="nope"), "topic 'nope' cannot be scanned"),
    (Scope(topic="orders", partition=7), "has no partition 7"),
])
def test_scope_errors(scope, message) -> None:
    c = cluster()
    with pytest.raises(UsageError, match=message):
        plan_requests(c.metadata([scope.topic] if scope.topic else None), scope)


def test_an_empty_answer_never_claims_replicas_that_were_not_read() -> None:
    from kafka_txn_tools.cli.commands.find_hanging import empty_message
    from tests.tools.admin.fakes import cluster

    c = cluster()
    report = find_hanging(c, Scope(all=True), lambda: NOW)
    assert (report.scanned_replicas, report.read_replicas, report.partial) == (9, 9, False)
    assert empty_message(report) == "no hanging transactions (9 partition replicas read)"
    c.down = {1}
    report = find_hanging(c, Scope(all=True), lambda: NOW)
    assert (report.read_replicas, report.partial) == (6, True)
    assert empty_message(report) == ("no hanging transactions found in the 6 of 9 partition replicas that could be "
                                     "read (3 could not be)")
    c.down = {0, 1, 2}
    report = find_hanging(c, Scope(all=True), lambda: NOW)
    assert empty_message(report) == "no result: none of the 9 partition replicas asked could be read"
