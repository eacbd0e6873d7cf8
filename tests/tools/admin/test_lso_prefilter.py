"""find-hanging's first pass (admin/lso_prefilter.py): its decisions on plain data, and the whole scan with it
against the full scan over generated clusters (tests/tools/admin/fakes.py).

The generated clusters have what the first pass must cope with: partitions with and without open
transactions (old enough to be candidates or not, their first batch below the high watermark or not),
leaderless partitions, brokers down, followers in and out of the ISR (an out-of-sync one lagging behind its
leader's markers), followers whose producer state diverged from their leader's, leaders whose two reads
failed or straddle a leader change, and what the previous pass saw. The offsets a leader answers follow
Kafka's rule: LSO = min(first offset of its oldest open transaction, HW).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_txn_tools.admin import lso_prefilter
from kafka_txn_tools.admin.lso_prefilter import (
    Reads,
    Why,
    lso_to_read,
    partition_reason,
    seen_open_after,
    select,
)
from kafka_txn_tools.admin.scan import ScanOptions, ScanReport, Scope, find_hanging
from kafka_txn_tools.admin.scan_loop import ScanLoop
from kafka_txn_tools.models import (
    OffsetRead,
    PartitionInfo,
    PartitionOffsets,
    PartitionProducers,
    ScanError,
    TopicPartition,
)
from tests.tools.admin.fakes import MIN, NOW, FakeCluster, LeaderAnswer, cluster, producer, txn

T0, T1, T2 = (TopicPartition("orders", p) for p in range(3))
OLD, YOUNG = 30 * MIN, MIN  # against the default max transaction timeout of 15 minutes


def info(tp: TopicPartition = T0, leader: int = 0, replicas: tuple[int, ...] = (0, 1, 2),
         isr: tuple[int, ...] | None = None, epoch: int = 4) -> PartitionInfo:
    return PartitionInfo(tp, leader, replicas, replicas if isr is None else isr, leader_epoch=epoch)


def read(lso: int | None, hw: int | None, lso_epoch: int = 4, hw_epoch: int = 4, error: str | None = None
         ) -> LeaderAnswer:
    """A leader's two answers (an error fails both)."""
    return LeaderAnswer(OffsetRead(hw, hw_epoch, error), OffsetRead(lso, lso_epoch, error))


# ---- the decision for one partition ----------------------------------------------------------------------
@pytest.mark.parametrize("partition, answer, why", [
    (info(), read(50, 50), None),  # no transaction open below the HW: nothing there can hang
    (info(), read(40, 50), Why.LSO_BELOW_HW),  # a transaction open from 40 holds read_committed readers there
    (info(leader=-1), None, Why.NO_LEADER),
    (info(), None, Why.UNREAD),  # the leader left it out of its answer
    (info(), read(None, None, error="NOT_LEADER_OR_FOLLOWER"), Why.UNREAD),
    (info(), read(None, None, error="OFFSET_NOT_AVAILABLE"), Why.UNREAD),  # a new leader's HW still catching up
    (info(), read(None, None, error="UNSUPPORTED_VERSION"), Why.UNREAD),  # a broker without ListOffsets v2
    (info(), read(None, None, error="BROKER_UNREACHABLE"), Why.UNREAD),
    (info(), read(50, 50, lso_epoch=4, hw_epoch=5), Why.LEADER_CHANGED),  # the reads straddle an election
    (info(epoch=3), read(50, 50), Why.LEADER_CHANGED),  # led at another epoch than Metadata said
    (info(epoch=-1), read(50, 50), None),  # Metadata before v7 says no epoch: the two reads' agree
    (info(), read(50, 50, -1, -1), None),  # ListOffsets before v4 says none
    (info(), read(60, 50), Why.INCONSISTENT),
    (info(), LeaderAnswer(OffsetRead(50, 4), OffsetRead(None, -1, "NOT_LEADER_OR_FOLLOWER")), Why.UNREAD),
])
def test_partition_reason(partition: PartitionInfo, answer: LeaderAnswer | None, why: Why | None) -> None:
    assert partition_reason(partition, *(answer or (None, None))) is why
    if answer is not None and answer.hw == answer.lso:  # an LSO not read is the HW
        assert partition_reason(partition, answer.hw, None) is why


