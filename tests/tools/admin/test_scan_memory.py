"""What a scan loop keeps between passes (admin/scan_memory.py): each part's rules on plain data, and a loop
over the in-memory cluster (tests/tools/admin/fakes.py) that asks less and finds what a fresh full scan finds."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from kafka_txn_tools.admin.scan import ScanOptions, ScanReport, Scope, find_hanging
from kafka_txn_tools.admin.scan_loop import ScanLoop
from kafka_txn_tools.admin.scan_memory import MAX_AGE_MS, ProducerIds, ScanMemory, txn_homes
from kafka_txn_tools.models import HangingReason, ScanError, TopicPartition, TransactionListing
from tests.tools.admin.fakes import MIN, NOW, FakeCluster, cluster, producer, txn

T0, T1, T2 = (TopicPartition("orders", p) for p in range(3))
TXN = "__transaction_state"
HOMES = frozenset({(0, 0, 3), (1, 1, 3)})


# ---- producer id -> transactional id, on plain data -------------------------------------------------------
def listing(txn_id: str, pid: int) -> TransactionListing:
    return TransactionListing(txn_id, pid, "Ongoing", 0)


def test_a_listed_producer_id_is_remembered_and_an_unlisted_one_only_under_the_same_coordinators() -> None:
    ids = ProducerIds()
    ids.learn([10, 11], [listing("app", 10)], failed=False, homes=HOMES)
    assert ids.known([10, 11, 12], HOMES) == ({10: "app"}, {11})
    moved = frozenset({(0, 0, 3), (1, 2, 4)})  # __transaction_state-1 has a new leader: 11 is listed again
    assert ids.known([10, 11], moved) == ({10: "app"}, set())
    assert ids.known([11], None) == ({}, set())  # a pass whose Metadata cannot tell where the ids live


def test_a_listing_error_drops_every_unmapped_producer_id_and_records_none() -> None:
    ids = ProducerIds()
    ids.learn([11], [], failed=False, homes=HOMES)
    ids.learn([12], [listing("app", 10)], failed=True, homes=HOMES)  # a broker did not answer
    assert ids.known([11, 12], HOMES) == ({}, set())
    ids.learn([13], [], failed=False, homes=None)  # not every __transaction_state partition was led
    assert ids.known([13], None) == ({}, set()) and ids.unmapped == {}


def test_a_producer_id_listed_again_without_an_id_is_no_longer_mapped() -> None:
    ids = ProducerIds()
    ids.learn([10], [listing("app", 10)], failed=False, homes=HOMES)
    ids.learn([10], [], failed=False, homes=HOMES)
    assert ids.known([10], HOMES) == ({}, {10})


def test_where_the_ids_live_needs_every_transaction_state_partition_led() -> None:
    c = cluster(internal=[TXN])
    assert txn_homes(c.metadata()) == frozenset({(0, 0, -1), (1, 1, -1), (2, 2, -1)})
    c.partitions = [i._replace(leader=-1) if i.partition == TopicPartition(TXN, 1) else i for i in c.partitions]
    assert txn_homes(c.metadata()) is None
    assert txn_homes(cluster().metadata()) is None  # no __transaction_state in the Metadata


# ---- a scan loop over the in-memory cluster --------------------------------------------------------------
class Counting:
    """Records each ListTransactions by producer id (its producer ids) and each DescribeTransactions."""

    def __init__(self, c: FakeCluster) -> None:
        self.by_pid: list[list[int]] = []
        self.described: list[list[str]] = []
        list_real, describe_real = c.list_transactions, c.describe_transactions

        def list_transactions(broker_ids: Any, states: Any = (), producer_ids: Any = (), **kw: Any) -> Any:
            if producer_ids:
                self.by_pid.append(sorted(producer_ids))
            return list_real(broker_ids, states, producer_ids, **kw)

        def describe_transactions(ids: Any, coordinators: Any = None) -> Any:
            self.described.append(sorted(ids))
            return describe_real(ids, coordinators)

        c.list_transactions = list_transactions  # type: ignore[method-assign]
        c.describe_transactions = describe_transactions  # type: ignore[method-assign]


def world() -> FakeCluster:
    """orders-0: producer 10 of "live" (late but live); orders-1: producer 11, whose id "gone" expired (no
    transactional id); orders-2: producer 12 of "done", which completed without its marker landing there."""
    c = cluster(internal=[TXN])
    c.open_txn(T0, producer(10, 100, 30 * MIN))
    c.transactions["live"] = txn("live", 10, partitions=[T0], coordinator=1)
    c.open_txn(T1, producer(11, 200, 30 * MIN))
    c.open_txn(T2, producer(12, 300, 30 * MIN))
    c.transactions["done"] = txn("done", 12, "CompleteCommit", coordinator=2)
    c.offsets = {T0: (100, 101), T1: (200, 201), T2: (300, 301)}  # (LSO, HW)
    return c


def rows(report: ScanReport) -> list[tuple[object, ...]]:
    return sorted((r.partition, r.producer.producer_id, r.reason, r.transactional_id) for r in report.results)


def fresh_full(c: FakeCluster) -> ScanReport:
    return find_hanging(c, Scope(all=True), lambda: NOW, ScanOptions(include_late=True, first_pass=False))


def loop(every: int = 0) -> ScanLoop:
    return ScanLoop(full_scan_every=every)


def passes(c: FakeCluster, loop: ScanLoop) -> Iterator[ScanReport]:
    """A scan loop's passes: the same ScanLoop given to each."""
    while True:
        yield find_hanging(c, Scope(all=True), lambda: NOW, ScanOptions(include_late=True), loop=loop)


