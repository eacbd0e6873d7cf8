"""find-hanging's coordinator-side rules at their boundaries, with the values Kafka gives them.

- Times: Kafka writes -1 for "no time" (TransactionMetadata's txnStartTimestamp before a transaction,
  DescribeTransactions' TransactionStartTimeMs); 0 is a real timestamp (the epoch), so it counts.
- Broker ids start at 0 (broker.id / node.id 0 is a valid broker); only -1 means "no leader" (Metadata's
  LeaderId).
- A leader fences a marker only when it holds a *newer* coordinator epoch than the marker's
  (ProducerStateManager / ProducerAppendInfo: `coordinatorEpoch < currentCoordinatorEpoch` is rejected); the
  same epoch is accepted.
- TransactionMetadata.isEpochExhausted: epoch >= Short.MAX_VALUE - 1; the reaper aborts a transaction once
  it is older than its timeout, scanning every transaction.abort.timed.out.transaction.cleanup.interval.ms
  (10 s by default), so "past recovery" means strictly older than timeout + that interval. A 2PC
  transaction (KIP-939) has the timeout Integer.MAX_VALUE and is never timed out.
"""

from __future__ import annotations

import pytest

from kafka_txn_tools.admin import advice, hanging
from kafka_txn_tools.admin import coordinator_rules as rules
from kafka_txn_tools.models import (
    ABORT_SCAN_INTERVAL_MS,
    EXHAUSTED_EPOCH,
    TWO_PHASE_COMMIT_TIMEOUT_MS,
    HangingReason,
    OpenTransaction,
    PartitionOffsets,
    PendingReason,
    ProducerState,
    StuckReason,
    TopicPartition,
    TransactionDescription,
    TransactionListing,
)

NOW = 1_700_000_000_000
TP = TopicPartition("orders", 3)
TIMEOUT = 60_000


def txn(state: str = "PrepareCommit", *, epoch: int = 5, start_ms: int | None = NOW - 3_600_000,
        entered_ms: int | None = None, timeout_ms: int | None = TIMEOUT, coordinator_epoch: int | None = 7,
        partitions: tuple[TopicPartition, ...] = (TP,)) -> rules.CoordinatorTxn:
    return rules.CoordinatorTxn("app-1", state, 4000, epoch, timeout_ms, start_ms, partitions, coordinator_id=2,
                                  entered_ms=entered_ms, coordinator_epoch=coordinator_epoch, txn_partition=11)


def producer(epoch: int = 5, coordinator_epoch: int = 7, start: int = -1) -> ProducerState:
    return ProducerState(4000, epoch, 9, NOW - 1_000, coordinator_epoch, start)


# ---- time in state ------------------------------------------------------------------------------------
def test_a_start_at_time_zero_is_a_time_and_minus_one_is_none() -> None:
    assert rules.time_in_state(txn("Ongoing", start_ms=0), NOW) == (NOW, "transaction-start")
    assert rules.time_in_state(txn("Ongoing", start_ms=-1), NOW) == (None, "unknown")
    assert rules.time_in_state(txn("Ongoing", start_ms=None), NOW) == (None, "unknown")


def test_the_state_record_time_zero_is_exact() -> None:
    assert rules.time_in_state(txn(entered_ms=0), NOW) == (NOW, "transaction-log")
    assert rules.time_in_state(txn(entered_ms=-1, start_ms=-1), NOW) == (None, "unknown")


def test_the_lower_bound_needs_a_finite_timeout_and_never_goes_below_zero() -> None:
    start = NOW - 100_000
    assert rules.time_in_state(txn(start_ms=start, timeout_ms=None), NOW) == (None, "unknown")
    assert rules.time_in_state(txn(start_ms=start, timeout_ms=TWO_PHASE_COMMIT_TIMEOUT_MS), NOW) == (None, "unknown")
    assert rules.time_in_state(txn(start_ms=start, timeout_ms=TIMEOUT), NOW) == (
        100_000 - TIMEOUT - ABORT_SCAN_INTERVAL_MS, "lower-bound")
    # Not yet past its timeout + the reaper's interval: it may have entered the state just now.
    assert rules.time_in_state(txn(start_ms=NOW - TIMEOUT, timeout_ms=TIMEOUT), NOW) == (0, "lower-bound")