def test_select_asks_flagged_partitions_everywhere_and_otherwise_only_lagging_or_remembered_replicas() -> None:
    infos = {T0: info(T0), T1: info(T1, 1, (1, 2, 0), isr=(1, 2)), T2: info(T2, 2, (2, 0, 1))}
    planned = {0: [T0, T1, T2], 1: [T0, T1, T2], 2: [T0, T1, T2]}
    answers = {T0: read(10, 20), T1: read(5, 5), T2: read(7, 7)}
    reads = Reads({T0: (0, 4), T1: (1, 4), T2: (2, 4)}, {tp: a.hw for tp, a in answers.items()},
                  {tp: a.lso for tp, a in answers.items()})
    chosen = select(planned, infos, reads, seen_open={(T2, 1), (T2, 3)})
    # T0 everywhere; T1 on broker 0 (out of its ISR); T2 on broker 1 (open there last pass). Broker 3 is not
    # a replica of T2: never asked, whatever was remembered.
    assert chosen.by_broker == {0: [T0, T1], 1: [T0, T2], 2: [T0]}
    assert chosen.why == {Why.LSO_BELOW_HW: 3, Why.OUT_OF_SYNC: 1, Why.SEEN_OPEN: 1}
    assert (chosen.partitions, chosen.clear, chosen.replicas) == (3, 2, 5)
    assert lso_prefilter.full_selection(planned).by_broker == planned


def test_what_the_next_pass_asks_again() -> None:
    asked = {0: [T0, T1], 1: [T0, T1, T2]}
    open_ = producer(7, 3, OLD)
    answers = [PartitionProducers(T0, 0, (open_,)), PartitionProducers(T1, 1, (producer(8),))]  # 8: none open
    errors = [ScanError("NOT_LEADER_OR_FOLLOWER", "x", broker_id=1, partition=T2, api="DescribeProducers")]
    before = {(T1, 0), (T1, 1), (T2, 1), (T2, 2)}
    # Found open: kept. Asked again and clear: forgotten. Asked again and unread: kept. No longer asked: forgotten.
    assert seen_open_after(asked, answers, errors, before) == {(T0, 0), (T2, 1)}
    down = [ScanError("BROKER_UNREACHABLE", "x", broker_id=0, api="DescribeProducers", partitions=2)]
    assert seen_open_after(asked, [], down, before) == {(T1, 0)}


def test_the_lso_is_read_unless_the_hw_already_tells() -> None:
    # LSO <= HW: nothing written (HW 0) leaves LSO = HW. A partition clear at the same HW and leader epoch last
    # pass got no record below its HW since. A read that failed needs no second one (asked in full anyway).
    leaders = {T0: (0, 4), T1: (1, 4), T2: (2, 4), TopicPartition("orders", 3): (0, 4)}
    hw = {T0: OffsetRead(0, 4), T1: OffsetRead(80, 4), T2: OffsetRead(80, 5),
          TopicPartition("orders", 3): OffsetRead(None, -1, "NOT_LEADER_OR_FOLLOWER")}
    clear_before = {T1: (80, 4), T2: (80, 4)}
    assert lso_to_read(leaders, hw, clear_before) == {T2: (2, 4)}  # T2: another epoch (a new leader)
    assert lso_to_read(leaders, hw, {}) == {T1: (1, 4), T2: (2, 4)}
    assert lso_to_read(leaders, {**hw, T1: OffsetRead(81, 4)}, clear_before) == {T1: (1, 4), T2: (2, 4)}
    assert lso_to_read(leaders, {**hw, T1: OffsetRead(80, -1)}, {T1: (80, -1)}) == {T1: (1, 4), T2: (2, 4)}
    both = Reads(leaders, hw, {T2: OffsetRead(70, 5)})
    assert both.offsets(T0, 0) == PartitionOffsets(T0, 0, 0)  # not read: LSO = HW
    assert both.offsets(T2, 2) == PartitionOffsets(T2, 70, 80)
    assert both.offsets(T2, 1) is None  # read from another leader
    assert both.offsets(TopicPartition("orders", 3), 0) is None


