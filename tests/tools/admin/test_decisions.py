"""The coordinator's decision on a hanging transaction (admin/decisions.py), over plain data, and find-hanging's use
of it over the in-memory cluster: a transaction its coordinator committed without this partition's marker (what
Apache Kafka 4.3+ does when the partition's leader is offline as the markers go out) is ended by a COMMIT marker.

Kafka's facts behind the cases: the PrepareCommit / PrepareAbort record lists every partition of the transaction;
under transaction version 2 (KIP-890) the coordinator bumps the producer epoch when it prepares, so the record holds
the partition's epoch + 1 (version 1 keeps one epoch across the producer's transactions); an epoch overflow under
version 2 moves the transaction to a new producer id and records the old one as the previous id.
"""

from __future__ import annotations

from kafka_txn_broker.formats.partitioning import partition_for
from kafka_txn_tools.admin.decisions import decision_for
from kafka_txn_tools.admin.scan import ScanOptions, Scope, find_hanging
from kafka_txn_tools.dumps.transaction_log import TxnLogRecord, TxnMetadata
from kafka_txn_tools.models import CoordinatorDecision, HangingReason, TopicPartition
from tests.tools.admin.fakes import MIN, NOW, cluster, producer, txn

TP = TopicPartition("orders", 1)
OTHER = TopicPartition("orders", 2)


def decided(commit: bool = True, pid: int = 7, epoch: int = 3, parts: tuple[TopicPartition, ...] = (TP,),
            at: int = NOW - MIN, offset: int = 10, version: int = 0, prev: int = -1) -> CoordinatorDecision:
    return CoordinatorDecision("app", commit, pid, epoch, frozenset(parts), at, 4, offset, prev, version)


def test_a_commit_listing_the_partition_at_the_transactions_epoch_is_its_decision() -> None:
    d = decided()
    assert decision_for(TP, 7, 3, NOW - 2 * MIN, [d]) == d


def test_transaction_version_2_prepares_at_the_next_epoch() -> None:
    bumped = decided(epoch=4, version=2)
    assert decision_for(TP, 7, 3, NOW - 2 * MIN, [bumped]) == bumped
    # Without version 2 the next epoch is another producer instance's (InitProducerId bumped it): not this one's.
    assert decision_for(TP, 7, 3, NOW - 2 * MIN, [decided(epoch=4, version=0)]) is None
    # Nor is an older epoch's decision, whatever the version.
    assert decision_for(TP, 7, 3, NOW - 2 * MIN, [decided(epoch=2, version=2)]) is None


def test_an_epoch_overflow_names_the_partitions_producer_as_the_previous_id() -> None:
    moved = decided(pid=8, epoch=0, version=2, prev=7)
    assert decision_for(TP, 7, 3, NOW - 2 * MIN, [moved]) == moved
    assert decision_for(TP, 9, 3, NOW - 2 * MIN, [moved]) is None


def test_other_partitions_other_producers_and_decisions_before_the_last_write_do_not_count() -> None:
    assert decision_for(TP, 7, 3, NOW - 2 * MIN, [decided(parts=(OTHER,))]) is None
    assert decision_for(TP, 7, 3, NOW - 2 * MIN, [decided(pid=6)]) is None
    # Decided before the partition's last write: an earlier transaction of the same producer and epoch.
    assert decision_for(TP, 7, 3, NOW - 2 * MIN, [decided(at=NOW - 3 * MIN)]) is None
    # ...unless within the clock slack allowed between the producer's clock and the coordinator's.
    assert decision_for(TP, 7, 3, NOW - 2 * MIN, [decided(at=NOW - 3 * MIN)], slack_ms=2 * MIN) is not None


