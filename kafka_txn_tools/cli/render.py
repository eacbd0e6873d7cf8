"""Output: one set of rows, six formats.

- json / yaml: `{<kind>: [rows], "errors": [...], ...extra}`; keys are snake_case and stable.
- csv / tsv: a header of the row keys, then rows; None is empty, lists are comma-joined.
- kafka: upstream kafka-transactions.sh's table, byte for byte (see `upstream_table`).
- table: aligned columns; an empty cell reads `-`. When the terminal (or $COLUMNS) is narrower than
  the table, decoration goes first: the least important columns are left out (with a note on stderr),
  and a prose column (a reason, a detail; `Column.wrap`) that is last is broken at word boundaries
  within its cell rather than dropped. If even the essential columns do not fit, each record is
  printed as a block of `TITLE  value` lines, prose wrapped under its value. Nothing else is ever
  broken: a value, a `command in backticks` and a word stay whole on one line. `--wide` prints every
  column whatever the width; piped output is never narrowed.
"""

from __future__ import annotations

import io
import json
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from kafka_txn_tools.cli.options import OutputFormat
from kafka_txn_tools.cli.terminal import bold, table_width

Row = Mapping[str, Any]
GAP = "  "
EMPTY = "-"  # an empty table cell, in every command
MIN_WRAP = 30  # the narrowest a prose column is squeezed to before columns are left out


@dataclass(frozen=True)
class Column:
    key: str
    title: str
    fmt: Callable[[Any], str] | None = None
    # 0: essential, never left out; higher numbers are left out first when the terminal is narrow.
    drop: int = 0
    # Prose (a reason, a detail): may be broken at word boundaries on a narrow terminal, never dropped
    # for being long.
    wrap: bool = False

    def cell(self, row: Row) -> str:
        value = row.get(self.key)
        text = self.fmt(value) if self.fmt is not None else plain(value)
        return text if text != "" else EMPTY