def test_a_pass_reads_only_the_lsos_that_moved_since_the_last() -> None:
    c = cluster()
    c.open_txn(T1, producer(10, 100, OLD))
    c.offsets = {T0: (50, 50), T1: (100, 120), T2: (0, 0)}
    loop = ScanLoop(full_scan_every=0)
    first = scan(c, loop)
    # Nothing known yet: both levels of every partition in one round trip.
    assert c.both_reads == 1 and c.lso_reads == [{T0, T1, T2}]
    assert first.first_pass is not None and first.first_pass.why == {Why.LSO_BELOW_HW: 3}
    again = scan(c, loop)
    assert c.both_reads == 1  # T0 was clear: later passes read the HW first, then only the LSOs that moved
    assert c.lso_reads[-1] == {T1} and rows(again) == rows(first)  # T0 unchanged and clear: known
    c.offsets[T0] = (50, 60)  # written since (a transaction open from 50): read again, and flagged
    third = scan(c, loop)
    assert c.lso_reads[-1] == {T0, T1}
    # T0's replicas are asked; T1's, held at the same HW, LSO and leader epoch, keep their last answers.
    assert third.first_pass is not None and (third.first_pass.why, third.first_pass.kept) == ({Why.LSO_BELOW_HW: 3}, 3)


def test_a_scan_loop_forgets_a_deleted_topics_partitions() -> None:
    """A monitor runs while topics come and go: what its first pass remembers of a partition (clear at a HW,
    seen open) goes with the partition."""
    c = cluster()
    gone = [TopicPartition("gone", p) for p in range(3)]
    c.partitions += [info(tp, leader=p, replicas=(p, (p + 1) % 3, (p + 2) % 3), epoch=0) for p, tp in enumerate(gone)]
    c.open_txn(gone[0], producer(10, 100, OLD))
    c.offsets = {T0: (50, 50), T1: (60, 60), T2: (70, 70), gone[0]: (100, 120), gone[1]: (5, 5), gone[2]: (9, 9)}
    prefilter = ScanLoop(full_scan_every=0)
    loop = prefilter
    scan(c, loop)
    assert {tp.topic for tp in prefilter.clear} == {"orders", "gone"}
    assert {tp.topic for tp, _ in prefilter.seen_open} == {"gone"}
    c.partitions = [i for i in c.partitions if i.partition.topic != "gone"]  # deleted
    c.producers = {k: v for k, v in c.producers.items() if k[1].topic != "gone"}
    scan(c, loop)
    assert set(prefilter.clear) == {T0, T1, T2} and prefilter.seen_open == frozenset()


@pytest.mark.parametrize("every, full", [(3, [3, 6, 9]), (1, list(range(1, 10))), (0, [])])
def test_which_passes_are_full(every: int, full: list[int]) -> None:
    loop = ScanLoop(every)
    seen = []
    for n in range(1, 10):
        if loop.next_is_full():
            seen.append(n)
        loop.after_pass(lso_prefilter.full_selection({}), [], [])
    assert seen == full


# ---- the scan with the first pass, on plain data -----------------------------------------------------------
def scan(c: FakeCluster, loop: ScanLoop | None = None, scope: Scope = Scope(all=True),
         options: ScanOptions | None = None) -> ScanReport:
    """One pass; of a scan loop when `loop` is given (the same one for each of its passes)."""
    return find_hanging(c, scope, lambda: NOW, options or ScanOptions(include_late=True), loop=loop)


def rows(report: ScanReport) -> tuple[list[object], list[object], list[object]]:
    """What a scan found, and the failures it met (each once: a scan loop that knows a producer id's
    transactional id does not list it again, so it does not meet a down broker's failure twice)."""
    failures = {repr(e.to_row()): e.to_row() for e in report.errors}
    return ([r.to_row() for r in report.results], [s.to_row() for s in report.stuck],
            [failures[k] for k in sorted(failures)])


def full(c: FakeCluster, scope: Scope = Scope(all=True)) -> ScanReport:
    return scan(c, None, scope, ScanOptions(include_late=True, first_pass=False))


def test_a_cluster_without_listoffsets_v2_is_scanned_in_full() -> None:
    c = cluster()
    c.open_txn(T1, producer(10, 100, OLD))
    c.unsupported = {"ListOffsets"}
    report = scan(c)
    assert c.leader_offset_calls == 0 and report.first_pass is not None and report.first_pass.full
    assert report.scanned_replicas == 9 and rows(report) == rows(full(c))


