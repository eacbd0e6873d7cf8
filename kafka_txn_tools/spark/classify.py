"""Late and hanging transactions as pure functions over plain rows: no Spark, no I/O.

The Spark side (gather.py) scans the big tables and hands over only the partitions where some
replica shows a transaction open longer than the timeout - the only ones either rule can flag:
their replicas (`Replica`), their open transactions (`OpenRow`) and the coordinator state of the
producer ids involved (`Coordinator`). These sets are small by construction, so everything below
runs on the driver, in plain Python, and is tested with plain data.

Two lateness rules, both evaluated at `now` (the input's capture time or --as-of, never the clock):

- find-hanging's, per producer: open transaction and `now - last_timestamp > max_timeout` (strict,
  no padding). These are the candidates that get a verdict.
- the broker metric's (PartitionsWithLateTransactionsCount), per partition on its leader: the
  producer owning the open transaction with the lowest first offset has `last_timestamp > 0` and
  `now - last_timestamp > max_timeout + 5 min`; counted per leader broker.

Verdicts come from the partition leader's view (where an abort goes). The leader is the replica
flagged is_leader; when no input says (log dirs, dump-log text) it is inferred: the replica whose
state reaches the highest offset, then the freshest capture, then the lowest broker id. Only each
replica's freshest observation counts (an old snapshot may show a transaction since completed).

Reasons, checked in this order against the coordinator state of the candidate's producer id, by the
CLI's find-hanging rules themselves (`reason_against` and `judge` in kafka_txn_tools/admin/hanging.py,
over a CoordinatorView made from each coordinator row), so both give one verdict:
1. no-transactional-id: no transactional id maps to the producer id (never listed, or expired: a
   tombstone in `__transaction_state` removes the id, as the coordinator does);
2. transactional-id-not-found: the id maps to the producer but its coordinator does not know it
   (state Dead in a dump: DescribeTransactions answered TRANSACTIONAL_ID_NOT_FOUND);
3. epoch-mismatch: the coordinator's epoch is older than the partition's: its markers would be fenced;
4. transaction-not-ongoing: the coordinator holds the id as Empty / CompleteCommit / CompleteAbort:
   no marker is coming;
5. partition-not-in-transaction: the transaction is ongoing without this partition;
otherwise `late`: the coordinator confirms a live transaction (reported only with include_late), or
`prepared-2pc` when its timeout is Integer.MAX_VALUE (KIP-939: an external manager owns it; verdict late).
A coordinator row without partitions (describe failed) gives `coordinator-state-unknown`,
verdict `unverified`: reported, never planned. A no-transactional-id row carries
`last_known_transactional_id`: the id whose newest coordinator row (tombstoned ones included) named the
producer id, by the CLI's `last_known_owner`.

A hanging row with a transactional id gets its coordinator's decision, by find-hanging's rule itself
(`decision_for` in kafka_txn_tools/admin/decisions.py) over the PrepareCommit / PrepareAbort records the
inputs hold (`__transaction_state` segments, transaction-log text; a dump holds none): a transaction its
coordinator decided to commit (Apache Kafka 4.x completes a commit without the marker of a partition whose
leader is offline) is ended by `kafka-txn commit`, not an abort, and carries `coordinator_decision` as
find-hanging's row does; the abort plan leaves it out (`committed`).

Coordinator-side stuck transactions (`stuck`), by the CLI's `judge_coordinator`: a coordinator row in a
Prepare state (a PREPARE record without its COMPLETE) for longer than the max prepare time, or Ongoing at
an exhausted epoch; its pending partitions are those of its record whose leader's freshest state still
holds the producer's open transaction, or that no input shows (leader-unknown). How long it has been in
the state is the record's last update time (log dirs, dump-log text), else the lower bound from its
start and timeout (live dumps, which carry no update time). Same fields and reasons as find-hanging's
rows of kind "coordinator"; the groups held back are not in the inputs (`stalled_groups` null).

Replica divergence, for transactions open longer than the timeout: open on a follower but not on
the leader, and open on the leader but missing on a follower that reported the partition.

Missing values follow SQL, as the earlier DataFrame version of these rules did: a comparison with
an unknown value decides nothing (e.g. an unknown coordinator epoch is no epoch mismatch).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from kafka_txn_broker.formats.transactions import (
    DEFAULT_MAX_TRANSACTION_TIMEOUT_MS,
    LATE_TRANSACTION_BUFFER_MS,
    NO_PRODUCER_EPOCH,
)
from kafka_txn_tools.admin.advice import Invocation
from kafka_txn_tools.admin.coordinator_rules import CoordinatorTxn, LeaderView, judge_coordinator
from kafka_txn_tools.admin.decisions import Decision, decision_for
from kafka_txn_tools.admin.hanging import (
    LIVE,
    CoordinatorView,
    Ownership,
    judge,
    last_known_owner,
    reason_against,
)
from kafka_txn_tools.admin.partition_advice import partition_action, partition_commands
from kafka_txn_tools.admin.transaction_state import CLOCK_SLACK_MS
from kafka_txn_tools.models import (
    DEAD_STATE,
    DEFAULT_MAX_PREPARE_MS,
    HANGING_REASONS,
    HangingReason,
    ProducerState,
    RowKind,
    StuckTransaction,
    TopicPartition,
)

REASONS = HANGING_REASONS
NO_ID = HangingReason.NO_TRANSACTIONAL_ID.value
LATE = HangingReason.LATE.value
LIVE_REASONS = frozenset(r.value for r in LIVE)
UNKNOWN = "coordinator-state-unknown"
FOLLOWER_ONLY = "open-on-follower-not-leader"
LEADER_ONLY = "open-on-leader-not-follower"
MAX_LONG = (1 << 63) - 1  # the offset of a live observation: newer than any snapshot
TXN_KEY = ["topic", "partition", "producer_id", "start_offset"]

PartitionKey = tuple[str, int]
ReplicaKey = tuple[str, int, int]  # topic, partition, broker id
TxnKey = tuple[str, int, int, int]  # topic, partition, producer id, start offset


@dataclass(frozen=True)
class SweepParams:
    now_ms: int
    max_transaction_timeout_ms: int = DEFAULT_MAX_TRANSACTION_TIMEOUT_MS
    include_late: bool = False
    max_prepare_ms: int = DEFAULT_MAX_PREPARE_MS
    # The cluster the inputs were captured from, as the rows' commands reach it (admin/advice.py).
    invocation: Invocation = Invocation()


@dataclass(frozen=True, slots=True)
class OpenRow:
    """One replica's observation of an open transaction (normalized producer row)."""

    topic: str
    partition: int
    broker_id: int
    is_leader: bool | None
    producer_id: int
    producer_epoch: int | None
    coordinator_epoch: int
    start_offset: int
    last_timestamp_ms: int
    snapshot_offset: int | None
    capture_time_ms: int | None
    source: str

    @property
    def key(self) -> TxnKey:
        return (self.topic, self.partition, self.producer_id, self.start_offset)

    @property
    def partition_key(self) -> PartitionKey:
        return (self.topic, self.partition)

    @property
    def replica_key(self) -> ReplicaKey:
        return (self.topic, self.partition, self.broker_id)

    def age_ms(self, now_ms: int) -> int:
        return now_ms - self.last_timestamp_ms


