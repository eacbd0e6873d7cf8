"""find-hanging end to end: scope -> requests -> admin/hanging.py verdicts -> confirmed results.

Two kinds of result (admin/hanging.py): partition rows (an open transaction no coordinator will finish)
and coordinator rows (admin/stuck.py: a transaction its coordinator holds and cannot finish). Then what
involves whom: `__transaction_state` is read once for both kinds' questions (admin/transaction_state.py:
when a transaction entered its state; the last transactional id of a producer id nobody lists), and the
groups held back at the partitions' LSOs are looked up once (admin/groups.py).

Which replicas are asked for their producer state: by default only where a transaction can hang, after a
first pass that reads each partition's LSO and high watermark from its leader (admin/lso_prefilter.py says
when that misses nothing, and handles each edge); with `ScanOptions(first_pass=False)` every replica the
scope names (the full scan, upstream's way). A scan loop keeps its state between passes in a ScanLoop
(admin/scan_loop.py) it gives every pass; one pass is a ScanPass.

The I/O goes through a `ScanClient` (connection/client.py's AdminClient in real use), so the flow,
including the re-check that keeps a transaction completing mid-scan out of the results, is tested
with plain data in tests/tools/admin and against the embedded broker in tests/e2e.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

from kafka_txn_broker.formats.transactions import DEFAULT_MAX_TRANSACTION_TIMEOUT_MS, LATE_TRANSACTION_BUFFER_MS
from kafka_txn_broker.gc_pause import bulk
from kafka_txn_tools.admin import (
    advice,
    coordinator_rules,
    hanging,
    lso_prefilter,
    scan_memory,
    stuck,
    transaction_state,
)
from kafka_txn_tools.admin.api import ClusterApi
from kafka_txn_tools.admin.decisions import Decision, decision_for
from kafka_txn_tools.admin.scan_loop import ScanLoop
from kafka_txn_tools.admin.scan_memory import ScanMemory
from kafka_txn_tools.admin.share_pending import ShareHold
from kafka_txn_tools.connection.capabilities import require
from kafka_txn_tools.errors import UsageError
from kafka_txn_tools.models import (
    DEFAULT_MAX_PREPARE_MS,
    ONGOING_STATES,
    PREPARE_STATES,
    ClusterInfo,
    DescribeResult,
    HangingReason,
    HangingTransaction,
    ListResult,
    OpenTransaction,
    PartitionInfo,
    PartitionOffsets,
    PartitionProducers,
    ScanError,
    StalledGroup,
    StuckTransaction,
    TopicPartition,
    TransactionDescription,
    TransactionListing,
)

ScanClient = ClusterApi  # the flows all speak the same Protocol


@dataclass(frozen=True)
class Scope:
    """What to scan: --all, --broker-id, --topic [--partition] (broker and topic combine)."""

    all: bool = False
    broker_id: int | None = None
    topic: str | None = None
    partition: int | None = None

    def validate(self) -> None:
        if self.partition is not None and self.topic is None:
            raise UsageError("--partition needs --topic", "add --topic TOPIC")
        if not self.all and self.broker_id is None and self.topic is None:
            raise UsageError("find-hanging needs a scope", "pass --all, --broker-id ID or --topic TOPIC")
        if self.all and (self.broker_id is not None or self.topic is not None):
            raise UsageError("--all scans everything; it cannot be combined with --broker-id or --topic")


def plan_requests(cluster: ClusterInfo, scope: Scope) -> tuple[dict[int, list[TopicPartition]], list[ScanError]]:
    """Which partitions to ask which broker about.

    --all asks every replica (a follower can hold an open transaction its leader no longer has);
    --broker-id asks that broker about every partition it replicates, internal topics included
    (KAFKA-13288); --topic alone asks the leaders.
    """
    scope.validate()
    known = cluster.broker_ids()
    if scope.broker_id is not None and scope.broker_id not in known:
        raise UsageError(f"broker {scope.broker_id} is not in the cluster",
                         f"brokers are {', '.join(map(str, known)) or 'none'}")
    infos = _partitions_in_scope(cluster, scope)
    by_broker: dict[int, list[TopicPartition]] = defaultdict(list)
    errors: list[ScanError] = []
    for info in infos:
        if scope.all:
            for replica in info.replicas:
                by_broker[replica].append(info.partition)
        elif scope.broker_id is not None:
            if scope.broker_id in info.replicas or scope.partition is not None:
                by_broker[scope.broker_id].append(info.partition)
        elif info.leader >= 0:
            by_broker[info.leader].append(info.partition)
        else:
            errors.append(ScanError("LEADER_NOT_AVAILABLE", f"{info.partition} has no leader; not scanned",
                                    partition=info.partition, api="Metadata", code=5))
    return dict(by_broker), errors


def _partitions_in_scope(cluster: ClusterInfo, scope: Scope) -> list[PartitionInfo]:
    if scope.topic is None:
        return list(cluster.partitions)
    infos = [i for i in cluster.partitions if i.partition.topic == scope.topic]
    if not infos:
        errors = dict(cluster.topic_errors)
        reason = errors.get(scope.topic, "UNKNOWN_TOPIC_OR_PARTITION")
        raise UsageError(f"topic {scope.topic!r} cannot be scanned ({reason})",
                         "check the name with `kafka-txn describe-producers --all` or your ACLs")
    if scope.partition is not None:
        infos = [i for i in infos if i.partition.partition == scope.partition]
        if not infos:
            raise UsageError(f"topic {scope.topic!r} has no partition {scope.partition}")
    return infos


@dataclass
class ScanReport:
    results: list[HangingTransaction] = field(default_factory=list)  # kind "partition"
    stuck: list[StuckTransaction] = field(default_factory=list)  # kind "coordinator"
    share: list[ShareHold] = field(default_factory=list)  # kind "share" (KIP-1289, from metrics)
    errors: list[ScanError] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # context that could not be read (not a partial scan)
    scanned_replicas: int = 0  # partition replicas asked for their producer state
    candidates: int = 0
    now_ms: int = 0
    # The first pass (admin/lso_prefilter.py): None when the scan asked every replica without one.
    first_pass: lso_prefilter.PassSummary | None = None
    # Seen but younger than the thresholds, so not reported: partitions an open transaction holds, and
    # transactions in a Prepare state (the summary says what and why: admin/hanging.py `unreported_summary`).
    young_holds: list[hanging.Unreported] = field(default_factory=list)
    young_prepares: list[hanging.Unreported] = field(default_factory=list)

    @property
    def hanging(self) -> list[HangingTransaction]:
        """The partition rows that are hanging (what an abort plan holds)."""
        return [r for r in self.results if r.reason.is_hanging]

    @property
    def held(self) -> list[HangingTransaction]:
        """The partition rows a live transaction holds: late but live, or prepared 2PC (KIP-939)."""
        return [r for r in self.results if not r.reason.is_hanging]

    @property
    def found(self) -> int:
        """What --exit-code counts: hanging partition rows, stuck coordinator rows and share holds."""
        return len(self.hanging) + len(self.stuck) + len(self.share)

    def counted(self, count_held: bool = False) -> int:
        """`found`, and with `count_held` the rows held by live transactions too."""
        return self.found + (len(self.held) if count_held else 0)

    @property
    def unread_replicas(self) -> int:
        """Replicas asked whose producer state never came back (a broker down, a partition unauthorized)."""
        return min(self.scanned_replicas, sum(e.partitions for e in self.errors if e.api == "DescribeProducers"))

    @property
    def read_replicas(self) -> int:
        return self.scanned_replicas - self.unread_replicas

    @property
    def partial(self) -> bool:
        """Some of the answer is missing: anything in `errors` (unread replicas, unclassified candidates)."""
        return bool(self.errors)


@dataclass(frozen=True)
class ScanOptions:
    """How to scan (frozen: what a scan loop keeps between passes is its ScanLoop, given beside these)."""

    max_timeout_ms: int = DEFAULT_MAX_TRANSACTION_TIMEOUT_MS
    include_late: bool = False
    # Upstream's strategy, kept for the benchmark: 500 partitions a request, one request at a time.
    sequential: bool = False
    max_prepare_ms: int = DEFAULT_MAX_PREPARE_MS
    # The coordinator side, `__transaction_state` and the groups (kafka-transactions leaves them out: its
    # table has partition rows only).
    coordinator_side: bool = True
    # The connection options the rows' commands repeat (admin/advice.py).
    invocation: advice.Invocation = advice.Invocation()
    # The first pass (admin/lso_prefilter.py); False: the full scan, every replica the scope names (upstream's
    # way), with nothing kept between passes.
    first_pass: bool = True
    # Name what the scan saw but did not report, for a person reading its summary: transactions in a Prepare
    # state younger than max_prepare_ms cost one ListTransactions a broker. The monitor has no such summary.
    explain_unreported: bool = True


def find_hanging(
    client: ScanClient,
    scope: Scope,
    now_ms: Callable[[], int],
    options: ScanOptions | None = None,
    progress: Callable[[int], None] | None = None,
    on_total: Callable[[int], None] | None = None,
    loop: ScanLoop | None = None,
) -> ScanReport:
    """One scan. `loop`: a scan loop's state, kept between its passes (admin/scan_loop.py); None for a one-off
    scan, which keeps nothing."""
    options = options if options is not None else ScanOptions()
    require(client, "find-hanging", "DescribeProducers", "ListTransactions", "DescribeTransactions")
    if not options.first_pass:
        loop = None
    elif loop is None:
        loop = ScanLoop()  # a one-off scan's: no memory of other scans
    return ScanPass(client, scope, now_ms, options, loop, progress, on_total).run()


# The first pass's reasons that can come from a leader, leader epoch or replica set Metadata no longer tells.
LEADER_DOUBTS = frozenset({lso_prefilter.Why.UNREAD, lso_prefilter.Why.LEADER_CHANGED, lso_prefilter.Why.NO_LEADER,
                           lso_prefilter.Why.INCONSISTENT})


def _leaders_in_doubt(summary: lso_prefilter.PassSummary | None) -> bool:
    return summary is not None and not LEADER_DOUBTS.isdisjoint(summary.why)


@dataclass
class ScanPass:
    """One pass of find-hanging: what every step of it reads and writes, instead of arguments threaded through
    them. `run()` once. Not thread-safe: one pass runs on its caller's thread."""

    client: ScanClient
    scope: Scope
    now_ms: Callable[[], int]
    options: ScanOptions
    loop: ScanLoop | None
    progress: Callable[[int], None] | None = None
    on_total: Callable[[int], None] | None = None
    report: ScanReport = field(default_factory=ScanReport)

    @property
    def memory(self) -> ScanMemory | None:
        return self.loop.memory if self.loop is not None else None

    def run(self) -> ScanReport:
        memory = self.memory
        if memory is not None:
            memory.begin_pass(full=self.loop is not None and self.loop.next_is_full())
        try:
            self._scan()
        except BaseException:
            if memory is not None:
                memory.doubt_metadata()  # a scan that failed (a broker unreachable...): nothing it read is trusted
            raise
        finally:
            if memory is not None:
                memory.end_pass()
        if memory is not None and (self.report.errors or _leaders_in_doubt(self.report.first_pass)):
            memory.doubt_metadata()  # the next pass reads Metadata afresh
        return self.report

    def _metadata(self, kept_ok: bool = True) -> ClusterInfo:
        """The scan's Metadata: a scan loop's kept one while it may use it (admin/scan_memory.py), else read."""
        memory = self.memory
        topics = [self.scope.topic] if self.scope.topic is not None else None
        kept = memory.metadata(topics) if memory is not None and kept_ok else None
        if kept is not None:
            return kept
        cluster = self.client.metadata(topics)
        if memory is not None:
            memory.keep_metadata(topics, cluster)
        return cluster

    def _scan(self) -> None:
        client, options, memory, report = self.client, self.options, self.memory, self.report
        cluster = self._metadata()
        planned, errors = plan_requests(cluster, self.scope)
        selection, first_reads = self._first_pass(cluster, planned)
        if memory is not None and memory.metadata_kept and selection is not None and _leaders_in_doubt(
                selection.summary()):
            # A leader moved (or left) since the kept Metadata was read: read it now, and the leaders again.
            cluster = self._metadata(kept_ok=False)
            planned, errors = plan_requests(cluster, self.scope)
            selection, first_reads = self._first_pass(cluster, planned)
        report.errors = errors
        by_broker = planned if selection is None else selection.by_broker
        report.first_pass = None if selection is None else selection.summary()
        report.scanned_replicas = sum(map(len, by_broker.values()))
        if self.on_total is not None:
            self.on_total(report.scanned_replicas)
        describe_errors: list[ScanError] = []
        replicas = _describe(client, by_broker, options, self.progress, describe_errors)
        report.errors += describe_errors
        if self.loop is not None and selection is not None:
            replicas += self.loop.kept_answers(selection)  # the last pass's, where they stand
            self.loop.after_pass(selection, replicas, describe_errors,
                                 {info.partition: info for info in cluster.partitions})
        report.now_ms = self.now_ms()  # after the read, as upstream: the producers' age at the time we saw them
        candidates = hanging.select_candidates(replicas, report.now_ms, options.max_timeout_ms)
        report.candidates = len(candidates)
        confirmed: list[hanging.Verdict] = []
        described: dict[str, TransactionDescription] = {}
        if candidates:
            verdicts = _coordinator_verdicts(client, cluster, candidates, report.errors, described, memory)
            to_check = [v for v in verdicts if v.reason.is_hanging or options.include_late]
            confirmed = _recheck(client, to_check, report.errors)
        if not options.coordinator_side:
            offsets = _offsets(client, cluster, (v.candidate.partition for v in confirmed), known=first_reads)
            report.results = hanging.to_results(confirmed, report.now_ms, options.include_late, offsets,
                                                options.invocation, options.max_timeout_ms)
            return
        self._both_sides(cluster, confirmed, described, first_reads)
        reported = {r.partition for r in report.results} | {
            p.partition for r in report.stuck for p in r.pending_partitions}
        report.young_holds = hanging.young_holds(replicas, report.now_ms, options.max_timeout_ms, reported)

    def _first_pass(self, cluster: ClusterInfo, planned: dict[int, list[TopicPartition]]
                    ) -> tuple[lso_prefilter.Selection | None, lso_prefilter.Reads | None]:
        """The replicas to ask for their producer state: of the `planned` ones (the full scan's), those the first
        pass selects (admin/lso_prefilter.py); all of them on a full pass, or when the cluster cannot say its
        LSOs (ListOffsets before v2). None: no first pass (the full scan). And the leaders' answers, when read."""
        loop, client = self.loop, self.client
        if loop is None:
            return None, None
        if loop.next_is_full() or not client.supports("ListOffsets"):
            return lso_prefilter.full_selection(planned), None
        with bulk():  # maps of every partition, all kept (see gc_pause)
            infos = {info.partition: info for info in cluster.partitions}
            leaders = lso_prefilter.leaders_to_read(planned, infos)
            if loop.clear:  # the HW read narrows the LSO read to the partitions that changed since the last pass
                hw = client.latest_offsets(leaders, read_committed=False)
                need = lso_prefilter.lso_to_read(leaders, hw, loop.clear)
                lso = client.latest_offsets(need, read_committed=True) if need else {}
            else:  # nothing known yet to narrow the LSO read: both in one round trip
                hw, lso = client.latest_offsets_both(leaders)
            reads = lso_prefilter.Reads(leaders, hw, lso)
            return lso_prefilter.select(planned, infos, reads, loop.seen_open, loop.held), reads

    def _both_sides(self, cluster: ClusterInfo, confirmed: list[hanging.Verdict],
                    described: dict[str, TransactionDescription], first_reads: lso_prefilter.Reads | None) -> None:
        client, scope, options, memory, report = self.client, self.scope, self.options, self.memory, self.report
        now = report.now_ms
        listed: dict[str, TransactionDescription] = {}
        coordinators = memory.coordinators if memory is not None else None
        found, errors = stuck.candidates(client, cluster.broker_ids(), now, options.max_prepare_ms,
                                         lambda d: _in_scope(d, scope, cluster), described, listed, coordinators)
        report.errors.extend(errors)
        found += _exhausted(described, found, scope, cluster)
        if options.explain_unreported:
            report.young_prepares = _young_prepares(client, cluster, options,
                                                    {*listed, *(d.transactional_id for d in found)})
        orphans = [v for v in confirmed if v.reason is HangingReason.NO_TRANSACTIONAL_ID]
        # A hanging transaction whose coordinator is known: its decision (admin/decisions.py) says how to end it.
        decidable = [v for v in confirmed if v.reason.is_hanging and v.transactional_id is not None]
        txn_meta = _txn_topic(client, cluster) if found or orphans or decidable else None
        # An Ongoing row's time in state is its start (DescribeTransactions): only Prepare states and orphans need
        # the log, and an exhausted epoch's log holds its ~32k InitProducerId bumps, seconds to read for nothing.
        asked = [d for d in found if d.state != hanging.ONGOING]
        log = _read_transaction_state(client, txn_meta, orphans, asked, options, report, decidable) if txn_meta and (
            asked or orphans or decidable) else None
        wanted = {tp: d.producer_id for d in found for tp in d.partitions}
        views = stuck.leader_views(client, wanted, cluster if _covers(cluster, wanted) else None)
        rows = stuck.confirm(client, stuck.judge(found, log, views, now, options.max_prepare_ms, txn_meta,
                                                 options.invocation), coordinators)
        stuck_ids = {r.transactional_id for r in rows}
        confirmed = [*confirmed, *_live_long(client, listed, stuck_ids, scope, cluster, now, options)]
        pending = [p.partition for r in rows for p in r.pending_partitions if p.leader is not None and p.leader >= 0]
        offsets = _offsets(client, cluster, [*(v.candidate.partition for v in confirmed), *pending], views,
                           first_reads)
        results = hanging.to_results(confirmed, now, options.include_late, offsets, options.invocation,
                                     options.max_timeout_ms, _decisions(decidable, log))
        # A live verdict on a transaction its coordinator cannot finish is the coordinator row's to explain.
        results = [r for r in results if r.reason.is_hanging or r.transactional_id not in stuck_ids]
        held, notes = _held_back(client, cluster, offsets, bool(results or rows), memory)
        report.notes += notes
        owners = log.owners if log is not None else []
        report.results = [replace(
            r, stalled_groups=held.get(r.partition),
            last_known_transactional_id=hanging.last_known_owner(r.producer.producer_id, owners)
            if r.reason is HangingReason.NO_TRANSACTIONAL_ID else None) for r in results]
        report.stuck = [replace(r, stalled_groups=_joined(held, (p.partition for p in r.pending_partitions)))
                        for r in rows]


