"""find-hanging classification over plain data (admin/hanging.py)."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from kafka_txn_tools.admin import advice, hanging, partition_advice
from kafka_txn_tools.admin import coordinator_rules as rules
from kafka_txn_tools.models import (
    HangingReason,
    OpenTransaction,
    PartitionOffsets,
    PartitionProducers,
    PendingReason,
    StuckReason,
    TopicPartition,
)
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


# ---- coordinator side ----------------------------------------------------------------------------------
P1 = TopicPartition("orders", 1)


def prepared(state: str = "PrepareCommit", epoch: int = 4, entered_ago: int | None = 5 * MIN,
             coordinator_epoch: int | None = 3, partitions: tuple[TopicPartition, ...] = (P1,)
             ) -> rules.CoordinatorTxn:
    return rules.CoordinatorTxn("app", state, 7, epoch, 60_000, NOW - 20 * MIN, partitions, 2,
                                  None if entered_ago is None else NOW - entered_ago, coordinator_epoch, 17)


def one_pending(view: rules.LeaderView, txn: rules.CoordinatorTxn | None = None):
    row = rules.judge_coordinator(txn or prepared(), {P1: view}, NOW, MIN)
    assert row is not None
    [p] = row.pending_partitions
    return row, p


def test_a_partition_without_a_leader_names_its_offline_replica_and_the_action_says_bring_it_back() -> None:
    row, p = one_pending(rules.LeaderView(-1, online=False, offline_replicas=(2,)))
    assert p.reason is PendingReason.LEADER_OFFLINE and p.offline_replicas == (2,)
    assert row.reason is StuckReason.MARKERS_PENDING
    assert row.action.startswith("bring broker 2 back or reassign orders-1 to live brokers")


def test_a_leader_the_metadata_still_names_on_a_stopped_broker_is_offline_too() -> None:
    row, p = one_pending(rules.LeaderView(2, online=False, offline_replicas=(2,)))
    assert (p.leader, p.reason, p.offline_replicas) == (2, PendingReason.LEADER_OFFLINE, (2,))
    assert row.action.startswith("bring broker 2 back")


def test_the_leader_still_showing_the_transaction_open_means_move_the_coordinator() -> None:
    row, p = one_pending(rules.LeaderView(1, producer=producer(7, 40, 20 * MIN, epoch=3)))
    assert p.reason is PendingReason.OPEN_TRANSACTION and p.start_offset == 40
    assert "another replica of __transaction_state-17 takes it over" in row.action
    assert row.commands == ("kafka-txn move-coordinator --transactional-id app",)
    # With no other in-sync replica to take it over, the coordinator's broker is restarted instead: no command.
    row, _ = one_pending(rules.LeaderView(1, producer=producer(7, 40, 20 * MIN, epoch=3)),
                         replace(prepared(), movable=False))
    assert row.action.startswith("restart broker 2: __transaction_state-17 has no other in-sync replica")
    assert row.commands == ()


def test_a_marker_that_landed_while_the_coordinator_still_waits_is_rejected_kafka_19999() -> None:
    # TV2: the coordinator's epoch 4 is the marker's; the leader has the producer at 4 with nothing open.
    row, p = one_pending(rules.LeaderView(1, producer=producer(7, -1, 0, epoch=4)))
    assert p.reason is PendingReason.MARKER_REJECTED and "KAFKA-19999" in p.detail
    assert "KAFKA-19999" in row.action and "__transaction_state-17" in row.action
    assert row.commands == ("kafka-txn move-coordinator --transactional-id app",)
    # An older entry with nothing open would take the marker: why it is missing cannot be told.
    _, unknown = one_pending(rules.LeaderView(1, producer=producer(7, -1, 0, epoch=3)))
    assert unknown.reason is None


def test_a_leader_holding_a_newer_coordinator_epoch_fences_the_marker() -> None:
    _, p = one_pending(rules.LeaderView(1, producer=producer(7, 40, 20 * MIN, epoch=3, coordinator_epoch=9)))
    assert p.reason is PendingReason.COORDINATOR_FENCED and "TRANSACTION_COORDINATOR_FENCED" in p.detail


def test_a_leader_that_did_not_answer_gives_no_reason() -> None:
    _, p = one_pending(rules.LeaderView(1, read=False))
    assert p.reason is None and "did not answer" in p.detail


def test_time_in_state_is_exact_from_the_record_else_a_lower_bound() -> None:
    assert rules.time_in_state(prepared(), NOW) == (5 * MIN, "transaction-log")
    # Entered at the latest at start (20 min ago) + timeout (1 min) + the reaper's 10 s.
    assert rules.time_in_state(prepared(entered_ago=None), NOW) == (20 * MIN - MIN - 10_000, "lower-bound")
    ongoing = prepared("Ongoing", entered_ago=None)
    assert rules.time_in_state(ongoing, NOW) == (20 * MIN, "transaction-start")


def test_exactly_the_threshold_is_not_stuck() -> None:
    assert rules.judge_coordinator(prepared(entered_ago=MIN), {}, NOW, MIN) is None
    assert rules.judge_coordinator(prepared(entered_ago=MIN + 1), {}, NOW, MIN) is not None


def test_epoch_exhaustion_says_upgrade_and_how_to_free_each_lso() -> None:
    txn = prepared("Ongoing", epoch=32767, entered_ago=None)
    row = rules.judge_coordinator(txn, {P1: rules.LeaderView(1, producer=producer(7, 40, 20 * MIN, 32767))},
                                    NOW, MIN)
    assert row is not None and row.reason is StuckReason.EPOCH_EXHAUSTED
    assert row.action.startswith("free the LSO now with the abort below (--force: the coordinator still holds the "
                                 "transaction as Ongoing); then the remaining step is a broker upgrade")
    assert "KAFKA-20090" in row.action and "force-terminate" not in row.action  # it fails without the fix
    assert row.commands == ("kafka-txn abort --topic orders --partition 1 --start-offset 40 --force",)


def test_partition_actions_say_exactly_what_to_do() -> None:
    tp = TopicPartition("orders", 3)
    inv = advice.Invocation("kafka-1:9092")
    assert partition_advice.partition_action(HangingReason.NO_TRANSACTIONAL_ID, tp, 50, None).startswith("abort it")
    assert partition_advice.partition_commands(HangingReason.NO_TRANSACTIONAL_ID, tp, 50, inv) == (
        "kafka-txn abort --topic orders --partition 3 --start-offset 50 --bootstrap-server kafka-1:9092",)
    # Live ones: no write (their coordinator, or their external manager, ends them); the command waits for it.
    watch = ("kafka-txn find-hanging --topic orders --partition 3 --watch --count-held "
             "--bootstrap-server kafka-1:9092",)
    assert partition_advice.partition_action(HangingReason.LATE, tp, 50, "app").startswith("wait")
    assert partition_advice.partition_commands(HangingReason.LATE, tp, 50, inv) == watch
    two_pc = partition_advice.partition_action(HangingReason.PREPARED_2PC, tp, 50, "app")
    assert two_pc.startswith("held by its external transaction manager") and "--force" in two_pc
    assert partition_advice.partition_commands(HangingReason.PREPARED_2PC, tp, 50, inv) == watch
    # A scan with its own threshold: the watch repeats it, exactly, so that it sees the row the scan saw.
    assert partition_advice.partition_commands(HangingReason.LATE, tp, 50, inv, 90_500) == (
        "kafka-txn find-hanging --topic orders --partition 3 --max-transaction-timeout 90500ms --watch --count-held "
        "--bootstrap-server kafka-1:9092",)


def test_stalled_groups_are_those_at_or_beyond_the_lso_with_their_lag() -> None:
    offsets = PartitionOffsets(TP, 100, 150)
    committed = [hanging.CommittedOffset("at-lso", "consumer", TP, 100),
                 hanging.CommittedOffset("behind", "consumer", TP, 99),
                 hanging.CommittedOffset("beyond", "consumer", TP, 120),
                 hanging.CommittedOffset("shares", "share", TP, 100),
                 hanging.CommittedOffset("elsewhere", "consumer", OTHER, 100)]
    groups = hanging.stalled_groups(TP, offsets, committed)
    assert groups is not None
    assert [(g.group_id, g.group_type, g.lag) for g in groups] == [
        ("at-lso", "consumer", 50), ("beyond", "consumer", 30), ("shares", "share", 50)]
    assert hanging.stalled_groups(TP, PartitionOffsets(TP, None, 150), committed) is None


def test_the_last_owner_is_the_newest_record_naming_the_producer_id() -> None:
    records = [hanging.Ownership("a", 7, 10), hanging.Ownership("b", 7, 30), hanging.Ownership("c", 8, 99),
               hanging.Ownership("d", 7, 30)]
    assert hanging.last_known_owner(7, records) == "b"  # ties: the lowest id, so the answer is stable
    assert hanging.last_known_owner(9, records) is None