@dataclass(frozen=True, slots=True)
class Replica:
    """One replica of a partition, over all its rows (open transaction or not): the leader flag any
    row set, and its freshest observation - the latest capture, then the highest snapshot offset."""

    topic: str
    partition: int
    broker_id: int
    is_leader: bool | None
    capture: int | None
    offset: int  # MAX_LONG for a live observation (no snapshot offset)


@dataclass(frozen=True, slots=True)
class Coordinator:
    """The newest coordinator state of one transactional id."""

    producer_id: int
    transactional_id: str
    coordinator_id: int | None
    state: str | None
    producer_epoch: int | None
    # (topic, partition) in the transaction; None when DescribeTransactions gave none (failed).
    partitions: tuple[tuple[str | None, int | None], ...] | None
    timeout_ms: int | None = None
    start_time_ms: int | None = None
    last_update_ms: int | None = None  # the record's TransactionLastUpdateTimestampMs (logs); None: live dump


@dataclass(frozen=True, slots=True)
class Leader:
    topic: str
    partition: int
    leader_broker_id: int
    leader_inferred: bool


@dataclass(frozen=True, slots=True)
class LatePartition:
    """A partition whose leader shows open transactions: the oldest one, and whether the metric counts it."""

    topic: str
    partition: int
    leader_broker_id: int
    leader_inferred: bool
    oldest_producer_id: int
    metric_late: bool


