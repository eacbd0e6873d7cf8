"""The sweep's self-contained HTML report: inline CSS and SVG, no scripts, no external assets."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from kafka_txn_broker.formats.transactions import DEFAULT_MAX_TRANSACTION_TIMEOUT_MS

# Age buckets of open transactions, upper bounds in ms; chosen around the 15 min default timeout and
# the metric's 20 min threshold.
AGE_BUCKETS: list[tuple[str, int | None]] = [
    ("< 1 min", 60_000),
    ("1-5 min", 300_000),
    ("5-15 min", 900_000),
    ("15-20 min", 1_200_000),
    ("20-60 min", 3_600_000),
    ("1-6 h", 21_600_000),
    ("6-24 h", 86_400_000),
    ("> 1 day", None),
]

_STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1100px}
h1{font-size:1.5em}h2{font-size:1.15em;margin-top:1.6em}
table{border-collapse:collapse;font-size:.85em}td,th{border:1px solid #ccc;padding:3px 7px;text-align:left}
th{background:#f2f2f2}.hanging{color:#b00020;font-weight:600}.late{color:#a66a00}.muted{color:#777}
.cards{display:flex;gap:1em;flex-wrap:wrap}.card{border:1px solid #ddd;border-radius:6px;padding:.6em 1em}
.card b{display:block;font-size:1.6em}
"""