EXPECTED = [(T0, 10, HangingReason.LATE, "live"), (T1, 11, HangingReason.NO_TRANSACTIONAL_ID, None),
            (T2, 12, HangingReason.TRANSACTION_NOT_ONGOING, "done")]


def test_a_loop_lists_its_candidates_producer_ids_once_and_finds_the_same() -> None:
    c = world()
    seen = Counting(c)
    scans = passes(c, loop())
    assert rows(next(scans)) == EXPECTED
    assert seen.by_pid == [[10, 11, 12]]
    for _ in range(3):
        assert rows(next(scans)) == EXPECTED == rows(fresh_full(c))
    assert seen.by_pid[1:] == [[10, 11, 12]] * 3  # only the fresh full scans listed them again


def test_a_transactional_id_with_a_new_producer_id_has_the_old_one_listed_again() -> None:
    c = world()
    seen = Counting(c)
    scans = passes(c, loop())
    next(scans)
    # "live" is initialised again: a new producer id, its epoch bumped; producer 10's transaction stays open.
    c.transactions["live"] = txn("live", 20, "Empty", coordinator=1)
    got = rows(next(scans))
    assert seen.by_pid == [[10, 11, 12], [10]]  # "live"'s description no longer names 10: listed now
    assert got == rows(fresh_full(c)) == sorted([(T0, 10, HangingReason.NO_TRANSACTIONAL_ID, None), *EXPECTED[1:]])


def test_an_unmapped_producer_id_is_listed_again_after_a_listing_error_or_a_coordinator_move() -> None:
    c = world()
    c.partitions = [i._replace(leader_epoch=3) for i in c.partitions]
    seen = Counting(c)
    scans = passes(c, loop())
    next(scans)
    next(scans)
    assert seen.by_pid == [[10, 11, 12]]
    # __transaction_state-1 moves to another leader: 11 is listed again (the new leader may hold its id).
    c.partitions = [i._replace(leader=2, leader_epoch=4) if i.partition == TopicPartition(TXN, 1) else i
                    for i in c.partitions]
    assert rows(next(scans)) == EXPECTED
    assert seen.by_pid[1:] == [[11]]
    # A broker that does not answer a listing (here the one of producer 10's id, whose description fails too):
    # every unmapped producer id is forgotten, and no-transactional-id is not claimed while it is down.
    c.down = {1}
    report = next(scans)
    assert seen.by_pid[2:] == [[10]]
    assert (T1, 11, HangingReason.NO_TRANSACTIONAL_ID, None) not in rows(report)
    c.down = set()
    assert rows(next(scans)) == EXPECTED
    assert seen.by_pid[3:] == [[10, 11]]


def test_a_full_pass_lists_every_producer_id_again_and_a_one_off_scan_always_does() -> None:
    c = world()
    seen = Counting(c)
    scans = passes(c, loop(every=3))
    for _ in range(4):
        next(scans)
    assert seen.by_pid == [[10, 11, 12], [10, 11, 12]]  # the first pass and the third (a full one)
    for _ in range(2):
        find_hanging(c, Scope(all=True), lambda: NOW, ScanOptions(include_late=True))
    assert seen.by_pid[2:] == [[10, 11, 12]] * 2


