"""The monitor's status page: what is held now with the commands that clear it, recent incidents, and a
chart of held partitions over time. One self-contained HTML page: inline CSS and SVG, no script and
nothing fetched from elsewhere, refreshed by the browser every scan interval.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from kafka_txn_tools.history.incidents import Sighting
from kafka_txn_tools.history.store import Incident, ScanPoint
from kafka_txn_tools.monitor.state import FAILED, Snapshot

_STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222;max-width:1200px}
h1{font-size:1.4em}h2{font-size:1.1em;margin-top:1.5em}
table{border-collapse:collapse;font-size:.85em}td,th{border:1px solid #ccc;padding:3px 7px;text-align:left;
vertical-align:top}th{background:#f2f2f2}code{background:#f5f5f5;padding:1px 4px;display:block;margin:2px 0;
white-space:pre-wrap}.bad{color:#b00020;font-weight:600}.ok{color:#1b7d2b;font-weight:600}.warn{color:#a66a00;
font-weight:600}.muted{color:#777}.stale{opacity:.6}
"""


def _time(ms: int | None) -> str:
    if ms is None:
        return "-"
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _age(ms: int | None) -> str:
    if ms is None:
        return "-"
    seconds = max(0, ms // 1000)
    days, rest = divmod(seconds, 86_400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes}m"
    return f"{minutes}m {secs}s" if minutes else f"{secs}s"


def commands_of(row: Mapping[str, Any]) -> list[str]:
    """What to run for a finding: its `commands` when the row has them, else its action (which spells the
    command out in prose)."""
    commands = row.get("commands")
    if isinstance(commands, list) and commands:
        return [str(c) for c in commands]
    return [str(row.get("action"))] if row.get("action") else []


def _status(snapshot: Snapshot) -> str:
    last = snapshot.last
    if last is None:
        return '<span class="warn">first scan running</span>'
    if last.result == FAILED:
        return f'<span class="bad">last scan failed</span>: {escape(last.failure or "")}'
    if last.result == "partial":
        return f'<span class="warn">last scan partial</span>: {escape(last.failure or "")}'
    return '<span class="ok">last scan complete</span>'


def _held_table(snapshot: Snapshot) -> str:
    if not snapshot.findings:
        return '<p class="ok">Nothing is held.</p>'
    head = "".join(f"<th>{t}</th>" for t in ("kind", "where", "producer id", "transactional id", "reason", "age",
                                              "LSO lag", "held back", "what to run"))
    rows = []
    for f in snapshot.findings:
        rows.append(_held_row(f, snapshot.is_stale(f)))
    return f'<table id="held"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _held_row(f: Sighting, stale: bool) -> str:
    txn = f.row.get("transactional_id") or (
        f"(last: {f.row['last_known_transactional_id']})" if f.row.get("last_known_transactional_id") else "-")
    commands = "".join(f"<code>{escape(c)}</code>" for c in commands_of(f.row))
    cells = [f.kind, f.where, f.producer_id, txn, f.reason, _age(f.age_ms),
             "-" if f.lso_lag is None else f.lso_lag, ", ".join(f.held_groups) or "-"]
    note = ' <span class="muted">(not seen by the last scan)</span>' if stale else ""
    tds = "".join(f"<td>{escape(str(c))}</td>" for c in cells)
    return f'<tr class="{"stale" if stale else "held"}">{tds}<td>{commands}{note}</td></tr>'


def _incidents_table(incidents: Sequence[Incident]) -> str:
    if not incidents:
        return '<p class="muted">No incidents recorded in this period.</p>'
    head = "".join(f"<th>{t}</th>" for t in ("first seen", "kind", "where", "transactional id", "reason",
                                              "held for", "resolved", "how"))
    rows = []
    for i in incidents:
        where = f"{i.topic}-{i.partition}" if i.topic is not None else (i.transactional_id or i.key)
        how = "still open" if i.resolved_ms is None else (
            i.resolution if i.resolved_by is None else f"{i.resolved_command} by {i.resolved_by}")
        cells = [_time(i.first_seen_ms), i.kind, where, i.transactional_id or "-", i.reason,
                 _age(i.held_ms if i.held_ms is not None else i.duration_ms), _time(i.resolved_ms), how]
        rows.append("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in cells) + "</tr>")
    return f'<table id="incidents"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def held_chart(points: Sequence[ScanPoint], now_ms: int, window_ms: int) -> str:
    """Held partitions per scan as an inline SVG step line; failed scans are gaps (red ticks)."""
    width, height, left, bottom, top = 720, 200, 40, 30, 14
    start = now_ms - window_ms
    points = [p for p in points if p.time_ms >= start]
    peak = max([p.held_partitions or 0 for p in points] + [1])
    span_x, span_y = width - left - 10, height - bottom - top

    def x(ms: int) -> float:
        return left + span_x * (ms - start) / max(window_ms, 1)

    def y(value: int) -> float:
        return height - bottom - span_y * value / peak

    parts = [f'<svg id="held-chart" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
             'aria-label="held partitions over time"><title>held partitions over time</title>',
             f'<line x1="{left}" y1="{height - bottom}" x2="{width - 5}" y2="{height - bottom}" stroke="#999"/>',
             f'<text x="{left - 6}" y="{y(peak) + 4:.1f}" font-size="11" text-anchor="end">{peak}</text>',
             f'<text x="{left - 6}" y="{height - bottom + 4}" font-size="11" text-anchor="end">0</text>',
             f'<text x="{left}" y="{height - 8}" font-size="11">{escape(_time(start))}</text>',
             f'<text x="{width - 10}" y="{height - 8}" font-size="11" text-anchor="end">now</text>']
    path: list[str] = []
    for p in points:
        if p.held_partitions is None:
            parts.append(f'<line x1="{x(p.time_ms):.1f}" y1="{height - bottom}" x2="{x(p.time_ms):.1f}" '
                         f'y2="{height - bottom - 6}" stroke="#b00020"/>')
            continue
        px, py = x(p.time_ms), y(p.held_partitions)
        # A step line: level until the next scan, then up or down to its value.
        path.append(f"H{px:.1f} V{py:.1f}" if path else f"M{px:.1f} {py:.1f}")
    if path:
        parts.append(f'<path d="{" ".join(path)}" fill="none" stroke="#3b6ea8" stroke-width="2"/>')
    parts.append("</svg>")
    return "".join(parts)


def render(snapshot: Snapshot, incidents: Sequence[Incident], points: Sequence[ScanPoint], now_ms: int,
           window_ms: int = 86_400_000) -> str:
    last = snapshot.last
    refresh = max(5, int(snapshot.interval_s))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="{refresh}">
<title>kafka-txn monitor: {escape(snapshot.cluster)}</title><style>{_STYLE}</style></head>
<body>
<h1>kafka-txn monitor: {escape(snapshot.cluster)}</h1>
<p id="status">{_status(snapshot)}. Last scan {escape(_time(last.time_ms if last else None))}, last complete scan
{escape(_time(snapshot.last_good_ms))}, every {snapshot.interval_s:g}s.</p>
<h2>Held now ({len(snapshot.findings)})</h2>
{_held_table(snapshot)}
<h2>Held partitions over the last {_age(window_ms)}</h2>
{held_chart(points, now_ms, window_ms)}
<p class="muted">One point per scan; red ticks: scans that failed.</p>
<h2>Recent incidents</h2>
{_incidents_table(incidents)}
<p class="muted">Machine-readable: <a href="/api/findings">/api/findings</a> (find-hanging's JSON),
<a href="/metrics">/metrics</a>, <a href="/healthz">/healthz</a>.</p>
</body></html>
"""
