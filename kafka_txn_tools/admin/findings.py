"""The findings document: what `find-hanging -o json|yaml` prints, the monitor serves at /api/findings and the
history keeps of each finding. One home for its schema version, its keys and its JSON Schema
(findings.schema.json beside this module, shipped in the wheel: `kafka_txn_tools.admin.findings.schema()`), so
that a consumer can validate what any of them emits.

Pure: a scan report in, plain data out; the renderers (cli/render.py, monitor/server.py) turn it into text.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kafka_txn_tools.admin.scan import ScanReport

# Raised when a key is removed or changes meaning; new keys are added without a bump (consumers ignore them).
SCHEMA_VERSION = 1
# The rows' list; its name is the document's kind.
ROWS = "hanging"
# The keys every row carries, whatever its kind (partition, coordinator, share).
ROW_KEYS = ("kind", "reason", "action", "commands", "cleared_by", "transactional_id", "producer_id")


def in_order(report: ScanReport) -> list[Any]:
    """Every result row in the printed order: the rows of one transaction together, the one whose command ends
    it first (admin/dependent_rows.py)."""
    from kafka_txn_tools.admin.dependent_rows import ordered

    return ordered([*report.results, *report.stuck, *report.share])


def finding_rows(report: ScanReport) -> list[dict[str, Any]]:
    """Every result row of a scan, as the machine formats print them."""
    return [dict(row.to_row()) for row in in_order(report)]


def findings_document(report: ScanReport, max_timeout_ms: int, max_prepare_ms: int) -> dict[str, Any]:
    """The document itself: the rows, the scan's thresholds and counts, its notes and its errors."""
    first = report.first_pass
    return {  # in this order wherever it is printed (the CLI's renderer puts the rows first, the errors last)
        ROWS: finding_rows(report),
        "schema_version": SCHEMA_VERSION,
        "as_of_ms": report.now_ms,
        "max_transaction_timeout_ms": max_timeout_ms,
        "max_prepare_time_ms": max_prepare_ms,
        "scanned_replicas": report.scanned_replicas,
        "read_replicas": report.read_replicas,
        "candidates": report.candidates,
        "partial": report.partial,
        "notes": list(report.notes),
        "first_pass": first.to_row() if first is not None else None,
        "errors": [dict(e.to_row()) for e in report.errors],
    }


@cache
def schema() -> dict[str, Any]:
    """The document's JSON Schema (draft 2020-12)."""
    text = resources.files("kafka_txn_tools.admin").joinpath("findings.schema.json").read_text()
    loaded: dict[str, Any] = json.loads(text)
    return loaded
