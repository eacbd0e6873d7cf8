"""The advice rules over plain data: rows of one transaction printed together, root first
(admin/dependent_rows.py); what a summary did not report and the command that reports it; epoch exhaustion
judged from the first scan; a late staging of share acknowledgements prints its fence; the embedded broker's
upgrade as a command (admin/emulation.py); force-terminate's check at the last epoch (admin/fence.py)."""

from __future__ import annotations

from dataclasses import replace

from kafka_txn_tools.admin import (
    advice,
    coordinator_advice,
    dependent_rows,
    emulation,
    fence,
    hanging,
    partition_advice,
)
from kafka_txn_tools.admin import coordinator_rules as rules
from kafka_txn_tools.admin.coordinator_rules import CoordinatorTxn, LeaderView
from kafka_txn_tools.admin.share_pending import ShareHold
from kafka_txn_tools.models import (
    HangingReason,
    HangingTransaction,
    PartitionProducers,
    StuckReason,
    TopicPartition,
)
from tests.tools.admin.fakes import MIN, NOW, producer, txn

STATE = TopicPartition("__share_group_state", 22)
ORDERS = TopicPartition("orders", 1)
INV = advice.Invocation("b:9092")
FENCE = "kafka-txn force-terminate --transactional-id app --force --bootstrap-server b:9092"
WATCH = ("kafka-txn find-hanging --topic __share_group_state --partition 22 --watch --count-held "
         "--bootstrap-server b:9092")


def partition_row(tp: TopicPartition, reason: HangingReason, commands: tuple[str, ...], pid: int = 7
                  ) -> HangingTransaction:
    return HangingTransaction(tp, producer(pid, 3, 20 * MIN, epoch=1), reason, "detail", 20 * MIN,
                              transactional_id="app", action="its own action", commands=commands)


def share_row(commands: tuple[str, ...] = (FENCE,), pid: int = 7) -> ShareHold:
    return ShareHold("1", "readers", "in", 3, pid, "app", 10, 20 * MIN, "end the transaction", commands)


# ---- dependent rows -----------------------------------------------------------------------------------------
def test_the_row_whose_command_ends_the_transaction_comes_first_and_the_watch_names_it() -> None:
    # The order that blocked: the state partition's watch printed first, the share row's fence after it.
    waiting = partition_row(STATE, HangingReason.LATE, (WATCH,))
    rows = dependent_rows.ordered([waiting, share_row()])
    assert [type(r).__name__ for r in rows] == ["ShareHold", "HangingTransaction"]
    root, dependent = rows
    assert root == share_row()  # the root is unchanged
    name = "in-3 producer 7 (share group 'readers')"
    assert dependent.cleared_by == name == dependent_rows.row_name(root)
    assert dependent.commands == (WATCH,)  # run after the fence, it exits once the partition is clear
    assert dependent.action.startswith(f"cleared by {name}: that row's command, printed above it, ends the same "
                                       "transaction (producer 7)")
    assert dependent.to_row()["cleared_by"] == name and root.to_row()["cleared_by"] is None


def test_a_dependent_repeats_no_write_and_a_counted_row_is_the_root() -> None:
    # Both print the fence: the share hold (counted by --exit-code) is the root, the late staging row clears with it
    # and does not fence the id a second time.
    late = partition_row(STATE, HangingReason.LATE, (FENCE,))
    rows = dependent_rows.ordered([late, share_row()])
    assert [r.commands for r in rows] == [(FENCE,), ()]
    assert rows[1].cleared_by == "in-3 producer 7 (share group 'readers')"
    assert rows[1].action.endswith("nothing more to run for it")


def test_other_transactions_and_several_writes_of_one_are_left_alone() -> None:
    abort_1 = partition_row(ORDERS, HangingReason.TRANSACTION_NOT_ONGOING, ("kafka-txn abort ... --partition 1",))
    abort_2 = partition_row(TopicPartition("orders", 2), HangingReason.TRANSACTION_NOT_ONGOING,
                            ("kafka-txn abort ... --partition 2",))
    other = partition_row(STATE, HangingReason.LATE, (WATCH,), pid=8)
    rows = dependent_rows.ordered([abort_1, other, abort_2])
    assert rows == [abort_1, abort_2, other]  # one transaction's rows together, in the order of its first row
    assert [r.cleared_by for r in rows] == [None, None, None]
    assert dependent_rows.ordered(rows) == rows == dependent_rows.grouped(rows)  # linking twice changes nothing


