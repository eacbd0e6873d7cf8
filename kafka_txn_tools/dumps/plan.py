"""The abort plan: what `kafka-txn sweep` writes and `kafka-txn abort --plan` executes.

YAML, one document::

    version: 2                         # PLAN_VERSION; loaders refuse newer versions
    kind: kafka-txn-abort-plan
    generated_by: kafka-txn sweep
    cluster_id: 7ZyqV1DkQ3aHh1hWm2sJ9A # the cluster it was made on (Metadata's cluster id; null: unknown)
    connection:                        # how that cluster is reached, when known (optional; never a secret)
      bootstrap_server: kafka-1:9092   # the options its commands carry: bootstrap_server, profile,
      profile: null                    # command_config (an absolute path)
      command_config: /etc/kafka/admin.properties
    capture_time_ms: 1700000000000     # when the state was read (the scan, the dump, the log dirs' copy)
    as_of_ms: 1700000000000            # the "now" the verdicts were made at
    max_transaction_timeout_ms: 900000
    entries:
      - topic: orders
        partition: 3
        start_offset: 116              # first offset of the open transaction (abort --start-offset)
        producer_id: 2000
        producer_epoch: 3
        coordinator_epoch: 7           # -1 when the producer never received a marker (optional)
        transactional_id: null         # the id the coordinator maps to, when one exists
        reason: no-transactional-id    # see kafka_txn_tools.models.HANGING_REASONS (optional)
        last_timestamp_ms: 1699990000000   # (optional)
        leader_broker_id: 1            # hint only: the abort re-resolves the leader
        replica_broker_ids: [1, 2, 3]  # replicas where the transaction was seen open
        commands: [kafka-txn abort --topic orders --partition 3 --start-offset 116 ...]
                                       # the same abort as one command line (informational; optional)

Only hanging transactions are planned, never late-but-live ones: aborting a live transaction
would fail the producer's commit. Types are strict (an error names the entry and the field), and
`abort --plan` checks topic, partition, start_offset, producer_id, producer_epoch and, when given,
coordinator_epoch against the live transaction: a plan whose epoch differs is stale and refused.
A plan is applied all or nothing, and `abort --plan` refuses a plan whose cluster_id is not the live
cluster's (admin/abort_batch.py). A hand-written plan may leave out every header field but version
and kind (without cluster_id the cluster is not checked, and the abort says so), and reason and
last_timestamp_ms in its entries. Version 1 (before cluster_id and capture_time_ms) is still read.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import yaml

from kafka_txn_tools.models import HANGING_REASONS

PLAN_VERSION = 2  # 2: cluster_id and capture_time_ms; version 1 plans are read, without them
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
    coordinator_epoch: int | None = None
    reason: str | None = None
    last_timestamp_ms: int | None = None
    transactional_id: str | None = None
    leader_broker_id: int | None = None
    replica_broker_ids: list[int] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)


@dataclass
class AbortPlan:
    entries: list[AbortPlanEntry]
    as_of_ms: int
    max_transaction_timeout_ms: int
    generated_by: str = "kafka-txn sweep"
    version: int = PLAN_VERSION
    cluster_id: str | None = None  # None: not recorded (a version 1 or hand-written plan, or inputs without one)
    capture_time_ms: int | None = None
    # How the cluster is reached (bootstrap_server, profile, command_config: the options its commands carry;
    # the sweep adds what a dump recorded). Informational: `abort --plan` connects with its own options.
    connection: dict[str, Any] | None = None

    def options(self) -> list[str]:
        """The connection options of `connection`, as command-line arguments."""
        c = self.connection or {}
        pairs = (("--profile", c.get("profile")), ("--bootstrap-server", c.get("bootstrap_server")),
                 ("--command-config", c.get("command_config")))
        return [arg for option, value in pairs if value for arg in (option, str(value))]


# The identifiers `abort --plan` checks against the live transaction; every one is required.
REQUIRED_INTS = ("partition", "start_offset", "producer_id", "producer_epoch")
# Checked when present (a hand-written plan may leave them out).
OPTIONAL_INTS = ("coordinator_epoch", "last_timestamp_ms", "leader_broker_id")
KNOWN = {"topic", *REQUIRED_INTS, *OPTIONAL_INTS, "reason", "transactional_id", "replica_broker_ids", "commands"}


def _int(where: str, key: str, value: Any) -> int:
    # Strict: YAML's 1.9, "3" and true are not partition numbers, whatever Python's int() thinks.
    if isinstance(value, bool) or not isinstance(value, int):
        kind = "a boolean" if isinstance(value, bool) else f"a {type(value).__name__}"
        raise PlanError(f"{where}.{key}: {value!r} is {kind}, not an integer")
    return value


def _entry(index: int, raw: Any) -> AbortPlanEntry:
    where = f"entries[{index}]"
    if not isinstance(raw, Mapping):
        raise PlanError(f"{where} is not a mapping of topic, partition, start_offset, producer_id, producer_epoch")
    missing = [k for k in ("topic", *REQUIRED_INTS) if raw.get(k) is None]
    if missing:
        raise PlanError(f"{where} lacks {', '.join(missing)}: every entry needs topic, partition, start_offset, "
                        "producer_id and producer_epoch")
    unknown = sorted(set(map(str, raw)) - KNOWN)
    if unknown:
        raise PlanError(f"{where} has unknown fields {', '.join(unknown)}")
    if not isinstance(raw["topic"], str) or not raw["topic"]:
        raise PlanError(f"{where}.topic: {raw['topic']!r} is not a topic name")
    ints = {k: _int(where, k, raw[k]) for k in REQUIRED_INTS}
    optional = {k: _int(where, k, raw[k]) for k in OPTIONAL_INTS if raw.get(k) is not None}
    if ints["partition"] < 0:
        raise PlanError(f"{where}.partition: {ints['partition']} is negative")
    if ints["start_offset"] < 0:
        raise PlanError(f"{where}.start_offset: {ints['start_offset']} is negative: no transaction starts there")
    reason = raw.get("reason")
    if reason is not None and reason not in HANGING_REASONS:
        raise PlanError(f"{where}.reason: {reason!r} is not a hanging reason ({', '.join(HANGING_REASONS)})")
    tid = raw.get("transactional_id")
    if tid is not None and not isinstance(tid, str):
        raise PlanError(f"{where}.transactional_id: {tid!r} is not a string")
    replicas = raw.get("replica_broker_ids") or []
    if not isinstance(replicas, list):
        raise PlanError(f"{where}.replica_broker_ids: {replicas!r} is not a list of broker ids")
    commands = raw.get("commands") or []
    if not isinstance(commands, list) or not all(isinstance(c, str) for c in commands):
        raise PlanError(f"{where}.commands: {commands!r} is not a list of command lines")
    return AbortPlanEntry(
        topic=raw["topic"], reason=reason, transactional_id=tid,
        replica_broker_ids=[_int(where, "replica_broker_ids", b) for b in replicas], commands=commands,
        **ints, **optional)


def plan_from_dict(data: Any) -> AbortPlan:
    if not isinstance(data, Mapping):
        raise PlanError("an abort plan is a YAML mapping with version, kind and entries")
    if data.get("kind", PLAN_KIND) != PLAN_KIND:
        raise PlanError(f"kind is {data.get('kind')!r}, expected {PLAN_KIND!r}: is this an abort plan?")
    version = data.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1 or version > PLAN_VERSION:
        raise PlanError(
            f"plan version {version!r} is not supported (this tool reads versions 1..{PLAN_VERSION}): "
            "upgrade kafka-txn-tools or regenerate the plan"
        )
    entries = data.get("entries") or []
    if not isinstance(entries, list):
        raise PlanError("entries must be a list")
    header = {k: _int("plan", k, data[k]) for k in ("as_of_ms", "max_transaction_timeout_ms", "capture_time_ms")
              if data.get(k) is not None}
    cluster_id = data.get("cluster_id")
    if cluster_id is not None and (not isinstance(cluster_id, str) or not cluster_id):
        raise PlanError(f"plan.cluster_id: {cluster_id!r} is not a cluster id")
    connection = data.get("connection")
    if connection is not None and (not isinstance(connection, Mapping)
                                   or not all(isinstance(v, str | None) for v in connection.values())):
        raise PlanError(f"plan.connection: {connection!r} is not a mapping of bootstrap_server, profile and "
                        "command_config")
    return AbortPlan(
        entries=[_entry(i, e) for i, e in enumerate(entries)],
        as_of_ms=header.get("as_of_ms", 0),
        max_transaction_timeout_ms=header.get("max_transaction_timeout_ms", 0),
        generated_by=str(data.get("generated_by", "")),
        version=version,
        cluster_id=cluster_id,
        capture_time_ms=header.get("capture_time_ms"),
        connection=dict(connection) if connection is not None else None,
    )


def plan_to_dict(plan: AbortPlan) -> dict[str, Any]:
    return {
        "version": plan.version,
        "kind": PLAN_KIND,
        "generated_by": plan.generated_by,
        "cluster_id": plan.cluster_id,
        **({"connection": plan.connection} if plan.connection is not None else {}),
        "capture_time_ms": plan.capture_time_ms,
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


def plan_yaml(plan: AbortPlan) -> str:
    """The plan as YAML, under a comment that says where and when it was made and how to apply it."""
    from kafka_txn_tools.timestamps import iso_utc

    made = f"cluster {plan.cluster_id}" if plan.cluster_id else "an unrecorded cluster"
    when = f", captured {iso_utc(plan.capture_time_ms)}" if plan.capture_time_ms is not None else ""
    count = len(plan.entries)
    reach = "".join(f" {shlex.quote(arg)}" for arg in plan.options())
    head = (f"# Abort plan made by {plan.generated_by or 'hand'} on {made}{when}: {count} "
            f"{'entry' if count == 1 else 'entries'}.\n"
            f"# Check it with `kafka-txn abort --plan FILE --dry-run{reach}`; apply it with "
            f"`kafka-txn abort --plan FILE{reach}`.\n")
    return head + str(yaml.safe_dump(plan_to_dict(plan), sort_keys=False, default_flow_style=None))


def write_plan(plan: AbortPlan, path: str | os.PathLike[str]) -> None:
    with open(path, "w", encoding="utf-8") as out:
        out.write(plan_yaml(plan))
