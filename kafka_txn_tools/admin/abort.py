"""abort: check every identifier the user gave against live state, then write one marker.

Nothing is written until `validate` has passed and the caller (a person, or --yes/--force) agreed:

1. The leader's DescribeProducers must show exactly the open transaction the user named: the one
   starting at --start-offset, or producer --producer-id's (legacy form); and every other identifier
   given (producer id, producer epoch, coordinator epoch, as in a plan entry) must match it. A
   mismatch is refused outright (`Refused`): the named transaction is not the open one. When no
   open transaction starts at the offset, the log there is read (admin/offset_evidence.py): only a
   marker of the same producer after it makes the abort "already done" (`NothingToDo`); anything
   else (an offset past the end, a non-transactional record, a marker, an offset inside another
   open transaction) is a refusal that says what is there and where the open transactions start.
   The legacy form's producer without an open transaction is "already done" only if a marker ever
   ended one of its transactions on the partition (its coordinator epoch is set).
2. The coordinator's view (ListTransactions by producer id + DescribeTransactions, classified by
   admin/hanging.py): if the coordinator still holds the transaction as ongoing with this partition,
   it is live - aborting it would fail the producer's commit - so `refusal` is set and only --force
   overrides it (`live` tells the caller to warn about it). A prepared two-phase-commit transaction
   (KIP-939) is refused the same way, naming the external transaction manager that owns it: that
   manager may already have decided to commit it.
3. What the cluster cannot tell us is `unverifiable`: without DescribeProducers (Kafka before 2.8)
   the legacy form's producer cannot be checked; without ListTransactions / DescribeTransactions
   (before 3.0) neither can the coordinator's view. Such a write needs a person's confirmation on
   a terminal, or --force.

`execute` re-reads the producer state right before writing (the prompt may have waited), writes the
marker with the producer's coordinator epoch (clamped to >= 0, as upstream: brokers fence markers
older than the stored epoch) and KIP-664's TxnStartOffset tag, then waits briefly for the LSO.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from kafka_txn_tools.admin import hanging, offset_evidence, transaction_state
from kafka_txn_tools.admin.api import ClusterApi
from kafka_txn_tools.connection.capabilities import COORDINATOR_VIEW, missing, missing_api_error, require
from kafka_txn_tools.errors import (
    BrokerError,
    ConnectionFailed,
    KafkaTxnError,
    NothingToDo,
    Refused,
    UsageError,
)
from kafka_txn_tools.models import (
    AbortSpec,
    ClusterInfo,
    CoordinatorDecision,
    HangingReason,
    OpenTransaction,
    PartitionOffsets,
    ProducerState,
    TopicPartition,
)

AbortClient = ClusterApi
INT16 = (-(2**15), 2**15 - 1)
INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)


@dataclass(frozen=True)
class AbortTarget:
    """Every identifier the user gave for one abort; None = not given."""

    partition: TopicPartition
    start_offset: int | None = None
    producer_id: int | None = None
    producer_epoch: int | None = None
    coordinator_epoch: int | None = None

    def __post_init__(self) -> None:
        for name, value, (low, high) in (
                ("partition", self.partition.partition, INT32), ("start offset", self.start_offset, INT64),
                ("producer id", self.producer_id, INT64), ("producer epoch", self.producer_epoch, INT16),
                ("coordinator epoch", self.coordinator_epoch, INT32)):
            if value is not None and not low <= value <= high:
                raise UsageError(f"{name} {value} is out of range ({low}..{high})")
        if self.partition.partition < 0:
            raise UsageError(f"partition {self.partition.partition} is not a partition number (0 or more)")
        if self.start_offset is not None and self.start_offset < 0:
            raise UsageError(f"start offset {self.start_offset} is not where a transaction can start",
                             "take --start-offset from `kafka-txn find-hanging` or `describe-producers`")
        if self.start_offset is None and self.producer_id is None:
            raise UsageError("name the transaction with a start offset or a producer id")

    @property
    def legacy(self) -> bool:
        return self.start_offset is None

    def describe(self) -> str:
        parts = [f"start offset {self.start_offset}"] if self.start_offset is not None else []
        for name, value in (("producer", self.producer_id), ("epoch", self.producer_epoch),
                            ("coordinator epoch", self.coordinator_epoch)):
            if value is not None:
                parts.append(f"{name} {value}")
        return f"{self.partition} " + ", ".join(parts)


@dataclass
class AbortCheck:
    """What validation found; `spec` is the marker to write."""

    target: AbortTarget
    leader: int
    before: PartitionOffsets
    spec: AbortSpec
    producer: ProducerState | None = None  # None: producer state could not be read (unverifiable)
    verdict: hanging.Verdict | None = None
    # `kafka-txn commit`: the coordinator's PrepareCommit this COMMIT marker carries out (None: an ABORT marker).
    decision: CoordinatorDecision | None = None
    # An abort's transaction its coordinator decided to commit (`refusal` says so; --force aborts it anyway).
    committed_by: CoordinatorDecision | None = None
    refusal: str | None = None  # why aborting looks unsafe; --force overrides
    live: bool = False  # the coordinator holds it as live: --force gets its own warning
    unverifiable: list[str] = field(default_factory=list)  # needs a person's confirmation or --force
    notes: list[str] = field(default_factory=list)

    @property
    def partition(self) -> TopicPartition:
        return self.target.partition

    @property
    def coordinator_view(self) -> str:
        if self.verdict is None:
            return "unknown (the coordinator's view could not be read)"
        return f"{self.verdict.reason.value}: {self.verdict.detail}"

    @property
    def commit(self) -> bool:
        return self.decision is not None and self.decision.commit

    def marker_text(self) -> str:
        s = self.spec
        tag = f", start offset {s.start_offset}" if s.start_offset is not None else ""
        kind = "COMMIT" if self.commit else "ABORT"
        return (f"{kind} marker for {s.partition} to broker {self.leader} (its leader): producer {s.producer_id}, "
                f"epoch {s.producer_epoch}, coordinator epoch {s.coordinator_epoch}{tag}")


@dataclass
class AbortOutcome:
    check: AbortCheck
    after: PartitionOffsets
    still_open: bool


# --- validation ------------------------------------------------------------------------------------

def validate(client: AbortClient, target: AbortTarget) -> AbortCheck:
    """Check `target` against the leader's producer state and the coordinator; write nothing."""
    require(client, "abort", "WriteTxnMarkers")
    cluster, leader = leader_of(client, target.partition)
    before = client.partition_offsets({target.partition: leader})[target.partition]
    if not client.supports("DescribeProducers"):
        return _unverified_producer(client, target, leader, before)
    producers = producers_on_leader(client, target.partition, leader)
    producer = match_open(client, target, leader, producers, before)
    refuse_mismatches(target, producer)
    spec = AbortSpec(target.partition, producer.producer_id, producer.producer_epoch,
                     max(producer.coordinator_epoch, 0), producer.current_txn_start_offset)
    check = AbortCheck(target, leader, before, spec, producer=producer)
    add_coordinator_view(client, cluster, check, producer)
    _add_decision(client, check)
    return check