@dataclass(frozen=True, slots=True)
class Divergence:
    topic: str
    partition: int
    producer_id: int
    start_offset: int
    kind: str
    leader_broker_id: int
    broker_ids: tuple[int, ...]  # the followers it is open on, or missing from


@dataclass(frozen=True, slots=True)
class BrokerCounts:
    """Per leader broker: PartitionsWithLateTransactionsCount, partitions with open transactions, and
    how many of those had their leader inferred (brokers leading no open transaction are absent)."""

    leader_broker_id: int
    late_partitions: int
    open_partitions: int
    inferred_leaders: int


@dataclass
class Analysis:
    leaders: dict[PartitionKey, Leader]
    late: list[LatePartition]
    divergence: list[Divergence]
    verdicts: list[dict[str, Any]]  # every candidate, OUTPUT_COLUMNS, in report order
    stuck: list[StuckTransaction]  # coordinator-side, as find-hanging's rows of kind "coordinator"


def _offset(snapshot_offset: int | None) -> int:
    return MAX_LONG if snapshot_offset is None else snapshot_offset


def _leader_rank(replica: Replica) -> tuple[int, int, bool, int, int]:
    """Sort key, best first: flagged leader, unflagged, flagged follower; then the highest offset,
    the latest capture (unknown last), the lowest broker id."""
    flag = 0 if replica.is_leader is True else 1 if replica.is_leader is None else 2
    capture = replica.capture
    return (flag, -replica.offset, capture is None, -(capture or 0), replica.broker_id)


def leaders(replicas: Iterable[Replica]) -> dict[PartitionKey, Leader]:
    """(topic, partition) -> its leader, flagged or inferred."""
    best: dict[PartitionKey, Replica] = {}
    for replica in replicas:
        key = (replica.topic, replica.partition)
        if key not in best or _leader_rank(replica) < _leader_rank(best[key]):
            best[key] = replica
    return {key: Leader(key[0], key[1], r.broker_id, r.is_leader is not True) for key, r in best.items()}


def fresh_open(open_rows: Iterable[OpenRow], replicas: Iterable[Replica]) -> list[OpenRow]:
    """Open transactions from each replica's freshest observation only, one per producer and replica
    (the lowest start offset, then source name)."""
    latest = {(r.topic, r.partition, r.broker_id): (r.capture, r.offset) for r in replicas}
    chosen: dict[tuple[str, int, int, int], OpenRow] = {}
    for row in open_rows:
        if row.capture_time_ms is None or latest.get(row.replica_key) != (
            row.capture_time_ms,
            _offset(row.snapshot_offset),
        ):
            continue
        slot = (*row.replica_key, row.producer_id)
        held = chosen.get(slot)
        if held is None or (row.start_offset, row.source) < (held.start_offset, held.source):
            chosen[slot] = row
    return list(chosen.values())


def on_leader(fresh: Iterable[OpenRow], leader_table: dict[PartitionKey, Leader]) -> list[OpenRow]:
    """The leader's view: fresh rows observed on their partition's leader."""
    out = []
    for row in fresh:
        leader = leader_table.get(row.partition_key)
        if leader is not None and leader.leader_broker_id == row.broker_id:
            out.append(row)
    return out


def late_partitions(
    leader_rows: Iterable[OpenRow], leader_table: dict[PartitionKey, Leader], params: SweepParams
) -> list[LatePartition]:
    """Per partition (leader view): the oldest open transaction and whether the metric counts it late."""
    oldest: dict[PartitionKey, OpenRow] = {}
    for row in leader_rows:
        held = oldest.get(row.partition_key)
        if held is None or (row.start_offset, row.producer_id) < (held.start_offset, held.producer_id):
            oldest[row.partition_key] = row
    threshold = params.max_transaction_timeout_ms + LATE_TRANSACTION_BUFFER_MS
    out = []
    for key, row in sorted(oldest.items()):
        leader = leader_table[key]
        late = row.last_timestamp_ms > 0 and row.age_ms(params.now_ms) > threshold
        out.append(
            LatePartition(key[0], key[1], leader.leader_broker_id, leader.leader_inferred, row.producer_id, late)
        )
    return out


