"""What find-hanging tells the operator about a transaction its coordinator cannot finish, word for word:
the detail (which partitions still wait for their marker and why) and the action (what to do first).
An on-call engineer acts on these texts, and runbooks quote them, so they are pinned whole.

The situations are Kafka's: a Prepare state whose markers cannot be written (a leader offline, a
partition deleted, a leader still showing the open transaction), markers rejected on retry
(KAFKA-19999), a Prepare state with every marker landed but no completion record, and an Ongoing
transaction at the last producer epochs (KAFKA-20090).
"""

from __future__ import annotations

from dataclasses import replace

from kafka_txn_tools.admin import coordinator_rules as rules
from kafka_txn_tools.admin import hanging
from kafka_txn_tools.admin.coordinator_rules import CoordinatorTxn, LeaderView
from kafka_txn_tools.admin.hanging import CommittedOffset
from kafka_txn_tools.models import PartitionOffsets, PendingReason, StuckReason, TopicPartition
from tests.tools.admin.fakes import MIN, NOW, producer

O0, O1, O2, O3, O4 = (TopicPartition("orders", i) for i in range(5))
MOVE = ("move its coordinator with the command below: another replica of __transaction_state-7 takes it over, "
        "loads the transaction and sends its markers again")
MOVE_COMMAND = ("kafka-txn move-coordinator --transactional-id app",)
OFFLINE = ("the coordinator re-sends the markers to the new leader and completes the transaction by itself (no "
           "command can write a marker to a partition without a leader)")


def txn(state: str = "PrepareCommit", partitions: tuple[TopicPartition, ...] = (O0, O1, O2, O3, O4),
        epoch: int = 5, coordinator: int | None = 2, txn_partition: int | None = 7,
        coordinator_epoch: int | None = 3) -> CoordinatorTxn:
    return CoordinatorTxn("app", state, 10, epoch, 60_000, NOW - 20 * MIN, partitions, coordinator,
                          entered_ms=NOW - 10 * MIN, coordinator_epoch=coordinator_epoch, txn_partition=txn_partition)


def test_every_kind_of_missing_marker_is_named_and_the_action_lists_each_step() -> None:
    leaders = {
        O0: LeaderView(0, online=False),  # its leader, broker 0, is down
        O1: LeaderView(-1, offline_replicas=(4,)),  # no leader; a replica on broker 4 could become one
        # O2 is not in the metadata
        O3: LeaderView(1, producer=producer(10, 40, 10 * MIN, epoch=5, coordinator_epoch=3)),
        O4: LeaderView(1, read=False),
    }
    row = rules.judge_coordinator(txn(), leaders, NOW, MIN)
    assert row is not None and row.reason is StuckReason.MARKERS_PENDING
    assert [(p.partition, p.leader, p.reason, p.detail) for p in row.pending_partitions] == [
        (O0, 0, PendingReason.LEADER_OFFLINE,
         "orders-0 has its leader on broker 0, which is offline: there is no broker to write the marker to"),
        (O1, -1, PendingReason.LEADER_OFFLINE,
         "orders-1 has no leader (its replica on broker 4 is offline): there is no broker to write the marker to"),
        (O2, None, PendingReason.LEADER_UNKNOWN,
         "orders-2 is not in the cluster metadata or the inputs (deleted, not visible to this principal, or not "
         "captured)"),
        (O3, 1, PendingReason.OPEN_TRANSACTION,
         "broker 1 still shows producer 10 epoch 5 with a transaction open from offset 40"),
        (O4, 1, None, "its leader, broker 1, did not answer DescribeProducers"),
    ]
    assert row.pending_partitions[1].offline_replicas == (4,)
    assert row.pending_partitions[3].start_offset == 40
    assert row.detail == ("'app' is PrepareCommit at coordinator broker 2; 5 partitions still wait for their marker "
                          "(2 leader-offline, 1 leader-unknown, 1 open-transaction, 1 reason unknown)")
    assert row.action == (
        f"bring broker 0, 4 back or reassign orders-0, orders-1 to live brokers: {OFFLINE}; "
        "check whether orders-2 were deleted or are hidden by ACLs (a deleted partition's marker is skipped once "
        "the coordinator sees the deletion); " + MOVE)
    assert row.commands == MOVE_COMMAND