def test_only_watches_have_no_root() -> None:
    a = partition_row(STATE, HangingReason.LATE, (WATCH,))
    b = partition_row(ORDERS, HangingReason.LATE, (WATCH.replace("__share_group_state", "orders"),))
    assert dependent_rows.ordered([a, b]) == [a, b]


# ---- what the summary did not report ---------------------------------------------------------------------------
def test_young_holds_name_each_held_partition_once_without_the_reported_ones() -> None:
    replicas = [PartitionProducers(STATE, 0, (producer(7, 3, 5_000), producer(8, 9, 2_000))),
                PartitionProducers(STATE, 1, (producer(7, 3, 5_000),)),  # a follower: the same hold
                PartitionProducers(ORDERS, 0, (producer(9, 1, 16 * MIN),)),  # a candidate: not young
                PartitionProducers(TopicPartition("t", 0), 0, (producer(5, 0, 1_000),)),  # reported already
                PartitionProducers(TopicPartition("idle", 0), 0, (producer(4, -1, 1_000),))]  # nothing open
    young = hanging.young_holds(replicas, NOW, 15 * MIN, {TopicPartition("t", 0)})
    assert young == [hanging.Unreported("__share_group_state-22", "producer 7", 5_000)]


def test_the_summary_says_what_holds_it_why_it_is_not_reported_and_the_command() -> None:
    holds = [hanging.Unreported("__share_group_state-22", "producer 7", 4_500)]
    prepares = [hanging.Unreported("billing", "PrepareCommit", None)]
    lines = hanging.unreported_summary(holds, prepares, 15 * MIN, MIN, "kafka-txn find-hanging --all A",
                                       "kafka-txn find-hanging --all B")
    assert lines == [
        "1 partition held by a transaction younger than the max transaction timeout (15m), not reported: "
        "__share_group_state-22 (producer 7, 4s 500ms). Within that timeout its producer or its coordinator still "
        "ends it; to report it now (--max-transaction-timeout 0):",
        "  kafka-txn find-hanging --all A",
        "1 transaction in a Prepare state for less than --max-prepare-time (1m), not reported: 'billing' "
        "(PrepareCommit). A coordinator normally completes one within seconds; to report it now "
        "(--max-prepare-time 0):",
        "  kafka-txn find-hanging --all B"]
    assert hanging.unreported_summary([], [], 15 * MIN, MIN, "a", "b") == []


# ---- epoch exhaustion: the first scan says it ----------------------------------------------------------------
def test_ongoing_at_the_last_epoch_is_stuck_from_the_first_scan_however_young() -> None:
    young = CoordinatorTxn("app", "Ongoing", 10, 32767, 1_000, NOW - 2_000, (ORDERS,), 0)
    open_on = {ORDERS: LeaderView(0, producer=producer(10, 4, 2_000, epoch=32767))}
    row = rules.judge_coordinator(young, open_on, NOW, MIN, invocation=INV)
    assert row is not None and row.reason is StuckReason.EPOCH_EXHAUSTED and row.upgrade_for == "KAFKA-20090"
    assert row.commands == ("kafka-txn abort --topic orders --partition 1 --start-offset 4 --force "
                            "--bootstrap-server b:9092",)
    # One epoch below, its coordinator's timeout abort may still end it: only past timeout + abort scan.
    assert rules.judge_coordinator(CoordinatorTxn("app", "Ongoing", 10, 32766, 1_000, NOW - 2_000, (ORDERS,), 0),
                                     open_on, NOW, MIN) is None
    assert rules.at_last_epoch("Ongoing", 32767) and not rules.at_last_epoch("PrepareAbort", 32767)


def test_force_terminate_does_not_promise_a_timeout_abort_at_the_last_epoch() -> None:
    d = txn("app", 10, "Ongoing", [ORDERS], epoch=32767, start_ms=NOW - 2_000)
    assert not fence.needs_force(d, NOW)  # nothing ends it by itself: the fence is tried, and explained if refused
    assert fence.needs_force(txn("app", 10, "Ongoing", [ORDERS], epoch=32766, start_ms=NOW - 2_000), NOW)