@pytest.mark.parametrize("gone", ["expired", "unanswered"])
def test_a_mapping_whose_description_fails_is_listed_again(gone: str) -> None:
    c = world()
    seen = Counting(c)
    scans = passes(c, loop())
    next(scans)
    if gone == "expired":  # "done" expired: its id is gone, producer 12 now has none
        del c.transactions["done"]
        expected = sorted([*EXPECTED[:2], (T2, 12, HangingReason.NO_TRANSACTIONAL_ID, None)])
    else:  # its coordinator's answer is lost: 12 cannot be judged this pass
        c.transactions["done"] = replace(c.transactions["done"], coordinator_id=1)
        c.down = {1}
        expected = None
    report = next(scans)
    assert seen.by_pid[1] == [12] if gone == "expired" else [10, 12]
    assert rows(report) == rows(fresh_full(c))
    if expected is not None:
        assert rows(report) == expected


def test_every_coordinator_read_of_a_loop_gets_its_findcoordinator_memory_serving_after_the_first_pass() -> None:
    c = world()
    c.groups = {"readers": ("consumer", {T1: 200})}
    kept = loop(every=3)
    memory = kept.memory
    serving = []
    for _ in range(3):
        c.coordinator_caches.clear()
        find_hanging(c, Scope(all=True), lambda: NOW, ScanOptions(include_late=True), loop=kept)
        assert c.coordinator_caches and all(x is memory.coordinators for x in c.coordinator_caches)
        serving.append(memory.coordinators.serving)
    assert serving == [False, True, False]  # the first pass and the full third one find every coordinator
    c.coordinator_caches.clear()
    find_hanging(c, Scope(all=True), lambda: NOW, ScanOptions(include_late=True))
    assert not any(x is not None and x.serving for x in c.coordinator_caches)  # a one-off scan


# ---- the group list ---------------------------------------------------------------------------------------
class Clock:
    def __init__(self) -> None:
        self.ms = 0

    def __call__(self) -> int:
        return self.ms


def grouped_loop(clock: Clock, every: int = 0) -> ScanLoop:
    return ScanLoop(full_scan_every=every, memory=ScanMemory(clock=clock))


def held(report: ScanReport) -> dict[TopicPartition, list[str]]:
    return {r.partition: sorted(g.group_id for g in r.stalled_groups or ()) for r in report.results}


def counting_groups(c: FakeCluster, fail: list[bool]) -> list[int]:
    """Counts ListGroups reads; while `fail[0]`, each fails on broker 2."""
    calls: list[int] = []
    real = c.list_groups

    def list_groups(broker_ids: Any) -> Any:
        calls.append(1)
        groups, errors = real(broker_ids)
        if fail[0]:
            errors = [ScanError("BROKER_UNREACHABLE", "broker 2 is unreachable", broker_id=2, api="ListGroups")]
        return groups, errors

    c.list_groups = list_groups  # type: ignore[method-assign]
    return calls


def test_a_loop_reads_the_group_list_once_per_max_age_and_names_a_new_group_within_it() -> None:
    c, clock, fail = world(), Clock(), [False]
    c.groups = {"readers": ("consumer", {T0: 100})}
    reads = counting_groups(c, fail)
    options = grouped_loop(clock)
    scans = passes(c, options)
    assert held(next(scans))[T0] == ["readers"] and len(reads) == 1
    c.groups["late-comer"] = ("consumer", {T0: 100})  # a group created after the list was read
    clock.ms = MAX_AGE_MS - 1
    assert held(next(scans))[T0] == ["readers"] and len(reads) == 1  # context up to the max age old
    clock.ms = MAX_AGE_MS
    assert held(next(scans)) == held(fresh_full(c)) and held(fresh_full(c))[T0] == ["late-comer", "readers"]
    assert len(reads) == 2 + 2  # the loop's second read, and the two fresh scans'


def test_a_failed_read_drops_the_group_list_and_a_full_pass_or_a_one_off_scan_reads_it() -> None:
    c, clock, fail = world(), Clock(), [False]
    c.groups = {"readers": ("consumer", {T0: 100})}
    reads = counting_groups(c, fail)
    scans = passes(c, grouped_loop(clock, every=4))
    next(scans)
    fail[0] = True
    report = next(scans)  # still served from the list; nothing failed
    assert len(reads) == 1 and report.notes == []
    clock.ms = MAX_AGE_MS
    assert any("stalled groups may be incomplete" in n for n in next(scans).notes)  # read again, and it failed
    fail[0] = False
    next(scans)  # the fourth pass: a full one
    assert len(reads) == 3
    next(scans)
    assert len(reads) == 3  # kept from the full pass
    clock.ms = 2 * MAX_AGE_MS - 1
    find_hanging(c, Scope(all=True), lambda: NOW, ScanOptions(include_late=True))
    assert len(reads) == 4  # a one-off scan always reads it