def bar_chart(
    title: str,
    labels: Sequence[str],
    values: Sequence[int],
    color: str = "#3b6ea8",
    highlight: Sequence[bool] | None = None,
) -> str:
    """A horizontal-axis bar chart as inline SVG."""
    width, height, left, bottom, top = 640, 240, 44, 46, 24
    n = max(len(values), 1)
    peak = max([*values, 1])
    slot = (width - left - 10) / n
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="{escape(title)}"><title>{escape(title)}</title>',
        f'<line x1="{left}" y1="{height - bottom}" x2="{width - 5}" y2="{height - bottom}" stroke="#999"/>',
    ]
    for i, (label, value) in enumerate(zip(labels, values, strict=True)):
        bar_h = (height - bottom - top) * value / peak
        x = left + i * slot + slot * 0.15
        y = height - bottom - bar_h
        fill = "#b00020" if highlight and highlight[i] else color
        parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{slot * 0.7:.1f}" height="{bar_h:.1f}" fill="{fill}"/>')
        parts.append(
            f'<text x="{x + slot * 0.35:.1f}" y="{y - 4:.1f}" font-size="11" text-anchor="middle">{value}</text>'
        )
        parts.append(
            f'<text x="{x + slot * 0.35:.1f}" y="{height - bottom + 16}" font-size="11" '
            f'text-anchor="middle">{escape(label)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    if not rows:
        return '<p class="muted">none</p>'
    head = "".join(f"<th>{escape(c)}</th>" for c in columns)
    body = []
    for row in rows:
        css = escape(str(row.get("verdict", "")))
        cells = "".join(f"<td>{_cell(row.get(c))}</td>" for c in columns)
        body.append(f'<tr class="{css}">{cells}</tr>')
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _cell(value: Any) -> str:
    """A table cell; a list of commands one per line, each whole (<code>, copied as it is)."""
    if value is None:
        return ""
    if isinstance(value, list):
        return "<br>".join(f"<code>{escape(str(v))}</code>" for v in value)
    return escape(str(value))


REPORT_COLUMNS = [
    "topic",
    "partition",
    "producer_id",
    "producer_epoch",
    "start_offset",
    "duration_min",
    "verdict",
    "reason",
    "transactional_id",
    "leader_broker_id",
    "open_on_brokers",
    "divergence",
    "commands",
]


def _when(ms: Any) -> str:
    """The tools' one spelling of a point in time (ISO-8601 UTC); the raw value if it is not epoch ms."""
    from kafka_txn_tools.timestamps import iso_utc

    return iso_utc(int(ms)) if isinstance(ms, int) and ms >= 0 else str(ms)


def _duration(ms: Any) -> str:
    from kafka_txn_tools.durations import format_duration_ms

    return format_duration_ms(int(ms)) if isinstance(ms, int) else str(ms)
STUCK_COLUMNS = ["transactional_id", "state", "reason", "producer_id", "producer_epoch", "detail", "action",
                 "commands"]


def render_report(
    summary: Mapping[str, Any],
    rows: Sequence[Mapping[str, Any]],
    age_histogram: Mapping[str, int],
    row_limit: int = 500,
    stuck: Sequence[Mapping[str, Any]] = (),
) -> str:
    """The whole HTML page from the summary, the reported transactions and the age histogram."""
    counts = summary.get("counts_by_reason", {})
    brokers = summary.get("late_partitions_by_broker", {})
    hanging_by_broker = summary.get("hanging_by_leader_broker", {})
    broker_ids = sorted({*brokers, *hanging_by_broker}, key=lambda b: int(b))
    threshold = summary.get("max_transaction_timeout_ms", DEFAULT_MAX_TRANSACTION_TIMEOUT_MS)
    labels = [label for label, _ in AGE_BUCKETS]
    ages = [int(age_histogram.get(label, 0)) for label in labels]
    late_bucket = [upper is None or upper > threshold for _, upper in AGE_BUCKETS]
    cards = "".join(
        f'<div class="card"><b>{escape(str(value))}</b>{escape(name)}</div>'
        for name, value in (
            ("hanging", summary.get("hanging", 0)),
            ("late but live", summary.get("late_live", 0)),
            ("open transactions", summary.get("open_transactions", 0)),
            ("producer rows", summary.get("producer_rows", 0)),
            ("replica divergences", summary.get("divergences", 0)),
        )
    )
    shown = list(rows[:row_limit])
    more = (
        f'<p class="muted">{len(rows) - row_limit} more in late_transactions.csv</p>' if len(rows) > row_limit else ""
    )
    reason_rows = [{"reason": k, "count": v} for k, v in sorted(counts.items())]
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>kafka-txn sweep report</title><style>{_STYLE}</style></head>
<body>
<h1>Hanging-transaction sweep</h1>
<p>As of {escape(_when(summary.get("as_of_ms")))} (input capture time{
        " overridden by --as-of" if summary.get("as_of_given") else ""
    }),
max transaction timeout {escape(_duration(threshold))}.</p>
<div class="cards">{cards}</div>
<h2>Open-transaction ages (each transaction once, across replicas)</h2>
{bar_chart("Open transactions by age", labels, ages, highlight=late_bucket)}
<p class="muted">Red: older than the max transaction timeout.</p>
<h2>Per broker</h2>
{
        bar_chart(
            "PartitionsWithLateTransactionsCount per broker",
            [f"broker {b}" for b in broker_ids],
            [int(brokers.get(b, 0)) for b in broker_ids],
            color="#a66a00",
        )
    }
<p class="muted">Late partitions by the broker metric's rule (timeout + 5 min, leaders only).</p>
{
        bar_chart(
            "Hanging transactions per leader broker",
            [f"broker {b}" for b in broker_ids],
            [int(hanging_by_broker.get(b, 0)) for b in broker_ids],
            color="#b00020",
        )
    }
<h2>Verdicts by reason</h2>
{_table(reason_rows, ["reason", "count"])}
<h2>Reported transactions</h2>
{_table(shown, REPORT_COLUMNS)}{more}
<h2>Stuck at their coordinator</h2>
{_table(list(stuck), STUCK_COLUMNS)}
{history_section(summary.get("history"))}
</body></html>
"""


HISTORY_COLUMNS = ["cluster", "topic", "incidents", "open", "resolved_by_write", "resolved_by_itself",
                   "held_total", "held_longest", "last_seen"]


def _hours(ms: Any) -> str:
    return "-" if ms is None else f"{int(ms) / 3_600_000:.1f} h"


def history_section(trends: Mapping[str, Any] | None) -> str:
    """Incident trends from `kafka-txn history --export` (spark/history.py): per cluster and topic, and per
    day; nothing when the sweep was given no history."""
    if not trends:
        return ""
    import datetime as dt

    rows = [{**r, "held_total": _hours(r.get("held_ms_total")), "held_longest": _hours(r.get("held_ms_max")),
             "last_seen": dt.datetime.fromtimestamp(int(r["last_seen_ms"]) / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M")
             if r.get("last_seen_ms") is not None else "-"} for r in trends.get("by_topic", [])]
    days = int(trends.get("days", 14))
    first = int(trends.get("first_day_ms", 0))
    per_day = [0] * days
    for d in trends.get("per_day", []):
        index = (int(d["day_ms"]) - first) // 86_400_000
        if 0 <= index < days:
            per_day[index] += int(d["incidents"])
    labels = [dt.datetime.fromtimestamp((first + i * 86_400_000) / 1000, dt.UTC).strftime("%m-%d") for i in range(days)]
    return f"""<h2 id="history">Incident history: trends per cluster and topic</h2>
<p>{escape(str(trends.get("incidents", 0)))} incidents recorded by kafka-txn monitor and find-hanging --history
(from {escape(str(trends.get("source", "")))}).</p>
{bar_chart(f"Incidents first seen per day, last {days} days", labels, per_day, color="#6a3ba8")}
{_table(rows, HISTORY_COLUMNS)}"""