def _young_prepares(client: ScanClient, cluster: ClusterInfo, options: ScanOptions, listed: set[str]
                    ) -> list[hanging.Unreported]:
    """Transactions in a Prepare state for less than --max-prepare-time (the coordinator side lists only the older
    ones): named in the summary, not reported. One ListTransactions a broker, of the Prepare states only."""
    if options.max_prepare_ms <= 0:
        return []
    young = client.list_transactions(cluster.broker_ids(), states=sorted(PREPARE_STATES))
    return [hanging.Unreported(t.transactional_id, t.state, None)
            for t in sorted(young.listings, key=lambda t: t.transactional_id) if t.transactional_id not in listed]


def _exhausted(described: dict[str, TransactionDescription], found: list[TransactionDescription], scope: Scope,
               cluster: ClusterInfo) -> list[TransactionDescription]:
    """The partition side's transactions Ongoing at the last producer epoch that the coordinator side's listing
    (by time in state) left out: nothing ends them, so they are coordinator rows however young."""
    listed = {d.transactional_id for d in found}
    return sorted((d for d in described.values() if d.transactional_id not in listed
                   and coordinator_rules.at_last_epoch(d.state, d.producer_epoch) and _in_scope(d, scope, cluster)),
                  key=lambda d: d.transactional_id)