def test_an_unreadable_group_list_is_read_again_on_the_next_pass() -> None:
    c, clock, fail = world(), Clock(), [True]
    c.groups = {"readers": ("consumer", {T0: 100})}
    reads = counting_groups(c, fail)
    scans = passes(c, grouped_loop(clock))
    next(scans)
    next(scans)
    assert len(reads) == 2


# ---- Metadata ---------------------------------------------------------------------------------------------
def counting_metadata(c: FakeCluster) -> list[object]:
    calls: list[object] = []
    real = c.metadata

    def metadata(topics: Any = None) -> Any:
        calls.append(topics)
        return real(topics)

    c.metadata = metadata  # type: ignore[method-assign]
    return calls


def full_rows(report: ScanReport) -> list[dict[str, Any]]:
    """Every field of every row (offsets, brokers, groups...) but the volatile."""
    return sorted((r.to_row() for r in report.results), key=repr)


def test_a_loop_reads_metadata_once_per_max_age_on_an_unchanged_cluster() -> None:
    c, clock = world(), Clock()
    reads = counting_metadata(c)
    scans = passes(c, grouped_loop(clock, every=5))
    for _ in range(3):
        next(scans)
    assert len(reads) == 1
    clock.ms = MAX_AGE_MS
    next(scans)
    assert len(reads) == 2
    next(scans)  # the fifth: a full pass
    next(scans)
    assert len(reads) == 3
    find_hanging(c, Scope(all=True), lambda: NOW, ScanOptions(include_late=True))
    assert len(reads) == 4  # a one-off scan


@pytest.mark.parametrize("move", ["leader", "epoch"])
def test_a_leader_that_moved_since_the_kept_metadata_has_it_read_again_in_the_same_pass(move: str) -> None:
    c, clock = world(), Clock()
    c.partitions = [i._replace(leader_epoch=3) for i in c.partitions]
    reads = counting_metadata(c)
    scans = passes(c, grouped_loop(clock))
    next(scans)
    # orders-0's leadership moves: to broker 1 (its old leader answers NOT_LEADER_OR_FOLLOWER), or away and
    # back to broker 0 at a newer epoch (it answers FENCED_LEADER_EPOCH to the epoch the kept Metadata says).
    c.partitions = [i._replace(leader=1 if move == "leader" else 0, leader_epoch=4) if i.partition == T0 else i
                    for i in c.partitions]
    report = next(scans)
    assert len(reads) == 2
    assert full_rows(report) == full_rows(fresh_full(c))
    assert next(r for r in report.results if r.partition == T0).offsets.last_stable_offset == 100
    next(scans)
    assert len(reads) == 2 + 1  # kept again (the other read is the fresh scan's)


def test_a_pass_with_an_error_has_the_next_one_read_metadata() -> None:
    c, clock = world(), Clock()
    reads = counting_metadata(c)
    scans = passes(c, grouped_loop(clock))
    next(scans)
    c.partition_errors[(1, T0)] = "NOT_LEADER_OR_FOLLOWER"  # a follower's DescribeProducers answer
    next(scans)
    assert len(reads) == 1
    del c.partition_errors[(1, T0)]
    next(scans)
    assert len(reads) == 2
    next(scans)
    assert len(reads) == 2


# ---- producer state of partitions held at the same offsets (admin/lso_prefilter.py `reusable`) ------------
def held_world() -> FakeCluster:
    """world(), its offsets read at leader epoch 3 (the kept answers need an epoch said)."""
    c = world()
    c.partitions = [i._replace(leader_epoch=3) for i in c.partitions]
    return c


def scan_asking(c: FakeCluster, loop: ScanLoop) -> tuple[ScanReport, set[tuple[int, TopicPartition]]]:
    """One pass, and the replicas its first pass asked for their producer state (the scan's first
    DescribeProducers; the re-check and the coordinator side's leader reads come after it)."""
    before = len(c.described)
    report = find_hanging(c, Scope(all=True), lambda: NOW, ScanOptions(include_late=True), loop=loop)
    return report, set(c.described[before])


