"""abort: validate against the leader's producer state and the coordinator's view, then write one marker.

Validation (nothing is written until it passes):
1. The leader's DescribeProducers must show an open transaction starting exactly at --start-offset
   (that gives the producer id, epoch and coordinator epoch, as upstream). If none starts there and
   the partition's LSO is already past the offset, the transaction was completed: "already done".
2. The coordinator's view (ListTransactions by producer id + DescribeTransactions, classified by
   admin/hanging.py): if the coordinator still holds the transaction as ongoing with this partition,
   it is live - aborting it would fail the producer's commit - so we refuse unless --force.

The marker carries the producer's coordinator epoch (clamped to >= 0, as upstream: a real broker
fences markers whose coordinator epoch is older than the one it stored) and KIP-664's TxnStartOffset
tag, so a broker that knows the tag aborts only the transaction starting at that offset.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from kafka_txn_tools.admin import hanging
from kafka_txn_tools.admin.api import ClusterApi
from kafka_txn_tools.admin.errors import BrokerError, ConnectionFailed, NothingToDo, UsageError
from kafka_txn_tools.models import (
    AbortSpec,
    ClusterInfo,
    HangingReason,
    OpenTransaction,
    PartitionOffsets,
    ProducerState,
    TopicPartition,
)

AbortClient = ClusterApi


@dataclass
class AbortCheck:
    """What validation found; `spec` is the marker to write when there is something to abort."""

    partition: TopicPartition
    leader: int
    before: PartitionOffsets
    spec: AbortSpec | None = None
    producer: ProducerState | None = None
    verdict: hanging.Verdict | None = None
    refusal: str | None = None  # why aborting looks unsafe; --force overrides
    notes: list[str] = field(default_factory=list)

    @property
    def coordinator_view(self) -> str:
        if self.verdict is None:
            return "unknown (the coordinator's view could not be read)"
        return f"{self.verdict.reason.value}: {self.verdict.detail}"


@dataclass
class AbortOutcome:
    check: AbortCheck
    after: PartitionOffsets
    still_open: bool


def _leader(client: AbortClient, tp: TopicPartition) -> tuple[ClusterInfo, int]:
    cluster = client.metadata([tp.topic])
    info = cluster.partition(tp)
    if info is None:
        topic_error = dict(cluster.topic_errors).get(tp.topic)
        what = f"topic {tp.topic!r} ({topic_error})" if topic_error else f"partition {tp}"
        raise UsageError(f"{what} does not exist or is not visible to this principal",
                         "check --topic and --partition")
    if info.leader < 0:
        raise BrokerError(f"partition {tp} has no leader right now", "LEADER_NOT_AVAILABLE",
                          "retry once a replica is elected leader")
    return cluster, info.leader


def _producers_on_leader(client: AbortClient, tp: TopicPartition, leader: int) -> list[ProducerState]:
    replicas, errors = client.describe_producers({leader: [tp]})
    if errors:
        err = errors[0]
        raise BrokerError(f"Failed to validate producer state for partition {tp}: {err.message}", err.error)
    return [p for r in replicas if r.partition == tp for p in r.producers]


def check_by_start_offset(client: AbortClient, tp: TopicPartition, start_offset: int) -> AbortCheck:
    cluster, leader = _leader(client, tp)
    producers = _producers_on_leader(client, tp, leader)
    before = client.partition_offsets({tp: leader})[tp]
    producer = next((p for p in producers if p.current_txn_start_offset == start_offset), None)
    if producer is None:
        _explain_missing(tp, start_offset, producers, before)
    assert producer is not None
    check = AbortCheck(tp, leader, before, producer=producer,
                       spec=AbortSpec(tp, producer.producer_id, producer.producer_epoch,
                                      max(producer.coordinator_epoch, 0), start_offset))
    _add_coordinator_view(client, cluster, check, producer)
    return check


def _explain_missing(
    tp: TopicPartition, offset: int, producers: list[ProducerState], before: PartitionOffsets,
) -> None:
    if before.high_watermark is not None and offset >= before.high_watermark:
        raise UsageError(f"offset {offset} is beyond the end of partition {tp} "
                         f"(high watermark {before.high_watermark})",
                         "take --start-offset from `kafka-txn find-hanging` or `describe-producers`")
    if before.last_stable_offset is not None and before.last_stable_offset > offset:
        raise NothingToDo(f"no open transaction starts at offset {offset} on partition {tp} any more: it was "
                          f"aborted or committed (the last stable offset is now {before.last_stable_offset})")
    starts = sorted(p.current_txn_start_offset for p in producers if p.has_open_transaction)
    hint = (f"open transactions on {tp} start at {', '.join(map(str, starts))}" if starts
            else f"{tp} has no open transactions")
    raise UsageError(f"Could not find any open transactions starting at offset {offset} on partition {tp}", hint)


def check_legacy(
    client: AbortClient, tp: TopicPartition, producer_id: int, producer_epoch: int, coordinator_epoch: int,
) -> AbortCheck:
    """The pre-3.0 form: the caller names producer id, epoch and coordinator epoch."""
    cluster, leader = _leader(client, tp)
    before = client.partition_offsets({tp: leader})[tp]
    # Upstream: a producer that never got a marker shows coordinator epoch -1; 0 is <= any real epoch.
    spec = AbortSpec(tp, producer_id, producer_epoch, max(coordinator_epoch, 0), None)
    check = AbortCheck(tp, leader, before, spec=spec)
    replicas, errors = client.describe_producers({leader: [tp]})
    if errors:
        check.notes.append(f"producer state not validated: {errors[0].message}")
        return check
    producer = next((p for r in replicas for p in r.producers if p.producer_id == producer_id), None)
    if producer is None:
        check.refusal = f"partition {tp} has no state for producer id {producer_id} (wrong id, or expired)"
        return check
    check.producer = producer
    if not producer.has_open_transaction:
        raise NothingToDo(f"producer {producer_id} has no open transaction on partition {tp}: already aborted "
                          "or committed")
    _add_coordinator_view(client, cluster, check, producer)
    return check


def _add_coordinator_view(
    client: AbortClient, cluster: ClusterInfo, check: AbortCheck, producer: ProducerState,
) -> None:
    listed = client.list_transactions(cluster.broker_ids(), producer_ids=[producer.producer_id])
    ids = {entry.transactional_id for entry in listed.listings if entry.producer_id == producer.producer_id}
    described = client.describe_transactions(ids)
    candidate = OpenTransaction(check.partition, check.leader, producer)
    verdict = hanging.classify(candidate, ids, described.descriptions, described.not_found)
    if verdict is not None and verdict.reason is HangingReason.NO_TRANSACTIONAL_ID and listed.errors:
        verdict = None  # an unreachable coordinator may be the one that owns it
    check.verdict = verdict
    if verdict is None:
        failures = "; ".join(e.message for e in [*listed.errors, *described.errors][:3])
        check.refusal = ("the coordinator's view could not be read, so the transaction may be live"
                         + (f" ({failures})" if failures else ""))
    elif verdict.reason is HangingReason.LATE:
        txn = verdict.transactional_id
        check.refusal = (f"the coordinator still holds {txn!r} as ongoing with {check.partition}: it is live and "
                         f"aborting it would fail the producer's commit (wait for its timeout, or "
                         f"`kafka-txn force-terminate --transactional-id {txn}`)")


def execute(
    client: AbortClient, check: AbortCheck, sleep: Callable[[float], None] = time.sleep, settle_s: float = 3.0,
) -> AbortOutcome:
    """Write the marker, then re-read producer state and offsets (waiting briefly for the LSO to move)."""
    spec = check.spec
    if spec is None:
        raise UsageError(f"nothing to abort on {check.partition}")
    error = _write_marker(client, check, spec)
    if error in _LEADER_MOVED:
        # Leadership moved between validation and the marker (a broker restarted, a reassignment):
        # find the new leader, check the same transaction is still open there, and write it once more.
        _follow_leader(client, check, sleep)
        error = _write_marker(client, check, spec)
    if error is not None:
        _raise_marker_error(client, check, error)
    return _after(client, check, sleep, settle_s)


# Marker errors (or an unreachable leader) that mean "ask the partition's new leader".
_LEADER_MOVED = {"NOT_LEADER_FOR_PARTITION", "NOT_LEADER_OR_FOLLOWER", "LEADER_NOT_AVAILABLE",
                 "FENCED_LEADER_EPOCH", "UNKNOWN_LEADER_EPOCH", "BROKER_UNREACHABLE"}


def _write_marker(client: AbortClient, check: AbortCheck, spec: AbortSpec) -> str | None:
    try:
        return client.write_abort_marker(check.leader, spec.partition, spec.producer_id, spec.producer_epoch,
                                         spec.coordinator_epoch, spec.start_offset)
    except ConnectionFailed:
        return "BROKER_UNREACHABLE"


def _follow_leader(client: AbortClient, check: AbortCheck, sleep: Callable[[float], None],
                   wait_s: float = 15.0) -> None:
    old = check.leader
    deadline = time.monotonic() + wait_s
    while True:
        try:
            _cluster, leader = _leader(client, check.partition)
        except BrokerError:
            leader = -1  # no leader elected yet
        if leader not in (-1, old) or time.monotonic() >= deadline:
            break
        sleep(0.2)
    if leader in (-1, old):
        raise BrokerError(f"the leader of {check.partition} (broker {old}) stopped answering and no new leader "
                          f"was elected within {wait_s:.0f} s; nothing was written", "LEADER_NOT_AVAILABLE",
                          "retry the same abort command once the partition has a leader")
    check.leader = leader
    if not _still_open(client, check):
        spec = check.spec
        assert spec is not None
        raise NothingToDo(f"leadership of {check.partition} moved to broker {leader}, where the transaction at "
                          f"offset {spec.start_offset} is no longer open: it was completed")
    check.notes.append(f"leadership of {check.partition} moved from broker {old} to {leader} during the abort; "
                       "re-validated on the new leader")


def _raise_marker_error(client: AbortClient, check: AbortCheck, error: str) -> None:
    spec = check.spec
    assert spec is not None
    if error == "INVALID_TXN_STATE" and not _still_open(client, check):
        raise NothingToDo(f"the transaction at offset {spec.start_offset} on {check.partition} was completed "
                          "before the abort marker arrived")
    raise BrokerError(f"Failed to abort transaction on {check.partition} (producer {spec.producer_id}, epoch "
                      f"{spec.producer_epoch}, coordinator epoch {spec.coordinator_epoch}): {error}", error)


def _still_open(client: AbortClient, check: AbortCheck) -> bool:
    spec = check.spec
    assert spec is not None
    replicas, _errors = client.describe_producers({check.leader: [check.partition]})
    return any(
        p.producer_id == spec.producer_id and p.has_open_transaction
        and (spec.start_offset is None or p.current_txn_start_offset == spec.start_offset)
        for r in replicas for p in r.producers)


def _lso_settled(check: AbortCheck, after: PartitionOffsets) -> bool:
    before_lso, now_lso = check.before.last_stable_offset, after.last_stable_offset
    if before_lso is None or now_lso is None:
        return True
    start = check.spec.start_offset if check.spec is not None else None
    # Only wait for the LSO if this transaction was what held it.
    held_by_us = start is None or before_lso >= start
    return now_lso > before_lso or not held_by_us


def _after(client: AbortClient, check: AbortCheck, sleep: Callable[[float], None], settle_s: float) -> AbortOutcome:
    # The LSO moves once the marker is replicated to the in-sync replicas; poll briefly for it.
    deadline = time.monotonic() + settle_s
    while True:
        after = client.partition_offsets({check.partition: check.leader})[check.partition]
        open_now = _still_open(client, check)
        if (not open_now and _lso_settled(check, after)) or time.monotonic() >= deadline:
            return AbortOutcome(check, after, open_now)
        sleep(0.1)