def test_a_leader_that_cannot_say_its_lso_has_its_partitions_asked_in_full() -> None:
    # Broker 1 answers ListOffsets without read_committed (UNSUPPORTED_VERSION), and its orders-1 holds a
    # hanging transaction: found as by the full scan.
    c = cluster()
    c.open_txn(T1, producer(10, 100, OLD))
    c.leader_reads[T1] = read(None, None, error="UNSUPPORTED_VERSION")
    c.offsets = {T1: (100, 101)}
    report = scan(c)
    assert [(r.partition, r.producer.producer_id) for r in report.hanging] == [(T1, 10)]
    assert report.first_pass is not None and report.first_pass.why == {Why.UNREAD: 3}
    assert rows(report) == rows(full(c))


def test_a_leader_change_between_the_two_reads_has_the_partition_asked_in_full() -> None:
    # The LSO read at epoch 0 and the HW at epoch 1 look equal, yet the transaction at 100 holds the LSO: what
    # two epochs' answers say together proves nothing.
    c = cluster()
    c.open_txn(T1, producer(10, 100, OLD))
    c.leader_reads[T1] = read(120, 120, lso_epoch=0, hw_epoch=1)
    report = scan(c)
    assert [(r.partition, r.producer.producer_id) for r in report.hanging] == [(T1, 10)]
    assert report.first_pass is not None and report.first_pass.why == {Why.LEADER_CHANGED: 3}
    c.leader_reads[T1] = read(120, 120, lso_epoch=0, hw_epoch=0)  # one epoch: trusted
    assert scan(c).hanging == []


def test_a_diverged_follower_is_found_by_the_full_pass_and_followed_after_it() -> None:
    # Broker 2's replica of orders-0 holds an open transaction its leader (0) does not: the leader's LSO is its
    # HW. Pass 1 (first pass only) cannot see it; pass 2 is full and finds it; pass 3 asks that replica again.
    c = cluster()
    c.open_txn(T0, producer(10, 100, OLD), replicas=[2])
    c.offsets = {T0: (150, 150)}
    loop = ScanLoop(full_scan_every=2)
    first, second, third = (scan(c, loop) for _ in range(3))
    assert first.hanging == [] and first.scanned_replicas == 0
    assert [(r.partition, r.brokers) for r in second.hanging] == [(T0, (2,))] and second.scanned_replicas == 9
    assert rows(third) == rows(second) and third.scanned_replicas == 1
    assert third.first_pass is not None and third.first_pass.why == {Why.SEEN_OPEN: 1}
    c.producers[(2, T0)] = []  # resolved there: asked once more, then forgotten
    assert scan(c, loop).hanging == [] and scan(c, loop).scanned_replicas == 0


def test_an_open_transaction_whose_first_batch_is_not_replicated_is_missed_until_it_is() -> None:
    # C1 fails: the HW has not reached the transaction's first batch (100) for 30 minutes. The leader's LSO is
    # its HW; the full scan finds the transaction, the first pass alone does not.
    c = cluster()
    c.open_txn(T0, producer(10, 100, OLD))
    c.offsets = {T0: (90, 90)}
    assert scan(c).hanging == [] and [r.partition for r in full(c).hanging] == [T0]
    c.offsets = {T0: (100, 120)}  # replicated: it now holds the LSO
    assert rows(scan(c)) == rows(full(c))


# ---- the whole scan over generated clusters ----------------------------------------------------------------
BROKERS = (0, 1, 2, 3)
READ_ERRORS = ("NOT_LEADER_OR_FOLLOWER", "OFFSET_NOT_AVAILABLE", "FENCED_LEADER_EPOCH", "UNKNOWN_LEADER_EPOCH",
               "UNSUPPORTED_VERSION", "BROKER_UNREACHABLE", "TOPIC_AUTHORIZATION_FAILED")


@dataclass(frozen=True)
class Txn:
    pid: int
    start: int
    old: bool


@dataclass
class World:
    cluster: FakeCluster
    seen_open: frozenset[tuple[TopicPartition, int]]
    # Replicas holding an old open transaction the first pass may not see (C1 or C2 broken there).
    breaking: frozenset[tuple[TopicPartition, int]]


