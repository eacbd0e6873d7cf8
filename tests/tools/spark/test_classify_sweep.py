"""The sweep's rules, each at its boundary, on plain rows (no Spark): the broker metric's lateness
(PartitionsWithLateTransactionsCount: the partition's oldest open transaction, `last_timestamp > 0` and
older than the max timeout plus 5 minutes, counted per leader), find-hanging's strict timeout per
producer, replica divergence, the freshest observation per replica, the verdict row's every field,
what the report keeps, and the coordinator-side stuck rows the sweep shares with find-hanging.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kafka_txn_broker.formats.transactions import LATE_TRANSACTION_BUFFER_MS
from kafka_txn_tools.models import HangingReason as R
from kafka_txn_tools.models import PendingReason, StuckReason, TopicPartition
from kafka_txn_tools.spark import classify as C

NOW = 1_700_000_000_000
TIMEOUT = 900_000
PARAMS = C.SweepParams(NOW, TIMEOUT, include_late=True)
THRESHOLD = TIMEOUT + LATE_TRANSACTION_BUFFER_MS  # the metric's


def open_row(**fields: Any) -> C.OpenRow:
    row = C.OpenRow(topic="t", partition=0, broker_id=1, is_leader=True, producer_id=1, producer_epoch=2,
                    coordinator_epoch=0, start_offset=10, last_timestamp_ms=NOW - TIMEOUT - 90_123,
                    snapshot_offset=None, capture_time_ms=NOW, source="describe-producers")
    return replace(row, **fields)


def replica(broker: int = 1, **fields: Any) -> C.Replica:
    return replace(C.Replica("t", 0, broker, True, NOW, C.MAX_LONG), **fields)


def coordinator(**fields: Any) -> C.Coordinator:
    return replace(C.Coordinator(1, "tid", 4, "Ongoing", 2, (("t", 0),)), **fields)


# ---- verdicts and what the report keeps ----------------------------------------------------------------
def test_each_reason_has_its_verdict() -> None:
    for reason in C.REASONS:
        assert C.verdict_of(reason) == "hanging"
    assert C.verdict_of(R.LATE.value) == "late"
    assert C.verdict_of(R.PREPARED_2PC.value) == "late"
    assert C.verdict_of(C.UNKNOWN) == "unverified"


def test_the_report_keeps_hanging_and_unverified_and_late_only_on_request_in_partition_order() -> None:
    rows = [{"verdict": v, "topic": t, "partition": p, "start_offset": s, "producer_id": pid}
            for v, t, p, s, pid in (("late", "t", 0, 5, 1), ("unverified", "t", 1, 0, 1), ("hanging", "t", 0, 9, 2),
                                    ("hanging", "t", 0, 9, 1), ("hanging", "a", 3, 0, 1))]
    kept = C.reported(rows, include_late=False)
    assert [(r["topic"], r["partition"], r["start_offset"], r["producer_id"], r["verdict"]) for r in kept] == [
        ("a", 3, 0, 1, "hanging"), ("t", 0, 9, 1, "hanging"), ("t", 0, 9, 2, "hanging"), ("t", 1, 0, 1, "unverified")]
    assert [r["verdict"] for r in C.reported(rows, include_late=True)] == [
        "hanging", "late", "hanging", "hanging", "unverified"]


def test_a_verdict_row_carries_the_deciding_coordinator_and_the_leaders_view() -> None:
    replicas = [replica(1), replica(2, is_leader=False)]
    rows = [open_row(), open_row(broker_id=2, is_leader=False)]
    fenced = coordinator(producer_epoch=1, coordinator_id=4, timeout_ms=60_000)
    owners = [C.Ownership("tid", 1, NOW)]  # the id owns the producer: no "last known" owner to name
    [row] = C.analyze(rows, replicas, [fenced], PARAMS, owners=owners).verdicts
    assert {k: row[k] for k in ("verdict", "reason", "transactional_id", "coordinator_id", "coordinator_state",
                                "coordinator_producer_epoch", "leader_broker_id", "leader_inferred",
                                "open_on_brokers", "age_ms", "duration_min", "last_known_transactional_id",
                                "divergence", "missing_on_brokers")} == {
        "verdict": "hanging", "reason": R.EPOCH_MISMATCH.value, "transactional_id": "tid", "coordinator_id": 4,
        "coordinator_state": "Ongoing", "coordinator_producer_epoch": 1, "leader_broker_id": 1,
        "leader_inferred": False, "open_on_brokers": "1,2", "age_ms": TIMEOUT + 90_123,
        "duration_min": (TIMEOUT + 90_123) // 60_000, "last_known_transactional_id": None,
        "divergence": None, "missing_on_brokers": None}
    assert row["duration_min"] == 16 and isinstance(row["duration_min"], int)


def test_no_transactional_id_names_the_last_known_owner() -> None:
    owners = [C.Ownership("old-app", 1, NOW - 10 * TIMEOUT), C.Ownership("other", 2, NOW)]
    [row] = C.analyze([open_row()], [replica(1)], [], PARAMS, owners=owners).verdicts
    assert (row["reason"], row["transactional_id"], row["last_known_transactional_id"]) == (
        C.NO_ID, None, "old-app")
    assert (row["coordinator_id"], row["coordinator_state"], row["coordinator_producer_epoch"]) == (None, None, None)


def test_find_hangings_timeout_is_strict() -> None:
    at = open_row(last_timestamp_ms=NOW - TIMEOUT)
    past = open_row(producer_id=2, start_offset=20, last_timestamp_ms=NOW - TIMEOUT - 1)
    verdicts = C.analyze([at, past], [replica(1)], [], PARAMS).verdicts
    assert [r["producer_id"] for r in verdicts] == [2]


def test_verdict_rows_come_in_partition_then_offset_order() -> None:
    rows = [open_row(producer_id=5, start_offset=30), open_row(producer_id=6, start_offset=20)]
    verdicts = C.analyze(rows, [replica(1)], [], PARAMS).verdicts
    assert [(r["start_offset"], r["producer_id"]) for r in verdicts] == [(20, 6), (30, 5)]


# ---- the broker metric's lateness ------------------------------------------------------------------------
def test_the_metric_judges_the_oldest_transaction_of_the_partition_only() -> None:
    leader_table = C.leaders([replica(1)])
    young_first = open_row(producer_id=7, start_offset=5, last_timestamp_ms=NOW - 1000)
    old_later = open_row(producer_id=8, start_offset=6, last_timestamp_ms=NOW - THRESHOLD - 1)
    [late] = C.late_partitions([old_later, young_first], leader_table, PARAMS)
    assert (late.topic, late.partition, late.oldest_producer_id, late.metric_late) == ("t", 0, 7, False)
    # Two transactions from one offset (as the inputs may show): the lower producer id is the oldest.
    tie = open_row(producer_id=3, start_offset=5, last_timestamp_ms=NOW - THRESHOLD - 1)
    [late] = C.late_partitions([young_first, tie], leader_table, PARAMS)
    assert (late.oldest_producer_id, late.metric_late) == (3, True)


def test_the_metric_boundary_is_the_timeout_plus_five_minutes_and_a_timestamp_above_zero() -> None:
    leader_table = C.leaders([replica(1)])

    def late(last_timestamp_ms: int, now_ms: int = NOW) -> bool:
        params = replace(PARAMS, now_ms=now_ms)
        return C.late_partitions([open_row(last_timestamp_ms=last_timestamp_ms)], leader_table, params)[0].metric_late

    assert not late(NOW - THRESHOLD)
    assert late(NOW - THRESHOLD - 1)
    assert late(1, now_ms=THRESHOLD + 2)  # any positive timestamp counts
    assert not late(0, now_ms=THRESHOLD + 2)


def test_the_metric_counts_accumulate_per_leader() -> None:
    leader_table = C.leaders([replica(1), replica(1, partition=1, is_leader=None), replica(1, partition=2)])
    rows = [open_row(last_timestamp_ms=NOW - THRESHOLD - 1),
            open_row(partition=1, last_timestamp_ms=NOW - THRESHOLD - 1),
            open_row(partition=2, last_timestamp_ms=NOW - 1)]
    late = C.late_partitions(rows, leader_table, PARAMS)
    assert [(p.partition, p.leader_inferred, p.oldest_producer_id) for p in late] == [(0, False, 1), (1, True, 1),
                                                                                     (2, False, 1)]
    assert C.late_partition_counts(late) == [C.BrokerCounts(1, 2, 3, 1)]
    metric = [r["metric_late"] for r in C.analyze(rows, [replica(1), replica(1, partition=1, is_leader=None),
                                                         replica(1, partition=2)], [], PARAMS).verdicts]
    assert metric == [True, True]  # the third is not past find-hanging's timeout


def test_metric_late_belongs_to_the_oldest_producer_only() -> None:
    rows = [open_row(producer_id=1, start_offset=10, last_timestamp_ms=NOW - THRESHOLD - 1),
            open_row(producer_id=2, start_offset=50, last_timestamp_ms=NOW - THRESHOLD - 1)]
    verdicts = C.analyze(rows, [replica(1)], [], PARAMS).verdicts
    assert [(r["producer_id"], r["metric_late"]) for r in verdicts] == [(1, True), (2, False)]


# ---- replicas ------------------------------------------------------------------------------------------
def test_divergence_follower_only_and_leader_only_for_transactions_past_the_timeout() -> None:
    replicas = [replica(1), replica(2, is_leader=False), replica(3, is_leader=False)]
    on_follower = open_row(broker_id=2, is_leader=False, producer_id=5, start_offset=40)
    on_leader = open_row(broker_id=1, producer_id=6, start_offset=50)
    also_on_2 = open_row(broker_id=2, is_leader=False, producer_id=6, start_offset=50)
    everywhere = [open_row(broker_id=b, is_leader=b == 1, producer_id=7, start_offset=60) for b in (1, 2, 3)]
    at_timeout = open_row(broker_id=2, is_leader=False, producer_id=8, start_offset=70, last_timestamp_ms=NOW - TIMEOUT)
    fresh = C.fresh_open([on_follower, on_leader, also_on_2, *everywhere, at_timeout], replicas)
    found = C.divergence(fresh, C.leaders(replicas), replicas, PARAMS)
    assert found == [C.Divergence("t", 0, 5, 40, C.FOLLOWER_ONLY, 1, (2,)),
                     C.Divergence("t", 0, 6, 50, C.LEADER_ONLY, 1, (3,))]


def test_a_partition_with_no_known_leader_has_no_divergence() -> None:
    row = open_row(topic="gone", broker_id=2)
    assert C.divergence([row], C.leaders([replica(1)]), [replica(1)], PARAMS) == []


def test_only_each_replicas_freshest_observation_counts() -> None:
    replicas = [replica(1, capture=NOW, offset=500)]
    current = open_row(snapshot_offset=500, producer_id=1)
    older_snapshot = open_row(snapshot_offset=400, producer_id=2)
    live_view = open_row(snapshot_offset=None, producer_id=3)  # a live row, but this replica's freshest is a snapshot
    assert C.fresh_open([current, older_snapshot, live_view], replicas) == [current]
    # One producer seen twice in the freshest observation: the lower start offset, then the source name.
    a, b = open_row(source="b-dump", start_offset=10), open_row(source="a-dump", start_offset=10)
    assert C.fresh_open([a, b], [replica(1)]) == [b]
    assert C.fresh_open([b, a], [replica(1)]) == [b]
    # Different producers on one replica are both kept.
    assert len(C.fresh_open([open_row(producer_id=1), open_row(producer_id=2)], [replica(1)])) == 2


def test_the_inferred_leader_ranks_the_highest_offset_then_the_latest_capture() -> None:
    low, high = replica(1, is_leader=None, offset=5), replica(2, is_leader=None, offset=9)
    assert C.leaders([low, high])[("t", 0)].leader_broker_id == 2
    assert C.leaders([high, low])[("t", 0)].leader_broker_id == 2
    early, late = replica(1, is_leader=None, capture=0, offset=5), replica(2, is_leader=None, capture=1, offset=5)
    assert C.leaders([early, late])[("t", 0)].leader_broker_id == 2
    assert C.leaders([late, early])[("t", 0)].leader_broker_id == 2
    follower, unflagged = replica(1, is_leader=False, offset=9), replica(2, is_leader=None, offset=5)
    assert C.leaders([follower, unflagged])[("t", 0)] == C.Leader("t", 0, 2, True)


def test_analyze_returns_every_part() -> None:
    replicas = [replica(1), replica(2, is_leader=False)]
    analysis = C.analyze([open_row(broker_id=2, is_leader=False)], replicas, [], PARAMS)
    assert analysis.leaders == {("t", 0): C.Leader("t", 0, 1, False)}
    assert analysis.late == []
    assert [d.kind for d in analysis.divergence] == [C.FOLLOWER_ONLY]


# ---- coordinator-side stuck rows in the sweep ---------------------------------------------------------------
def test_stuck_rows_from_the_sweep_skip_rows_without_state_and_come_in_id_order() -> None:
    prepared = dict(state="PrepareCommit", timeout_ms=60_000, start_time_ms=NOW - 30 * 60_000,
                    last_update_ms=NOW - 20 * 60_000, partitions=(("t", 0), (None, 3), ("t", None), ("u", 1)))
    rows = [coordinator(transactional_id="z", producer_id=1, coordinator_id=3, **prepared),
            coordinator(transactional_id="no-state", state=None),
            coordinator(transactional_id="no-epoch", producer_epoch=None, **prepared),
            coordinator(transactional_id="a", producer_id=1, coordinator_id=2, **prepared)]
    leader_rows = [open_row(producer_id=1, producer_epoch=7, start_offset=40)]
    stuck = C.stuck(rows, C.leaders([replica(1)]), C.fresh_open(leader_rows, [replica(1)]), PARAMS)
    assert [s.transactional_id for s in stuck] == ["a", "z"]
    a = stuck[0]
    assert (a.reason, a.coordinator_id, a.producer_id, a.state) == (StuckReason.MARKERS_PENDING, 2, 1,
                                                                    "PrepareCommit")
    assert [(p.partition, p.leader, p.reason) for p in a.pending_partitions] == [
        (TopicPartition("t", 0), 1, PendingReason.OPEN_TRANSACTION),
        (TopicPartition("u", 1), None, PendingReason.LEADER_UNKNOWN)]
    assert a.pending_partitions[0].detail == ("broker 1 still shows producer 1 epoch 7 with a transaction open from "
                                              "offset 40")


def test_a_partition_whose_leader_holds_nothing_open_had_its_marker_in_the_sweep() -> None:
    # The sweep reads the record's partitions, not the coordinator's waiting list: nothing open on the
    # leader means the marker landed there.
    prepared = coordinator(state="PrepareAbort", timeout_ms=60_000, last_update_ms=NOW - 20 * 60_000,
                           partitions=(("t", 0),))
    [row] = C.stuck([prepared], C.leaders([replica(1)]), [], PARAMS)
    assert (row.reason, row.pending_partitions) == (StuckReason.COMPLETION_PENDING, ())


def test_a_coordinator_row_without_partitions_cannot_be_told() -> None:
    # DescribeTransactions failed for it (a dump writes no partitions): the state is unknown, never hanging.
    assert C.reason(open_row(), coordinator(partitions=None)) == C.UNKNOWN
    assert C.verdict_of(C.reason(open_row(), coordinator(partitions=None))) == "unverified"


def test_a_transaction_open_on_the_leader_only_is_missing_on_every_follower() -> None:
    replicas = [replica(1), replica(2, is_leader=False), replica(3, is_leader=False)]
    fresh = C.fresh_open([open_row(broker_id=1)], replicas)
    assert C.divergence(fresh, C.leaders(replicas), replicas, PARAMS) == [
        C.Divergence("t", 0, 1, 10, C.LEADER_ONLY, 1, (2, 3))]


def test_an_epoch_the_input_lacks_is_shown_as_no_epoch() -> None:
    prepared = coordinator(state="PrepareCommit", timeout_ms=60_000, last_update_ms=NOW - 20 * 60_000)
    fresh = C.fresh_open([open_row(producer_epoch=None, start_offset=40)], [replica(1)])
    [row] = C.stuck([prepared], C.leaders([replica(1)]), fresh, PARAMS)
    assert row.pending_partitions[0].detail == ("broker 1 still shows producer 1 epoch -1 with a transaction open "
                                                "from offset 40")