def _add_decision(client: AbortClient, check: AbortCheck) -> None:
    """A hanging transaction its coordinator decided to commit (admin/decisions.py): its COMMIT marker never
    came, and an abort would discard records the application was told were committed. Refused unless --force."""
    v, producer = check.verdict, check.producer
    if v is None or not v.reason.is_hanging or v.transactional_id is None or producer is None or check.refusal:
        return
    found = transaction_state.decision_on(client, v.transactional_id, check.partition, producer).decision
    if found is not None and found.commit:
        check.committed_by = found
        check.refusal = (f"{found.describe()}, and completed it without this partition's COMMIT marker: aborting it "
                         "would discard records the application was told were committed (`kafka-txn commit` writes "
                         "the marker it decided on)")


def _unverified_producer(client: AbortClient, target: AbortTarget, leader: int,
                         before: PartitionOffsets) -> AbortCheck:
    """No DescribeProducers: only the legacy form, complete, can be written - after a person agrees."""
    if target.producer_id is None or target.producer_epoch is None or target.coordinator_epoch is None:
        raise missing_api_error("DescribeProducers", "abort --start-offset",
                                "on brokers without it, name the transaction with --producer-id, --producer-epoch "
                                "and --coordinator-epoch (the legacy form)")
    spec = AbortSpec(target.partition, target.producer_id, target.producer_epoch, max(target.coordinator_epoch, 0),
                     target.start_offset)
    check = AbortCheck(target, leader, before, spec)
    check.unverifiable.append(
        f"the cluster does not support DescribeProducers (Apache Kafka 2.8+), so producer {target.producer_id} "
        f"epoch {target.producer_epoch} cannot be checked against the producer state of {target.partition}")
    if missing(client, COORDINATOR_VIEW):
        check.unverifiable.append(_no_coordinator_view(client))
    return check


