"""A scan loop (the monitor's, `find-hanging --watch`) against a fresh full scan on the embedded cluster, while
what the loop keeps between passes (admin/scan_memory.py) is warm: the same findings after each change the
kept answers could hide - a transactional id expiring and initialised again with a new producer id, a leader
moving, a coordinator moving, a group appearing - and what the steady state sends, counted by API as the
loop's client sends it.

The max transaction timeout is 1 s, so every open transaction is a candidate and judged (late, or hanging).
The loop's memory has its own clock (the max age of its group list and Metadata), moved by hand.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.testing.scenarios import ScenarioOptions, run_scenario
from kafka_txn_tools.admin.scan import ScanOptions, ScanReport, Scope, find_hanging
from kafka_txn_tools.admin.scan_loop import ScanLoop
from kafka_txn_tools.admin.scan_memory import MAX_AGE_MS, ScanMemory
from kafka_txn_tools.connection.client import AdminClient
from kafka_txn_tools.connection.config import ClientSettings
from kafka_txn_tools.models import TopicPartition
from tests.e2e.cli_support import ZOMBIE_TIMEOUT_MS, hold_group, kafka_txn, open_transaction, until

# Ids expire only when a test says so (the cleanup runs hourly by default; see `expire_idle_ids`).
CONFIG = {"transaction.partition.verification.enable": False,  # the partition-side incidents need it off
          "transaction.abort.timed.out.transaction.cleanup.interval.ms": 200,
          "transactional.id.expiration.ms": 1, "transaction.state.log.num.partitions": 5,
          "offsets.topic.num.partitions": 3, "auto.leader.rebalance.enable": False}
BACKDATE_MS = 30 * 60_000
VOLATILE = ("duration_ms", "time_in_state_ms", "age_ms", "last_timestamp_ms")
LIVE_ID = "loop-live"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(nodes=3, data_dir=tmp_path_factory.mktemp("scan-loop"), config=CONFIG) as c:
        yield c


class Clock:
    def __init__(self) -> None:
        self.ms = 0

    def __call__(self) -> int:
        return self.ms


# The scans judge ages from this far ahead of the wall clock, so that a transaction written just before is
# already older than their max transaction timeout (1 s) without the test sleeping.
LOOK_AHEAD_MS = 1_500


def now() -> int:
    return time.time_ns() // 1_000_000 + LOOK_AHEAD_MS


def options(first_pass: bool = True) -> ScanOptions:
    return ScanOptions(max_timeout_ms=1_000, include_late=True, max_prepare_ms=0, first_pass=first_pass)


class Loop:
    """One scan loop: its client (kept, as the monitor keeps it), its options and its ScanLoop; the requests of
    its last pass by API."""

    def __init__(self, bs: str, clock: Clock) -> None:
        self.admin = AdminClient(ClientSettings(bootstrap_servers=bs))
        self.options = options()
        self.loop = ScanLoop(full_scan_every=0, memory=ScanMemory(clock=clock))
        self.sent: Counter[str] = Counter()
        self.last: ScanReport | None = None
        real = self.admin._start

        def counting(request: Any, *rest: Any) -> Any:
            self.sent[type(request).__name__.removesuffix("Request").split("_")[0]] += 1
            return real(request, *rest)

        self.admin._start = counting  # type: ignore[method-assign]

    def scan(self) -> ScanReport:
        self.sent.clear()
        return find_hanging(self.admin, Scope(all=True), now, self.options, loop=self.loop)


def fresh_full(bs: str) -> ScanReport:
    with AdminClient(ClientSettings(bootstrap_servers=bs)) as admin:
        return find_hanging(admin, Scope(all=True), now, options(first_pass=False))


def rows(report: ScanReport, groups: bool = True) -> list[dict[str, Any]]:
    skip = VOLATILE if groups else (*VOLATILE, "stalled_groups")
    found = [*report.results, *report.stuck]
    return sorted(({k: v for k, v in r.to_row().items() if k not in skip} for r in found), key=repr)


def same_as_fresh(loop: Loop, bs: str, groups: bool = True) -> list[dict[str, Any]]:
    """A loop pass, then a fresh full scan: the same findings and no errors."""
    ours = loop.last = loop.scan()
    theirs = fresh_full(bs)
    assert ours.errors == theirs.errors == []
    assert rows(ours, groups) == rows(theirs, groups)
    return rows(ours)


def expire_idle_ids(cluster: EmbeddedCluster) -> None:
    """transactional.id.expiration.ms is 1 ms: every id not in a transaction expires now (its tombstone)."""
    assert cluster.cluster is not None
    for node in cluster.cluster.nodes.values():
        manager = node.txn_coordinator.state_manager
        cluster.call_soon(manager.remove_expired_transactional_ids, time.time_ns() // 1_000_000)


def move_leader(admin: AdminClient, tp: TopicPartition) -> int:
    """Move `tp`'s leadership to its next replica; the new leader."""
    info = admin.metadata([tp.topic]).partition(tp)
    assert info is not None
    order = [*info.replicas[1:], info.replicas[0]]
    assert admin.reorder_replicas(tp, order) == (None, None)
    until(lambda: admin.elect_preferred_leader(tp) == (None, None)
          or admin.metadata([tp.topic]).partition(tp).leader == order[0],  # type: ignore[union-attr]
          f"{tp} led by {order[0]}")
    return order[0]