@st.composite
def worlds(draw: st.DrawFn, hold: bool = True) -> World:
    """A cluster; `hold`: C1 and C2 of admin/lso_prefilter.py hold (old transactions' first batches are below
    the HW; an in-sync follower holds a transaction its leader does not only where the last pass saw it)."""
    down = draw(st.sets(st.sampled_from(BROKERS), max_size=2))
    c = FakeCluster([], brokers=list(BROKERS), down=set(down))
    pids = itertools.count(100)
    seen: set[tuple[TopicPartition, int]] = set()
    breaking: set[tuple[TopicPartition, int]] = set()
    for index in range(draw(st.integers(1, 6))):
        tp = TopicPartition("t" if index % 2 else "u", index)
        replicas = tuple(draw(st.permutations(BROKERS))[:draw(st.integers(1, 3))])
        live = [b for b in replicas if b not in down]
        if live and draw(st.integers(0, 9)):
            leader = live[0]
            isr = (leader, *(b for b in live[1:] if draw(st.booleans())))
        else:  # offline: its last in-sync replica is down (or it has none alive)
            leader, isr = -1, replicas[:1]
        epoch = draw(st.integers(0, 3))
        c.partitions.append(PartitionInfo(tp, leader, replicas, isr, leader_epoch=epoch))
        hw = draw(st.integers(5, 40))
        txns = []
        for start in sorted(draw(st.sets(st.integers(0, hw + 5), max_size=3))):
            old = draw(st.booleans())
            if hold and old and start >= hw:
                continue  # C1
            txns.append(Txn(next(pids), start, old))
            if old and start >= hw:
                breaking.update((tp, b) for b in replicas)  # its first batch is not below the HW
        for t in txns:
            _coordinator(draw, c, tp, t)
        holder = leader if leader >= 0 else replicas[0]
        for b in replicas:
            if b == holder:
                mine = list(txns)
            elif b in isr:
                mine = [t for t in txns if t.start < hw or draw(st.booleans())]  # it may have fetched past the HW
            else:  # out of sync: behind its leader, maybe still holding a transaction its leader completed
                mine = [t for t in txns if draw(st.booleans())]
                if draw(st.booleans()):
                    mine.append(Txn(next(pids), draw(st.integers(0, hw)), True))
                    _coordinator(draw, c, tp, mine[-1])
            if b != holder and b in isr and draw(st.integers(0, 4)) == 0:  # diverged from its leader
                stray = Txn(next(pids), draw(st.integers(0, hw)), True)
                _coordinator(draw, c, tp, stray)
                mine.append(stray)
                if hold:
                    seen.add((tp, b))
                else:
                    breaking.add((tp, b))
            for t in mine:
                c.producers.setdefault((b, tp), []).append(producer(t.pid, t.start, OLD if t.old else YOUNG))
            if draw(st.integers(0, 5)) == 0:
                seen.add((tp, b))  # the last pass saw one open there (maybe since completed)
        if leader >= 0:
            c.leader_reads[tp] = _leader_read(draw, epoch, hw, txns)
    return World(c, frozenset(seen), frozenset(breaking))


def _coordinator(draw: st.DrawFn, c: FakeCluster, tp: TopicPartition, t: Txn) -> None:
    kind = draw(st.sampled_from(["none", "ongoing", "complete"]))
    if kind != "none":
        c.transactions[f"id-{t.pid}"] = txn(f"id-{t.pid}", t.pid, "Ongoing" if kind == "ongoing" else "CompleteCommit",
                                            partitions=[tp], coordinator=draw(st.sampled_from(BROKERS)))


def _leader_read(draw: st.DrawFn, epoch: int, hw: int, txns: list[Txn]) -> LeaderAnswer:
    lso = min([t.start for t in txns] + [hw])  # Kafka's rule: an unreplicated first batch leaves it at the HW
    kind = draw(st.sampled_from(["ok", "ok", "ok", "no-epochs", "error", "lso-error", "moved", "stale-metadata"]))
    if kind == "error":
        return read(None, None, error=draw(st.sampled_from(READ_ERRORS)))
    if kind == "lso-error":  # the leader moved away between the HW read and the LSO read
        return LeaderAnswer(OffsetRead(hw, epoch), OffsetRead(None, -1, "NOT_LEADER_OR_FOLLOWER"))
    if kind == "moved":  # an election between the HW read (at Metadata's epoch) and the LSO read (any value)
        return LeaderAnswer(OffsetRead(hw, epoch), OffsetRead(draw(st.integers(0, hw)), epoch + 1))
    if kind == "stale-metadata":  # led at a newer epoch than Metadata said (a broker that did not check it)
        seen = draw(st.integers(0, hw))
        return read(seen, seen, epoch + 1, epoch + 1)
    return read(lso, hw, *((-1, -1) if kind == "no-epochs" else (epoch, epoch)))


