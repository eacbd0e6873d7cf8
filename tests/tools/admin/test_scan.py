"""The find-hanging flow (admin/scan.py) over an in-memory cluster: scopes, partial failures, re-check."""

from __future__ import annotations

import pytest

from kafka_txn_broker.formats.partitioning import partition_for
from kafka_txn_tools.admin.scan import ScanOptions, Scope, find_hanging, plan_requests
from kafka_txn_tools.dumps.transaction_log import TxnLogRecord, TxnMetadata
from kafka_txn_tools.errors import UsageError
from kafka_txn_tools.models import HangingReason, PendingReason, StuckReason, TopicPartition
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
    c.transactions["young"] = txn("young", 12, partitions=[T2], coordinator=2, start_ms=NOW - MIN)
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


def test_a_live_transaction_holding_an_lso_past_the_max_timeout_is_named_though_it_wrote_just_now() -> None:
    # Its last write is a minute old (the partition side judges by that), but it started 20 minutes ago under a
    # timeout above --max-transaction-timeout: the LSO of T2 has been held that long. It is named, as late (live,
    # only a watch to run), and --exit-code does not count it.
    c = mixed()
    c.transactions["young"] = txn("young", 12, partitions=[T2], coordinator=2, start_ms=NOW - 20 * MIN)
    report = scan(c, include_late=True)
    [row] = [h for h in report.results if h.producer.producer_id == 12]
    assert (row.partition, row.reason, row.transactional_id, row.producer.current_txn_start_offset, row.commands) == (
        T2, HangingReason.LATE, "young", 300,
        ("kafka-txn find-hanging --topic orders --partition 2 --watch --count-held",))
    assert report.found == 2 and report.counted(count_held=True) == 4  # 10 and 13; with the live ones, 11 and 12
    # Committed a moment ago after running 20 minutes, its markers still on their way: too young in PrepareCommit
    # for a coordinator row, yet it has held the LSO that long: named as late too.
    c.transactions["young"] = txn("young", 12, "PrepareCommit", partitions=[T2], coordinator=2,
                                  start_ms=NOW - 20 * MIN)
    c.txn_log = {partition_for("young", 3): [log_record(0, "young", 12, "PrepareCommit", NOW - 10_000, epoch=0,
                                                        parts=(("orders", 2),))]}
    report = scan(c, include_late=True)
    assert report.stuck == []  # 10 s in PrepareCommit, by its record: not stuck
    [row] = [h for h in report.results if h.producer.producer_id == 12]
    assert (row.reason, row.detail) == (HangingReason.LATE, "'young' is PrepareCommit with this partition; its "
                                                            "coordinator will complete it")
    # Started 14 minutes ago: within the max timeout of 15 minutes, nothing to name.
    c.transactions["young"] = txn("young", 12, partitions=[T2], coordinator=2, start_ms=NOW - 14 * MIN)
    assert [h for h in scan(c, include_late=True).results if h.producer.producer_id == 12] == []


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
    full = ScanOptions(first_pass=False)
    report = find_hanging(c, Scope(all=True), lambda: NOW, full)
    assert (report.scanned_replicas, report.read_replicas, report.partial) == (9, 9, False)
    assert empty_message(report) == "no hanging transactions found (9 partition replicas read)"
    c.down = {1}
    report = find_hanging(c, Scope(all=True), lambda: NOW, full)
    assert (report.read_replicas, report.partial) == (6, True)
    assert empty_message(report) == ("no hanging transactions found in the 6 of 9 partition replicas that could be "
                                     "read (3 could not be)")
    c.down = {0, 1, 2}
    report = find_hanging(c, Scope(all=True), lambda: NOW, full)
    assert empty_message(report) == "no result: none of the 9 partition replicas asked could be read"
    # The first pass: partitions its leaders' offsets showed clear are counted as such, never as replicas read.
    c.down = set()
    report = find_hanging(c, Scope(all=True), lambda: NOW)
    assert (report.scanned_replicas, report.partial) == (0, False)
    assert empty_message(report) == ("no hanging transactions found (3 of 3 partitions clear by their LSO, "
                                     "0 partition replicas read)")
    c.down = {1}  # broker 1 leads orders-1: its offsets unread, so its replicas are asked, broker 1's in vain
    report = find_hanging(c, Scope(all=True), lambda: NOW)
    assert (report.scanned_replicas, report.read_replicas, report.partial) == (3, 2, True)
    assert empty_message(report) == ("no hanging transactions found in the 2 of 3 partition replicas that could be "
                                     "read (1 could not be)")


# ---- the coordinator side, __transaction_state and the groups held back ----------------------------------

TXN_PARTITIONS = 3


def log_record(offset: int, txn_id: str, pid: int, state: str | None, ts: int, epoch: int = 5,
               parts: tuple[tuple[str, int], ...] = ()) -> TxnLogRecord:
    meta = None if state is None else TxnMetadata(txn_id, pid, epoch, 60_000, state, parts, ts, ts - MIN)
    return TxnLogRecord(offset, ts, txn_id, meta)