def plain(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        if any(isinstance(v, Mapping) for v in value):
            return json.dumps(list(value), separators=(",", ":"))  # nested objects: JSON, whole
        return ",".join(plain(v) for v in value)
    if isinstance(value, Mapping):
        return json.dumps(dict(value), separators=(",", ":"))
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


def render_plain_table(rows: Sequence[Row], columns: Sequence[Column], out: TextIO | None = None,
                       width: int | None = None) -> str:
    """Aligned columns separated by two spaces; the header bold on a colour terminal. With `width`, a
    last prose column wider than what is left is wrapped within its cell (continuation lines start at
    its column)."""
    cells = [[c.title for c in columns]] + [[c.cell(r) for c in columns] for r in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    room = None
    if width is not None and columns and columns[-1].wrap:
        offset = sum(widths[:-1]) + len(GAP) * (len(columns) - 1)
        if offset + widths[-1] > width:
            room = max(width - offset, 1)
    lines = []
    for line in cells:
        head = GAP.join(v.ljust(widths[i]) for i, v in enumerate(line[:-1]))
        last = wrap_words(line[-1], room) if room is not None else [line[-1]]
        prefix = head + GAP if len(line) > 1 else ""
        lines.append((prefix + last[0]).rstrip())
        lines += [(" " * len(prefix) + more).rstrip() for more in last[1:]]
    if out is not None and lines:
        lines[0] = bold(lines[0], out)
    return "".join(line + "\n" for line in lines)


def render_blocks(rows: Sequence[Row], columns: Sequence[Column], width: int | None = None) -> str:
    """One record per block of `TITLE  value` lines: nothing is cut, however narrow the terminal; prose
    values are wrapped at word boundaries under their value."""
    label = max(len(c.title) for c in columns)
    indent = " " * (label + len(GAP))
    room = None if width is None else max(width - len(indent), 1)

    def lines(c: Column, r: Row) -> str:
        value = c.cell(r)
        parts = wrap_words(value, room) if c.wrap else [value]
        head = f"{c.title.ljust(label)}{GAP}{parts[0]}".rstrip()
        return "".join([head + "\n", *(f"{indent}{p}\n" for p in parts[1:])])

    return "\n".join("".join(lines(c, r) for c in columns) for r in rows)


def fit_columns(rows: Sequence[Row], columns: Sequence[Column], width: int) -> tuple[list[Column], bool]:
    """The columns that fit in `width`, leaving out the least important first; False: even the
    essential ones do not fit (print blocks). A prose column (`wrap`) that is last counts at the
    width it may be squeezed to (see `squeezed_width`)."""
    natural = {c.key: max([len(c.title), *(len(c.cell(r)) for r in rows)]) for c in columns}
    shown = list(columns)

    def total() -> int:
        widths = [natural[c.key] for c in shown]
        if shown[-1].wrap:
            widths[-1] = min(widths[-1], squeezed_width(rows, shown[-1]))
        return sum(widths) + len(GAP) * (len(shown) - 1)

    # Highest `drop` first; among equals, the rightmost first.
    order = sorted((c for c in columns if c.drop > 0), key=lambda c: (-c.drop, -columns.index(c)))
    for column in order:
        if total() <= width:
            break
        shown.remove(column)
    return shown, total() <= width


def squeezed_width(rows: Sequence[Row], column: Column) -> int:
    """The narrowest a prose column may become: MIN_WRAP, or its longest unbreakable word."""
    longest = max([len(column.title), *(len(t) for r in rows for t in _TOKEN.findall(column.cell(r)))])
    return max(MIN_WRAP, longest)


# A word: a `span in backticks` (a command, kept whole with the punctuation around it), or a run of non-spaces.
_TOKEN = re.compile(r"\S*`[^`]*`\S*|\S+")


def wrap_words(text: str, width: int | None) -> list[str]:
    """`text` in lines of at most `width` characters, broken only between words (None: one line per
    line of `text`). A word longer than the width, such as a command in backticks, stays whole."""
    if width is None:
        return text.split("\n") or [""]
    out: list[str] = []
    for paragraph in text.split("\n"):
        line = ""
        for token in _TOKEN.findall(paragraph):
            if line and len(line) + 1 + len(token) > width:
                out.append(line)
                line = token
            else:
                line = f"{line} {token}" if line else token
        out.append(line)
    return out


def wrap_lines(text: str, width: int | None) -> str:
    """Prose after a table, each line wrapped at word boundaries to `width` (None: as it is), continuation
    lines indented as the line they continue; a word longer than the width, or a `command in backticks`,
    stays whole on one line."""
    if width is None or not text:
        return text
    out = []
    for line in text.split("\n"):
        indent = " " * (len(line) - len(line.lstrip(" ")))
        parts = wrap_words(line.strip(" "), max(width - len(indent) - 2, 1)) if line.strip() else [""]
        out += [indent + parts[0], *(f"{indent}  {p}" for p in parts[1:])]
    return "\n".join(out)


def wrap_footer(text: str, width: int | None, verbatim: Callable[[str], bool] | None) -> str:
    """`wrap_lines` for text after a table, except the lines `verbatim` picks (commands to copy and paste),
    which are never wrapped or cut, whatever the width."""
    if verbatim is None or width is None:
        return wrap_lines(text, width)
    return "\n".join(line if verbatim(line) else wrap_lines(line, width) for line in text.split("\n"))


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
    empty_message: str | None = None
    hidden: list[str] = field(default_factory=list)  # titles of the columns the last table left out
    # The table's own rows (cells keyed by the columns) when they differ from the machine formats' rows,
    # and text printed after the table.
    table_rows: Sequence[Row] | None = None
    footer: str = ""
    verbatim: Callable[[str], bool] | None = None  # footer lines printed whole at any width (`wrap_footer`)

    def render(self, fmt: OutputFormat, width: int | None = None, out: TextIO | None = None) -> str:
        """The text for `fmt`; `width` limits a table (None: unlimited)."""
        if fmt is OutputFormat.json:
            return render_json(to_document(self.kind, self.rows, self.errors, self.extra))
        if fmt is OutputFormat.yaml:
            return render_yaml(to_document(self.kind, self.rows, self.errors, self.extra))
        if fmt in (OutputFormat.csv, OutputFormat.tsv):
            # Every key of every row, in first-seen order (rows of several kinds share one header).
            keys = list(dict.fromkeys(k for r in self.rows for k in r)) if self.rows else [c.key for c in self.columns]
            return render_delimited(self.rows, keys, "," if fmt is OutputFormat.csv else "\t")
        if fmt is OutputFormat.kafka:
            return upstream_table(self.kafka_headers, self.kafka_rows)
        if not self.rows and self.empty_message:
            return self.empty_message + "\n"
        return self._table(width, out) + wrap_footer(self.footer, width, self.verbatim)

    def _table(self, width: int | None, out: TextIO | None) -> str:
        self.hidden = []
        rows = self.table_rows if self.table_rows is not None else self.rows
        if width is None:
            return render_plain_table(rows, self.columns, out)
        shown, fits = fit_columns(rows, self.columns, width)
        if not fits:
            return render_blocks(rows, self.columns, width)
        self.hidden = [c.title for c in self.columns if c not in shown]
        return render_plain_table(rows, shown, out, width)

    def emit(self, fmt: OutputFormat, out: TextIO | None = None, wide: bool = False) -> None:
        out = out if out is not None else sys.stdout
        width = None if wide or fmt is not OutputFormat.table else table_width(out)
        out.write(self.render(fmt, width, out))
        out.flush()
        if self.hidden:
            from kafka_txn_tools.cli.errors import note

            note(f"{len(self.hidden)} columns left out to fit {width} columns ({', '.join(self.hidden)}); use --wide "
                 "for all, or -o json")


# --- value formatting shared by commands -------------------------------------------------------

def human_duration(ms: Any) -> str:
    """A duration in the tools' one spelling (durations.format_duration_ms); `-` for none. Machine
    formats keep milliseconds."""
    from kafka_txn_tools.durations import format_duration_ms

    return EMPTY if ms is None else format_duration_ms(int(ms))


def timestamp(now_ms: int) -> Callable[[Any], str]:
    """A cell format for epoch milliseconds: ISO-8601 UTC with the age at `now_ms`; `-` for none (or -1)."""
    from kafka_txn_tools.timestamps import with_age

    return lambda ms: with_age(None if ms is None else int(ms), now_ms) or EMPTY


def nothing_found(things: str, note: str | None = None) -> str:
    """The one wording of an empty result: `no <things> found`, with what was looked at in brackets."""
    return f"no {things} found" + (f" ({note})" if note else "")


def none_as_dash(value: Any) -> str:
    return EMPTY if value is None else plain(value)
