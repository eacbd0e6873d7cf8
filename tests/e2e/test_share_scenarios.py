"""KIP-1289 scenarios (`kafka-txn broker scenario share-ack-*`): each one's ground truth against what the
live cluster does next. The clock is the cluster's ManualClock: timeouts and lock expiry are clock moves."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.clock import ManualClock
from kafka_txn_broker.formats.partitioning import SHARE_STATE_TOPIC
from kafka_txn_broker.testing.raw_client import ProducerIdAndEpoch, RawKafkaClient
from kafka_txn_broker.testing.scenarios import (
    SHARE_PARTITION,
    ScenarioOptions,
    ScenarioPrevented,
    ShareTransaction,
    run_scenario,
)
from kafka_txn_broker.testing.share_client import ShareMember, topic_layout

ENABLED = {"share.transactional.acknowledgement.enable": True, "offsets.topic.num.partitions": 3,
           "transaction.state.log.num.partitions": 3}
LOCK_MS = 30_000  # share.record.lock.duration.ms, Kafka's default
# The tests' max transaction timeout is 1m; a second past it (the metric's age is whole milliseconds of a
# monotonic clock kept in float seconds, so one millisecond past could read as exactly 1m).
PAST_THE_MAX_TIMEOUT_MS = 61_000


@pytest.fixture(scope="module")
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, clock: ManualClock) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(nodes=3, data_dir=tmp_path_factory.mktemp("share"), config=ENABLED, clock=clock) as c:
        yield c


def scenario(cluster: EmbeddedCluster, name: str, **options: Any) -> ShareTransaction:
    (result,) = run_scenario(name, cluster.bootstrap_servers, ScenarioOptions(healthy=False, wait_s=20, **options))
    (truth,) = result.share
    assert (result.hanging, result.stuck) == ([], [])
    assert truth.share_state_partitions and all(p.startswith(SHARE_STATE_TOPIC + "-")
                                               for p in truth.share_state_partitions)
    return truth


def states_at(cluster: EmbeddedCluster, node_id: int, t: ShareTransaction) -> dict[str, int]:
    """The share partition's records by state as broker `node_id` holds them (a former leader may keep a copy)."""
    assert cluster.cluster is not None
    core = cluster.cluster

    def collect() -> dict[str, int]:
        for key, sp in core.nodes[node_id].share_partition_manager.partitions.items():
            if (key.group_id, core.metadata.topics_by_id[key.topic_id].name, key.partition) == \
                    (t.group, t.topic, t.partition):
                return {s.name: n for s, n in sp.counts_by_state().items()}
        return {}

    return cluster.call_soon(collect)  # type: ignore[no-any-return]


