"""The tools' one spelling of durations and of points in time (durations.py, timestamps.py): pure functions."""

from __future__ import annotations

import pytest

from kafka_txn_tools.durations import format_duration_ms, parse_duration_ms
from kafka_txn_tools.timestamps import age, iso_utc, with_age

DAY, HOUR, MIN, SEC = 86_400_000, 3_600_000, 60_000, 1_000


@pytest.mark.parametrize(("ms", "text"), [
    (0, "0ms"), (999, "999ms"), (1_500, "1s 500ms"), (45 * SEC, "45s"), (15 * MIN, "15m"),
    (15 * MIN + 3 * SEC, "15m 3s"), (2 * HOUR, "2h"), (HOUR + 5 * MIN + 7 * SEC, "1h 5m"),
    (2**31 - 1, "24d 20h"), (DAY + 5 * SEC, "1d"), (-5 * SEC, "-5s"),
])
def test_a_duration_reads_as_its_two_largest_units(ms: int, text: str) -> None:
    assert format_duration_ms(ms) == text


@pytest.mark.parametrize("ms", [0, 999, 1_500, 15 * MIN, 2 * HOUR, 3 * DAY, HOUR + 5 * MIN])
def test_each_part_of_a_duration_is_a_duration_the_options_accept(ms: int) -> None:
    # Exact when at most two units are non-zero: the parts add up to the value again.
    assert sum(parse_duration_ms(part) for part in format_duration_ms(ms).split()) == ms


def test_a_timestamp_is_iso_8601_utc_with_milliseconds_only_when_there_are_some() -> None:
    assert iso_utc(0) == "1970-01-01T00:00:00Z"
    assert iso_utc(1_700_000_000_250) == "2023-11-14T22:13:20.250Z"


def test_an_age_says_ago_or_in_for_a_clock_ahead_and_none_has_no_spelling() -> None:
    now = 1_700_000_000_000
    assert age(now - 2 * HOUR, now) == "2h ago" and age(now + 5 * SEC, now) == "in 5s"
    assert with_age(now - 90 * SEC, now) == "2023-11-14T22:11:50Z (1m 30s ago)"
    assert with_age(-1, now) is None and with_age(None, now) is None