def stuck_cluster():
    """'app' has been PrepareCommit for 5 minutes (its record says so); orders-1's leader still shows it open."""
    c = cluster(internal=["__transaction_state"])
    c.transactions["app"] = txn("app", 21, "PrepareCommit", partitions=[T1], epoch=5, coordinator=1)
    c.open_txn(T1, producer(21, 40, 6 * MIN, epoch=4))
    home = partition_for("app", TXN_PARTITIONS)
    c.txn_log[home] = [log_record(0, "app", 21, "Ongoing", NOW - 20 * MIN, 4, (("orders", 1),)),
                       log_record(1, "app", 21, "PrepareCommit", NOW - 5 * MIN, 5, (("orders", 1),))]
    c.offsets = {T1: (40, 90)}
    c.groups = {"readers": ("consumer", {T1: 40}), "behind": ("consumer", {T1: 10}),
                "shares": ("share", {T1: 40})}
    return c, home


def test_a_transaction_stuck_in_prepare_commit_is_a_coordinator_row() -> None:
    c, home = stuck_cluster()
    report = scan(c)
    [row] = report.stuck
    assert (row.transactional_id, row.state, row.reason) == ("app", "PrepareCommit", StuckReason.MARKERS_PENDING)
    assert (row.time_in_state_ms, row.time_in_state_source) == (5 * MIN, "transaction-log")
    [pending] = row.pending_partitions
    assert (pending.partition, pending.leader, pending.reason) == (T1, 1, PendingReason.OPEN_TRANSACTION)
    assert f"__transaction_state-{home}" in row.action
    # Only the id's own partition was read, from its transaction's start (less a minute of clock slack).
    [read] = c.log_reads
    assert list(read) == [TopicPartition("__transaction_state", home)]
    # Held back at orders-1's LSO (40): the consumer group there and the share group, not the one behind.
    assert row.stalled_groups is not None
    assert [(g.group_id, g.group_type, g.lag) for g in row.stalled_groups] == [
        ("readers", "consumer", 50), ("shares", "share", 50)]
    assert report.found == 1 and report.hanging == []


def test_without_the_record_the_time_in_state_is_a_lower_bound() -> None:
    c, _ = stuck_cluster()
    c.txn_log.clear()
    [row] = scan(c).stuck
    assert (row.time_in_state_ms, row.time_in_state_source) == (20 * MIN - MIN - 10_000, "lower-bound")
    c.txn_log.clear()
    c.transactions["app"] = txn("app", 21, "PrepareCommit", partitions=[T1], epoch=5, coordinator=1,
                                start_ms=NOW - 90_000)
    assert scan(c).stuck == []  # at least 20 s: not provably over a minute


def test_max_prepare_time_and_scope() -> None:
    c, _ = stuck_cluster()
    assert scan(c, max_prepare_ms=6 * MIN).stuck == []
    assert [r.transactional_id for r in scan(c, Scope(topic="orders", partition=1)).stuck] == ["app"]
    assert scan(c, Scope(topic="orders", partition=0)).stuck == []
    assert [r.transactional_id for r in scan(c, Scope(broker_id=1)).stuck] == ["app"]


def test_a_transaction_that_completes_during_the_scan_is_dropped() -> None:
    c, _ = stuck_cluster()
    real = c.describe_transactions
    calls = []

    def completing(ids, coordinators=None):  # type: ignore[no-untyped-def]
        calls.append(list(ids))
        if len(calls) == 2:  # the re-check
            c.transactions["app"] = txn("app", 21, "CompleteCommit", epoch=5, coordinator=1)
        return real(ids, coordinators)

    c.describe_transactions = completing  # type: ignore[method-assign]
    assert scan(c).stuck == []


def test_a_forgotten_producer_id_names_the_last_transactional_id_that_owned_it() -> None:
    c = mixed()
    # 10 was "gone"'s producer before the id expired (tombstone); "other" never owned 10.
    c.txn_log = {0: [log_record(0, "gone", 10, "CompleteAbort", NOW - 40 * MIN),
                     log_record(1, "gone", 10, None, NOW - 2 * MIN)],
                 2: [log_record(0, "other", 99, "Ongoing", NOW - 10 * MIN)]}
    report = scan(c)
    orphan = next(h for h in report.results if h.producer.producer_id == 10)
    assert orphan.reason is HangingReason.NO_TRANSACTIONAL_ID and orphan.last_known_transactional_id == "gone"
    other = next(h for h in report.results if h.producer.producer_id == 13)
    assert other.last_known_transactional_id is None  # only for forgotten producer ids
    [read] = c.log_reads  # the id is unknown: every partition that has records since then, once
    assert sorted(tp.partition for tp in read) == [0, 2]


def test_kafka_transactions_leaves_the_coordinator_side_out() -> None:
    c, _ = stuck_cluster()
    report = scan(c, coordinator_side=False)
    assert report.stuck == [] and c.log_reads == []


def test_the_coordinator_side_reuses_what_the_partition_side_described() -> None:
    """A late-but-live transaction is also listed as Ongoing by the coordinator side: described once."""
    c = mixed()
    asked: list[str] = []
    real = c.describe_transactions

    def describe(ids, coordinators=None):  # type: ignore[no-untyped-def]
        asked.extend(ids)
        return real(ids, coordinators)

    c.describe_transactions = describe  # type: ignore[method-assign]
    scan(c, include_late=True, max_prepare_ms=0)
    assert asked.count("live") == 1