def _live_long(client: ScanClient, listed: dict[str, TransactionDescription], stuck_ids: set[str],
               scope: Scope, cluster: ClusterInfo, now_ms: int, options: ScanOptions) -> list[hanging.Verdict]:
    """Live transactions that have held their partitions' LSO longer than the max transaction timeout although
    their last write is recent (the partition side judges by the last write): a long transaction under a
    timeout above --max-transaction-timeout, or a prepared 2PC one. Named as late / prepared-2pc rows, so an
    LSO held that long is never left unexplained; a Prepare state too young for a coordinator row likewise (its
    coordinator is completing it). The transactions of coordinator rows (`stuck_ids`) are left out."""
    long = [d for d in listed.values()
            if d.state in ONGOING_STATES and d.transactional_id not in stuck_ids and d.start_time_ms >= 0
            and now_ms - d.start_time_ms > options.max_timeout_ms and _in_scope(d, scope, cluster)]
    wanted = {tp: d.producer_id for d in long for tp in d.partitions}
    views = stuck.leader_views(client, wanted, cluster if _covers(cluster, wanted) else None) if wanted else {}
    verdicts = []
    for d in long:
        for tp in sorted(d.partitions):
            view = views.get(tp)
            p = view.producer if view is not None else None
            if view is None or view.leader is None or p is None or not p.has_open_transaction:
                continue  # nothing written there yet: it holds no LSO
            v = hanging.classify(OpenTransaction(tp, view.leader, p), [d.transactional_id], {d.transactional_id: d},
                                 ())
            if v is not None and not v.reason.is_hanging:
                verdicts.append(v)
    return verdicts


