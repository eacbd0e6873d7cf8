"""find-hanging's first pass (admin/lso_prefilter.py) against the full scan on the embedded cluster.

- Every `kafka-txn broker scenario` (partition side, coordinator side, 2pc-prepared, share side; epoch-exhaustion
  on a one-node cluster, as the runbook runs it) with healthy transactions beside them: `find-hanging --all`
  and `find-hanging --all --full-scan` give the same rows. The max transaction timeout is 1s, so every open
  transaction is a candidate and classified (late, prepared-2pc, hanging), not only the scenarios' own.
- The edges, on the real broker: a broker down (its replicas out of the ISR are asked, so the errors are the
  full scan's), a leader that moves between the Metadata read and the offsets reads (its answer is an error;
  the partition is asked everywhere), and a follower whose producer state diverged from its leader's (found by
  the full pass of a scan loop and followed by the passes after it).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.testing.raw_client import RawKafkaClient
from kafka_txn_broker.testing.scenarios import ScenarioOptions, ScenarioResult, run_scenario
from kafka_txn_tools.admin.lso_prefilter import Why
from kafka_txn_tools.admin.scan import ScanOptions, ScanReport, Scope, find_hanging
from kafka_txn_tools.admin.scan_loop import ScanLoop
from kafka_txn_tools.cli import exit_codes
from kafka_txn_tools.connection.client import AdminClient
from kafka_txn_tools.connection.config import ClientSettings
from kafka_txn_tools.models import TopicPartition
from tests.e2e.cli_support import ZOMBIE_TIMEOUT_MS, kafka_txn

CONFIG = {"transaction.partition.verification.enable": False,  # the partition-side incidents need it off
          "transaction.two.phase.commit.enable": True, "share.transactional.acknowledgement.enable": True,
          "transaction.abort.timed.out.transaction.cleanup.interval.ms": 200,
          "transaction.state.log.num.partitions": 5, "offsets.topic.num.partitions": 3}
BACKDATE_MS = 30 * 60_000
# What changes from one scan to the next by itself: ages.
VOLATILE = ("duration_ms", "time_in_state_ms", "age_ms")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(nodes=3, data_dir=tmp_path_factory.mktemp("first-pass"), config=CONFIG) as c:
        yield c


def scenarios(bs: str, *names: str) -> list[ScenarioResult]:
    options = ScenarioOptions(backdate_ms=BACKDATE_MS, healthy=True, wait_s=20, zombie_timeout_ms=ZOMBIE_TIMEOUT_MS)
    return [result for name in names for result in run_scenario(name, bs, options)]


def rows(bs: str, *extra: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    r = kafka_txn(bs, "find-hanging", "--all", "--max-transaction-timeout", "1s", "--max-prepare-time", "0",
                  *extra, "-o", "json")
    assert r.code in (exit_codes.OK, exit_codes.PARTIAL), r.err
    doc = r.json()
    return sorted(({k: v for k, v in row.items() if k not in VOLATILE} for row in doc["hanging"]), key=repr), doc


def same_rows(bs: str) -> list[dict[str, Any]]:
    """The first pass and the full scan, in turns (first pass, full, first pass): the same rows."""
    fast, doc = rows(bs)
    full, full_doc = rows(bs, "--full-scan")
    again, _ = rows(bs)
    assert fast == full == again
    assert doc["first_pass"]["full_scan"] is False and full_doc["first_pass"] is None
    assert doc["scanned_replicas"] < full_doc["scanned_replicas"]
    return full


def test_every_scenario_gives_the_same_rows_with_the_first_pass_and_the_full_scan(cluster: EmbeddedCluster) -> None:
    bs = cluster.bootstrap_servers
    results = scenarios(bs, "late-write-after-abort", "zombie-after-timeout", "unregistered-partition-commit",
                        "marker-retry-rejected", "2pc-prepared", "share-ack-producer-dies", "share-ack-leadership-move",
                        "share-ack-stalled")
    [dies] = [r.share[0].transactional_id for r in results if r.name == "share-ack-producer-dies"]
    with RawKafkaClient(bs) as client:  # the share-ack-producer-dies transaction's timeout abort, done
        until(lambda: client.describe_transaction(dies).transaction_state == "CompleteAbort")
    found = same_rows(bs)
    assert {(r["kind"], r["reason"]) for r in found} >= {
        ("partition", "transaction-not-ongoing"), ("partition", "late"), ("partition", "prepared-2pc"),
        ("coordinator", "markers-pending")}
    assert any(r.get("topic") == "__share_group_state" for r in found)  # the share side's staged acknowledgements


def test_epoch_exhaustion_gives_the_same_rows(tmp_path_factory: pytest.TempPathFactory) -> None:
    # 32,766 epoch bumps, each a __transaction_state write: on one node, as the runbook runs it.
    with EmbeddedCluster(nodes=1, data_dir=tmp_path_factory.mktemp("one"), config=CONFIG) as one:
        scenarios(one.bootstrap_servers, "epoch-exhaustion")
        found = same_rows(one.bootstrap_servers)
    assert any(r["kind"] == "coordinator" and r["reason"] == "epoch-exhausted" for r in found)


# ---- the edges on the real broker ----------------------------------------------------------------------
def scan(bs: str, options: ScanOptions, client: Any = None, loop: ScanLoop | None = None) -> ScanReport:
    now = lambda: time.time_ns() // 1_000_000  # noqa: E731
    if client is not None:
        return find_hanging(client, Scope(all=True), now, options, loop=loop)
    with AdminClient(ClientSettings(bootstrap_servers=bs)) as admin:
        return find_hanging(admin, Scope(all=True), now, options, loop=loop)


def key_rows(report: ScanReport) -> list[tuple[object, ...]]:
    return sorted((r.partition, r.producer.producer_id, r.producer.current_txn_start_offset, r.reason.value, r.brokers)
                  for r in report.results)


def error_rows(report: ScanReport) -> list[tuple[object, ...]]:
    return sorted((e.api, e.error, e.broker_id, e.partitions) for e in report.errors)


def hanging_on(bs: str, scenario: str) -> TopicPartition:
    [result] = run_scenario(scenario, bs, ScenarioOptions(backdate_ms=BACKDATE_MS, healthy=False, wait_s=20,
                                                          zombie_timeout_ms=ZOMBIE_TIMEOUT_MS))
    [truth] = result.hanging
    return TopicPartition(truth.topic, truth.partition)


def test_a_leader_that_moves_after_metadata_was_read_has_its_partition_asked_everywhere(
        cluster: EmbeddedCluster) -> None:
    bs = cluster.bootstrap_servers
    tp = hanging_on(bs, "late-write-after-abort")

    class MovesTheLeader(AdminClient):
        """Metadata as it was; then, before the offsets are read, the partition's leadership moves away and
        back (twice: the same broker leads again, at a newer epoch than Metadata said)."""

        def metadata(self, topics: Any = None) -> Any:
            seen = super().metadata(topics)
            info = seen.partition(tp)
            assert info is not None
            self.moves = [info.leader]
            for order in ([*info.replicas[1:], info.replicas[0]], list(info.replicas)):
                assert self.reorder_replicas(tp, order) == (None, None)
                until(lambda o=order: self.elect_preferred_leader(tp) == (None, None)  # type: ignore[misc]
                      or super(MovesTheLeader, self).metadata([tp.topic]).partition(tp).leader == o[0])
                self.moves.append(order[0])
            return seen

    with MovesTheLeader(ClientSettings(bootstrap_servers=bs)) as moving:
        report = scan(bs, ScanOptions(include_late=True), moving)
        leader = moving.moves
    assert leader[0] == leader[2] != leader[1]
    # Its leader answered FENCED_LEADER_EPOCH (asked at the epoch Metadata gave): all 3 replicas asked.
    assert report.first_pass is not None and report.first_pass.why.get(Why.UNREAD) == 3
    assert tp in [r.partition for r in report.hanging]
    assert key_rows(report) == key_rows(scan(bs, ScanOptions(include_late=True, first_pass=False)))


def until(done: Any, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, "gave up waiting"
        time.sleep(0.1)


def test_a_follower_whose_producer_state_diverged_is_found_by_the_full_pass_and_followed_after(
        cluster: EmbeddedCluster) -> None:
    bs = cluster.bootstrap_servers
    cluster.create_topic("diverged", 1, 3)
    tp = TopicPartition("diverged", 0)
    with RawKafkaClient(bs) as raw:
        until(lambda: raw.partition_leaders("diverged").get(0, -1) >= 0)
        leader = raw.partition_leaders("diverged")[0]
        assert raw.produce("diverged", 0, [b"a", b"b"], int(time.time() * 1000))[0] == 0
    follower = next(n for n in cluster.node_ids if n != leader)
    inject_open_transaction(cluster, follower, tp, producer_id=987_654, start=0,
                            last_timestamp=int(time.time() * 1000) - BACKDATE_MS)
    loop, options = ScanLoop(full_scan_every=2), ScanOptions(include_late=True)
    try:
        first, second, third = (scan(bs, options, loop=loop) for _ in range(3))
    finally:
        inject_open_transaction(cluster, follower, tp, producer_id=987_654, start=None, last_timestamp=0)
    mine = [(tp, 987_654, 0, "no-transactional-id", (follower,))]
    assert [k for k in key_rows(first) if k[0] == tp] == []  # its leader's LSO is its HW
    assert second.first_pass is not None and second.first_pass.full
    assert [k for k in key_rows(second) if k[0] == tp] == mine
    assert [k for k in key_rows(third) if k[0] == tp] == mine and third.first_pass is not None
    assert third.first_pass.why.get(Why.SEEN_OPEN, 0) >= 1 and not third.first_pass.full
    # Cleared there (the finally above): asked once more, then forgotten.
    assert [k for k in key_rows(scan(bs, options, loop=loop)) if k[0] == tp] == []
    assert (tp, follower) not in loop.seen_open


def inject_open_transaction(cluster: EmbeddedCluster, node: int, tp: TopicPartition, producer_id: int,
                            start: int | None, last_timestamp: int) -> None:
    """A broker bug, emulated: `node`'s replica of `tp` holds a transaction of `producer_id` open from `start`
    (None: closes it) that is in no log. Its leader knows nothing of it."""
    from kafka_txn_broker.log.producer_state import ProducerStateEntry

    assert cluster.cluster is not None
    part = cluster.cluster.nodes[node].replica_manager.get(tp.topic, tp.partition)
    assert part is not None

    def edit() -> None:
        state = part.log.producer_state
        if start is None:
            state.producers.pop(producer_id, None)
        else:
            state.producers[producer_id] = ProducerStateEntry(producer_id, 0, 0, last_timestamp, start)

    cluster.call_soon(edit)


def test_a_broker_down_gives_the_same_rows_and_errors(cluster: EmbeddedCluster) -> None:
    bs = cluster.bootstrap_servers
    tp = hanging_on(bs, "zombie-after-timeout")
    down = next(n for n in cluster.node_ids if n != 0)
    cluster.stop_node(down)
    try:
        with AdminClient(ClientSettings(bootstrap_servers=bs), timeout_ms=5_000) as admin:
            until(lambda: all(down not in i.isr for i in admin.metadata().partitions if i.leader >= 0))
            fast = scan(bs, ScanOptions(include_late=True), admin)
            full = scan(bs, ScanOptions(include_late=True, first_pass=False), admin)
    finally:
        cluster.start_node(down)
    assert tp in [r.partition for r in fast.hanging]
    assert key_rows(fast) == key_rows(full)
    assert error_rows(fast) == error_rows(full) and any(e.broker_id == down for e in fast.errors)
    assert fast.first_pass is not None and fast.first_pass.why.get(Why.OUT_OF_SYNC, 0) > 0