def late_partition_counts(late: Iterable[LatePartition]) -> list[BrokerCounts]:
    counts: dict[int, list[int]] = {}
    for row in late:
        total = counts.setdefault(row.leader_broker_id, [0, 0, 0])
        total[0] += row.metric_late
        total[1] += 1
        total[2] += row.leader_inferred
    return [BrokerCounts(broker, *total) for broker, total in sorted(counts.items())]


def divergence(
    fresh: Sequence[OpenRow], leader_table: dict[PartitionKey, Leader], replicas: Iterable[Replica], params: SweepParams
) -> list[Divergence]:
    """Late transactions open on some replicas only."""
    leader_of = {key: leader.leader_broker_id for key, leader in leader_table.items()}
    known = [row for row in fresh if row.partition_key in leader_of]
    late_any = [row for row in known if row.age_ms(params.now_ms) > params.max_transaction_timeout_ms]
    open_on = {(row.key, row.broker_id) for row in known}
    on_leader_keys = {row.key for row in known if row.broker_id == leader_of[row.partition_key]}
    followers: dict[PartitionKey, set[int]] = {}
    for replica in replicas:
        followers.setdefault((replica.topic, replica.partition), set()).add(replica.broker_id)
    found: dict[tuple[TxnKey, str], set[int]] = {}
    for row in late_any:
        leader = leader_of[row.partition_key]
        if row.broker_id != leader and row.key not in on_leader_keys:
            found.setdefault((row.key, FOLLOWER_ONLY), set()).add(row.broker_id)
        elif row.broker_id == leader:
            missing = {
                b for b in followers.get(row.partition_key, set()) if b != leader and (row.key, b) not in open_on
            }
            if missing:
                found.setdefault((row.key, LEADER_ONLY), set()).update(missing)
    return [
        Divergence(*key, kind, leader_of[(key[0], key[1])], tuple(sorted(brokers)))
        for (key, kind), brokers in sorted(found.items())
    ]


def _view(coordinator: Coordinator) -> CoordinatorView:
    # A dump writes TRANSACTIONAL_ID_NOT_FOUND (and a tombstoned id) as a Dead row.
    parts = None if coordinator.partitions is None else frozenset(coordinator.partitions)
    return CoordinatorView(coordinator.transactional_id, coordinator.state, coordinator.producer_id,
                           coordinator.producer_epoch, parts, found=coordinator.state != DEAD_STATE,
                           timeout_ms=coordinator.timeout_ms)


def reason(candidate: OpenRow, coordinator: Coordinator | None) -> str:
    """The CLI's reason for a candidate against one coordinator row (see module docstring)."""
    if coordinator is None:
        return NO_ID
    why = reason_against(candidate.topic, candidate.partition, candidate.producer_id, candidate.producer_epoch,
                         _view(coordinator))
    return UNKNOWN if why is None else why.value


def verdict_of(reason_name: str) -> str:
    if reason_name in REASONS:
        return "hanging"
    return "late" if reason_name in LIVE_REASONS else "unverified"


def decide(candidate: OpenRow, coordinators: Sequence[Coordinator],
           views: Sequence[CoordinatorView] | None = None) -> tuple[Coordinator | None, str]:
    """The coordinator row that decides and its reason, by the CLI's `judge`: unknown if any id's state is
    unknown, else live if any id says so, else by the first id. `views`: the rows' views, when the caller
    made them once for many candidates."""
    rows = {c.transactional_id: c for c in coordinators}
    judged = ((v, reason_against(candidate.topic, candidate.partition, candidate.producer_id, candidate.producer_epoch,
                                 v)) for v in (views if views is not None else [_view(c) for c in coordinators]))
    view, why = judge(judged)
    decisive = rows[view.transactional_id] if view is not None else None
    return decisive, UNKNOWN if why is None else why.value


def _joined(values: Iterable[int]) -> str:
    return ",".join(str(v) for v in sorted(values))


