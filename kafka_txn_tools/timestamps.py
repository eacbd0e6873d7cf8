"""The one spelling of a point in time the tools print: ISO-8601 in UTC, with its age.

Kafka hands out epoch milliseconds (LastTimestamp, TransactionStartTimeMs, capture times); people read
`2024-06-01T12:00:00Z (3h 5m ago)`. Machine formats (JSON, YAML, CSV, plans) keep the milliseconds;
tables, messages and prompts use these. Negative or absent values (Kafka's -1: none) have no spelling:
the caller prints `-`.
"""

from __future__ import annotations

from datetime import UTC, datetime

from kafka_txn_tools.durations import format_duration_ms


def iso_utc(ms: int) -> str:
    """`2024-06-01T12:00:00Z`; milliseconds only when there are some (`...:00.250Z`)."""
    moment = datetime.fromtimestamp(ms / 1000, tz=UTC)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    if ms % 1000:
        text += f".{ms % 1000:03d}"
    return text + "Z"


def age(ms: int, now_ms: int) -> str:
    """`3h 5m ago`, or `in 5s` for a time ahead of the tool's clock (clock skew between hosts)."""
    delta = now_ms - ms
    return f"{format_duration_ms(delta)} ago" if delta >= 0 else f"in {format_duration_ms(-delta)}"


def with_age(ms: int | None, now_ms: int) -> str | None:
    """`2024-06-01T12:00:00Z (3h 5m ago)`; None for no time (None, or Kafka's -1)."""
    if ms is None or ms < 0:
        return None
    return f"{iso_utc(ms)} ({age(ms, now_ms)})"