def _no_coordinator_view(client: AbortClient) -> str:
    apis = " and ".join(missing(client, COORDINATOR_VIEW))
    return (f"the coordinator's view cannot be read: the cluster does not support {apis} (Apache Kafka 3.0+), so "
            "it cannot be checked that no coordinator still holds this transaction as live")


def leader_of(client: AbortClient, tp: TopicPartition) -> tuple[ClusterInfo, int]:
    cluster = client.metadata([tp.topic])
    info = cluster.partition(tp)
    if info is None:
        # Live state, not malformed input: a refusal (exit 1), like every identifier the cluster does not know.
        topic_error = dict(cluster.topic_errors).get(tp.topic)
        what = f"topic {tp.topic!r} ({topic_error})" if topic_error else f"partition {tp}"
        raise Refused(f"{what} does not exist or is not visible to this principal", "check --topic and --partition")
    if info.leader < 0:
        raise BrokerError(f"partition {tp} has no leader right now", "LEADER_NOT_AVAILABLE",
                          "retry once a replica is elected leader")
    return cluster, info.leader


def producers_on_leader(client: AbortClient, tp: TopicPartition, leader: int) -> list[ProducerState]:
    replicas, errors = client.describe_producers({leader: [tp]})
    if errors:
        err = errors[0]
        raise BrokerError(f"Failed to validate producer state for partition {tp}: {err.message}", err.error)
    return [p for r in replicas if r.partition == tp for p in r.producers]


def match_open(client: AbortClient, target: AbortTarget, leader: int, producers: list[ProducerState],
           before: PartitionOffsets) -> ProducerState:
    tp = target.partition
    if target.start_offset is not None:
        found = next((p for p in producers if p.has_open_transaction
                      and p.current_txn_start_offset == target.start_offset), None)
        if found is None:
            _explain_missing(client, tp, leader, target.start_offset, producers, before)
        assert found is not None
        return found
    pid = target.producer_id
    state = next((p for p in producers if p.producer_id == pid), None)
    if state is None:
        raise Refused(f"partition {tp} has no state for producer id {pid} (a wrong id, or an expired producer)",
                      f"take the producer id from `kafka-txn describe-producers --topic {tp.topic} "
                      f"--partition {tp.partition}`")
    if not state.has_open_transaction:
        _explain_not_open(tp, state)
    return state


def _explain_not_open(tp: TopicPartition, state: ProducerState) -> None:
    """The legacy form's producer has no open transaction: done only if a marker ever ended one here
    (a marker sets the producer's coordinator epoch on the partition; -1 means none ever did)."""
    pid = state.producer_id
    if state.coordinator_epoch >= 0:
        raise NothingToDo(f"producer {pid} has no open transaction on partition {tp}: its last transaction there "
                          f"was already ended by a marker (coordinator epoch {state.coordinator_epoch})")
    raise Refused(f"producer {pid} has no open transaction on partition {tp}, and no transaction of it was ever "
                  "ended there by a marker: it does not write transactions to this partition",
                  f"check the producer with `kafka-txn describe-producers --topic {tp.topic} "
                  f"--partition {tp.partition}`")


def _explain_missing(
    client: AbortClient, tp: TopicPartition, leader: int, offset: int, producers: list[ProducerState],
    before: PartitionOffsets,
) -> None:
    """No open transaction starts at `offset`: "already done" only with a marker as evidence, else a
    refusal that says what is at the offset and where the open transactions start."""
    starts = sorted(p.current_txn_start_offset for p in producers if p.has_open_transaction)
    fix = (f"open transactions on {tp} start at {', '.join(map(str, starts))}: take --start-offset from "
           "`kafka-txn find-hanging` or `describe-producers`" if starts else f"{tp} has no open transactions: "
           "nothing to abort")
    missing = f"Could not find any open transactions starting at offset {offset} on partition {tp}"
    if before.high_watermark is not None and offset >= before.high_watermark:
        raise Refused(f"{missing}: the partition ends before it (high watermark {before.high_watermark})", fix)
    found = offset_evidence.read(client, tp, leader, offset)
    raise _judged(found, missing, tp, offset, producers, fix)