def verdicts(
    fresh: Sequence[OpenRow],
    leader_table: dict[PartitionKey, Leader],
    late: Iterable[LatePartition],
    diverged: Iterable[Divergence],
    coordinators: Iterable[Coordinator],
    params: SweepParams,
    owners: Sequence[Ownership] = (),
    decisions: Iterable[Decision] = (),
) -> list[dict[str, Any]]:
    """Every candidate (late by find-hanging's rule, leader view) with its verdict and context. `decisions`:
    the coordinators' Prepare records read (module docstring)."""
    decided: dict[str, list[Decision]] = {}
    for d in decisions:
        decided.setdefault(d.transactional_id, []).append(d)
    by_producer: dict[int, list[Coordinator]] = {}
    for coordinator in coordinators:
        by_producer.setdefault(coordinator.producer_id, []).append(coordinator)
    views = {pid: [_view(c) for c in rows] for pid, rows in by_producer.items()}
    open_on: dict[TxnKey, set[int]] = {}
    for row in fresh:
        open_on.setdefault(row.key, set()).add(row.broker_id)
    missing = {(d.topic, d.partition, d.producer_id, d.start_offset): d for d in diverged if d.kind == LEADER_ONLY}
    oldest = {(p.topic, p.partition): p for p in late}
    out = []
    for row in on_leader(fresh, leader_table):
        age = row.age_ms(params.now_ms)
        if age <= params.max_transaction_timeout_ms:
            continue
        decisive, why = decide(row, by_producer.get(row.producer_id, []), views.get(row.producer_id, []))
        decision = coordinator_decision(row, why, decisive.transactional_id if decisive else None, decided)
        leader, flagged, gap = leader_table[row.partition_key], oldest.get(row.partition_key), missing.get(row.key)
        out.append(
            {
                "kind": RowKind.PARTITION.value,
                "topic": row.topic,
                "partition": row.partition,
                "producer_id": row.producer_id,
                "producer_epoch": row.producer_epoch,
                "coordinator_epoch": row.coordinator_epoch,
                "start_offset": row.start_offset,
                "last_timestamp_ms": row.last_timestamp_ms,
                "age_ms": age,
                "duration_min": age // 60_000,
                "verdict": verdict_of(why),
                "reason": why,
                "transactional_id": decisive.transactional_id if decisive else None,
                "last_known_transactional_id": last_known_owner(row.producer_id, owners) if why == NO_ID else None,
                "coordinator_id": decisive.coordinator_id if decisive else None,
                "coordinator_state": decisive.state if decisive else None,
                "coordinator_producer_epoch": decisive.producer_epoch if decisive else None,
                "leader_broker_id": leader.leader_broker_id,
                "leader_inferred": leader.leader_inferred,
                "open_on_brokers": _joined(open_on[row.key]),
                "metric_late": bool(flagged and flagged.metric_late and flagged.oldest_producer_id == row.producer_id),
                "divergence": gap.kind if gap else None,
                "missing_on_brokers": _joined(gap.broker_ids) if gap else None,
                "snapshot_offset": row.snapshot_offset,
                "source": row.source,
                **_advice(row, why, decisive.transactional_id if decisive else None, params, decision),
                "coordinator_decision": decision.to_row() if decision is not None else None,
            }
        )
    return sorted(out, key=report_order)


def coordinator_decision(row: OpenRow, why: str, transactional_id: str | None,
                         decisions: dict[str, list[Decision]]) -> Decision | None:
    """The coordinator's decision on a hanging row's transaction, as find-hanging finds it (admin/scan.py): only
    for a hanging verdict with a transactional id, among that id's own Prepare records."""
    if why not in REASONS or transactional_id is None or row.producer_epoch is None:
        return None
    return decision_for(TopicPartition(row.topic, row.partition), row.producer_id, row.producer_epoch,
                        row.last_timestamp_ms, decisions.get(transactional_id, ()), CLOCK_SLACK_MS)


def committed(row: dict[str, Any]) -> bool:
    """Whether a verdict row's transaction was committed by its coordinator: its end is `kafka-txn commit`, and
    an abort (the plan's) would be refused."""
    decision = row.get("coordinator_decision")
    return row["verdict"] == "hanging" and decision is not None and decision["outcome"] == "commit"


def _advice(row: OpenRow, why: str, transactional_id: str | None, params: SweepParams,
            decision: Decision | None = None) -> dict[str, Any]:
    """A row's action and commands, as find-hanging gives them; a row the inputs cannot decide is checked live."""
    tp = TopicPartition(row.topic, row.partition)
    if why not in {r.value for r in HangingReason}:
        return {"action": ("the inputs do not show its coordinator's state: check it on the live cluster with "
                           f"find-hanging on {tp.topic} before acting"), "commands": []}
    reason_ = HangingReason(why)
    return {"action": partition_action(reason_, tp, row.start_offset, transactional_id, decision),
            "commands": list(partition_commands(reason_, tp, row.start_offset, params.invocation,
                                                params.max_transaction_timeout_ms, transactional_id, decision))}


