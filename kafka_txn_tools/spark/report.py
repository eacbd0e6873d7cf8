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

# Readable at a laptop's width (1280 px, tests/e2e/test_sweep_report.py checks it in Chromium): a page of at most
# 1100 px, tables of a few short columns, long values (command lines, paths) wrapped anywhere rather than
# widening the page; everything else about a row sits in its <details>.
_STYLE = """
body{font-family:system-ui,sans-serif;margin:2em auto;padding:0 1.5em;color:#222;max-width:1100px}
h1{font-size:1.5em}h2{font-size:1.15em;margin-top:1.6em}
table{border-collapse:collapse;font-size:.85em;max-width:100%}td,th{border:1px solid #ccc;padding:3px 7px;
text-align:left;vertical-align:top;overflow-wrap:anywhere}
th{background:#f2f2f2}.hanging{color:#b00020;font-weight:600}.late{color:#a66a00}.muted{color:#777}
.cards{display:flex;gap:1em;flex-wrap:wrap}.card{border:1px solid #ddd;border-radius:6px;padding:.6em 1em}
.card b{display:block;font-size:1.6em}.card.alert b{color:#b00020}
table.findings{width:100%}tr.todo td{border-top:none;background:#fafafa}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f4f4f4;padding:.4em .6em;margin:.3em 0;font-size:.95em}
details summary{cursor:pointer;color:#3b6ea8}dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 1em;
margin:.4em 0}dt{color:#555}dd{margin:0;overflow-wrap:anywhere}svg{max-width:100%;height:auto}
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


def _when(ms: Any) -> str:
    """The tools' one spelling of a point in time (ISO-8601 UTC); the raw value if it is not epoch ms."""
    from kafka_txn_tools.timestamps import iso_utc

    return iso_utc(int(ms)) if isinstance(ms, int) and ms >= 0 else str(ms)


def _duration(ms: Any) -> str:
    from kafka_txn_tools.durations import format_duration_ms

    return format_duration_ms(int(ms)) if isinstance(ms, int) else str(ms)


# A reported transaction's columns (short values only); everything else is behind its <details>.
FINDING_HEADERS = ["Partition", "Producer", "Start offset", "Age", "Verdict", "Reason", "Transactional id"]
FINDING_DETAILS = [
    ("last write", "last_timestamp_ms"), ("coordinator epoch", "coordinator_epoch"),
    ("last known transactional id", "last_known_transactional_id"), ("coordinator", "coordinator_id"),
    ("coordinator state", "coordinator_state"), ("coordinator's producer epoch", "coordinator_producer_epoch"),
    ("leader", "leader_broker_id"), ("leader inferred", "leader_inferred"), ("open on brokers", "open_on_brokers"),
    ("late by the broker metric's rule", "metric_late"), ("replica divergence", "divergence"),
    ("missing on brokers", "missing_on_brokers"), ("snapshot offset", "snapshot_offset"), ("read from", "source"),
    ("coordinator's decision", "coordinator_decision"),
]
STUCK_HEADERS = ["Transactional id", "State", "Reason", "Producer", "In this state"]
STUCK_DETAILS = [
    ("coordinator", "coordinator_id"), ("transaction timeout", "timeout_ms"),
    ("time in state from", "time_in_state_source"), ("partitions pending", "pending_partitions"),
    ("groups held back", "stalled_groups"),
]
DIVERGENCE_COLUMNS = ["topic", "partition", "producer_id", "start_offset", "kind", "leader_broker_id", "broker_ids"]


def _value(key: str, value: Any) -> str:
    if key == "last_timestamp_ms":
        return _when(value)
    if key in ("timeout_ms",):
        return _duration(value)
    if isinstance(value, list):
        return ", ".join(_value(key, v) if not isinstance(v, dict) else _pairs(v) for v in value)
    if isinstance(value, dict):
        return _pairs(value)
    return str(value)


def _pairs(mapping: Mapping[str, Any]) -> str:
    if {"topic", "partition"} <= set(mapping):
        rest = ", ".join(f"{k} {v}" for k, v in mapping.items() if k not in ("topic", "partition") and v is not None)
        return f"{mapping['topic']}-{mapping['partition']}" + (f" ({rest})" if rest else "")
    return ", ".join(f"{k} {v}" for k, v in mapping.items() if v is not None)