scopes = st.one_of(st.just(Scope(all=True)), st.sampled_from(BROKERS).map(lambda b: Scope(broker_id=b)),
                   st.sampled_from(["t", "u"]).map(lambda t: Scope(topic=t)))


def fast(w: World, scope: Scope, loop: ScanLoop | None = None) -> ScanReport:
    memory = loop if loop is not None else ScanLoop(full_scan_every=0, seen_open=w.seen_open)
    return scan(w.cluster, memory, scope)


def planned(w: World, scope: Scope) -> set[tuple[int, TopicPartition]]:
    from kafka_txn_tools.admin.scan import plan_requests

    by_broker, _ = plan_requests(w.cluster.metadata(), scope)
    return {(b, tp) for b, tps in by_broker.items() for tp in tps}


def _scoped(w: World, scope: Scope) -> bool:
    return scope.topic is None or any(i.partition.topic == scope.topic for i in w.cluster.partitions)


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(worlds(hold=True), scopes)
def test_under_the_condition_the_first_pass_finds_what_the_full_scan_finds(w: World, scope: Scope) -> None:
    if not _scoped(w, scope):
        return
    assert rows(fast(w, scope)) == rows(full(w.cluster, scope))


@SETTINGS
@given(worlds(hold=False), scopes)
def test_the_first_pass_never_reports_what_the_full_scan_does_not_and_misses_only_where_the_condition_fails(
        w: World, scope: Scope) -> None:
    if not _scoped(w, scope):
        return
    w.cluster.described.clear()
    ours = fast(w, scope)
    asked = set(w.cluster.described[0]) if w.cluster.described else set()  # the first call: the scan's own
    theirs = full(w.cluster, scope)
    assert asked <= planned(w, scope)  # never a replica the full scan would not ask
    mine, everything = [r.to_row() for r in ours.results], [r.to_row() for r in theirs.results]
    # A row is the full scan's, but for the replicas it names: a transaction open on replicas the pass did not
    # ask (where the condition fails) is reported from those it asked.
    def same_but_brokers(r: dict[str, object]) -> list[dict[str, object]]:
        return [x for x in everything if {**x, "brokers": r["brokers"]} == r]

    for r in mine:
        [theirs_row] = same_but_brokers(r)
        assert set(r["brokers"]) <= set(theirs_row["brokers"])  # type: ignore[call-overload]
        unasked = {(TopicPartition(r["topic"], r["partition"]), b)  # type: ignore[arg-type]
                   for b in set(theirs_row["brokers"]) - set(r["brokers"])}  # type: ignore[call-overload]
        assert unasked <= w.breaking, (mine, everything)
    missed = {(TopicPartition(r["topic"], r["partition"]), b)
              for r in everything if r not in mine for b in r["brokers"]
              if not any({**r, "brokers": m["brokers"]} == m and b in m["brokers"] for m in mine)}
    assert missed <= w.breaking, (mine, everything)


@SETTINGS
@given(worlds(hold=False), scopes)
def test_after_a_full_pass_the_first_pass_finds_what_the_full_scan_finds_whatever_the_cluster(
        w: World, scope: Scope) -> None:
    # What C1 and C2 exclude is found by a full pass, and the replicas it found are asked again after it.
    if not _scoped(w, scope):
        return
    loop = ScanLoop(full_scan_every=2, passes=1)
    everything = fast(w, scope, loop)
    assert everything.first_pass is not None and everything.first_pass.full
    assert rows(fast(w, scope, loop)) == rows(everything) == rows(full(w.cluster, scope))


@SETTINGS
@given(worlds(hold=True), scopes)
def test_a_second_pass_on_an_unchanged_cluster_reads_fewer_lsos_and_finds_the_same(w: World, scope: Scope) -> None:
    if not _scoped(w, scope):
        return
    loop = ScanLoop(full_scan_every=0, seen_open=w.seen_open)
    first = fast(w, scope, loop)
    known = set(loop.clear)  # clear, at a leader epoch said
    before = len(w.cluster.lso_reads)
    second = fast(w, scope, loop)
    assert rows(second) == rows(first) == rows(full(w.cluster, scope))
    assert not any(known & r for r in w.cluster.lso_reads[before:])  # their LSO is not read again
