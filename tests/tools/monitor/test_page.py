"""The status page (monitor/page.py): a finding's commands (or its action's), stale findings marked, the
chart of held partitions with failed scans as gaps, incidents and how they ended; nothing from elsewhere."""

from __future__ import annotations

import re

from kafka_txn_tools.history.store import Incident, ScanPoint
from kafka_txn_tools.monitor.page import commands_of, held_chart, render
from kafka_txn_tools.monitor.state import COMPLETE, FAILED, PARTIAL, ScanOutcome, Snapshot, after_scan
from tests.tools.history.test_incidents import partition_row

NOW = 1_700_000_000_000
START = Snapshot("prod (kafka-1:9092)", 30.0, NOW)


def test_a_finding_shows_its_commands_or_the_command_its_action_spells() -> None:
    assert commands_of({"action": "kafka-txn abort --topic t --partition 1 --start-offset 3 (why)"}) == [
        "kafka-txn abort --topic t --partition 1 --start-offset 3 (why)"]
    both = ["kafka-txn a", "kafka-txn b"]
    assert commands_of({"action": "prose", "commands": both}) == both
    assert commands_of({}) == []


def test_held_now_with_stale_ones_marked_and_incidents() -> None:
    rows = [partition_row(start=1, commands=["kafka-txn abort --topic orders --partition 1 --start-offset 1 -b x"]),
            partition_row(start=2, action="kafka-txn abort --topic orders --partition 1 --start-offset 2 (why)")]
    snap = after_scan(START, ScanOutcome(NOW, 0.1, COMPLETE, tuple(rows), {"hanging": rows}))
    snap = after_scan(snap, ScanOutcome(NOW + 30_000, 0.1, PARTIAL, tuple(rows[1:]), {"hanging": rows[1:]},
                                        failure="broker 2 is unreachable"))
    ended = Incident(1, "c", "k", "partition", "transaction-not-ongoing", "orders", 0, 5, "app", NOW - 90_000,
                     NOW - 60_000, NOW - 30_000, NOW - 30_000, "audited write", "alice",
                     "kafka-txn abort --topic orders --partition 0 --start-offset 9", 10)
    html = render(snap, [ended], [ScanPoint(NOW, COMPLETE, 2), ScanPoint(NOW + 30_000, PARTIAL, 1)], NOW + 40_000)
    assert "last scan partial</span>: broker 2 is unreachable" in html
    assert "<code>kafka-txn abort --topic orders --partition 1 --start-offset 1 -b x</code>" in html
    assert "<code>kafka-txn abort --topic orders --partition 1 --start-offset 2 (why)</code>" in html
    assert len(re.findall(r'<tr class="stale">', html)) == 1 and "(not seen by the last scan)" in html
    assert "kafka-txn abort --topic orders --partition 0 --start-offset 9 by alice" in html
    assert not re.search(r'(src|href)="(https?:)?//', html) and "<script" not in html


def test_nothing_held_and_a_chart_with_gaps() -> None:
    html = render(START, [], [], NOW)
    assert "Nothing is held." in html and "first scan running" in html and "No incidents recorded" in html
    chart = held_chart([ScanPoint(NOW - 3_600_000, COMPLETE, 0), ScanPoint(NOW - 1_800_000, FAILED, None),
                        ScanPoint(NOW - 600_000, COMPLETE, 3), ScanPoint(NOW - 90_000_000, COMPLETE, 9)],
                       NOW, 86_400_000)
    assert chart.count('stroke="#b00020"') == 1  # the failed scan, a tick
    [path] = re.findall(r'<path d="([^"]+)"', chart)
    assert path.startswith("M") and path.count("V") == 1  # two points in the window (the old one is out)
    assert ">3</text>" in chart  # the peak labels the axis