def _details(row: Mapping[str, Any], fields: Sequence[tuple[str, str]]) -> str:
    items = [(label, _value(key, row[key])) for label, key in fields if row.get(key) not in (None, "", [])]
    if not items:
        return ""
    body = "".join(f"<dt>{escape(label)}</dt><dd>{escape(text)}</dd>" for label, text in items)
    return f"<details><summary>details</summary><dl>{body}</dl></details>"


def _todo(row: Mapping[str, Any], columns: int, fields: Sequence[tuple[str, str]], first: str = "") -> str:
    """The row under a finding: what to do, its command lines (whole, each copied as it is), its details."""
    commands = "".join(f"<pre><code>{escape(str(c))}</code></pre>" for c in row.get("commands") or [])
    action = escape(str(row.get("action") or ""))
    return (f'<tr class="todo"><td colspan="{columns}">{first}<b>Do:</b> {action}{commands}'
            f"{_details(row, fields)}</td></tr>")


def _findings(rows: Sequence[Mapping[str, Any]]) -> str:
    if not rows:
        return '<p class="muted">none</p>'
    head = "".join(f"<th>{h}</th>" for h in FINDING_HEADERS)
    body = []
    for r in rows:
        cells = [f"{r.get('topic')}-{r.get('partition')}", f"{r.get('producer_id')} (epoch {r.get('producer_epoch')})",
                 r.get("start_offset"), _duration(r.get("age_ms")) if r.get("age_ms") is not None else "-",
                 r.get("verdict"), r.get("reason"), r.get("transactional_id") or "-"]
        tds = "".join(f"<td>{escape(str(c))}</td>" for c in cells)
        body.append(f'<tr class="{escape(str(r.get("verdict", "")))}">{tds}</tr>'
                    + _todo(r, len(FINDING_HEADERS), FINDING_DETAILS))
    return f'<table class="findings"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def _stuck(stuck: Sequence[Mapping[str, Any]]) -> str:
    if not stuck:
        return '<p class="muted">none</p>'
    head = "".join(f"<th>{h}</th>" for h in STUCK_HEADERS)
    body = []
    for s in stuck:
        since = _duration(s.get("time_in_state_ms")) if s.get("time_in_state_ms") is not None else "-"
        cells = [s.get("transactional_id"), s.get("state"), s.get("reason"),
                 f"{s.get('producer_id')} (epoch {s.get('producer_epoch')})", since]
        tds = "".join(f"<td>{escape(str(c))}</td>" for c in cells)
        detail = f"{escape(str(s['detail']))}<br>" if s.get("detail") else ""
        body.append(f'<tr class="hanging">{tds}</tr>' + _todo(s, len(STUCK_HEADERS), STUCK_DETAILS, detail))
    return f'<table class="findings"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def _cluster(summary: Mapping[str, Any]) -> str:
    """Which cluster the inputs came from and how the commands below reach it (spark/origin.py)."""
    c = summary.get("cluster") or {}
    props = c.get("properties") or {}
    items = [("cluster id", summary.get("cluster_id") or "not recorded by the inputs"),
             ("bootstrap servers", c.get("bootstrap_servers")),
             ("commands connect with", " ".join(c.get("options") or []) or "nothing: no cluster is known"),
             *((k, v) for k, v in props.items())]
    body = "".join(f"<dt>{escape(str(k))}</dt><dd>{escape(str(v))}</dd>" for k, v in items if v)
    return f"<dl>{body}</dl>"


def _apply(summary: Mapping[str, Any], found: bool) -> str:
    """How to act on the whole sweep: the plan's commands, or, with no cluster known, what to add (in prose: a
    command line without a cluster would be refused as printed)."""
    commands = summary.get("apply_plan") or []
    left = _left_out(summary)
    if commands:
        lines = "".join(f"<pre><code>{escape(c)}</code></pre>" for c in commands)
        return ("<p>Instead of each row's commands, the abort plan ends every hanging transaction below at once: each "
                "entry is checked against the live cluster first, then all are written or none (the first command "
                f"writes nothing).</p>{lines}{left}")
    if left:
        return left
    if not found or (summary.get("cluster") or {}).get("reaches_cluster"):
        return ""
    # The plan by its name, next to this page: the same inputs give the same page wherever it is written.
    return ("<p>No command is shown: these inputs do not record the cluster they came from (a kafka-txn dump does). "
            "Sweep again with -b/--bootstrap-server, --profile or --command-config to have them shown, or check "
            "abort-plan.yaml (next to this page) with abort --plan and --dry-run plus your cluster's connection "
            "options, then apply it without --dry-run.</p>")