def _txn_topic(client: ScanClient, cluster: ClusterInfo) -> ClusterInfo:
    """`__transaction_state`'s metadata: from the scan's own when it has it (--all), else asked for."""
    if any(i.partition.topic == stuck.TXN_TOPIC for i in cluster.partitions):
        return cluster
    return client.metadata([stuck.TXN_TOPIC])


def _covers(cluster: ClusterInfo, wanted: dict[TopicPartition, int]) -> bool:
    topics = {i.partition.topic for i in cluster.partitions}
    return all(tp.topic in topics for tp in wanted)


def _in_scope(d: TransactionDescription, scope: Scope, cluster: ClusterInfo) -> bool:
    """A coordinator row belongs to a scoped scan when one of its partitions is in scope (--topic), or
    its coordinator or one of its partitions' replicas is the broker (--broker-id)."""
    if scope.all:
        return True
    parts = d.partitions
    if scope.topic is not None and not any(
            tp.topic == scope.topic and scope.partition in (None, tp.partition) for tp in parts):
        return False
    if scope.broker_id is not None:
        replicas = {i.partition: i.replicas for i in cluster.partitions}
        return d.coordinator_id == scope.broker_id or any(scope.broker_id in replicas.get(tp, ()) for tp in parts)
    return True


def _read_transaction_state(client: ScanClient, txn_meta: ClusterInfo, orphans: list[hanging.Verdict],
                            found: list[TransactionDescription], options: ScanOptions, report: ScanReport,
                            decidable: Sequence[hanging.Verdict] = ()) -> transaction_state.TxnStateRead:
    """The one read of `__transaction_state`: every partition if some producer id needs its last owner,
    else only the candidates' own partitions; from the earliest time a record asked about can have (a
    decision on a hanging transaction comes after its last write)."""
    since = [d.start_time_ms for d in found]
    since += [v.candidate.producer.last_timestamp_ms - options.max_timeout_ms - LATE_TRANSACTION_BUFFER_MS
              for v in orphans]
    since += [v.candidate.producer.last_timestamp_ms for v in decidable]
    ids = {*(d.transactional_id for d in found), *(v.transactional_id for v in decidable if v.transactional_id)}
    partitions = None
    if not orphans:
        count = stuck.txn_partition_count(txn_meta)
        partitions = transaction_state.partitions_of(ids, count) if count else set()
    log = transaction_state.read(client, partitions, min(since) - CLOCK_SLACK_MS, txn_meta=txn_meta, ids=ids,
                                 owners=bool(orphans))
    report.notes += log.notes
    return log


