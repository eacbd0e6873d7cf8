"""Output: one set of rows, six formats.

- json / yaml: `{<kind>: [rows], "errors": [...], ...extra}`; keys are snake_case and stable.
- csv / tsv: a header of the row keys, then rows; None is empty, lists are comma-joined.
- kafka: upstream kafka-transactions.sh's table, byte for byte (see `upstream_table`).
- table: a rich table on a terminal; plain aligned columns when piped.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from kafka_txn_tools.cli.common import OutputFormat

Row = Mapping[str, Any]


@dataclass(frozen=True)
class Column:
    key: str
    title: str
    fmt: Callable[[Any], str] | None = None

    def cell(self, row: Row) -> str:
        value = row.get(self.key)
        if self.fmt is not None:
            return self.fmt(value)
        return plain(value)


def plain(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(plain(v) for v in value)
    return str(value)


def upstream_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Upstream's layout: each cell left-justified to its column's widest value, then a tab.

    The header row is always printed, even with no rows; every line (the last included) ends with
    a tab before the newline, exactly as the Java tool prints it.
    """
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    lines = ["".join(cell.ljust(widths[i]) + "\t" for i, cell in enumerate(r)) for r in [list(headers), *rows]]
    return "\n".join(lines) + "\n"


def to_document(
    kind: str, rows: Sequence[Row], errors: Sequence[Row] = (), extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    doc: dict[str, Any] = {kind: [dict(r) for r in rows]}
    doc.update(extra or {})
    doc["errors"] = [dict(e) for e in errors]
    return doc


def render_json(doc: Mapping[str, Any]) -> str:
    return json.dumps(doc, indent=2, sort_keys=False) + "\n"


def render_yaml(doc: Mapping[str, Any]) -> str:
    import yaml

    return str(yaml.safe_dump(dict(doc), sort_keys=False, default_flow_style=False))


def render_delimited(rows: Sequence[Row], columns: Sequence[str], delimiter: str) -> str:
    import csv

    buf = io.StringIO()
    writer = csv.writer(buf, delimiter=delimiter, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([plain(row.get(c)) for c in columns])
    return buf.getvalue()


def render_plain_table(rows: Sequence[Row], columns: Sequence[Column]) -> str:
    """Aligned columns separated by two spaces (piped `table` output: no colour, no box drawing)."""
    cells = [[c.title for c in columns]] + [[c.cell(r) for c in columns] for r in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    return "".join("  ".join(v.ljust(widths[i]) for i, v in enumerate(line)).rstrip() + "\n" for line in cells)


def print_rich_table(rows: Sequence[Row], columns: Sequence[Column], title: str | None, out: TextIO) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, header_style="bold", show_lines=False)
    for c in columns:
        table.add_column(c.title, overflow="fold")
    for r in rows:
        table.add_row(*(c.cell(r) for c in columns))
    Console(file=out).print(table)


@dataclass
class Output:
    """Everything a command prints; `emit` picks the format."""

    kind: str
    rows: Sequence[Row]
    columns: Sequence[Column]
    kafka_headers: Sequence[str] = ()
    kafka_rows: Sequence[Sequence[str]] = ()
    errors: Sequence[Row] = ()
    extra: Mapping[str, Any] | None = None
    title: str | None = None
    empty_message: str | None = None

    def render(self, fmt: OutputFormat) -> str:
        if fmt is OutputFormat.json:
            return render_json(to_document(self.kind, self.rows, self.errors, self.extra))
        if fmt is OutputFormat.yaml:
            return render_yaml(to_document(self.kind, self.rows, self.errors, self.extra))
        if fmt in (OutputFormat.csv, OutputFormat.tsv):
            keys = list(self.rows[0].keys()) if self.rows else [c.key for c in self.columns]
            return render_delimited(self.rows, keys, "," if fmt is OutputFormat.csv else "\t")
        if fmt is OutputFormat.kafka:
            return upstream_table(self.kafka_headers, self.kafka_rows)
        if not self.rows and self.empty_message:
            return self.empty_message + "\n"
        return render_plain_table(self.rows, self.columns)

    def emit(self, fmt: OutputFormat, out: TextIO | None = None) -> None:
        out = out if out is not None else sys.stdout
        if fmt is OutputFormat.table and out.isatty() and (self.rows or not self.empty_message):
            print_rich_table(self.rows, self.columns, self.title, out)
            return
        out.write(self.render(fmt))
        out.flush()


# --- value formatting shared by commands -------------------------------------------------------

def human_duration(ms: Any) -> str:
    """`95m 12s`-style ages for tables (machine formats keep milliseconds)."""
    if ms is None:
        return ""
    seconds = int(ms) // 1000
    if seconds < 0:
        return f"{ms}ms"
    days, rest = divmod(seconds, 86_400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes}m"
    if minutes:
        return f"{minutes}m {secs}s"
    return f"{secs}s"


def none_as_dash(value: Any) -> str:
    return "-" if value is None else plain(value)