def test_one_leaderless_partition_and_an_unknown_coordinator() -> None:
    row = rules.judge_coordinator(txn(partitions=(O1,), coordinator=None, txn_partition=None),
                                    {O1: LeaderView(-1)}, NOW, MIN)
    assert row is not None
    assert row.pending_partitions[0].detail == "orders-1 has no leader: there is no broker to write the marker to"
    assert row.detail == ("'app' is PrepareCommit at its coordinator; 1 partition still waits for its marker "
                          "(1 leader-offline)")
    assert row.action == f"bring a replica back or reassign orders-1 to live brokers: {OFFLINE}"
    assert row.commands == ()  # nothing this tool runs can give a partition a leader


def test_markers_rejected_on_retry_name_the_rejecting_brokers_and_the_fix() -> None:
    # The markers landed (no open transaction, the producer at the transaction's epoch or later), yet the
    # coordinator still waits: the leaders reject its retries at the same epoch (KAFKA-19999).
    landed = {tp: LeaderView(b, producer=producer(10, -1, MIN, epoch=5, coordinator_epoch=3))
              for tp, b in ((O0, 2), (O1, 1), (O2, 1))}
    row = rules.judge_coordinator(txn(partitions=(O0, O1, O2)), landed, NOW, MIN)
    assert row is not None
    assert {p.reason for p in row.pending_partitions} == {PendingReason.MARKER_REJECTED}
    assert row.pending_partitions[1].detail == (
        "the marker landed (broker 1 has producer 10 at epoch 5 with no open transaction) but the coordinator still "
        "waits for it: its retries at the same epoch are rejected (KAFKA-19999)")
    assert row.detail == ("'app' is PrepareCommit at coordinator broker 2; 3 partitions still wait for their marker "
                          "(3 marker-rejected)")
    assert row.action == ("the markers landed but broker 1, 2 rejects the coordinator's retries at the same epoch "
                          "(KAFKA-19999) and the coordinator gave them up; " + MOVE + ": a leader with the KAFKA-19999 "
                          "fix accepts them; one without it rejects them again, and then the remaining step is a "
                          "broker upgrade")
    assert row.commands == MOVE_COMMAND
    # The coordinator moved since the markers landed (its epoch now is newer than theirs) and they are still
    # rejected: the leaders lack the fix, and an upgrade is what is left.
    moved = rules.judge_coordinator(replace(txn(partitions=(O0, O1, O2)), coordinator_epoch_now=4), landed, NOW,
                                      MIN)
    assert moved is not None and moved.action == (
        "remaining step: a broker upgrade. The markers landed, but broker 1, 2 rejects every retry at the same epoch "
        "(KAFKA-19999), and rejected them again after the coordinator moved: upgrade it to a release with the "
        "KAFKA-19999 fix (a rolling restart moves the coordinator too); if the row is still here after that, " + MOVE)
    assert moved.commands == MOVE_COMMAND
    same = rules.judge_coordinator(replace(txn(partitions=(O0, O1, O2)), coordinator_epoch_now=3), landed, NOW, MIN)
    assert same is not None and same.action == row.action  # not moved since


def test_a_leader_without_the_producers_open_transaction_at_an_older_epoch_is_reason_unknown() -> None:
    row = rules.judge_coordinator(
        txn(partitions=(O0,)), {O0: LeaderView(1, producer=producer(10, -1, MIN, epoch=4, coordinator_epoch=3))},
        NOW, MIN)
    assert row is not None
    pending = row.pending_partitions[0]
    assert (pending.partition, pending.leader, pending.reason) == (O0, 1, None)
    assert pending.detail == ("broker 1 shows no open transaction of producer 10, yet the coordinator still waits "
                              "for its marker")
    assert row.action == MOVE


def test_a_newer_coordinator_epoch_on_the_leader_fences_the_marker() -> None:
    row = rules.judge_coordinator(
        txn(partitions=(O0,)), {O0: LeaderView(1, producer=producer(10, 40, MIN, epoch=5, coordinator_epoch=4))},
        NOW, MIN)
    assert row is not None
    assert row.pending_partitions[0].detail == (
        "broker 1 holds coordinator epoch 4 for producer 10, newer than this coordinator's 3: it rejects the marker "
        "(TRANSACTION_COORDINATOR_FENCED)")
    assert row.action == MOVE


