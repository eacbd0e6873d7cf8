"""find-hanging's coordinator side: transactions their coordinator holds and cannot finish (rows of kind
"coordinator"; the rules are admin/coordinator_rules.py's `judge_coordinator`). The I/O between the rules:

1. ListTransactions on every broker: states Ongoing and Prepare*, running longer than --max-prepare-time
   (DurationFilter, Kafka 3.8+; older brokers answer all and the start time is checked after describing).
   A transaction enters a state no earlier than it started, so nothing that long in its state is missed.
2. DescribeTransactions of those: the Prepare states, and Ongoing at an exhausted epoch, are candidates.
   In a Prepare state DescribeTransactions lists exactly the partitions still waiting for their marker.
3. `__transaction_state` (admin/transaction_state.py), read once with find-hanging's other questions: when
   each candidate entered its state, at which coordinator epoch.
4. Their partitions' leaders: Metadata, then DescribeProducers on each leader (every producer, not only
   open ones: a closed entry at the coordinator's epoch shows a marker that landed).
5. The verdicts, then a re-describe: a candidate that moved on meanwhile (completed, or another epoch) is
   dropped, as the partition side's re-check drops a transaction that completed during the scan.

`describe` uses `leader_views` and `pending_of` to show the waiting partitions of a Prepare state.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping

from kafka_txn_broker.formats.partitioning import TXN_TOPIC, partition_for
from kafka_txn_tools.admin import advice, coordinator_rules
from kafka_txn_tools.admin.api import ClusterApi
from kafka_txn_tools.admin.transaction_state import TxnStateRead
from kafka_txn_tools.connection.coordinators import CoordinatorCache
from kafka_txn_tools.models import (
    EXHAUSTED_EPOCH,
    PREPARE_STATES,
    ClusterInfo,
    PartitionInfo,
    PendingPartition,
    ScanError,
    StuckTransaction,
    TopicPartition,
    TransactionDescription,
)

ONGOING = "Ongoing"
LISTED_STATES = (ONGOING, *sorted(PREPARE_STATES))


def is_candidate(d: TransactionDescription) -> bool:
    return d.state in PREPARE_STATES or (d.state == ONGOING and d.producer_epoch >= EXHAUSTED_EPOCH)


def candidates(client: ClusterApi, broker_ids: list[int], now_ms: int, max_prepare_ms: int,
               in_scope: Callable[[TransactionDescription], bool],
               known: Mapping[str, TransactionDescription] | None = None,
               described_out: dict[str, TransactionDescription] | None = None,
               coordinators: CoordinatorCache | None = None,
               ) -> tuple[list[TransactionDescription], list[ScanError]]:
    """Steps 1 and 2: the described Prepare* / exhausted Ongoing transactions older than the threshold.
    `known`: descriptions the scan already has (the partition side's); one still in the state listed is not
    asked again (a late-but-live transaction is listed here too: the big share of a busy cluster's list).
    `coordinators`: a scan loop's FindCoordinator answers (connection/coordinators.py)."""
    listed = client.list_transactions(broker_ids, states=LISTED_STATES, duration_ms=max_prepare_ms)
    known = known or {}
    reuse = {t.transactional_id: known[t.transactional_id] for t in listed.listings
             if t.transactional_id in known and known[t.transactional_id].state == t.state}
    ask = sorted({t.transactional_id for t in listed.listings} - reuse.keys())
    described = client.describe_transactions(ask, coordinators) if ask else None
    errors = [*listed.errors, *(described.errors if described is not None else [])]
    descriptions = [*reuse.values(), *(described.descriptions.values() if described is not None else [])]
    if described_out is not None:  # every transaction that long in its state, for the scan's other questions
        described_out.update((d.transactional_id, d) for d in descriptions)
    found = [d for d in descriptions
             if is_candidate(d) and d.start_time_ms >= 0 and now_ms - d.start_time_ms > max_prepare_ms and in_scope(d)]
    # An id gone since it was listed (TRANSACTIONAL_ID_NOT_FOUND) completed and expired: nothing to report.
    return sorted(found, key=lambda d: d.transactional_id), errors


def leader_views(client: ClusterApi, wanted: Mapping[TopicPartition, int], cluster: ClusterInfo | None = None
                 ) -> dict[TopicPartition, coordinator_rules.LeaderView]:
    """Step 4: what each partition's leader shows of the producer id given for it."""
    if not wanted:
        return {}
    cluster = cluster if cluster is not None else client.metadata(sorted({tp.topic for tp in wanted}))
    live = set(cluster.broker_ids())
    infos = {i.partition: i for i in cluster.partitions}
    by_leader: dict[int, list[TopicPartition]] = defaultdict(list)
    views: dict[TopicPartition, coordinator_rules.LeaderView] = {}
    for tp in wanted:
        info = infos.get(tp)
        if info is None:
            views[tp] = coordinator_rules.LeaderView(None)
        elif info.leader < 0 or info.leader not in live:
            down = tuple(r for r in info.replicas if r not in live)
            views[tp] = coordinator_rules.LeaderView(info.leader, online=False, offline_replicas=down)
        else:
            by_leader[info.leader].append(tp)
    replicas, errors = client.describe_producers(dict(by_leader)) if by_leader else ([], [])
    answered = {(r.broker_id, r.partition): r for r in replicas}
    for leader, tps in by_leader.items():
        for tp in tps:
            got = answered.get((leader, tp))
            producer = None if got is None else next(
                (p for p in got.producers if p.producer_id == wanted[tp]), None)
            views[tp] = coordinator_rules.LeaderView(leader, read=got is not None, producer=producer)
    del errors  # a leader that did not answer shows as read=False, which the verdict says
    return views


def as_coordinator_txn(d: TransactionDescription, log: TxnStateRead | None, txn_meta: ClusterInfo | None
                       ) -> coordinator_rules.CoordinatorTxn:
    """The rules' view of one description; `txn_meta`: `__transaction_state`'s metadata (its partition count,
    and the id's partition now: its leader epoch and in-sync replicas), when known."""
    entered, epoch = (None, None) if log is None else log.entered(d.transactional_id, d.state, d.producer_id,
                                                                    d.producer_epoch)
    count = txn_partition_count(txn_meta) if txn_meta is not None else None
    home = partition_for(d.transactional_id, count) if count else None
    info = txn_meta.partition(TopicPartition(TXN_TOPIC, home)) if txn_meta is not None and home is not None else None
    return coordinator_rules.CoordinatorTxn(
        d.transactional_id, d.state, d.producer_id, d.producer_epoch, d.timeout_ms, d.start_time_ms,
        tuple(sorted(d.partitions)), d.coordinator_id, entered, epoch, home,
        coordinator_epoch_now=info.leader_epoch if info is not None and info.leader_epoch >= 0 else None,
        movable=None if info is None else movable(info))


def movable(info: PartitionInfo) -> bool:
    """Whether `kafka-txn move-coordinator` can move this `__transaction_state` partition: it has a leader
    and another in-sync replica to take over."""
    return info.leader >= 0 and any(r != info.leader for r in info.isr)


def judge(descriptions: Iterable[TransactionDescription], log: TxnStateRead | None,
          views: Mapping[TopicPartition, coordinator_rules.LeaderView], now_ms: int, max_prepare_ms: int,
          txn_meta: ClusterInfo | None, invocation: advice.Invocation = advice.Invocation()
          ) -> list[StuckTransaction]:
    """Step 5's verdicts."""
    rows = []
    for d in descriptions:
        row = coordinator_rules.judge_coordinator(as_coordinator_txn(d, log, txn_meta), views, now_ms, max_prepare_ms,
                                        invocation=invocation)
        if row is not None:
            rows.append(row)
    return rows


def confirm(client: ClusterApi, rows: list[StuckTransaction], coordinators: CoordinatorCache | None = None
            ) -> list[StuckTransaction]:
    """Keep the rows whose transaction is still in the same state at the same producer id and epoch."""
    if not rows:
        return []
    again = client.describe_transactions([r.transactional_id for r in rows], coordinators).descriptions
    return [r for r in rows if (d := again.get(r.transactional_id)) is not None
            and (d.state, d.producer_id, d.producer_epoch) == (r.state, r.producer_id, r.producer_epoch)]


def pending_of(d: TransactionDescription, views: Mapping[TopicPartition, coordinator_rules.LeaderView]
               ) -> list[PendingPartition] | None:
    """describe: the partitions a Prepare state still waits for, each with why (None: not a Prepare state)."""
    if d.state not in PREPARE_STATES:
        return None
    txn = coordinator_rules.CoordinatorTxn(d.transactional_id, d.state, d.producer_id, d.producer_epoch, d.timeout_ms,
                                 d.start_time_ms, tuple(sorted(d.partitions)), d.coordinator_id)
    out = []
    for tp in txn.partitions:
        found = coordinator_rules.pending_partition(tp, views.get(tp, coordinator_rules.LeaderView(None)), txn)
        if found is not None:
            out.append(found)
    return out


def txn_partition_count(cluster: ClusterInfo) -> int | None:
    count = sum(1 for i in cluster.partitions if i.partition.topic == TXN_TOPIC)
    return count or None