def _judged(found: offset_evidence.Evidence, missing: str, tp: TopicPartition, offset: int,
            producers: list[ProducerState], fix: str) -> KafkaTxnError:
    b = found.batch
    if found.error == "OFFSET_OUT_OF_RANGE":
        return Refused(f"{missing}: offset {offset} is no longer in the log (before its log start offset: deleted "
                       "by retention)", fix)
    if found.error is not None:
        return Refused(f"{missing}, and the log at that offset could not be read to tell why ({found.error})", fix)
    if b is None:
        return Refused(f"{missing}: there is no record at offset {offset} any more (removed by compaction)", fix)
    if b.control:
        kind = {True: "a COMMIT marker", False: "an ABORT marker"}.get(b.commit, "a control record")  # type: ignore[arg-type]
        return Refused(f"{missing}: the record at offset {offset} is {kind} of producer {b.producer_id}, not the "
                       "start of a transaction", fix)
    if not b.transactional:
        who = f"producer {b.producer_id}" if b.producer_id >= 0 else "a producer without a producer id"
        return Refused(f"{missing}: the record at offset {offset} is not transactional (written by {who})", fix)
    inside = next((p for p in producers if p.producer_id == b.producer_id and p.has_open_transaction
                   and p.current_txn_start_offset < offset), None)
    if inside is not None:
        return Refused(f"{missing}: offset {offset} is inside the open transaction of producer {b.producer_id}, "
                       f"which starts at offset {inside.current_txn_start_offset}",
                       f"abort it with --start-offset {inside.current_txn_start_offset}")
    if found.marker is not None and b.base_offset == offset:
        done, marker = ("committed", "COMMIT") if found.marker.commit else ("aborted", "ABORT")
        return NothingToDo(f"the transaction of producer {b.producer_id} that started at offset {offset} on "
                           f"partition {tp} was already {done}: its {marker} marker is at offset "
                           f"{found.marker.base_offset}")
    if b.base_offset != offset:
        return Refused(f"{missing}: offset {offset} is inside a batch of producer {b.producer_id} that starts at "
                       f"offset {b.base_offset} (transactions start at a batch's first offset)", fix)
    return Refused(f"{missing}: the transactional record of producer {b.producer_id} there is in no open "
                   f"transaction, and no marker of it was found in the {found.bytes_read} bytes read after it",
                   fix)


def _coordinator_epochs_match(given: int, live: int) -> bool:
    # A producer that never received a marker reports -1; upstream tools print it as -1 and clamp
    # it to 0 in the marker, so -1 and 0 both name "no coordinator epoch yet".
    return given == live or (live < 0 and given in (-1, 0))


def refuse_mismatches(target: AbortTarget, p: ProducerState) -> None:
    live = {"producer id": p.producer_id, "producer epoch": p.producer_epoch,
            "coordinator epoch": p.coordinator_epoch}
    given = {"producer id": target.producer_id, "producer epoch": target.producer_epoch,
             "coordinator epoch": target.coordinator_epoch}
    wrong = [f"{name} {given[name]} (the partition has {live[name]})" for name in live
             if given[name] is not None and not (
                 _coordinator_epochs_match(given[name], live[name]) if name == "coordinator epoch"  # type: ignore[arg-type]
                 else given[name] == live[name])]
    if wrong:
        raise Refused(f"the open transaction of producer {p.producer_id} at offset {p.current_txn_start_offset} on "
                      f"{target.partition} is not the one named: {'; '.join(wrong)}",
                      "the transaction changed since it was read (a stale plan?), or the identifiers are wrong: "
                      "read them again with `kafka-txn find-hanging` or `describe-producers`")


def add_coordinator_view(
    client: AbortClient, cluster: ClusterInfo, check: AbortCheck, producer: ProducerState,
) -> None:
    if missing(client, COORDINATOR_VIEW):
        check.unverifiable.append(_no_coordinator_view(client))
        return
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
    elif verdict.reason is HangingReason.PREPARED_2PC:
        check.live = True
        check.refusal = (f"{verdict.transactional_id!r} is a prepared two-phase-commit transaction (KIP-939) with "
                         f"{check.partition}: an external transaction manager owns it and may already have decided to "
                         "commit it; let that manager commit or abort it")
    elif verdict.reason is HangingReason.LATE:
        txn = verdict.transactional_id
        check.live = True
        check.refusal = (f"the coordinator still holds {txn!r} as ongoing with {check.partition}: it is live and "
                         "aborting it would fail the producer's commit (wait for its timeout, or end it through its "
                         "coordinator with force-terminate, which needs --force while it is within its timeout)")


# --- the write -------------------------------------------------------------------------------------

