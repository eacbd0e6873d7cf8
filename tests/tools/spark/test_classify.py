"""The sweep's classification on plain rows, no Spark: the cases the generated sets never produce (unknown
values follow SQL: they decide nothing)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kafka_txn_broker.formats.transactions import LATE_TRANSACTION_BUFFER_MS
from kafka_txn_tools.models import HangingReason as R
from kafka_txn_tools.spark import classify as C

NOW = 1_700_000_000_000
TIMEOUT = 900_000
PARAMS = C.SweepParams(NOW, TIMEOUT, include_late=True)
OLD = NOW - TIMEOUT - 60_000


def open_row(**fields: Any) -> C.OpenRow:
    row = C.OpenRow(topic="t", partition=0, broker_id=1, is_leader=True, producer_id=1, producer_epoch=2,
                    coordinator_epoch=0, start_offset=10, last_timestamp_ms=OLD, snapshot_offset=None,
                    capture_time_ms=NOW, source="describe-producers")
    return replace(row, **fields)


def replica(broker: int = 1, **fields: Any) -> C.Replica:
    return replace(C.Replica("t", 0, broker, True, NOW, C.MAX_LONG), **fields)


def coordinator(**fields: Any) -> C.Coordinator:
    return replace(C.Coordinator(1, "tid", 1, "Ongoing", 2, (("t", 0),)), **fields)


def test_partition_entries_with_unknown_fields_decide_nothing():
    row = open_row()
    assert C.reason(row, coordinator(partitions=(("u", 0),))) == R.PARTITION_NOT_IN_TRANSACTION
    assert C.reason(row, coordinator(partitions=((None, 0),))) == C.LATE  # might be this one
    assert C.reason(row, coordinator(partitions=((None, 1),))) == R.PARTITION_NOT_IN_TRANSACTION  # cannot be
    assert C.reason(row, coordinator(partitions=((None, None), ("t", 0)))) == C.LATE


def test_an_unknown_epoch_is_no_mismatch():
    assert C.reason(open_row(producer_epoch=None), coordinator(producer_epoch=0)) == C.LATE
    assert C.reason(open_row(), coordinator(producer_epoch=None)) == C.LATE
    assert C.reason(open_row(), coordinator(producer_epoch=1)) == R.EPOCH_MISMATCH


def test_several_ids_unknown_first_then_live_then_by_name():
    row = open_row()
    empty = coordinator(transactional_id="a", state="Empty", partitions=())
    live = coordinator(transactional_id="z")
    unknown = coordinator(transactional_id="m", partitions=None)
    assert C.decide(row, [empty, live]) == (live, C.LATE)
    assert C.decide(row, [empty, live, unknown]) == (unknown, C.UNKNOWN)
    fenced = coordinator(transactional_id="0", producer_epoch=1)
    assert C.decide(row, [empty, fenced]) == (fenced, R.EPOCH_MISMATCH)
    assert C.decide(row, []) == (None, C.NO_ID)


def test_leader_without_flags_highest_offset_then_latest_capture_unknown_last():
    replicas = [
        replica(1, is_leader=None, capture=None, offset=5),
        replica(2, is_leader=None, capture=NOW - 1, offset=5),
        replica(3, is_leader=False, capture=NOW, offset=9),
    ]
    assert C.leaders(replicas)[("t", 0)] == C.Leader("t", 0, 2, True)
    assert C.leaders([*replicas, replica(4, is_leader=True, offset=1)])[("t", 0)] == C.Leader("t", 0, 4, False)


def test_fresh_keeps_the_freshest_observation_and_the_lowest_start_offset():
    replicas = [replica(1, capture=NOW, offset=C.MAX_LONG)]
    stale = open_row(capture_time_ms=NOW - 1, snapshot_offset=100, producer_id=7)
    unknown_capture = open_row(capture_time_ms=None, producer_id=8)
    later, earlier = open_row(start_offset=20, producer_id=9), open_row(start_offset=15, producer_id=9)
    fresh = C.fresh_open([stale, unknown_capture, later, earlier], replicas)
    assert fresh == [earlier]


def test_metric_needs_a_positive_timestamp_and_counts_per_leader():
    leader_table = C.leaders([replica(1), replica(2, topic="u", is_leader=None)])
    rows = [
        open_row(last_timestamp_ms=NOW - TIMEOUT - LATE_TRANSACTION_BUFFER_MS - 1),
        open_row(topic="u", broker_id=2, last_timestamp_ms=0),
    ]
    late = C.late_partitions(rows, leader_table, PARAMS)
    assert [(p.topic, p.metric_late) for p in late] == [("t", True), ("u", False)]
    assert C.late_partition_counts(late) == [C.BrokerCounts(1, 1, 1, 0), C.BrokerCounts(2, 0, 1, 1)]


def test_analyze_end_to_end_on_plain_rows():
    replicas = [replica(1), replica(2, is_leader=False), replica(3, is_leader=False)]
    rows = [open_row(broker_id=1), open_row(broker_id=2, is_leader=False)]  # missing on broker 3
    analysis = C.analyze(rows, replicas, [coordinator(state="CompleteAbort", partitions=())], PARAMS)
    [verdict] = analysis.verdicts
    assert (verdict["verdict"], verdict["reason"]) == ("hanging", R.TRANSACTION_NOT_ONGOING)
    assert verdict["open_on_brokers"] == "1,2"
    assert (verdict["divergence"], verdict["missing_on_brokers"], verdict["duration_min"]) == (C.LEADER_ONLY, "3", 16)
    assert list(verdict) == C.OUTPUT_COLUMNS
    assert C.reported(analysis.verdicts, include_late=False) == [verdict]


def test_each_row_carries_find_hangings_action_and_commands_with_the_sweeps_connection_options():
    from kafka_txn_tools.admin.advice import Invocation

    params = replace(PARAMS, invocation=Invocation(profile="prod"))
    replicas = [replica()]
    hanging = C.analyze([open_row()], replicas, [coordinator(state="CompleteAbort", partitions=())], params)
    [row] = hanging.verdicts
    assert row["reason"] == R.TRANSACTION_NOT_ONGOING
    assert row["commands"] == ["kafka-txn abort --topic t --partition 0 --start-offset 10 --profile prod"]
    assert row["action"].startswith("abort it")
    [live] = C.analyze([open_row()], replicas, [coordinator()], params).verdicts
    # Its coordinator ends it: no write, only the watch that waits for that end.
    assert (live["reason"], live["commands"]) == (
        C.LATE, ["kafka-txn find-hanging --topic t --partition 0 --watch --count-held --profile prod"])
    [unknown] = C.analyze([open_row()], replicas, [coordinator(partitions=None)], params).verdicts
    assert unknown["commands"] == [] and "check it on the live cluster" in unknown["action"]
