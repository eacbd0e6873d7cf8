"""find-hanging classification over plain data (admin/hanging.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kafka_txn_tools.admin import hanging
from kafka_txn_tools.models import HangingReason, OpenTransaction, PartitionProducers, TopicPartition
from tests.tools.admin.fakes import MIN, NOW, producer, txn

TP = TopicPartition("orders", 0)
OTHER = TopicPartition("orders", 1)


def candidate(pid: int = 7, epoch: int = 3, start: int = 100, age_ms: int = 20 * MIN,
              broker: int = 0) -> OpenTransaction:
    return OpenTransaction(TP, broker, producer(pid, start, age_ms, epoch))


def reason(c: OpenTransaction, ids: list[str], descriptions: dict, not_found: set[str] = frozenset()) -> HangingReason:
    verdict = hanging.classify(c, ids, descriptions, not_found)
    assert verdict is not None
    return verdict.reason


def test_candidates_need_an_open_transaction_strictly_older_than_the_threshold() -> None:
    replica = PartitionProducers(TP, 0, (
        producer(1, start=10, age_ms=15 * MIN + 1),   # late by 1 ms: candidate
        producer(2, start=20, age_ms=15 * MIN),       # exactly the timeout: not (strict, as upstream)
        producer(3, start=-1, age_ms=60 * MIN),       # idle idempotent producer: no open transaction
    ))
    found = hanging.select_candidates([replica], NOW, 15 * MIN)
    assert [c.producer.producer_id for c in found] == [1]


def test_each_reason() -> None:
    c = candidate()
    assert reason(c, [], {}) is HangingReason.NO_TRANSACTIONAL_ID
    assert reason(c, ["a"], {}, {"a"}) is HangingReason.TRANSACTIONAL_ID_NOT_FOUND
    assert reason(c, ["a"], {"a": txn("a", 8, epoch=3, partitions=[TP])}) is HangingReason.EPOCH_MISMATCH
    assert reason(c, ["a"], {"a": txn("a", 7, epoch=2, partitions=[TP])}) is HangingReason.EPOCH_MISMATCH
    assert reason(c, ["a"], {"a": txn("a", 7, "CompleteCommit", epoch=3)}) is HangingReason.TRANSACTION_NOT_ONGOING
    assert reason(c, ["a"], {"a": txn("a", 7, "Empty", epoch=3)}) is HangingReason.TRANSACTION_NOT_ONGOING
    elsewhere = {"a": txn("a", 7, epoch=3, partitions=[OTHER])}
    assert reason(c, ["a"], elsewhere) is HangingReason.PARTITION_NOT_IN_TRANSACTION
    assert reason(c, ["a"], {"a": txn("a", 7, epoch=3, partitions=[TP])}) is HangingReason.LATE
    # A coordinator bumping the epoch to abort on timeout (TV1 fencing) still owns the partition.
    assert reason(c, ["a"], {"a": txn("a", 7, "PrepareAbort", epoch=4, partitions=[TP])}) is HangingReason.LATE


def test_missing_description_means_cannot_tell() -> None:
    assert hanging.classify(candidate(), ["a"], {}, set()) is None


def test_live_wins_over_hanging_when_one_producer_maps_to_several_ids() -> None:
    c = candidate()
    descriptions = {"a": txn("a", 7, epoch=3, partitions=[TP])}
    assert reason(c, ["a", "b"], descriptions, {"b"}) is HangingReason.LATE


def test_confirm_keeps_only_transactions_still_open_as_first_seen() -> None:
    c = candidate(start=100)
    verdict = hanging.Verdict(c, HangingReason.NO_TRANSACTIONAL_ID, "x")
    same = PartitionProducers(TP, 0, (producer(7, 100, 20 * MIN, 3),))
    closed = PartitionProducers(TP, 0, (producer(7, -1, 0, 3),))
    newer = PartitionProducers(TP, 0, (producer(7, 250, 0, 3),))
    other_replica = PartitionProducers(TP, 1, (producer(7, 100, 20 * MIN, 3),))
    assert hanging.confirm([verdict], [same]) == [verdict]
    assert hanging.confirm([verdict], [closed]) == []
    assert hanging.confirm([verdict], [newer]) == []
    assert hanging.confirm([verdict], [other_replica]) == []


def test_results_merge_replicas_and_skip_late_unless_asked() -> None:
    v0 = hanging.Verdict(candidate(broker=0), HangingReason.NO_TRANSACTIONAL_ID, "x")
    v2 = hanging.Verdict(candidate(broker=2), HangingReason.NO_TRANSACTIONAL_ID, "x")
    late = hanging.Verdict(OpenTransaction(OTHER, 1, producer(9, 5, 20 * MIN)), HangingReason.LATE, "y", "t")
    rows = hanging.to_results([v2, v0, late], NOW, include_late=False)
    assert len(rows) == 1 and rows[0].brokers == (0, 2) and rows[0].duration_ms == 20 * MIN
    assert [r.reason for r in hanging.to_results([v0, late], NOW, include_late=True)] == [
        HangingReason.NO_TRANSACTIONAL_ID, HangingReason.LATE]


def test_row_has_the_documented_keys() -> None:
    row = hanging.to_results([hanging.Verdict(candidate(), HangingReason.NO_TRANSACTIONAL_ID, "x")], NOW, False)[0]
    assert {"topic", "partition", "producer_id", "producer_epoch", "coordinator_epoch", "start_offset",
            "last_timestamp_ms", "duration_ms", "transactional_id", "reason", "lso", "high_watermark"} <= set(
        row.to_row())
    assert row.to_row()["transactional_id"] is None


@given(pid=st.integers(0, 2**40), epoch=st.integers(0, 32000), coordinator_epoch=st.integers(0, 32000),
       state=st.sampled_from(["Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence"]),
       extra=st.lists(st.integers(0, 50), max_size=5))
def test_a_transaction_its_coordinator_owns_is_never_hanging(pid, epoch, coordinator_epoch, state, extra) -> None:
    c = OpenTransaction(TP, 0, producer(pid, 100, 30 * MIN, epoch))
    partitions = [TP, *(TopicPartition("other", p) for p in extra)]
    description = txn("a", pid, state, partitions, epoch=epoch + coordinator_epoch % 2)
    verdict = hanging.classify(c, ["a"], {"a": description}, set())
    assert verdict is not None and not verdict.reason.is_hanging