def test_a_partition_held_at_the_same_offsets_keeps_its_replicas_last_answers_and_the_recheck_still_goes_out(
        ) -> None:
    c = held_world()
    options = loop()
    first, asked = scan_asking(c, options)
    assert len(asked) == 9  # 3 partitions held below their HW x 3 replicas
    before = len(c.described)
    second, asked = scan_asking(c, options)
    assert asked == set() and second.first_pass is not None and second.first_pass.kept == 9
    assert rows(second) == rows(first) == rows(fresh_full(c))
    rechecked = {tp for call in c.described[before + 1:] for _, tp in call}
    assert rechecked >= {T1, T2}  # the hanging verdicts' replicas, read again before they are reported


def test_a_kept_answer_that_no_longer_holds_is_dropped_by_the_recheck() -> None:
    c = held_world()
    options = loop()
    scan_asking(c, options)
    # Producer 12's transaction is no longer open on broker 1's replica of orders-2 (say a broker bug was fixed
    # there), though its leader's offsets did not move: the kept answer still shows it; the re-check does not.
    c.producers[(1, T2)] = [replace(s, current_txn_start_offset=-1) for s in c.producers[(1, T2)]]
    report, asked = scan_asking(c, options)
    assert asked == set()
    assert [r.brokers for r in report.results if r.partition == T2] == [
        r.brokers for r in fresh_full(c).results if r.partition == T2] == [(0, 2)]


@pytest.mark.parametrize("change", ["lso", "hw", "epoch", "isr"])
def test_a_partition_whose_offsets_moved_is_asked_again(change: str) -> None:
    c, clock = held_world(), Clock()
    options = grouped_loop(clock)
    scan_asking(c, options)
    if change == "lso":  # a marker landed on orders-0 and another transaction is open after it
        c.offsets[T0] = (101, 101 + 1)
    elif change == "hw":  # a record written since
        c.offsets[T0] = (100, 102)
    elif change == "epoch":  # the same leader, elected again
        c.partitions = [i._replace(leader_epoch=4) if i.partition == T0 else i for i in c.partitions]
    elif change == "isr":  # broker 1 fell out of orders-0's ISR: asked as out of sync once Metadata says so
        c.partitions = [i._replace(isr=(0, 2)) if i.partition == T0 else i for i in c.partitions]
        clock.ms = MAX_AGE_MS
    _report, asked = scan_asking(c, options)
    assert asked == ({(1, T0)} if change == "isr" else {(0, T0), (1, T0), (2, T0)})
    assert rows(scan_asking(c, options)[0]) == rows(fresh_full(c))


def test_a_replica_whose_answer_failed_is_not_kept() -> None:
    c = held_world()
    options = loop()
    c.partition_errors[(2, T0)] = "NOT_LEADER_OR_FOLLOWER"
    scan_asking(c, options)
    del c.partition_errors[(2, T0)]
    _report, asked = scan_asking(c, options)
    assert asked == {(2, T0)}
    _report, asked = scan_asking(c, options)
    assert asked == set()


def test_a_full_pass_asks_every_replica_again() -> None:
    c = held_world()
    options = loop(every=3)
    for _ in range(2):
        scan_asking(c, options)
    full, asked = scan_asking(c, options)
    assert full.first_pass is not None and full.first_pass.full and full.first_pass.kept == 0
    assert len(asked) == 6 * 3  # every replica of orders and __transaction_state
    # A full pass reads no offsets to keep its answers under: the next pass asks the held partitions again.
    _report, asked = scan_asking(c, options)
    assert len(asked) == 9
    _report, asked = scan_asking(c, options)
    assert asked == set()


def test_a_pass_that_fails_has_the_next_one_read_metadata() -> None:
    c, clock = world(), Clock()
    reads = counting_metadata(c)
    options = grouped_loop(clock)
    scan_asking(c, options)

    def broken(*args: Any, **kw: Any) -> Any:
        raise ConnectionError("the cluster went away")

    real, c.list_transactions = c.list_transactions, broken  # type: ignore[method-assign]
    with pytest.raises(ConnectionError):
        find_hanging(c, Scope(all=True), lambda: NOW, ScanOptions(include_late=True), loop=options)
    c.list_transactions = real  # type: ignore[method-assign]
    scan_asking(c, options)
    assert len(reads) == 2