def test_every_marker_landed_but_the_completion_was_never_recorded() -> None:
    row = rules.judge_coordinator(txn(partitions=()), {}, NOW, MIN)
    assert row is not None and row.reason is StuckReason.COMPLETION_PENDING
    assert row.detail == ("'app' is PrepareCommit with every marker written, but coordinator broker 2 has not "
                          "recorded its completion")
    assert row.action == ("check the in-sync replicas of __transaction_state-7 (transaction.state.log.min.isr): "
                          "broker 2 cannot append the transaction's completion to it; " + MOVE)
    assert row.commands == MOVE_COMMAND


def test_an_ongoing_transaction_at_the_last_epochs_frees_each_lso_first() -> None:
    open_on = {O0: LeaderView(1, producer=producer(10, 40, 20 * MIN, epoch=32766)),
               O1: LeaderView(2, producer=producer(10, 75, 20 * MIN, epoch=32766)),
               O2: LeaderView(1)}  # nothing open there
    row = rules.judge_coordinator(txn("Ongoing", (O0, O1, O2), epoch=32766), open_on, NOW, MIN)
    assert row is not None and row.reason is StuckReason.EPOCH_EXHAUSTED
    assert [p.partition for p in row.pending_partitions] == [O0, O1]
    assert row.detail == ("'app' is Ongoing at producer epoch 32766, the last one (Short.MAX_VALUE - 1): the "
                          "producer cannot end it and the coordinator cannot fence it (KAFKA-20090)")
    assert row.action.startswith("free the LSO now with the abort below (--force: the coordinator still holds the "
                                 "transaction as Ongoing); then the remaining step is a broker upgrade: upgrade "
                                 "broker 2 (its coordinator) to a release with the KAFKA-20090 fixes")
    assert row.commands == ("kafka-txn abort --topic orders --partition 0 --start-offset 40 --force",
                            "kafka-txn abort --topic orders --partition 1 --start-offset 75 --force")
    last = rules.judge_coordinator(txn("Ongoing", (O2,), epoch=32767), {O2: LeaderView(1)}, NOW, MIN)
    assert last is not None
    assert "the last one (Short.MAX_VALUE): " in last.detail
    assert last.action.startswith("remaining step: a broker upgrade (no partition is held any more): upgrade broker 2")
    assert last.commands == ()  # force-terminate fails on a coordinator without the fix: never suggested


def test_epoch_exhaustion_needs_more_than_the_timeout_with_the_abort_scan() -> None:
    # At Short.MAX_VALUE - 1 the coordinator's timeout abort could still bump once: it is stuck only after
    # the timeout and one abort scan (10 s) have passed. A 2PC timeout (KIP-939) never expires.
    def at(age_ms: int, timeout_ms: int = 60_000) -> StuckReason | None:
        t = CoordinatorTxn("app", "Ongoing", 10, 32766, timeout_ms, NOW - age_ms, (O0,), 2)
        row = rules.judge_coordinator(t, {O0: LeaderView(1)}, NOW, MIN)
        return None if row is None else row.reason

    assert at(70_000) is None
    assert at(70_001) is StuckReason.EPOCH_EXHAUSTED
    assert at(30 * 24 * 3600 * 1000, timeout_ms=2**31 - 1) is None  # past Integer.MAX_VALUE ms, still not


def test_every_partition_missing_from_the_metadata_is_named() -> None:
    row = rules.judge_coordinator(txn(partitions=(O2, O4)), {}, NOW, MIN)
    assert row is not None
    assert row.action == ("check whether orders-2, orders-4 were deleted or are hidden by ACLs (a deleted partition's "
                          "marker is skipped once the coordinator sees the deletion)")


def test_a_stalled_group_at_or_past_the_high_watermark_has_no_lag() -> None:
    # A read_uncommitted group may have committed up to the high watermark (or past it, after a truncation):
    # it is held at the LSO all the same, with nothing left to read.
    offsets = PartitionOffsets(O0, 100, 150)
    groups = hanging.stalled_groups(O0, offsets, [CommittedOffset("at-hw", "consumer", O0, 150),
                                                  CommittedOffset("past", "consumer", O0, 160),
                                                  CommittedOffset("at-lso", "share", O0, 100),
                                                  CommittedOffset("behind", "consumer", O0, 99)])
    assert groups is not None
    assert [(g.group_id, g.group_type, g.committed_offset, g.lag) for g in groups] == [
        ("at-hw", "consumer", 150, 0), ("past", "consumer", 160, 0), ("at-lso", "share", 100, 50)]