# ---- epoch exhaustion ---------------------------------------------------------------------------------
def exhausted(age_ms: int, timeout_ms: int | None = TIMEOUT) -> hanging.StuckTransaction | None:
    t = txn("Ongoing", epoch=EXHAUSTED_EPOCH, start_ms=NOW - age_ms, timeout_ms=timeout_ms)
    return rules.judge_coordinator(t, {TP: rules.LeaderView(0, producer=producer(EXHAUSTED_EPOCH, start=40))},
                                     NOW, max_prepare_ms=1)


def test_an_exhausted_epoch_is_past_recovery_only_strictly_after_timeout_and_the_reaper_interval() -> None:
    bound = TIMEOUT + ABORT_SCAN_INTERVAL_MS
    assert exhausted(TIMEOUT + 1) is None  # the reaper may still abort it
    assert exhausted(bound) is None
    row = exhausted(bound + 1)
    assert row is not None and row.reason is StuckReason.EPOCH_EXHAUSTED
    assert exhausted(10 * bound, timeout_ms=TWO_PHASE_COMMIT_TIMEOUT_MS) is None  # 2PC: no timeout


def test_an_exhausted_row_carries_the_coordinator_fields_detail_and_only_partitions_still_open() -> None:
    other = TopicPartition("orders", 4)
    t = txn("Ongoing", epoch=EXHAUSTED_EPOCH, start_ms=NOW - 10 * TIMEOUT, partitions=(TP, other))
    views = {TP: rules.LeaderView(0, producer=producer(EXHAUSTED_EPOCH, start=40)),
             other: rules.LeaderView(1, producer=producer(EXHAUSTED_EPOCH))}  # its marker landed
    row = rules.judge_coordinator(t, views, NOW, max_prepare_ms=1)
    assert row is not None
    assert (row.coordinator_id, row.timeout_ms, row.time_in_state_source) == (2, TIMEOUT, "transaction-start")
    assert [(p.partition, p.reason, p.start_offset) for p in row.pending_partitions] == [
        (TP, PendingReason.OPEN_TRANSACTION, 40)]
    assert row.detail == ("'app-1' is Ongoing at producer epoch 32766, the last one (Short.MAX_VALUE - 1): the "
                          "producer cannot end it and the coordinator cannot fence it (KAFKA-20090)")


def test_completion_pending_says_so() -> None:
    views = {TP: rules.LeaderView(0, producer=producer())}  # the marker landed, the coordinator does not wait
    row = rules.judge_coordinator(txn(partitions=()), views, NOW, max_prepare_ms=1)
    assert row is not None and row.reason is StuckReason.COMPLETION_PENDING
    assert row.detail == ("'app-1' is PrepareCommit with every marker written, but coordinator broker 2 has not "
                          "recorded its completion")


# ---- a pending partition ------------------------------------------------------------------------------
def test_broker_zero_is_a_leader() -> None:
    found = rules.pending_partition(TP, rules.LeaderView(0, producer=producer(start=40)), txn())
    assert found is not None and (found.leader, found.reason) == (0, PendingReason.OPEN_TRANSACTION)
    gone = rules.pending_partition(TP, rules.LeaderView(-1), txn())
    assert gone is not None and gone.reason is PendingReason.LEADER_OFFLINE


def test_only_a_newer_coordinator_epoch_fences_the_marker() -> None:
    same = rules.pending_partition(TP, rules.LeaderView(0, producer=producer(coordinator_epoch=7, start=40)),
                                     txn(coordinator_epoch=7))
    assert same is not None and same.reason is PendingReason.OPEN_TRANSACTION
    newer = rules.pending_partition(TP, rules.LeaderView(0, producer=producer(coordinator_epoch=8, start=40)),
                                      txn(coordinator_epoch=7))
    assert newer is not None and (newer.partition, newer.leader, newer.reason) == (
        TP, 0, PendingReason.COORDINATOR_FENCED)


def test_a_landed_marker_the_coordinator_still_waits_for_is_rejected_and_by_default_it_waits() -> None:
    rejected = rules.pending_partition(TP, rules.LeaderView(0, producer=producer(epoch=5)), txn(epoch=5))
    assert rejected is not None and (rejected.partition, rejected.leader, rejected.reason) == (
        TP, 0, PendingReason.MARKER_REJECTED)
    assert rejected.detail == (
        "the marker landed (broker 0 has producer 4000 at epoch 5 with no open transaction) but the coordinator "
        "still waits for it: its retries at the same epoch are rejected (KAFKA-19999)")
    unknown = rules.pending_partition(TP, rules.LeaderView(None), txn())
    assert unknown is not None and unknown.detail == (
        "orders-3 is not in the cluster metadata or the inputs (deleted, not visible to this principal, or not "
        "captured)")