# Records are stamped by the coordinator's clock, producers' batches by theirs: read a little earlier.
CLOCK_SLACK_MS = 60_000


def _decisions(decidable: Sequence[hanging.Verdict], log: transaction_state.TxnStateRead | None
               ) -> dict[tuple[object, ...], Decision]:
    """The coordinator's decision on each hanging transaction that has one in what was read, by its key."""
    if log is None or not log.decisions:
        return {}
    out = {}
    for v in decidable:
        p = v.candidate.producer
        own = [d for d in log.decisions if d.transactional_id == v.transactional_id]
        found = decision_for(v.candidate.partition, p.producer_id, p.producer_epoch, p.last_timestamp_ms, own,
                             transaction_state.CLOCK_SLACK_MS)
        if found is not None:
            out[hanging.verdict_key(v)] = found
    return out


def _offsets(client: ScanClient, cluster: ClusterInfo, partitions: Iterable[TopicPartition],
             views: dict[TopicPartition, coordinator_rules.LeaderView] | None = None,
             known: lso_prefilter.Reads | None = None) -> dict[TopicPartition, PartitionOffsets]:
    """The LSO and high watermark of each partition: as this scan's first pass read them from the same leader
    (`known`), else read now."""
    leader_of = {info.partition: info.leader for info in cluster.partitions}
    leaders = {}
    found: dict[TopicPartition, PartitionOffsets] = {}
    for tp in partitions:
        view = (views or {}).get(tp)
        leader = view.leader if view is not None and view.leader is not None else leader_of.get(tp, -1)
        read = known.offsets(tp, leader) if known is not None else None
        if read is not None:
            found[tp] = read
        else:
            leaders[tp] = leader
    return {**found, **(client.partition_offsets(leaders) if leaders else {})}


