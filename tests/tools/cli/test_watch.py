"""find-hanging --watch (cli/watch.py) over scripted scans: what appeared, what was resolved, when it is clear;
for a person on a terminal and as JSON lines. Time is the test's (clock and sleep injected)."""

from __future__ import annotations

import io
import json
from dataclasses import replace

from kafka_txn_tools.admin.scan import ScanReport
from kafka_txn_tools.cli.watch import Watch, iso
from kafka_txn_tools.models import HangingReason, HangingTransaction, ProducerState, ScanError, TopicPartition

NOW = 1_700_000_000_000
ABORT = "kafka-txn abort --topic orders --partition 1 --start-offset 40 --bootstrap-server k:9092"


def hanging(partition: int = 1, reason: HangingReason = HangingReason.TRANSACTION_NOT_ONGOING,
            commands: tuple[str, ...] = (ABORT,)) -> HangingTransaction:
    return HangingTransaction(TopicPartition("orders", partition), ProducerState(7, 0, 0, NOW, 0, 40), reason,
                              "detail", 1, transactional_id="app", action="abort it", commands=commands)


def report(*rows: HangingTransaction, partial: bool = False) -> ScanReport:
    return ScanReport(results=list(rows), errors=[ScanError("BROKER_UNREACHABLE", "down")] if partial else [])


def watch(reports: list[ScanReport], json_lines: bool, count_held: bool = False,
          width: int | None = None) -> tuple[int, str, list[float]]:
    out, pauses, scans = io.StringIO(), [], iter(reports)
    clock = iter(range(NOW, NOW + 10_000_000, 10_000))
    code = Watch(lambda: next(scans), 10.0, out, json_lines, count_held, clock=lambda: next(clock),
                 sleep=pauses.append, width=width).run()
    return code, out.getvalue(), pauses


def test_on_a_terminal_it_says_what_appeared_with_its_commands_and_what_was_resolved() -> None:
    code, text, pauses = watch([report(hanging()), report(hanging(), hanging(2)), report()], json_lines=False)
    assert code == 0 and pauses == [10.0, 10.0]
    assert text.splitlines() == [
        f"{iso(NOW)}  scan 1: 1 to resolve",
        "  + orders-1 producer 7 from offset 40: transaction-not-ongoing (app)",
        "    do: abort it",
        "    run:",
        f"      {ABORT}",
        f"{iso(NOW + 10_000)}  scan 2: 2 to resolve",
        "  + orders-2 producer 7 from offset 40: transaction-not-ongoing (app)",
        "    do: abort it",
        "    run:",
        f"      {ABORT}",
        f"{iso(NOW + 20_000)}  scan 3: 0 to resolve",
        "  - resolved: orders-1 producer 7 from offset 40: transaction-not-ongoing (app)",
        "  - resolved: orders-2 producer 7 from offset 40: transaction-not-ongoing (app)",
        f"{iso(NOW + 30_000)}  clear: nothing left to resolve after 3 scans (2 resolved)"]


def test_in_a_pipe_it_writes_json_lines() -> None:
    code, text, _ = watch([report(hanging()), report()], json_lines=True)
    events = [json.loads(line) for line in text.splitlines()]
    assert code == 0
    assert [(e["round"], e["event"]) for e in events] == [
        (1, "appeared"), (1, "scan"), (2, "resolved"), (2, "scan"), (2, "clear")]
    assert events[0]["row"]["commands"] == [ABORT] and events[1]["to_resolve"] == 1
    assert events[-1] == {"time": iso(NOW + 40_000), "round": 2, "event": "clear", "scans": 2, "resolved": 1,
                          "held_by_live_transactions": 0}


def test_a_partial_scan_is_never_clear_and_live_rows_do_not_hold_it_unless_counted() -> None:
    late = hanging(3, HangingReason.LATE, ())
    code, text, pauses = watch([report(partial=True), report(late)], json_lines=False)
    assert code == 0 and len(pauses) == 1  # the partial scan went on; the live row alone is clear
    assert "(partial: some brokers did not answer)" in text
    assert text.splitlines()[-1].endswith("clear: nothing left to resolve after 2 scans (0 resolved); 1 held by "
                                          "live transactions remain (not counted)")
    code, _, pauses = watch([report(late), report(late), report()], json_lines=True, count_held=True)
    assert code == 0 and len(pauses) == 2  # --count-held: it waits for the live one to end too


def test_on_a_narrow_terminal_the_prose_wraps_and_the_commands_stay_whole() -> None:
    long = replace(hanging(), action="abort it: " + "no coordinator will ever write the marker that ends it " * 3)
    _, text, _ = watch([report(long), report()], json_lines=False, width=40)
    lines = text.splitlines()
    assert f"      {ABORT}" in lines
    assert all(len(line) <= 40 for line in lines if ABORT not in line and " " in line.strip()[:40])
