"""The abort flow over a whole plan (admin/abort_batch.py), on the in-memory cluster: every target is
checked before the first marker, what cannot be written is settled with its reason and writes nothing,
--force lets a live transaction through, and each written item is reported as it ends."""

from __future__ import annotations

import pytest

from kafka_txn_tools.admin import abort_batch as B
from kafka_txn_tools.admin.abort import AbortTarget
from kafka_txn_tools.dumps.plan import AbortPlan, AbortPlanEntry
from kafka_txn_tools.errors import BrokerError, MissingApi, NothingToDo, Refused
from kafka_txn_tools.models import TopicPartition
from tests.tools.admin.fakes import MIN, FakeCluster, cluster, producer, txn

T0, T1, T2 = (TopicPartition("orders", i) for i in range(3))
LIVE = ("the coordinator still holds 'live' as ongoing with orders-2: it is live and aborting it would fail the "
        "producer's commit (wait for its timeout, or end it through its coordinator with force-terminate, which needs "
        "--force while it is within its timeout)")


def world() -> FakeCluster:
    """orders-0: a hanging transaction (no coordinator lists producer 10); orders-1: nothing open;
    orders-2: producer 11's transaction, which its coordinator holds as Ongoing (live)."""
    c = cluster()
    c.open_txn(T0, producer(10, 100, 30 * MIN, epoch=4))
    c.open_txn(T2, producer(11, 50, 30 * MIN, epoch=2))
    c.transactions["live"] = txn("live", 11, partitions=[T2], epoch=2)
    c.append(T1, records=10)
    c.offsets = {T0: (100, 180), T1: (10, 10), T2: (50, 90)}
    return c


TARGETS = [AbortTarget(T0, start_offset=100), AbortTarget(T1, start_offset=5), AbortTarget(T2, start_offset=50)]


def test_a_plan_is_checked_whole_and_what_cannot_be_written_is_settled_without_writing() -> None:
    c = world()
    items = B.prepare(c, TARGETS, force=False)
    assert c.markers == []
    hanging, nothing, live = items
    assert (hanging.result, hanging.pending, hanging.check is not None) == (None, True, True)
    assert (nothing.result, nothing.message) == (B.AbortResult.REFUSED, (
        "Could not find any open transactions starting at offset 5 on partition orders-1: the record at offset 5 is "
        "not transactional (written by a producer without a producer id): orders-1 has no open transactions: "
        "nothing to abort"))
    assert isinstance(nothing.error, Refused) and not nothing.pending
    assert (live.result, live.message) == (B.AbortResult.REFUSED, f"{LIVE}; pass --force to abort anyway")
    assert B.pending(items) == [hanging] and B.forced_live(items) == [] and B.unverifiable(items) == []


def test_force_lets_the_live_transaction_through_and_each_written_item_is_reported() -> None:
    c = world()
    items = B.prepare(c, [TARGETS[0], TARGETS[2]], force=True)
    assert [i.pending for i in items] == [True, True]
    assert B.forced_live(items) == [items[1]] and items[1].check is not None and items[1].check.refusal == LIVE
    done: list[B.AbortItem] = []
    B.write(c, items, sleep=lambda s: None, on_done=done.append)
    assert [(i.result, i.message) for i in items] == [(B.AbortResult.ABORTED, "marker written")] * 2
    assert done == items
    assert [(leader, tp, pid, epoch) for leader, tp, pid, epoch, *_ in c.markers] == [(0, T0, 10, 4), (2, T2, 11, 2)]


def test_a_transaction_that_ended_after_the_check_is_already_done_and_not_written() -> None:
    c = world()
    items = B.prepare(c, [TARGETS[0]], force=False)
    c.complete(T0, 10)
    B.write(c, items, sleep=lambda s: None)
    [item] = items
    assert item.result is B.AbortResult.ALREADY_DONE and item.message and c.markers == []


def test_cancelling_settles_only_what_was_still_pending() -> None:
    items = B.prepare(world(), TARGETS, force=False)
    B.settle_all(items, B.AbortResult.CANCELLED, "cancelled at the prompt")
    assert [i.result for i in items] == [B.AbortResult.CANCELLED, B.AbortResult.REFUSED, B.AbortResult.REFUSED]
    assert items[0].message == "cancelled at the prompt"


def test_a_cluster_without_write_txn_markers_refuses_the_whole_plan() -> None:
    c = world()
    c.unsupported.add("WriteTxnMarkers")
    with pytest.raises(MissingApi):
        B.prepare(c, TARGETS, force=False)
    assert c.markers == []


def test_a_plan_names_its_targets_with_every_identifier() -> None:
    entry = AbortPlanEntry(topic="orders", partition=2, start_offset=50, producer_id=11, producer_epoch=2,
                      coordinator_epoch=3)
    [target] = B.targets_of(AbortPlan([entry], as_of_ms=0, max_transaction_timeout_ms=900_000))
    assert target == AbortTarget(T2, 50, 11, 2, 3)


def test_a_mismatch_or_a_transaction_already_ended_is_settled_and_the_rest_still_checked() -> None:
    c = world()
    c.complete(T2, 11)
    targets = [AbortTarget(T0, start_offset=100, producer_id=10, producer_epoch=3),  # the partition has epoch 4
               AbortTarget(T2, producer_id=11, producer_epoch=2, coordinator_epoch=0),  # its marker landed
               AbortTarget(T0, start_offset=100)]
    mismatch, ended, ok = B.prepare(c, targets, force=False)
    assert (mismatch.result, mismatch.message) == (B.AbortResult.REFUSED, (
        "the open transaction of producer 10 at offset 100 on orders-0 is not the one named: producer epoch 3 (the "
        "partition has 4): the transaction changed since it was read (a stale plan?), or the identifiers are wrong: "
        "read them again with `kafka-txn find-hanging` or `describe-producers`"))
    assert isinstance(mismatch.error, Refused)
    assert (ended.result, ended.message) == (
        B.AbortResult.ALREADY_DONE, "producer 11 has no open transaction on partition orders-2: its last transaction "
                                    "there was already ended by a marker (coordinator epoch 0)")
    assert isinstance(ended.error, NothingToDo)
    assert ok.pending and c.markers == []


def test_a_refused_marker_fails_its_item_with_the_brokers_error() -> None:
    c = world()
    c.marker_error = "TRANSACTION_COORDINATOR_FENCED"
    items = B.prepare(c, [TARGETS[0]], force=False)
    B.write(c, items, sleep=lambda s: None, settle_s=0)
    [item] = items
    assert (item.result, item.message) == (B.AbortResult.FAILED, (
        "Failed to abort transaction on orders-0 (producer 10, epoch 4, coordinator epoch 0): "
        "TRANSACTION_COORDINATOR_FENCED: the coordinator epoch is older than the partition's; re-read it and retry"))
    assert isinstance(item.error, BrokerError)


def test_a_marker_written_while_the_transaction_still_shows_open_says_so() -> None:
    c = world()
    items = B.prepare(c, [TARGETS[0]], force=False)
    written: list[object] = []
    c.write_abort_marker = lambda *args, **kwargs: written.append(args)  # type: ignore[method-assign]
    B.write(c, items, sleep=lambda s: None, settle_s=0)
    [item] = items
    assert (item.result, item.message) == (B.AbortResult.ABORTED, "marker written; the transaction still shows as open")
    assert item.outcome is not None and item.outcome.still_open and len(written) == 1