def _left_out(summary: Mapping[str, Any]) -> str:
    """The hanging transactions the abort plan leaves out (their coordinator committed them), why, and their
    commands."""
    items = []
    for left in summary.get("left_out_of_plan") or []:
        lines = "".join(f"<pre><code>{escape(c)}</code></pre>" for c in left.get("commands") or [])
        items.append(f"<li>{escape(str(left['topic']))}-{escape(str(left['partition']))} producer "
                     f"{escape(str(left['producer_id']))}: {escape(str(left['why']))}{lines}</li>")
    return f"<p>Not in the abort plan:</p><ul>{''.join(items)}</ul>" if items else ""


def _cards(summary: Mapping[str, Any]) -> str:
    errors = sum(int(e.get("count", 0)) for e in summary.get("dump_errors") or [])
    cards = [("hanging", summary.get("hanging", 0), "#reported"),
             ("stuck at their coordinator", summary.get("stuck", 0), "#stuck"),
             ("late but live", summary.get("late_live", 0), "#reported"),
             ("unverified", summary.get("unverified", 0), "#reported"),
             ("replica divergences", summary.get("divergences", 0), "#divergence"),
             ("dump errors", errors, "#errors"),
             ("open transactions", summary.get("open_transactions", 0), "#ages"),
             ("producer rows", summary.get("producer_rows", 0), "#ages")]
    alert = {"hanging", "stuck at their coordinator"}
    return "".join(
        f'<a class="card{" alert" if name in alert and value else ""}" href="{href}" style="color:inherit;'
        f'text-decoration:none"><b>{escape(str(value))}</b>{escape(name)}</a>'
        for name, value, href in cards)


def render_report(
    summary: Mapping[str, Any],
    rows: Sequence[Mapping[str, Any]],
    age_histogram: Mapping[str, int],
    row_limit: int = 500,
    stuck: Sequence[Mapping[str, Any]] = (),
    divergence: Sequence[Mapping[str, Any]] = (),
) -> str:
    """The whole HTML page: every kind the sweep found (hanging, late but live and unverified transactions, the
    ones stuck at their coordinator, replica divergences, dump errors), each with what to do and its commands."""
    counts = summary.get("counts_by_reason", {})
    brokers = summary.get("late_partitions_by_broker", {})
    hanging_by_broker = summary.get("hanging_by_leader_broker", {})
    broker_ids = sorted({*brokers, *hanging_by_broker}, key=lambda b: int(b))
    threshold = summary.get("max_transaction_timeout_ms", DEFAULT_MAX_TRANSACTION_TIMEOUT_MS)
    labels = [label for label, _ in AGE_BUCKETS]
    ages = [int(age_histogram.get(label, 0)) for label in labels]
    late_bucket = [upper is None or upper > threshold for _, upper in AGE_BUCKETS]
    shown = list(rows[:row_limit])
    more = (
        f'<p class="muted">{len(rows) - row_limit} more in late_transactions.csv</p>' if len(rows) > row_limit else ""
    )
    diverged = list(divergence[:row_limit])
    more_divergence = (f'<p class="muted">{len(divergence) - row_limit} more in replica_divergence.csv</p>'
                       if len(divergence) > row_limit else "")
    reason_rows = [{"reason": k, "count": v} for k, v in sorted(counts.items())]
    stuck_rows = [{"reason": k, "count": v} for k, v in sorted((summary.get("stuck_by_reason") or {}).items())]
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>kafka-txn sweep report</title><style>{_STYLE}</style></head>
<body>
<h1>Hanging-transaction sweep</h1>
<p>As of {escape(_when(summary.get("as_of_ms")))} (input capture time{
        " overridden by --as-of" if summary.get("as_of_given") else ""
    }),
max transaction timeout {escape(_duration(threshold))}.</p>
{_cluster(summary)}
<div class="cards">{_cards(summary)}</div>
{_apply(summary, bool(rows or stuck))}
<h2 id="reported">Reported transactions</h2>
{_findings(shown)}{more}
<h2 id="stuck">Stuck at their coordinator</h2>
{_stuck(list(stuck))}
<h2>Verdicts by reason</h2>
{_table(reason_rows + stuck_rows, ["reason", "count"])}
<h2 id="divergence">Replica divergence</h2>
{_table(diverged, DIVERGENCE_COLUMNS)}{more_divergence}
<h2 id="errors">Dump errors</h2>
{_table(list(summary.get("dump_errors") or []), ["broker_id", "api", "error_name", "count"])}
<h2 id="ages">Open-transaction ages (each transaction once, across replicas)</h2>
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
