"""Answers made comparable: a decoded response as plain data, with the values that legitimately differ
between two clusters replaced by stable symbols.

What is replaced, and why each is not a difference:
- producer ids, node ids, topic ids: allocated by each cluster; replaced by P1, N1, T1... in order of first
  appearance, so that "the same producer" and "the node that leads" still compare;
- timestamps (record, start and commit times): wall clock; "<ts>" when set, -1 kept;
- host, port, cluster id: where each cluster listens and what it was formatted with;
- throttle time: quota state of the moment;
- error messages: free text that Kafka itself rewords between releases (and the CLI never parses);
  compared as present or absent only.

Threading: pure functions; a Symbols table belongs to one side's run.
"""

from __future__ import annotations

import os
from typing import Any

PRODUCER_FIELDS = frozenset({"producer_id"})
NODE_FIELDS = frozenset({"node_id", "leader_id", "controller_id", "coordinator_id", "replica_nodes", "isr_nodes",
                         "offline_replicas", "eligible_leader_replicas", "last_known_elr", "broker_id"})
TIMESTAMP_FIELDS = frozenset({"timestamp", "last_timestamp", "transaction_start_time_ms", "log_append_time_ms",
                              "transaction_last_update_time_ms"})
TOPIC_ID_FIELDS = frozenset({"topic_id"})
CONSTANT_FIELDS = {"host": "<host>", "port": "<port>", "cluster_id": "<cluster>", "throttle_time_ms": 0}
MESSAGE_FIELDS = frozenset({"error_message"})
# FIDELITY_VERBATIM_MESSAGES=1 compares the texts too (to see them; not the default).
VERBATIM_MESSAGES = os.environ.get("FIDELITY_VERBATIM_MESSAGES") == "1"


class Symbols:
    """Stable names for one cluster's allocated identifiers (producer ids, node ids, topic ids)."""

    def __init__(self) -> None:
        self._names: dict[tuple[str, Any], str] = {}

    def name(self, kind: str, value: Any) -> Any:
        if value is None or (isinstance(value, int) and value < 0):
            return value  # "none" (-1) means the same thing on every cluster
        if kind == "T" and str(value) == "00000000-0000-0000-0000-000000000000":
            return value
        key = (kind, value)
        if key not in self._names:
            self._names[key] = f"{kind}{sum(1 for k in self._names if k[0] == kind) + 1}"
        return self._names[key]


def plain(message: Any) -> Any:
    """A decoded message (or part of it) as dicts, lists and scalars, with unknown tagged fields kept."""
    if isinstance(message, list):
        return [plain(item) for item in message]
    if hasattr(message, "to_dict") and hasattr(message, "fields"):
        out: dict[str, Any] = {}
        for key, value in message.to_dict().items():
            out[key] = plain(getattr(message, key, value))
        unknown = getattr(message, "unknown_tags", None)
        if unknown:
            out["<unknown tags>"] = {str(k): bytes(v).hex() for k, v in unknown.items()}
        return out
    if isinstance(message, (bytes, bytearray, memoryview)):
        return bytes(message).hex()
    return message if isinstance(message, (int, str, float, bool, type(None))) else str(message)


def normalise(value: Any, symbols: Symbols, field: str = "") -> Any:
    if isinstance(value, dict):
        return {k: normalise(v, symbols, k) for k, v in value.items()}
    if isinstance(value, list):
        return [normalise(item, symbols, field) for item in value]
    if field in PRODUCER_FIELDS:
        return symbols.name("P", value)
    if field in NODE_FIELDS:
        return symbols.name("N", value)
    if field in TOPIC_ID_FIELDS:
        return symbols.name("T", value)
    if field in TIMESTAMP_FIELDS:
        return "<ts>" if isinstance(value, int) and value >= 0 else value
    if field in CONSTANT_FIELDS:
        return CONSTANT_FIELDS[field]
    if field in MESSAGE_FIELDS and not VERBATIM_MESSAGES:
        return None if value is None else "<message>"
    return value


def differences(real: Any, ours: Any, path: str = "") -> list[str]:
    """Where two normalised answers differ, as `path: real=X embedded=Y` lines (lists compared in order:
    Kafka's order is part of its answer)."""
    if isinstance(real, dict) and isinstance(ours, dict):
        out: list[str] = []
        for key in list(real) + [k for k in ours if k not in real]:
            if key not in real or key not in ours:
                out.append(f"{path}.{key}: real={real.get(key, '<absent>')!r} embedded={ours.get(key, '<absent>')!r}")
            else:
                out += differences(real[key], ours[key], f"{path}.{key}")
        return out
    if isinstance(real, list) and isinstance(ours, list):
        if len(real) != len(ours):
            return [f"{path}: real has {len(real)} entries, embedded {len(ours)}: real={real!r} embedded={ours!r}"]
        out = []
        for i, (a, b) in enumerate(zip(real, ours, strict=True)):
            out += differences(a, b, f"{path}[{i}]")
        return out
    return [] if real == ours else [f"{path}: real={real!r} embedded={ours!r}"]