# ---- owners, stalled groups ---------------------------------------------------------------------------
def test_the_last_owner_is_the_newest_record_and_ties_go_to_the_lowest_id() -> None:
    other = hanging.Ownership("z-other", 9, NOW)
    assert hanging.last_known_owner(4000, [other, hanging.Ownership("b", 4000, NOW - 5)]) == "b"
    assert hanging.last_known_owner(4000, [hanging.Ownership("b", 4000, NOW), hanging.Ownership("a", 4000, NOW - 1)]
                                    ) == "b"
    assert hanging.last_known_owner(4000, [hanging.Ownership("b", 4000, NOW), hanging.Ownership("a", 4000, NOW)]
                                    ) == "a"


def test_a_stalled_group_row_without_a_high_watermark_has_no_lag() -> None:
    committed = [hanging.CommittedOffset("g", "consumer", TP, 50)]
    [row] = hanging.stalled_groups(TP, PartitionOffsets(TP, 40, None), committed) or ()
    assert (row.partition, row.committed_offset, row.lag) == (TP, 50, None)
    [row] = hanging.stalled_groups(TP, PartitionOffsets(TP, 40, 70), committed) or ()
    assert (row.partition, row.committed_offset, row.lag) == (TP, 50, 20)


# ---- partition rows -----------------------------------------------------------------------------------
def open_txn(partition: int, epoch: int = 5) -> OpenTransaction:
    return OpenTransaction(TopicPartition("orders", partition), 1, ProducerState(4000, epoch, 9, NOW - 1, 0, 40))


def test_rows_skip_late_verdicts_but_keep_the_hanging_ones_after_them_with_detail_and_action() -> None:
    late = hanging.Verdict(open_txn(1), HangingReason.LATE, "late detail", "app-1")
    stuck = hanging.Verdict(open_txn(2), HangingReason.TRANSACTION_NOT_ONGOING, "not ongoing detail", "app-1")
    [row] = hanging.to_results([late, stuck], NOW, include_late=False, invocation=advice.Invocation("k:9092"))
    assert (row.partition.partition, row.detail, row.action, row.commands) == (
        2, "not ongoing detail",
        "abort it: no coordinator will ever write the marker that ends it, so orders-2's LSO stays at 40",
        ("kafka-txn abort --topic orders --partition 2 --start-offset 40 --bootstrap-server k:9092",))


def test_a_verdict_carries_its_detail_and_an_unanswered_candidate_is_returned_as_unknown() -> None:
    candidate = open_txn(1)
    listing_for = TransactionListing("app-1", 4000, "Ongoing", 2)
    verdicts, unknown = hanging.classify_all([candidate], [listing_for], {}, ["app-1"])
    [v] = verdicts
    assert (v.reason, v.detail, unknown) == (
        HangingReason.TRANSACTIONAL_ID_NOT_FOUND, "coordinator does not know transactional id 'app-1'", [])
    verdicts, unknown = hanging.classify_all([candidate], [listing_for], {}, [])
    assert (verdicts, unknown) == ([], [candidate])


# ---- what each row says, word for word (the operator acts on it) ---------------------------------------
def described(state: str = "Ongoing", pid: int = 4000, epoch: int = 5, timeout_ms: int = TIMEOUT,
              partitions: frozenset[TopicPartition] = frozenset({TopicPartition("orders", 1)})
              ) -> TransactionDescription:
    return TransactionDescription("app-1", 2, state, pid, epoch, timeout_ms, NOW - 1_000, partitions)


