"""The wire layout of the broker's own JSON message definitions (share groups, KIP-848's consumer-group APIs),
rendered as the Java client prints a schema (`XxxData.SCHEMAS[v].toString()`), so that the two can be compared
field by field: the Java client of a release is the authority on what crosses the wire."""

from __future__ import annotations

import json
import re
from pathlib import Path

MESSAGES_DIR = Path(__file__).resolve().parents[3] / "broker" / "kafka_txn_broker" / "formats" / "messages"


def _in(versions: str, v: int) -> bool:
    """Kafka's version range syntax: "3", "3+", "1-2", "none"."""
    if versions == "none":
        return False
    if versions.endswith("+"):
        return v >= int(versions[:-1])
    low, _, high = versions.partition("-")
    return int(low) <= v <= int(high or low)


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


_PRIMITIVES = {"int8": "INT8", "int16": "INT16", "int32": "INT32", "int64": "INT64", "uuid": "UUID",
               "bool": "BOOLEAN", "float64": "FLOAT64",
               "bitfield": "INT32"}  # kafka-python's name for the authorized-operations int32


def _type(field: dict, v: int, flexible: bool, common: dict[str, list[dict]]) -> str:
    kind: str = field["type"]
    nullable = _in(field.get("nullableVersions", "none"), v)
    prefix = "COMPACT_" if flexible else ""
    if kind.startswith("[]"):
        inner = kind[2:]
        if "fields" in field or inner in common:
            element = _struct(field.get("fields") or common[inner], v, flexible, common)
        else:
            element = _type({"type": inner}, v, flexible, common)
        return f"{prefix}{'NULLABLE_' if nullable else ''}ARRAY({element})"
    if "fields" in field or kind in common:
        return _struct(field.get("fields") or common[kind], v, flexible, common)
    if kind in ("string", "bytes", "records"):
        return f"{prefix}{'NULLABLE_' if nullable else ''}{kind.upper()}"
    return _PRIMITIVES[kind]


def _struct(fields: list[dict], v: int, flexible: bool, common: dict[str, list[dict]]) -> str:
    parts = [f"{_snake(f['name'])}:{_type(f, v, flexible, common)}" for f in fields
             if _in(f["versions"], v) and "tag" not in f]
    if flexible:
        parts.append("_tagged_fields:TAGGED_FIELDS_TYPE_NAME()")
    return "{" + ",".join(parts) + "}"


def load(name: str) -> dict:
    text = (MESSAGES_DIR / f"{name}.json").read_text()
    return json.loads("\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//")))


def render(name: str, version: int, spec: dict | None = None) -> str | None:
    """`name`'s schema at `version` as Java prints it, or None where the definition has no such version.
    `spec`: a definition in Kafka's JSON form (default: ours, by name)."""
    spec = spec or load(name)
    if not _in(spec["validVersions"], version):
        return None
    common = {c["name"]: c["fields"] for c in spec.get("commonStructs", [])}
    return _struct(spec["fields"], version, _in(spec["flexibleVersions"], version), common)


def layout(schema: str) -> str:
    """The wire layout alone: field names dropped (Kafka renames fields without changing the bytes, e.g.
    TxnOffsetCommit's generation_id), tagged-field sections emptied (Java prints their objects' hashes)."""
    schema = re.sub(r"TAGGED_FIELDS_TYPE_NAME\([^)]*\)", "TAGGED_FIELDS_TYPE_NAME()", schema)
    return re.sub(r"[a-z_0-9]+:", "", schema)