def wait_states(cluster: EmbeddedCluster, node_id: int, t: ShareTransaction, done: Any) -> dict[str, int]:
    import time

    deadline = time.monotonic() + 10
    while not done(state := states_at(cluster, node_id, t)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return state


def fetch_as_new_member(cluster: EmbeddedCluster, t: ShareTransaction, leader: int) -> list[tuple[int, int]]:
    with RawKafkaClient(cluster.bootstrap_servers) as client:
        topic_id, _ = topic_layout(client, t.topic)
        return ShareMember(client, t.group, "another-member", t.topic, topic_id, t.partition, leader).fetch()


def coordinator_state(cluster: EmbeddedCluster, txn_id: str) -> str:
    with RawKafkaClient(cluster.bootstrap_servers) as client:
        return str(client.describe_transaction(txn_id).transaction_state)


def test_a_stalled_transaction_holds_the_group_past_the_lock(cluster, clock):
    from kafka_txn_broker.server import metrics

    # First in the module: the node-wide TxnPendingLockExpiredCount then counts this scenario's records only.
    t = scenario(cluster, "share-ack-stalled")
    clock.advance(LOCK_MS + 1)  # the member's lock runs out; the records wait for the stalled transaction
    cluster.tick()
    assert states_at(cluster, t.leader, t).get("TX_PENDING") == 10
    assert fetch_as_new_member(cluster, t, t.leader) == []  # nobody can have them
    text = cluster.call_soon(lambda: metrics.render(cluster.cluster))
    held = f'node="{t.leader}",group="{t.group}",topic="{t.topic}",partition="{t.partition}",' \
           f'producer_id="{t.producer_id}",transactional_id="{t.transactional_id}"'
    assert f"{metrics.TXN_PENDING_BY_TXN}{{{held}}} 10" in text
    assert f'{metrics.TXN_PENDING_LOCK_EXPIRED}{{node="{t.leader}"}} 10' in text
    assert coordinator_state(cluster, t.transactional_id) == "Ongoing"


def test_a_producer_that_dies_has_its_staged_records_redelivered_after_its_timeout(cluster, clock):
    t = scenario(cluster, "share-ack-producer-dies", zombie_timeout_ms=5000)
    assert (t.partition, t.first_offset, t.last_offset, t.timeout_ms, t.new_leader) == (SHARE_PARTITION, 0, 9,
                                                                                        5000, t.leader)
    assert states_at(cluster, t.leader, t).get("TX_PENDING") == 10
    assert coordinator_state(cluster, t.transactional_id) == "Ongoing"
    clock.advance(t.timeout_ms + 1)  # the coordinator's reaper aborts it: ABORT markers
    cluster.tick()
    wait_states(cluster, t.leader, t, lambda s: s.get("TX_PENDING") == 0)
    clock.advance(LOCK_MS + 1)  # back with the dead member, whose lock runs out: released
    cluster.tick()
    assert wait_states(cluster, t.leader, t, lambda s: s.get("AVAILABLE") == 10).get("AVAILABLE") == 10
    assert coordinator_state(cluster, t.transactional_id) == "CompleteAbort"
    assert fetch_as_new_member(cluster, t, t.leader) == [(0, 9)]  # delivered again, none acknowledged


def test_a_leadership_move_while_pending_keeps_the_records_pending_at_the_new_leader(cluster):
    t = scenario(cluster, "share-ack-leadership-move")
    assert t.new_leader != t.leader
    # The new leader loaded the staged acknowledgements the transaction wrote to the group's
    # __share_group_state partition: the records stay TX_PENDING, nobody gets them while it is open.
    assert fetch_as_new_member(cluster, t, t.new_leader) == []
    assert states_at(cluster, t.new_leader, t).get("TX_PENDING", 0) == 10
    assert coordinator_state(cluster, t.transactional_id) == "Ongoing"


def test_a_broker_without_the_feature_prevents_them(tmp_path: Path) -> None:
    with EmbeddedCluster(nodes=1, data_dir=tmp_path) as c, pytest.raises(ScenarioPrevented, match="enable"):
        run_scenario("share-ack-stalled", c.bootstrap_servers, ScenarioOptions(healthy=False))


def test_the_cli_prints_the_share_ground_truth(cluster):
    from typer.testing import CliRunner

    from kafka_txn_tools.cli.app import app

    out = CliRunner().invoke(app, ["broker", "scenario", "share-ack-stalled", "--bootstrap-server",
                                   cluster.bootstrap_servers, "--no-healthy", "-o", "table"])
    assert out.exit_code == 0, out.output
    (line,) = [x for x in out.output.splitlines() if x.startswith("SHARE ")]
    assert "pending=scenario-share-ack-stalled-" in line and f"-{SHARE_PARTITION}:0-9 " in line


def test_find_hanging_and_describe_show_what_a_transaction_holds_tx_pending(cluster, clock):
    # No Kafka API lists TX_PENDING records: find-hanging reads them from each broker's metrics endpoint.
    from kafka_txn_broker.server import metrics
    from kafka_txn_tools.cli import exit_codes
    from tests.e2e.cli_support import kafka_txn

    t = scenario(cluster, "share-ack-stalled")
    server = cluster.call(metrics.serve_metrics(cluster.cluster, "127.0.0.1", 0))
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/metrics"
    try:
        def holds(*extra: str) -> tuple[int, list[dict[str, Any]]]:
            r = kafka_txn(cluster.bootstrap_servers, "find-hanging", "--topic", t.topic, "--metrics-url", url,
                          "--max-transaction-timeout", "1m", "--exit-code", "-o", "json", *extra)
            return r.code, [row for row in r.json()["hanging"] if row["kind"] == "share"]

        assert holds() == (exit_codes.OK, [])  # staged just now: not past the timeout
        clock.advance(PAST_THE_MAX_TIMEOUT_MS)
        code, rows = holds()
        assert code == exit_codes.FOUND
        (row,) = rows
        assert (row["group"], row["topic"], row["partition"], row["producer_id"], row["transactional_id"],
                row["records"], row["reason"], row["stalled_groups"]) == (
            t.group, t.topic, t.partition, t.producer_id, t.transactional_id, 10, "share-acks-pending", [t.group])
        assert row["oldest_age_ms"] > 60_000
        table = kafka_txn(cluster.bootstrap_servers, "find-hanging", "--topic", t.topic, "--metrics-url", url,
                          "--max-transaction-timeout", "1m", "--wide")
        line = next(x for x in table.out.splitlines() if x.startswith("share "))
        assert f"{t.topic}-{t.partition}" in line and "share-acks-pending (10 records)" in line and t.group in line
        assert f"records of share group {t.group!r} TX_PENDING" in table.out and "force-terminate" in table.out
        # describe: the transaction's share-group participation, what it holds and where.
        described = kafka_txn(cluster.bootstrap_servers, "describe", "-t", t.transactional_id, "--metrics-url", url,
                              "-o", "json").json()["transactions"][0]
        assert any(str(p).startswith("__share_group_state-") for p in described["partitions"])
        (held,) = described["share_pending"]
        assert (held["group"], held["topic"], held["partition"], held["records"], held["node"]) == (
            t.group, t.topic, t.partition, 10, str(t.leader))
        # describe-share-group: per share-partition, who holds its records TX_PENDING.
        share_rows = kafka_txn(cluster.bootstrap_servers, "describe-share-group", "--group", t.group,
                               "--metrics-url", url, "-o", "json").json()["share_group"]
        (part,) = [r for r in share_rows if (r["topic"], r["partition"]) == (t.topic, t.partition)]
        (holder,) = part["tx_pending"]
        assert (holder["producer_id"], holder["transactional_id"], holder["records"]) == (
            t.producer_id, t.transactional_id, 10)
        assert holder["oldest_age_ms"] > 60_000
        plain = kafka_txn(cluster.bootstrap_servers, "describe", "-t", t.transactional_id, "-o", "json")
        assert plain.json()["transactions"][0]["share_pending"] is None  # not asked: not claimed empty
        unreadable = kafka_txn(cluster.bootstrap_servers, "find-hanging", "--topic", t.topic, "--metrics-url",
                               "http://127.0.0.1:9/metrics", "--exit-code")
        assert unreadable.code == exit_codes.PARTIAL and "could not be read" in unreadable.err
    finally:
        cluster.call_soon(server.close)


def test_abort_of_the_share_state_partition_clears_a_stalled_transaction_with_force(cluster, clock):
    # Staging is written in the transaction to the group's __share_group_state partition, so the
    # transaction is open there like on any partition: kafka-txn abort names it by its start offset (from
    # describe-producers), refuses while the coordinator still runs it, and with --force writes the ABORT
    # marker, which drops the staging and gives the records back to their member.
    from tests.e2e.cli_support import kafka_txn, log_offsets

    t = scenario(cluster, "share-ack-stalled")
    (name,) = t.share_state_partitions
    partition = name.rsplit("-", 1)[1]
    bs = cluster.bootstrap_servers
    producers = kafka_txn(bs, "describe-producers", "--topic", SHARE_STATE_TOPIC, "--partition", partition,
                          "-o", "json").json()
    (open_txn,) = [p for p in producers["producers"] if p["producer_id"] == t.producer_id]
    start = str(open_txn["current_txn_start_offset"])
    args = ("abort", "--topic", SHARE_STATE_TOPIC, "--partition", partition, "--start-offset", start, "--yes")
    before = log_offsets(bs, SHARE_STATE_TOPIC, int(partition))
    refused = kafka_txn(bs, *args, "-o", "json")
    assert refused.code != 0 and "--force" in refused.err
    assert log_offsets(bs, SHARE_STATE_TOPIC, int(partition)) == before  # the refusal wrote nothing
    assert states_at(cluster, t.leader, t).get("TX_PENDING") == 10
    r = kafka_txn(bs, *args, "--force", "-o", "json")
    assert r.code == 0, r.err
    state = wait_states(cluster, t.leader, t, lambda s: s.get("TX_PENDING", 0) == 0)
    assert state.get("ACQUIRED") == 10  # back to their member, under the same lock


# ---- the on-call flow: find, run the printed commands, see it clear (tests/e2e/test_runbook.py's, share side) --
@pytest.fixture(scope="module")
def metrics_url(cluster: EmbeddedCluster) -> Iterator[str]:
    from kafka_txn_broker.server import metrics

    server = cluster.call(metrics.serve_metrics(cluster.cluster, "127.0.0.1", 0))
    yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/metrics"
    cluster.call_soon(server.close)


def share_rows(cluster: EmbeddedCluster, url: str, t: ShareTransaction) -> list[dict[str, Any]]:
    """find-hanging --all with the brokers' metrics, the test's max transaction timeout (1m): the share rows of
    `t`'s transaction."""
    from tests.e2e.cli_support import kafka_txn

    r = kafka_txn(cluster.bootstrap_servers, "find-hanging", "--all", "--metrics-url", url,
                  "--max-transaction-timeout", "1m", "-o", "json")
    assert r.code == 0, r.err
    return [row for row in r.json()["hanging"] if row["kind"] == "share"
            and row["transactional_id"] == t.transactional_id]


def open_on_state_partition(cluster: EmbeddedCluster, partition: int) -> dict[int, int]:
    """{producer id: first offset} of the transactions open on a `__share_group_state` partition, as its leader's
    DescribeProducers shows them (none before the topic exists)."""
    assert cluster.cluster is not None
    metadata = cluster.cluster.metadata
    if cluster.call_soon(lambda: metadata.partition_count(SHARE_STATE_TOPIC)) is None:
        return {}
    with RawKafkaClient(cluster.bootstrap_servers) as client:
        producers = client.describe_producers(SHARE_STATE_TOPIC, partition)
    return {p.producer_id: p.current_txn_start_offset for p in producers if p.current_txn_start_offset >= 0}


def ended_on_state_partitions(cluster: EmbeddedCluster, t: ShareTransaction) -> None:
    """The transaction's marker landed on each of its `__share_group_state` partitions: its producer has no
    transaction open there, and only transactions still open there hold the partition's LSO back.

    Called once its share-partitions saw the marker, which is when it is already in the log: they hear of it from
    the state partition's leader after it appended it. The LSO need not reach the log end: the partition keeps
    the state of every share-partition hashed to it (partitionFor of "group:topicId:partition", 50 partitions),
    and another group's transaction (this module's stalled ones run for 10 minutes) may be open there."""
    from tests.e2e.cli_support import log_offsets

    for name in t.share_state_partitions:
        partition = int(name.rsplit("-", 1)[1])
        still_open = open_on_state_partition(cluster, partition)
        assert t.producer_id not in still_open, (name, still_open)
        end, lso = log_offsets(cluster.bootstrap_servers, SHARE_STATE_TOPIC, partition)
        assert lso == min(still_open.values(), default=end), (name, still_open, end, lso)


@pytest.mark.parametrize("name", ["share-ack-stalled", "share-ack-leadership-move"])
def test_a_transaction_holding_a_share_group_is_ended_by_its_printed_command(cluster, clock, metrics_url,
                                                                            name: str) -> None:
    from tests.e2e.cli_support import kafka_txn, run_printed

    t = scenario(cluster, name)
    holder = t.new_leader
    # The group's members go on fetching (after a move, at the new leader, which loads the records TX_PENDING
    # from the group's share state): nobody gets them while the transaction holds them.
    assert fetch_as_new_member(cluster, t, holder) == []
    assert share_rows(cluster, metrics_url, t) == []  # staged just now: not past the max transaction timeout
    clock.advance(PAST_THE_MAX_TIMEOUT_MS)
    [row] = share_rows(cluster, metrics_url, t)
    assert (row["group"], row["records"], row["stalled_groups"]) == (t.group, 10, [t.group])
    [command] = row["commands"]
    assert command.startswith(f"kafka-txn force-terminate --transactional-id {t.transactional_id}")
    # describe-share-group, asked about the group, prints the same way out for the share-partition it holds.
    view = kafka_txn(cluster.bootstrap_servers, "describe-share-group", "--group", t.group, "--metrics-url",
                     metrics_url, "-o", "json").json()["share_group"]
    [held] = [p for p in view if (p["topic"], p["partition"]) == (t.topic, t.partition)]
    assert held["commands"] == [command] and held["action"].startswith("end the transaction")
    run_printed(command)
    cluster.tick()
    assert wait_states(cluster, holder, t, lambda s: s.get("TX_PENDING", 0) == 0).get("TX_PENDING", 0) == 0
    ended_on_state_partitions(cluster, t)
    clock.advance(LOCK_MS + 1)  # the member's lock runs out: the group moves on, the records delivered again
    cluster.tick()
    wait_states(cluster, holder, t, lambda s: s.get("AVAILABLE") == 10)
    assert fetch_as_new_member(cluster, t, holder) == [(0, 9)]
    assert share_rows(cluster, metrics_url, t) == []


def test_a_producer_that_dies_holding_a_share_group_needs_no_command(cluster, clock, metrics_url) -> None:
    # Its short timeout ends it: the coordinator's reaper aborts it before it is old enough to be reported.
    t = scenario(cluster, "share-ack-producer-dies", zombie_timeout_ms=5000)
    clock.advance(PAST_THE_MAX_TIMEOUT_MS)
    cluster.tick()
    assert wait_states(cluster, t.leader, t, lambda s: s.get("TX_PENDING", 0) == 0).get("TX_PENDING", 0) == 0
    assert share_rows(cluster, metrics_url, t) == []
    ended_on_state_partitions(cluster, t)


# ---- a `__share_group_state` partition is shared: each transaction's marker releases its own staging only ----------
def groups_on_one_free_state_partition(cluster: EmbeddedCluster, topic_id: Any, prefix: str) -> tuple[int, list[str]]:
    """Two share groups whose state for partition 0 of the topic lives in the same `__share_group_state`
    partition (Kafka's partitionFor of "group:topicId:partition"), one no open transaction holds yet."""
    from itertools import count

    from kafka_txn_broker.formats.partitioning import partition_for
    from kafka_txn_broker.formats.share_coordinator_records import coordinator_key

    assert cluster.cluster is not None
    partitions = int(cluster.cluster.config["share.coordinator.state.topic.num.partitions"])
    by_partition: dict[int, list[str]] = {}
    for i in count():
        group = f"{prefix}-{i}"
        partition = partition_for(coordinator_key(group, topic_id, 0), partitions)
        names = by_partition.setdefault(partition, [])
        names.append(group)
        if len(names) == 2 and not open_on_state_partition(cluster, partition):
            return partition, names
    raise AssertionError("unreachable")


def stage_all_inputs(client: RawKafkaClient, topic: str, topic_id: Any, leader: int, group: str) -> ShareTransaction:
    """What share-ack-stalled does, for a chosen group: a member acquires the topic's inputs (partition 0) and a
    transaction (10 minutes' timeout) stages their ACCEPT with TxnShareAcknowledge."""
    import time

    from kafka_txn_broker.testing import share_client as sc

    assert sc.set_group_configs(client, group, {"share.auto.offset.reset": "earliest"}) == 0
    member = ShareMember(client, group, group + "-member", topic, topic_id, 0, leader)
    deadline = time.monotonic() + 20
    while (0, 9) not in member.fetch():
        assert time.monotonic() < deadline, f"{group} never acquired the inputs"
    txn_id = group + "-txn"
    code, pe = client.init_producer_id(txn_id, 600_000)
    assert code == 0, code
    r = sc.txn_share_acknowledge(client, leader, txn_id, pe, group, member.member_id, member.epoch,
                                 [(topic_id, 0, [(0, 9, [sc.ACCEPT])])])
    assert (r.error_code, sc.partition_codes(r)) == (0, [0])
    d = client.describe_transaction(txn_id)
    state_parts = [f"{t.topic}-{p}" for t in d.topics for p in t.partitions if t.topic == SHARE_STATE_TOPIC]
    return ShareTransaction(txn_id, pe.producer_id, pe.epoch, 600_000, group, topic, 0, 0, 9, state_parts, leader,
                            leader, "held TX_PENDING", "its abort")


def test_transactions_staged_on_one_state_partition_each_release_their_own(cluster, clock):
    # Two groups' transactions stage on the same `__share_group_state` partition: each holds its LSO until its
    # own ABORT marker. The first one's marker gives back its group's records only, and the partition's LSO then
    # waits for the second: below the log end although the first transaction's marker landed.
    import uuid

    from tests.e2e.cli_support import log_offsets

    topic = f"shared-state-{uuid.uuid4().hex[:8]}"
    with RawKafkaClient(cluster.bootstrap_servers) as client:
        client.create_topic(topic, 1, 3)
        leader = client.partition_leaders(topic)[0]
        topic_id, _ = topic_layout(client, topic)
        assert client.produce(topic, 0, [f"in-{i}".encode() for i in range(10)], clock.millis())[0] == 0
        partition, groups = groups_on_one_free_state_partition(cluster, topic_id, topic)
        first, second = (stage_all_inputs(client, topic, topic_id, leader, g) for g in groups)
        assert first.share_state_partitions == second.share_state_partitions == [f"{SHARE_STATE_TOPIC}-{partition}"]
        opened = open_on_state_partition(cluster, partition)
        assert opened.keys() == {first.producer_id, second.producer_id} and opened[first.producer_id] < \
            opened[second.producer_id]
        end, lso = log_offsets(cluster.bootstrap_servers, SHARE_STATE_TOPIC, partition)
        assert lso == opened[first.producer_id] < end

        assert client.end_txn_tv2(first.transactional_id, ProducerIdAndEpoch(first.producer_id,
                                                                              first.producer_epoch), False)[0] == 0
        back = wait_states(cluster, first.leader, first, lambda s: s.get("TX_PENDING", 0) == 0)
        assert back.get("ACQUIRED") == 10  # to their member, under the same lock
        assert states_at(cluster, second.leader, second).get("TX_PENDING") == 10  # not the other producer's
        ended_on_state_partitions(cluster, first)
        end, lso = log_offsets(cluster.bootstrap_servers, SHARE_STATE_TOPIC, partition)
        assert lso == opened[second.producer_id] < end  # held by the transaction still open there, not by the first

        assert client.end_txn_tv2(second.transactional_id, ProducerIdAndEpoch(second.producer_id,
                                                                               second.producer_epoch), False)[0] == 0
        wait_states(cluster, second.leader, second, lambda s: s.get("TX_PENDING", 0) == 0)
        ended_on_state_partitions(cluster, second)
        end, lso = log_offsets(cluster.bootstrap_servers, SHARE_STATE_TOPIC, partition)
        assert lso == end