# ---- share staging: the fence, not words -------------------------------------------------------------------
def test_a_late_staging_of_share_acknowledgements_prints_its_fence() -> None:
    assert partition_advice.partition_commands(HangingReason.LATE, STATE, 3, INV, transactional_id="app") == (FENCE,)
    action = partition_advice.partition_action(HangingReason.LATE, STATE, 3, "app")
    assert "force-terminate" not in action.split(": ")[0]
    assert action.startswith("end it now with the command")
    # elsewhere a late row still waits for its owner
    assert partition_advice.partition_commands(HangingReason.LATE, ORDERS, 3, INV, transactional_id="app") == (
        "kafka-txn find-hanging --topic orders --partition 1 --watch --count-held --bootstrap-server b:9092",)


# ---- the embedded broker's upgrade ------------------------------------------------------------------------------
UPGRADE = "kafka-txn broker upgrade --bootstrap-server b:9092"


def test_the_upgrade_is_a_command_where_the_broker_emulates_that_bug() -> None:
    found = [emulation.Emulation(0, "KAFKA-19999", "scenario-1")]
    assert emulation.applies(found, "KAFKA-19999", "scenario-1-kafka-19999")
    assert not emulation.applies(found, "KAFKA-20090", "scenario-1-kafka-19999")
    assert not emulation.applies(found, "KAFKA-19999", "payments")  # an id the emulation does not touch
    assert not emulation.applies([], "KAFKA-19999", "scenario-1")  # Apache Kafka: no such property


def test_the_upgrade_goes_where_it_takes_effect() -> None:
    exhausted = rules.judge_coordinator(CoordinatorTxn("app", "Ongoing", 10, 32767, 1_000, NOW - 2_000, (ORDERS,),
                                                         0),
                                          {ORDERS: LeaderView(0, producer=producer(10, 4, 2_000, epoch=32767))},
                                          NOW, MIN, invocation=INV)
    assert exhausted is not None
    upgraded = coordinator_advice.with_upgrade_command(exhausted, UPGRADE)
    assert upgraded.commands == (*exhausted.commands, UPGRADE)  # free the LSO now, then the fixed coordinator
    assert upgraded.action.startswith(exhausted.action) and "its upgrade is the last command below" in upgraded.action
    assert coordinator_advice.with_upgrade_command(upgraded, UPGRADE) == upgraded
    rejected = replace(exhausted, upgrade_for="KAFKA-19999", commands=("kafka-txn move-coordinator x",),
                       action="remaining step: a broker upgrade. ...")
    again = coordinator_advice.with_upgrade_command(rejected, UPGRADE)
    assert again.commands == (UPGRADE, "kafka-txn move-coordinator x")  # the fixed leaders, then the move
    assert again.action.startswith("remaining step: a broker upgrade.")
    none = replace(exhausted, upgrade_for=None)
    assert coordinator_advice.with_upgrade_command(none, UPGRADE) == none


def test_the_remaining_step_of_markers_rejected_after_a_move_is_the_kafka_19999_upgrade() -> None:
    # The leader holds the producer at the transaction's epoch with nothing open (the marker landed), under an older
    # coordinator epoch than the coordinator's now: the move happened and the marker was rejected again.
    landed = LeaderView(1, producer=producer(10, -1, MIN, epoch=5, coordinator_epoch=3))
    moved = CoordinatorTxn("app", "PrepareCommit", 10, 5, 60_000, NOW - 20 * MIN, (ORDERS,), 2,
                           entered_ms=NOW - 10 * MIN, coordinator_epoch=3, txn_partition=7, coordinator_epoch_now=4)
    row = rules.judge_coordinator(moved, {ORDERS: landed}, NOW, MIN)
    assert row is not None and row.upgrade_for == "KAFKA-19999" and row.action.startswith("remaining step")
    first = rules.judge_coordinator(replace(moved, coordinator_epoch_now=3), {ORDERS: landed}, NOW, MIN)
    assert first is not None and first.upgrade_for is None  # the move comes first: a fixed leader takes it