@pytest.mark.parametrize(("ids", "description", "not_found", "reason", "detail"), [
    ((), None, (), HangingReason.NO_TRANSACTIONAL_ID,
     "no coordinator lists producer id 4000 (the transaction was forgotten, or the principal lacks DESCRIBE on its "
     "transactional id)"),
    (("app-1",), None, ("app-1",), HangingReason.TRANSACTIONAL_ID_NOT_FOUND,
     "coordinator does not know transactional id 'app-1'"),
    (("app-1",), described(pid=4001, epoch=0), (), HangingReason.EPOCH_MISMATCH,
     "'app-1' now belongs to producer id 4001 (epoch 0)"),
    (("app-1",), described(epoch=4), (), HangingReason.EPOCH_MISMATCH,
     "coordinator epoch 4 for 'app-1' is older than the partition's 5; its markers would be fenced"),
    (("app-1",), described("CompleteAbort", partitions=frozenset()), (), HangingReason.TRANSACTION_NOT_ONGOING,
     "coordinator holds 'app-1' as CompleteAbort; no marker is coming"),
    (("app-1",), described(partitions=frozenset()), (), HangingReason.PARTITION_NOT_IN_TRANSACTION,
     "'app-1' is Ongoing without partition orders-1"),
    (("app-1",), described(timeout_ms=TWO_PHASE_COMMIT_TIMEOUT_MS), (), HangingReason.PREPARED_2PC,
     "'app-1' is a prepared two-phase-commit transaction (KIP-939, no timeout) with this partition: an external "
     "transaction manager owns it and will commit or abort it"),
    (("app-1",), described(), (), HangingReason.LATE,
     "'app-1' is Ongoing with this partition; its coordinator will complete it"),
])
def test_each_reason_says_why(ids: tuple[str, ...], description: TransactionDescription | None,
                              not_found: tuple[str, ...], reason: HangingReason, detail: str) -> None:
    descriptions = {"app-1": description} if description is not None else {}
    verdict = hanging.classify(open_txn(1), ids, descriptions, not_found)
    assert verdict is not None and (verdict.reason, verdict.detail) == (reason, detail)


def test_a_late_row_says_to_wait_and_a_prepared_one_names_its_manager() -> None:
    rows = hanging.to_results([hanging.Verdict(open_txn(1), HangingReason.LATE, "d", "app-1"),
                               hanging.Verdict(open_txn(2), HangingReason.PREPARED_2PC, "d", "app-2")],
                              NOW, include_late=True)
    # No write for either: the one command watches the partition until its owner has ended the transaction.
    watch = tuple(f"kafka-txn find-hanging --topic {r.partition.topic} --partition {r.partition.partition} --watch "
                  "--count-held" for r in rows)
    assert [(r.action, r.commands) for r in rows] == [
        ("wait: the coordinator of 'app-1' still owns it and ends it by itself (its producer commits or aborts it, or "
         "the coordinator aborts it at its timeout), and the command below exits once it has; to end it now, fence "
         "the id with force-terminate and --force (its producer fails and must restart)", watch[:1]),
        ("held by its external transaction manager (KIP-939): that manager must commit or abort 'app-2' (the "
         "producer that prepared it ends it; a restarted manager first recovers it with InitProducerId "
         "keepPreparedTxn, which Apache Kafka 4.4 does not serve yet), and the command below exits once it has; only "
         "if that manager is gone for good, abort it on each of its partitions with kafka-txn abort and --force (its "
         "decision is lost)", watch[1:])]


@pytest.mark.parametrize(("view", "leader", "reason", "detail"), [
    (rules.LeaderView(-1, offline_replicas=(1, 2)), -1, PendingReason.LEADER_OFFLINE,
     "orders-3 has no leader (its replica on broker 1, 2 is offline): there is no broker to write the marker to"),
    (rules.LeaderView(-1), -1, PendingReason.LEADER_OFFLINE,
     "orders-3 has no leader: there is no broker to write the marker to"),
    (rules.LeaderView(0, online=False), 0, PendingReason.LEADER_OFFLINE,
     "orders-3 has its leader on broker 0, which is offline: there is no broker to write the marker to"),
    (rules.LeaderView(0, read=False), 0, None, "its leader, broker 0, did not answer DescribeProducers"),
    (rules.LeaderView(0, producer=producer(epoch=4)), 0, None,
     "broker 0 shows no open transaction of producer 4000, yet the coordinator still waits for its marker"),
    (rules.LeaderView(0, producer=producer(start=40)), 0, PendingReason.OPEN_TRANSACTION,
     "broker 0 still shows producer 4000 epoch 5 with a transaction open from offset 40"),
])
def test_each_pending_partition_says_why(view: rules.LeaderView, leader: int, reason: PendingReason | None,
                                         detail: str) -> None:
    found = rules.pending_partition(TP, view, txn())
    assert found is not None and (found.partition, found.leader, found.reason, found.detail) == (
        TP, leader, reason, detail)


# ---- coordinator-side rows, word for word ---------------------------------------------------------------
MOVE = ("move its coordinator with the command below: another replica of __transaction_state-11 takes it over, "
        "loads the transaction and sends its markers again")
