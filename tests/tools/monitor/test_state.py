"""The monitor's snapshot after each kind of scan (monitor/state.py): complete replaces, partial keeps what it
could not see (stale), failed keeps everything (stale); errors counted by cause; what the findings hold."""

from __future__ import annotations

from dataclasses import replace

from kafka_txn_tools.monitor.state import (
    COMPLETE,
    FAILED,
    PARTIAL,
    ScanOutcome,
    Snapshot,
    after_scan,
    held_groups,
    held_partitions,
)
from tests.tools.history.test_incidents import coordinator_row, partition_row

START = Snapshot("kafka-1:9092", 30.0, 0)


def outcome(result: str, rows: list[dict] = (), t: int = 1000, **causes: int) -> ScanOutcome:  # type: ignore[assignment]
    doc = None if result == FAILED else {"hanging": list(rows)}
    return ScanOutcome(t, 0.5, result, tuple(rows), doc, causes, "why" if result != COMPLETE else None)


def test_a_complete_scan_replaces_the_findings_and_is_the_last_good_one() -> None:
    one = after_scan(START, outcome(COMPLETE, [partition_row(start=1), partition_row(start=2)]))
    two = after_scan(one, outcome(COMPLETE, [partition_row(start=2)], t=2000))
    assert [f.row["start_offset"] for f in two.findings] == [2]
    assert (two.last_good_ms, two.stale, two.stale_keys, two.scans[COMPLETE]) == (2000, False, frozenset(), 2)


def test_a_partial_scan_keeps_what_it_did_not_see_as_stale() -> None:
    one = after_scan(START, outcome(COMPLETE, [partition_row(start=1), partition_row(start=2)]))
    two = after_scan(one, outcome(PARTIAL, [partition_row(start=2), partition_row(start=3)], t=2000,
                                  BROKER_UNREACHABLE=2))
    assert sorted(f.row["start_offset"] for f in two.findings) == [1, 2, 3]
    assert [f.row["start_offset"] for f in two.findings if two.is_stale(f)] == [1]
    assert two.stale and two.last_good_ms == 1000 and two.errors == {"BROKER_UNREACHABLE": 2}
    assert two.document == {"hanging": [partition_row(start=2), partition_row(start=3)]}  # that scan's, as printed


def test_a_partial_scan_forgets_a_partition_finding_none_of_its_errors_could_hide() -> None:
    """One broker down or one partition refused for days: what ended elsewhere meanwhile must go (else every
    finding of those days stays, stale, in memory and in the metrics)."""
    from kafka_txn_tools.history.incidents import Unread

    rows = [partition_row(partition=1, start=1, brokers=[0, 1]), partition_row(partition=2, start=2, brokers=[0, 2]),
            partition_row(partition=3, start=3, brokers=[0, 1]), coordinator_row()]
    one = after_scan(START, outcome(COMPLETE, rows))
    down = Unread(frozenset({("orders", 3)}), frozenset({2}), anywhere=False)  # orders-3 refused, broker 2 down
    two = after_scan(one, replace(outcome(PARTIAL, [], t=2000, BROKER_UNREACHABLE=1), unread=down))
    # orders-1: read on 0 and 1, not open: gone. orders-2: on broker 2, orders-3: refused, the coordinator's: kept.
    assert sorted(f.key for f in two.findings) == sorted(f.key for f in one.findings[1:])
    assert two.stale_keys == {f.key for f in two.findings}
    anywhere = after_scan(one, outcome(PARTIAL, [], t=2000, REQUEST_TIMED_OUT=1))  # an error naming nothing
    assert len(anywhere.findings) == 4


def test_a_failed_scan_keeps_everything_stale_and_counts_its_cause() -> None:
    one = after_scan(START, outcome(COMPLETE, [partition_row()]))
    two = after_scan(one, outcome(FAILED, t=2000, SASL_AUTHENTICATION_FAILED=1))
    three = after_scan(two, outcome(FAILED, t=3000, SASL_AUTHENTICATION_FAILED=1))
    assert len(three.findings) == 1 and three.is_stale(three.findings[0])
    assert three.document == one.document and three.last_good_ms == 1000
    assert three.errors == {"SASL_AUTHENTICATION_FAILED": 2} and three.scans == {COMPLETE: 1, PARTIAL: 0, FAILED: 2}
    back = after_scan(three, outcome(COMPLETE, [], t=4000))
    assert back.findings == () and not back.stale


def test_held_partitions_and_groups() -> None:
    # Two transactions on one partition share its LSO (the earlier one's start).
    rows = [partition_row(partition=1, start=40),
            partition_row(partition=1, pid=8, start=45, lso=40, high_watermark=70),
            partition_row(partition=2, start=5, lso=None), coordinator_row()]
    snap = after_scan(START, outcome(COMPLETE, rows))
    held = held_partitions(snap.findings)
    assert [(h.topic, h.partition, h.lso_lag) for h in held] == [("orders", 1, 30), ("orders", 2, None),
                                                                 ("payments", 0, None)]
    assert held[0].held_ms == 20 * 60_000 and held[2].held_ms == 5 * 60_000
    groups = held_groups(snap.findings)
    assert {(g.group, g.partition, g.producer_id) for g in groups} == {("readers", 1, 7), ("readers", 1, 8),
                                                                        ("readers", 2, 7)}