def _held_back(client: ScanClient, cluster: ClusterInfo, offsets: dict[TopicPartition, PartitionOffsets],
               wanted: bool, memory: ScanMemory | None,
               ) -> tuple[dict[TopicPartition, tuple[StalledGroup, ...] | None], list[str]]:
    if not wanted:
        return {}, []
    from kafka_txn_tools.admin.groups import held_back

    return held_back(client, cluster.broker_ids(), offsets, memory)


def _joined(held: dict[TopicPartition, tuple[StalledGroup, ...] | None], partitions: Iterable[TopicPartition]
            ) -> tuple[StalledGroup, ...] | None:
    found = [held.get(tp) for tp in partitions]
    known = [g for groups in found if groups is not None for g in groups]
    return None if found and all(g is None for g in found) else tuple(known)


def _describe(
    client: ScanClient, by_broker: dict[int, list[TopicPartition]], options: ScanOptions,
    progress: Callable[[int], None] | None, errors: list[ScanError],
) -> list[PartitionProducers]:
    if not options.sequential:
        replicas, errs = client.describe_producers(by_broker, progress=progress, open_only=True)
        errors.extend(errs)
        return replicas
    out: list[PartitionProducers] = []
    for broker, tps in sorted(by_broker.items()):
        got, errs = client.describe_producers({broker: tps}, batch_size=500, in_flight=1, progress=progress,
                                              open_only=True)
        out.extend(got)
        errors.extend(errs)
    return out