def test_a_warm_scan_loop_finds_what_a_fresh_full_scan_finds_and_sends_only_what_can_have_changed(
        cluster: EmbeddedCluster) -> None:
    bs = cluster.bootstrap_servers
    scenario = ScenarioOptions(backdate_ms=BACKDATE_MS, healthy=True, wait_s=20, zombie_timeout_ms=ZOMBIE_TIMEOUT_MS)
    [result] = run_scenario("zombie-after-timeout", bs, scenario)
    [zombie] = result.hanging
    run_scenario("late-write-after-abort", bs, scenario)
    live = open_transaction(bs, LIVE_ID, zombie.topic, [zombie.partition])  # late but live, 10 minutes' timeout
    clock = Clock()
    loop = Loop(bs, clock)
    try:
        loop.scan()
        # The steady state: no Metadata, FindCoordinator or ListGroups; ListTransactions by state and age only;
        # DescribeProducers only to re-check the verdicts, the held partitions' replicas keeping their answers.
        found = same_as_fresh(loop, bs)
        assert loop.last is not None and loop.last.first_pass is not None
        assert loop.last.first_pass.kept > 0 and loop.last.scanned_replicas == 0, loop.last.first_pass
        assert {"kind": "partition", "reason": "late", "transactional_id": LIVE_ID}.items() <= next(
            r for r in found if r["transactional_id"] == LIVE_ID).items()
        assert not {"Metadata", "FindCoordinator", "ListGroups"} & set(loop.sent), loop.sent
        assert loop.sent["ListTransactions"] == 3, loop.sent

        # The zombie's id expires (its producer id no longer has one), then is initialised again: a new
        # producer id. The old one is listed once, then known to have no id.
        expire_idle_ids(cluster)
        rows_now = same_as_fresh(loop, bs)
        assert any(r["producer_id"] == zombie.producer_id and r["reason"] == "no-transactional-id" for r in rows_now)
        again = Producer({"bootstrap.servers": bs, "transactional.id": zombie.transactional_id, "log_level": 0})
        again.init_transactions(30)
        new_pid = loop.admin.describe_transactions([zombie.transactional_id]).descriptions[
            zombie.transactional_id].producer_id
        assert new_pid != zombie.producer_id
        same_as_fresh(loop, bs)
        assert loop.sent["ListTransactions"] == 3 and "Metadata" not in loop.sent, loop.sent

        # The zombie's partition gets a new leader: the kept Metadata is read again in the same pass.
        tp = TopicPartition(zombie.topic, zombie.partition)
        move_leader(loop.admin, tp)
        same_as_fresh(loop, bs)
        assert loop.sent["Metadata"] == 1, loop.sent
        same_as_fresh(loop, bs)
        assert "Metadata" not in loop.sent, loop.sent

        # LIVE_ID's coordinator moves: the kept one answers NOT_COORDINATOR, and the id is found again.
        moved = kafka_txn(bs, "move-coordinator", "--transactional-id", LIVE_ID, "--yes")
        assert moved.code == 0, moved.err
        same_as_fresh(loop, bs)
        assert loop.sent["FindCoordinator"] >= 1 and loop.sent["Metadata"] == 1, loop.sent
        same_as_fresh(loop, bs)
        assert not {"Metadata", "FindCoordinator"} & set(loop.sent), loop.sent

        # A group starts reading the zombie's partition and is held back at its LSO: named once the group
        # list is the max age old; until then the findings are the same but for the groups named.
        hold_group(bs, zombie.topic, zombie.partition, "late-comer")
        same_as_fresh(loop, bs, groups=False)
        clock.ms += MAX_AGE_MS
        found = same_as_fresh(loop, bs)
        assert loop.sent["ListGroups"] == 3, loop.sent
        row = next(r for r in found if (r["topic"], r["partition"], r["producer_id"]) == (
            zombie.topic, zombie.partition, zombie.producer_id))
        assert "late-comer" in [g["group_id"] for g in row["stalled_groups"]]
    finally:
        loop.admin.close()
        live.abort_transaction(30)