def report_order(row: dict[str, Any]) -> tuple[Any, ...]:
    return (row["topic"], row["partition"], row["start_offset"], row["producer_id"])


def analyze(
    open_rows: Iterable[OpenRow],
    replicas: Iterable[Replica],
    coordinators: Iterable[Coordinator],
    params: SweepParams,
    stuck_coordinators: Iterable[Coordinator] = (),
    owners: Sequence[Ownership] = (),
    decisions: Iterable[Decision] = (),
) -> Analysis:
    """The whole classification of the partitions the Spark side gathered."""
    replica_list = list(replicas)
    leader_table = leaders(replica_list)
    fresh = fresh_open(open_rows, replica_list)
    late = late_partitions(on_leader(fresh, leader_table), leader_table, params)
    diverged = divergence(fresh, leader_table, replica_list, params)
    return Analysis(
        leaders=leader_table,
        late=late,
        divergence=diverged,
        verdicts=verdicts(fresh, leader_table, late, diverged, coordinators, params, owners, decisions),
        stuck=stuck(stuck_coordinators, leader_table, fresh, params),
    )


def stuck(coordinators: Iterable[Coordinator], leader_table: dict[PartitionKey, Leader], fresh: Sequence[OpenRow],
          params: SweepParams) -> list[StuckTransaction]:
    """Coordinator-side stuck transactions among the coordinator rows (module docstring)."""
    open_on_leader = {(row.topic, row.partition, row.producer_id): row for row in on_leader(fresh, leader_table)}
    out = []
    for c in coordinators:
        if c.state is None or c.producer_epoch is None:
            continue
        parts = tuple(TopicPartition(t, p) for t, p in (c.partitions or ()) if t is not None and p is not None)
        txn = CoordinatorTxn(c.transactional_id, c.state, c.producer_id, c.producer_epoch, c.timeout_ms,
                             c.start_time_ms, parts, c.coordinator_id, c.last_update_ms)
        views = {tp: _leader_view(tp, c.producer_id, leader_table, open_on_leader) for tp in parts}
        row = judge_coordinator(txn, views, params.now_ms, params.max_prepare_ms, coordinator_waits=False,
                                invocation=params.invocation)
        if row is not None:
            out.append(row)
    return sorted(out, key=lambda r: r.transactional_id)


def _leader_view(tp: TopicPartition, producer_id: int, leader_table: dict[PartitionKey, Leader],
                 open_on_leader: dict[tuple[str, int, int], OpenRow]) -> LeaderView:
    leader = leader_table.get((tp.topic, tp.partition))
    if leader is None:
        return LeaderView(None)  # no input shows the partition
    row = open_on_leader.get((tp.topic, tp.partition, producer_id))
    # An epoch the input lacks is shown as Kafka's "no epoch" (-1), not as a real epoch 0.
    epoch = NO_PRODUCER_EPOCH if row is None or row.producer_epoch is None else row.producer_epoch
    producer = None if row is None else ProducerState(row.producer_id, epoch, -1, row.last_timestamp_ms,
                                                      row.coordinator_epoch, row.start_offset)
    return LeaderView(leader.leader_broker_id, producer=producer)


def reported(verdict_rows: Iterable[dict[str, Any]], include_late: bool) -> list[dict[str, Any]]:
    """What the sweep reports: hanging and unverified always, late-but-live only on request."""
    keep = {"hanging", "unverified", *(["late"] if include_late else [])}
    return sorted((r for r in verdict_rows if r["verdict"] in keep), key=report_order)


OUTPUT_COLUMNS = [
    "kind",
    "topic",
    "partition",
    "producer_id",
    "producer_epoch",
    "coordinator_epoch",
    "start_offset",
    "last_timestamp_ms",
    "age_ms",
    "duration_min",
    "verdict",
    "reason",
    "transactional_id",
    "last_known_transactional_id",
    "coordinator_id",
    "coordinator_state",
    "coordinator_producer_epoch",
    "leader_broker_id",
    "leader_inferred",
    "open_on_brokers",
    "metric_late",
    "divergence",
    "missing_on_brokers",
    "snapshot_offset",
    "source",
    "action",
    "commands",
    "coordinator_decision",
]
