"""The abort plan: what `kafka-txn sweep` writes and `kafka-txn abort --plan` executes.

YAML, one document::

    version: 1                         # PLAN_VERSION; loaders refuse newer versions
    kind: kafka-txn-abort-plan
    generated_by: kafka-txn sweep
    as_of_ms: 1700000000000            # the "now" the verdicts were made at
    max_transaction_timeout_ms: 900000
    entries:
      - topic: orders
        partition: 3
        start_offset: 116              # first offset of the open transaction (abort --start-offset)
        producer_id: 2000
        producer_epoch: 3
        coordinator_epoch: 7           # -1 when the producer never received a marker
        transactional_id: null         # the id the coordinator maps to, when one exists
        reason: no-transactional-id    # see kafka_txn_tools.models.HANGING_REASONS
        last_timestamp_ms: 1699990000000
        leader_broker_id: 1            # hint only: the abort re-resolves the leader
        replica_broker_ids: [1, 2, 3]  # replicas where the transaction was seen open

Only hanging transactions are planned, never late-but-live ones: aborting a live transaction
would fail the producer's commit.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import yaml

from kafka_txn_tools.models import HANGING_REASONS

PLAN_VERSION = 1
PLAN_KIND = "kafka-txn-abort-plan"


class PlanError(ValueError):
    """The plan file cannot be used as written."""


@dataclass(frozen=True)
class AbortPlanEntry:
    topic: str
    partition: int
    start_offset: int
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    reason: str
    last_timestamp_ms: int
    transactional_id: str | None = None
    leader_broker_id: int | None = None
    replica_broker_ids: list[int] = field(default_factory=list)


@dataclass
class AbortPlan:
    entries: list[AbortPlanEntry]
    as_of_ms: int
    max_transaction_timeout_ms: int
    generated_by: str = "kafka-txn sweep"
    version: int = PLAN_VERSION


_INT_FIELDS = (
    "partition",
    "start_offset",
    "producer_id",
    "producer_epoch",
    "coordinator_epoch",
    "last_timestamp_ms",
)


def _entry(index: int, raw: Any) -> AbortPlanEntry:
    where = f"entries[{index}]"
    if not isinstance(raw, Mapping):
        raise PlanError(f"{where} is not a mapping")
    missing = [k for k in ("topic", *_INT_FIELDS, "reason") if raw.get(k) is None]
    if missing:
        raise PlanError(
            f"{where} lacks {', '.join(missing)}: every entry needs topic, partition, start_offset, "
            "producer_id, producer_epoch, coordinator_epoch, reason, last_timestamp_ms"
        )
    try:
        ints = {k: int(raw[k]) for k in _INT_FIELDS}
    except (TypeError, ValueError) as exc:
        raise PlanError(f"{where}: {exc}: numeric fields must be integers") from exc
    if ints["start_offset"] < 0:
        raise PlanError(f"{where}: start_offset {ints['start_offset']} is negative: nothing is open there")
    if raw["reason"] not in HANGING_REASONS:
        raise PlanError(f"{where}: reason {raw['reason']!r} is not a hanging reason ({', '.join(HANGING_REASONS)})")
    leader = raw.get("leader_broker_id")
    tid = raw.get("transactional_id")
    return AbortPlanEntry(
        topic=str(raw["topic"]),
        reason=str(raw["reason"]),
        transactional_id=None if tid is None else str(tid),
        leader_broker_id=None if leader is None else int(leader),
        replica_broker_ids=[int(b) for b in raw.get("replica_broker_ids") or []],
        **ints,
    )


def plan_from_dict(data: Any) -> AbortPlan:
    if not isinstance(data, Mapping):
        raise PlanError("an abort plan is a YAML mapping with version, kind and entries")
    if data.get("kind", PLAN_KIND) != PLAN_KIND:
        raise PlanError(f"kind is {data.get('kind')!r}, expected {PLAN_KIND!r}: is this an abort plan?")
    version = data.get("version")
    if not isinstance(version, int) or version < 1 or version > PLAN_VERSION:
        raise PlanError(
            f"plan version {version!r} is not supported (this tool reads versions 1..{PLAN_VERSION}): "
            "upgrade kafka-txn-tools or regenerate the plan"
        )
    entries = data.get("entries") or []
    if not isinstance(entries, list):
        raise PlanError("entries must be a list")
    return AbortPlan(
        entries=[_entry(i, e) for i, e in enumerate(entries)],
        as_of_ms=int(data.get("as_of_ms") or 0),
        max_transaction_timeout_ms=int(data.get("max_transaction_timeout_ms") or 0),
        generated_by=str(data.get("generated_by", "")),
        version=version,
    )


def plan_to_dict(plan: AbortPlan) -> dict[str, Any]:
    return {
        "version": plan.version,
        "kind": PLAN_KIND,
        "generated_by": plan.generated_by,
        "as_of_ms": plan.as_of_ms,
        "max_transaction_timeout_ms": plan.max_transaction_timeout_ms,
        "entries": [asdict(e) for e in plan.entries],
    }


def load_plan(path: str | os.PathLike[str]) -> AbortPlan:
    """Read and validate a plan file; errors name the file and the entry."""
    try:
        with open(path, encoding="utf-8") as src:
            data = yaml.safe_load(src)
    except OSError as exc:
        raise PlanError(f"cannot read abort plan {path}: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise PlanError(f"{path} is not valid YAML: {exc}") from exc
    try:
        return plan_from_dict(data)
    except PlanError as exc:
        raise PlanError(f"{path}: {exc}") from exc


def write_plan(plan: AbortPlan, path: str | os.PathLike[str]) -> None:
    with open(path, "w", encoding="utf-8") as out:
        yaml.safe_dump(plan_to_dict(plan), out, sort_keys=False, default_flow_style=None)