def test_the_newest_decision_wins() -> None:
    first, then = decided(commit=False, at=NOW - MIN, offset=10), decided(commit=True, at=NOW - MIN // 2, offset=12)
    assert decision_for(TP, 7, 3, NOW - 2 * MIN, [then, first]) == then
    assert decision_for(TP, 7, 3, NOW - 2 * MIN, [first]) == first and not first.commit


# ---- find-hanging's rows ------------------------------------------------------------------------------------

def record(offset: int, state: str, ts: int, epoch: int, parts: tuple[tuple[str, int], ...],
           version: int = 2) -> TxnLogRecord:
    meta = TxnMetadata("app", 7, epoch, 60_000, state, parts, ts, ts - MIN, client_transaction_version=version)
    return TxnLogRecord(offset, ts, "app", meta)


def committed_without_the_marker(decision: str = "PrepareCommit"):
    """orders-1 holds producer 7's transaction (epoch 3, from offset 40); 'app' decided on it 20 minutes ago and
    completed it without orders-1 (Kafka 4.3+, a leader offline as the markers went out)."""
    c = cluster(internal=["__transaction_state"])
    c.open_txn(TP, producer(7, 40, 25 * MIN, epoch=3))
    done = "CompleteCommit" if decision == "PrepareCommit" else "CompleteAbort"
    c.transactions["app"] = txn("app", 7, done, epoch=4, coordinator=1)
    parts = (("orders", 1), ("orders", 2))
    c.txn_log[partition_for("app", 3)] = [
        record(0, "Ongoing", NOW - 26 * MIN, 3, parts), record(1, decision, NOW - 20 * MIN, 4, parts),
        record(2, done, NOW - 20 * MIN + 50, 4, ())]
    c.offsets = {TP: (40, 90)}
    return c


def scan(c):
    return find_hanging(c, Scope(all=True), lambda: NOW, ScanOptions())


def test_a_hang_its_coordinator_committed_is_given_the_commit_command() -> None:
    [row] = scan(committed_without_the_marker()).results
    assert (row.reason, row.transactional_id) == (HangingReason.TRANSACTION_NOT_ONGOING, "app")
    assert row.commands == ("kafka-txn commit --topic orders --partition 1 --start-offset 40",)
    assert row.decision is not None and (row.decision.commit, row.decision.offset) == (True, 1)
    assert row.action.startswith("commit it") and "discard" in row.action
    assert row.to_row()["coordinator_decision"]["outcome"] == "commit"


def test_a_hang_its_coordinator_aborted_keeps_the_abort_and_shows_the_decision() -> None:
    [row] = scan(committed_without_the_marker("PrepareAbort")).results
    assert row.commands == ("kafka-txn abort --topic orders --partition 1 --start-offset 40",)
    assert row.to_row()["coordinator_decision"]["outcome"] == "abort"


def test_without_the_record_the_hang_is_aborted_as_before() -> None:
    c = committed_without_the_marker()
    c.txn_log = {}
    [row] = scan(c).results
    assert row.commands == ("kafka-txn abort --topic orders --partition 1 --start-offset 40",)
    assert row.to_row()["coordinator_decision"] is None


# ---- abort and commit check the decision before they write ----------------------------------------------------

def test_abort_refuses_a_transaction_its_coordinator_committed_unless_forced() -> None:
    from kafka_txn_tools.admin.abort import AbortTarget, validate

    check = validate(committed_without_the_marker(), AbortTarget(TP, 40))
    assert check.committed_by is not None and check.committed_by.commit and not check.commit  # still an ABORT
    assert check.refusal is not None and "would discard records" in check.refusal
    assert validate(committed_without_the_marker("PrepareAbort"), AbortTarget(TP, 40)).refusal is None


def test_commit_validates_only_a_commit_its_coordinator_decided() -> None:
    import pytest

    from kafka_txn_tools.admin.abort import AbortTarget
    from kafka_txn_tools.admin.commit import validate
    from kafka_txn_tools.errors import Refused

    check = validate(committed_without_the_marker(), AbortTarget(TP, 40))
    assert check.commit and check.marker_text().startswith("COMMIT marker for orders-1")
    with pytest.raises(Refused, match="decided to abort it: PrepareAbort of 'app'"):
        validate(committed_without_the_marker("PrepareAbort"), AbortTarget(TP, 40))
    c = committed_without_the_marker()
    c.txn_log = {}
    with pytest.raises(Refused, match="holds no PrepareCommit of 'app' for producer 7 epoch 3 listing orders-1"):
        validate(c, AbortTarget(TP, 40))


def test_the_abort_plan_leaves_out_a_transaction_its_coordinator_committed() -> None:
    import yaml

    from kafka_txn_tools.cli.commands.find_hanging import write_plan

    committed = yaml.safe_load(write_plan(scan(committed_without_the_marker()), 60_000))
    aborted = yaml.safe_load(write_plan(scan(committed_without_the_marker("PrepareAbort")), 60_000))
    assert committed["entries"] in ([], None)
    assert [(e["topic"], e["partition"], e["start_offset"]) for e in aborted["entries"]] == [("orders", 1, 40)]


def test_a_decision_in_the_last_writes_millisecond_counts_one_before_does_not() -> None:
    assert decision_for(TP, 7, 3, NOW - MIN, [decided(at=NOW - MIN)]) is not None
    assert decision_for(TP, 7, 3, NOW - MIN, [decided(at=NOW - MIN - 1)]) is None