def _coordinator_verdicts(
    client: ScanClient, cluster: ClusterInfo, candidates: list[OpenTransaction], errors: list[ScanError],
    described_out: dict[str, TransactionDescription], memory: ScanMemory | None = None,
) -> list[hanging.Verdict]:
    """The partition side's verdicts; the descriptions asked for go to `described_out` for the coordinator side.
    In a scan loop (`memory`), the producer ids an earlier pass mapped or found unmapped are not listed again
    (admin/scan_memory.py says when that is sound)."""
    pids = sorted({c.producer.producer_id for c in candidates})
    listed, described = _owners(client, cluster, pids, memory)
    errors.extend(listed.errors)
    errors.extend(described.errors)
    described_out.update(described.descriptions)
    verdicts, unknown = hanging.classify_all(candidates, listed.listings, described.descriptions,
                                             described.not_found)
    if listed.errors:
        # A coordinator we could not ask may be the one holding an "unmapped" producer id:
        # without its answer, no-transactional-id is a guess, and guesses are not reported.
        unknown.extend(v.candidate for v in verdicts if v.reason is HangingReason.NO_TRANSACTIONAL_ID)
        verdicts = [v for v in verdicts if v.reason is not HangingReason.NO_TRANSACTIONAL_ID]
    for c in unknown:
        errors.append(ScanError(
            "COORDINATOR_UNKNOWN",
            f"open transaction of producer {c.producer.producer_id} at {c.partition} offset "
            f"{c.producer.current_txn_start_offset} not classified: its coordinator did not answer",
            broker_id=c.broker_id, partition=c.partition, api="DescribeTransactions"))
    return verdicts