MOVE_COMMAND = ("kafka-txn move-coordinator --transactional-id app-1",)


def stuck(t: rules.CoordinatorTxn, views: dict[TopicPartition, rules.LeaderView]
          ) -> tuple[str, str, str, tuple[str, ...]]:
    row = rules.judge_coordinator(t, views, NOW, max_prepare_ms=1)
    assert row is not None
    return row.reason.value, row.detail, row.action, row.commands


def test_markers_pending_counts_each_reason_and_gives_each_step() -> None:
    a, b, c, d = (TopicPartition("orders", i) for i in range(4))
    views = {a: rules.LeaderView(-1, offline_replicas=(1,)), b: rules.LeaderView(None),
             c: rules.LeaderView(0, producer=producer()), d: rules.LeaderView(0, producer=producer(start=40))}
    assert stuck(txn(partitions=(a, b, c, d)), views) == (
        "markers-pending",
        "'app-1' is PrepareCommit at coordinator broker 2; 4 partitions still wait for their marker (1 leader-offline, "
        "1 leader-unknown, 1 marker-rejected, 1 open-transaction)",
        "bring broker 1 back or reassign orders-0 to live brokers: the coordinator re-sends the markers to the new "
        "leader and completes the transaction by itself (no command can write a marker to a partition without a "
        "leader); check whether orders-1 were deleted or are hidden by ACLs "
        "(a deleted partition's marker is skipped once the coordinator sees the deletion); the markers landed but "
        "broker 0 rejects the coordinator's retries at the same epoch (KAFKA-19999) and the coordinator gave them up; "
        f"{MOVE}: a leader with the KAFKA-19999 fix accepts them; one without it rejects them again, and then the "
        "remaining step is a broker upgrade", MOVE_COMMAND)
    assert stuck(txn(), {TP: rules.LeaderView(0, producer=producer(start=40))}) == (
        "markers-pending",
        "'app-1' is PrepareCommit at coordinator broker 2; 1 partition still waits for its marker (1 open-transaction)",
        MOVE, MOVE_COMMAND)


def test_completion_pending_without_a_known_coordinator_names_none() -> None:
    t = rules.CoordinatorTxn("app-1", "PrepareAbort", 4000, 5, TIMEOUT, NOW - 3_600_000, ())
    assert stuck(t, {}) == (
        "completion-pending",
        "'app-1' is PrepareAbort with every marker written, but its coordinator has not recorded its completion",
        "check the in-sync replicas of the __transaction_state partition (transaction.state.log.min.isr): its "
        "coordinator's broker cannot append the transaction's completion to it; move its coordinator with the "
        "command below: another replica of the __transaction_state partition takes it over, loads the transaction "
        "and sends its markers again", MOVE_COMMAND)


def test_epoch_exhaustion_frees_each_open_partition_then_says_the_remaining_step_is_an_upgrade() -> None:
    upgrade = ("upgrade broker 2 (its coordinator) to a release with the KAFKA-20090 fixes: a coordinator with them "
               "fences and aborts a transaction at the last epoch on its timeout, so this one, Ongoing past its "
               "timeout, shows they are missing; after the upgrade its timeout abort ends the transaction and frees "
               "the transactional id (until then its producer cannot end it)")
    free = ("free the LSO now with the abort below (--force: the coordinator still holds the transaction as "
            f"Ongoing); then the remaining step is a broker upgrade: {upgrade}")
    abort = ("kafka-txn abort --topic orders --partition 3 --start-offset 40 --force",)
    at_max = txn("Ongoing", epoch=32767)
    assert stuck(at_max, {TP: rules.LeaderView(0, producer=producer(32767, start=40))}) == (
        "epoch-exhausted",
        "'app-1' is Ongoing at producer epoch 32767, the last one (Short.MAX_VALUE): the producer cannot end it and "
        "the coordinator cannot fence it (KAFKA-20090)", free, abort)
    assert stuck(txn("Ongoing", epoch=EXHAUSTED_EPOCH), {TP: rules.LeaderView(0, producer=producer(EXHAUSTED_EPOCH))}
                 )[1:] == (
        "'app-1' is Ongoing at producer epoch 32766, the last one (Short.MAX_VALUE - 1): the producer cannot end it "
        "and the coordinator cannot fence it (KAFKA-20090)",
        f"remaining step: a broker upgrade (no partition is held any more): {upgrade}", ())