def execute(
    client: AbortClient, check: AbortCheck, sleep: Callable[[float], None] = time.sleep, settle_s: float = 3.0,
) -> AbortOutcome:
    """Re-check, write the marker, then re-read producer state and offsets (waiting briefly for the LSO)."""
    if check.producer is not None and _open_state(client, check) is False:
        raise NothingToDo(f"the transaction at offset {check.spec.start_offset} on {check.partition} was completed "
                          "after it was validated: nothing was written")
    error = _write_marker(client, check)
    if error in _LEADER_MOVED:
        # Leadership moved between validation and the marker (a broker restarted, a reassignment):
        # find the new leader, check the same transaction is still open there, and write it once more.
        _follow_leader(client, check, sleep)
        error = _write_marker(client, check)
    if error is not None:
        _raise_marker_error(client, check, error)
    return _after(client, check, sleep, settle_s)


# Marker errors (or an unreachable leader) that mean "ask the partition's new leader".
_LEADER_MOVED = {"NOT_LEADER_FOR_PARTITION", "NOT_LEADER_OR_FOLLOWER", "LEADER_NOT_AVAILABLE",
                 "FENCED_LEADER_EPOCH", "UNKNOWN_LEADER_EPOCH", "BROKER_UNREACHABLE"}


def _write_marker(client: AbortClient, check: AbortCheck) -> str | None:
    spec = check.spec
    write = client.write_commit_marker if check.commit else client.write_abort_marker
    try:
        return write(check.leader, spec.partition, spec.producer_id, spec.producer_epoch, spec.coordinator_epoch,
                     spec.start_offset)
    except ConnectionFailed:
        return "BROKER_UNREACHABLE"


def _follow_leader(client: AbortClient, check: AbortCheck, sleep: Callable[[float], None],
                   wait_s: float = 15.0) -> None:
    old = check.leader
    deadline = time.monotonic() + wait_s
    while True:
        try:
            _cluster, leader = leader_of(client, check.partition)
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
    if check.producer is not None and not _still_open(client, check):
        raise NothingToDo(f"leadership of {check.partition} moved to broker {leader}, where the transaction at "
                          f"offset {check.spec.start_offset} is no longer open: it was completed")
    check.notes.append(f"leadership of {check.partition} moved from broker {old} to {leader} during the abort; "
                       "re-validated on the new leader")


def _raise_marker_error(client: AbortClient, check: AbortCheck, error: str) -> None:
    spec = check.spec
    verb = "commit" if check.commit else "abort"
    if error == "INVALID_TXN_STATE" and check.producer is not None and not _still_open(client, check):
        raise NothingToDo(f"the transaction at offset {spec.start_offset} on {check.partition} was completed "
                          f"before the {verb} marker arrived")
    raise BrokerError(f"Failed to {verb} transaction on {check.partition} (producer {spec.producer_id}, epoch "
                      f"{spec.producer_epoch}, coordinator epoch {spec.coordinator_epoch}): {error}", error)


def _open_state(client: AbortClient, check: AbortCheck) -> bool | None:
    """Whether the very transaction validated (producer id, epoch, start offset) is still open on the
    leader; None when the leader could not be asked (the write then finds out, and follows a move)."""
    spec = check.spec
    replicas, errors = client.describe_producers({check.leader: [check.partition]})
    if errors and not replicas:
        return None
    return any(
        p.producer_id == spec.producer_id and p.producer_epoch == spec.producer_epoch and p.has_open_transaction
        and (spec.start_offset is None or p.current_txn_start_offset == spec.start_offset)
        for r in replicas for p in r.producers)


def _still_open(client: AbortClient, check: AbortCheck) -> bool:
    return _open_state(client, check) is not False


def _lso_settled(check: AbortCheck, after: PartitionOffsets) -> bool:
    before_lso, now_lso = check.before.last_stable_offset, after.last_stable_offset
    if before_lso is None or now_lso is None:
        return True
    start = check.spec.start_offset
    # Only wait for the LSO if this transaction was what held it.
    held_by_us = start is None or before_lso >= start
    return now_lso > before_lso or not held_by_us


def _after(client: AbortClient, check: AbortCheck, sleep: Callable[[float], None], settle_s: float) -> AbortOutcome:
    # The LSO moves once the marker is replicated to the in-sync replicas; poll briefly for it.
    deadline = time.monotonic() + settle_s
    while True:
        after = client.partition_offsets({check.partition: check.leader})[check.partition]
        open_now = _still_open(client, check) if client.supports("DescribeProducers") else False
        if (not open_now and _lso_settled(check, after)) or time.monotonic() >= deadline:
            return AbortOutcome(check, after, open_now)
        sleep(0.1)