def _owners(client: ScanClient, cluster: ClusterInfo, pids: list[int], memory: ScanMemory | None
            ) -> tuple[ListResult, DescribeResult]:
    """The transactional ids of the producer ids `pids` (ListTransactions by producer id on every broker), and
    those ids described. A scan loop lists only the producer ids its memory cannot answer for: a remembered
    id is used where its description, asked anyway, still names the producer id (else that one is listed
    now), and a producer id known to have none is not listed while the coordinators stay put."""
    kept = memory.producer_ids if memory is not None and memory.serving else None
    homes = scan_memory.txn_homes(cluster)
    mapped, unmapped = kept.known(pids, homes) if kept is not None else ({}, set())
    ask = [p for p in pids if p not in mapped and p not in unmapped]
    listed = client.list_transactions(cluster.broker_ids(), producer_ids=ask) if ask else ListResult()
    coordinators = memory.coordinators if memory is not None else None
    described = client.describe_transactions({x.transactional_id for x in listed.listings} | set(mapped.values()),
                                             coordinators)
    if mapped:
        confirmed, again = scan_memory.checked_mappings(
            mapped, {x: d.producer_id for x, d in described.descriptions.items()})
        more = client.list_transactions(cluster.broker_ids(), producer_ids=again) if again else ListResult()
        new_ids = {x.transactional_id for x in more.listings} - described.descriptions.keys() - described.not_found
        _merge_described(described, client.describe_transactions(new_ids, coordinators) if new_ids else None)
        listed = _merge_listed(listed, more, [TransactionListing(x, p, described.descriptions[x].state,
                                                                 described.descriptions[x].coordinator_id)
                                              for p, x in confirmed.items()])
        ask = [*ask, *again]
    if memory is not None:
        memory.producer_ids.learn(ask, listed.listings, bool(listed.errors), homes)
        memory.producer_ids.keep_only(pids)
    return listed, described


def _merge_described(into: DescribeResult, more: DescribeResult | None) -> None:
    if more is not None:
        into.descriptions.update(more.descriptions)
        into.not_found |= more.not_found
        into.errors.extend(more.errors)


def _merge_listed(first: ListResult, second: ListResult, known: list[TransactionListing]) -> ListResult:
    return ListResult([*first.listings, *second.listings, *known], [*first.errors, *second.errors],
                      {**first.unfiltered, **second.unfiltered})


def _recheck(client: ScanClient, verdicts: list[hanging.Verdict], errors: list[ScanError]) -> list[hanging.Verdict]:
    """Re-read the producer state of each verdict's replica; see admin/hanging.py `confirm`."""
    if not verdicts:
        return []
    by_broker: dict[int, list[TopicPartition]] = defaultdict(list)
    for v in verdicts:
        if v.candidate.partition not in by_broker[v.candidate.broker_id]:
            by_broker[v.candidate.broker_id].append(v.candidate.partition)
    fresh, errs = client.describe_producers(dict(by_broker), open_only=True)
    for err in errs:
        errors.append(ScanError(err.error, f"re-check failed, results for it dropped: {err.message}",
                                broker_id=err.broker_id, partition=err.partition, api=err.api, code=err.code))
    return hanging.confirm(verdicts, fresh)

