"""`__share_group_state` is pruned as Kafka's share coordinator prunes it, and pruning loses nothing.

Share-group traffic with a ShareSnapshot every 5 updates (`share.coordinator.snapshot.update.records.per.snapshot`)
writes snapshots; once `share.coordinator.state.topic.prune.interval.ms` (Kafka's default, 5 min) has passed
on the cluster's manual clock, the coordinator's tick moves the state partition's log start offset up, on
the leader and its followers. After a restart the coordinator replays only what is left and still has the
same state: the records acknowledged stay acknowledged, none is delivered again. A share-partition nobody
writes any more gets a fresh snapshot every `share.coordinator.cold.partition.snapshot.interval.ms` (Kafka's
cold-partition snapshots), so it does not hold back the pruning of a partition other share-partitions use."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import AcknowledgeType

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.clock import ManualClock
from kafka_txn_broker.formats.partitioning import SHARE_STATE_TOPIC
from kafka_txn_broker.formats.share_coordinator_records import coordinator_key
from kafka_txn_broker.testing.raw_client import RawKafkaClient
from kafka_txn_broker.testing.share_client import ACCEPT, partition_codes
from tests.e2e.cli_support import kafka_txn
from tests.e2e.share_support import FAST_GROUPS, poll_until, produce, set_group_configs, share_consumer
from tests.e2e.test_txn_share_acknowledge_wire import ENABLED as TXN_ENABLED
from tests.e2e.test_txn_share_acknowledge_wire import GROUP as TXN_GROUP
from tests.e2e.test_txn_share_acknowledge_wire import TXN_ID, end_txn_v5, share_member, txn_ack, wait_for

TOPIC, GROUP = "work", "pruned"
PRUNE_INTERVAL_MS = 300_000  # Kafka's share.coordinator.state.topic.prune.interval.ms default
CONFIG = {**FAST_GROUPS, "share.coordinator.snapshot.update.records.per.snapshot": 5}


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def cluster(tmp_path: Path, clock: ManualClock) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(nodes=3, data_dir=tmp_path, config=CONFIG, clock=clock) as c:
        c.create_topic(TOPIC, 1, 3)
        set_group_configs(c.bootstrap_servers, GROUP, share_auto_offset_reset="earliest")
        yield c


def state_partition(cluster: EmbeddedCluster, group: str = GROUP, topic: str = TOPIC) -> dict[str, Any]:
    """Partition 0 of `topic` in `group` as its `__share_group_state` partition's leader keeps it (the state,
    the prunable bound, the open staged transactions' first offsets), and that partition's log start offset
    on each replica."""
    core = cluster.cluster
    assert core is not None

    def look() -> dict[str, Any]:
        topic_id = core.metadata.topics[topic].topic_id
        key = coordinator_key(group, topic_id, 0)
        partition = next(iter(core.nodes.values())).share_router.partition_of(key)
        leader = core.metadata.leader(SHARE_STATE_TOPIC, partition)
        shard = core.nodes[leader].share_coordinator.shard(partition)
        state = shard.states[(group, topic_id, 0)]
        starts = {n.node_id: n.replica_manager.get(SHARE_STATE_TOPIC, partition).log.log_start_offset
                  for n in core.nodes.values() if n.replica_manager.get(SHARE_STATE_TOPIC, partition) is not None}
        return {"partition": partition, "leader": leader, "start_offset": state.start_offset,
                "batches": list(state.batches), "log_start": starts, "bound": shard.prunable_offset(),
                "open_txns": dict(shard.open_txn_first_offset)}

    return cluster.call_soon(look)  # type: ignore[no-any-return]


def accept_one_at_a_time(cluster: EmbeddedCluster, count: int, group: str = GROUP, topic: str = TOPIC) -> set[bytes]:
    """Produce and acknowledge records one by one: each acknowledgement is a state write."""
    bs = cluster.bootstrap_servers
    member = share_consumer(bs, group, [topic], explicit=True)
    accepted: set[bytes] = set()

    def accept(_i: int, consumer: Any, batch: list[Any]) -> None:
        for m in batch:
            consumer.acknowledge(m, AcknowledgeType.ACCEPT)
            accepted.add(m.value())
        consumer.commit_sync(10)

    for i in range(count):
        produce(bs, topic, 1, 1, prefix=f"r{i}-")
        poll_until([member], lambda _r, n=i: len(accepted) > n, on_batch=accept)
    member.close()
    assert len(accepted) == count
    return accepted


def test_the_state_topic_is_pruned_and_a_restart_loads_the_same_state(cluster: EmbeddedCluster,
                                                                       clock: ManualClock) -> None:
    accepted = accept_one_at_a_time(cluster, 24)
    before = state_partition(cluster)
    assert set(before["log_start"].values()) == {0}
    assert before["bound"] is not None and before["bound"] > 0  # snapshots were written

    clock.advance(PRUNE_INTERVAL_MS - 1)
    cluster.tick()
    assert set(state_partition(cluster)["log_start"].values()) == {0}  # not yet: one interval from the start
    clock.advance(1)
    cluster.tick()
    pruned = state_partition(cluster)
    # Kafka's cold-partition snapshot interval is 5 min too, and the share-partition's latest snapshot is that
    # old on this clock: the tick first wrote it a fresh snapshot, then the leader moved its log start to that
    # one, past the old snapshot, and its followers with it.
    assert pruned["bound"] > before["bound"]
    assert set(pruned["log_start"].values()) == {pruned["bound"]}
    # kafka-txn's share view reads the pruned partition from its new start (offset 0 is out of range now).
    r = kafka_txn(cluster.bootstrap_servers, "describe-share-group", "--group", GROUP, "-o", "json")
    assert r.code == 0, r.err
    [row] = r.json()["share_group"]
    assert (row["start_offset"], row["error"]) == (24, None)

    cluster.restart()
    after = state_partition(cluster)  # replayed from the new log start
    assert (after["start_offset"], after["batches"]) == (before["start_offset"], before["batches"])
    assert after["start_offset"] == 24  # every record acknowledged: the share-partition starts past them

    # Nothing acknowledged comes back; new records are delivered.
    bs = cluster.bootstrap_servers
    produce(bs, TOPIC, 3, 1, prefix="new-")
    member = share_consumer(bs, GROUP, [TOPIC])
    got = poll_until([member], lambda r: len(r) >= 3)
    extra = poll_until([member], lambda _r: False, timeout_s=1.0)
    member.commit_sync(10)
    member.close()
    delivered = [m.value() for _i, m in got + extra]
    assert sorted(delivered) == [b"new-0", b"new-1", b"new-2"]
    assert not accepted & set(delivered)


def test_an_open_staged_transaction_is_not_pruned_and_its_commit_survives_a_restart(tmp_path: Path,
                                                                                    clock: ManualClock) -> None:
    """KIP-1289: staged acknowledgements are transactional records of `__share_group_state`, applied at
    their producer's marker; pruning leaves them while the transaction is open, and after its COMMIT until a
    snapshot holds what it applied."""
    config = {**TXN_ENABLED, "share.coordinator.snapshot.update.records.per.snapshot": 1,
              "share.coordinator.state.topic.prune.interval.ms": 1000}  # short: the transaction must not time out
    with EmbeddedCluster(nodes=3, data_dir=tmp_path, config=config, clock=clock) as cluster:
        cluster.create_topic("in", 1, 3)
        cluster.create_topic("out", 1, 3)
        set_group_configs(cluster.bootstrap_servers, TXN_GROUP, share_auto_offset_reset="earliest")
        produce(cluster.bootstrap_servers, "in", 10, 1)
        with RawKafkaClient(cluster.bootstrap_servers) as client:
            leader = client.partition_leaders("in")[0]
            topic_id = cluster.call_soon(lambda: cluster.cluster.metadata.topics["in"].topic_id)  # type: ignore[union-attr]
            member = share_member(client, topic_id, leader)
            assert member.fetch() == [(0, 9)]
            code, pe = client.init_producer_id(TXN_ID, 60000)
            assert code == 0
            r = txn_ack(client, leader, pe, topic_id, [(0, 3, [ACCEPT])], member_epoch=member.epoch)
            assert (r.error_code, partition_codes(r)) == (0, [0])
            # Plain writes after it (per_snapshot=1: at least one is a snapshot later than the staged records):
            # 4-7 acknowledged; a new session gives back what the last one held (8-9 released).
            assert member.acknowledge(4, 7, ACCEPT) == 0
            assert member.fetch() == [(8, 9)]
            staged = state_partition(cluster, TXN_GROUP, "in")
            first = staged["open_txns"][pe.producer_id]
            assert staged["bound"] == first > 0

            def prune() -> set[int]:
                clock.advance(1000)
                cluster.tick()
                return set(state_partition(cluster, TXN_GROUP, "in")["log_start"].values())

            assert prune() == {first}  # pruned up to the open transaction's records, not past them
        cluster.restart()  # while the transaction is open: the load replays from `first`
        with RawKafkaClient(cluster.bootstrap_servers) as client:
            member = share_member(client, topic_id, client.partition_leaders("in")[0])
            # 0-3 are pending in the open transaction (not delivered again), 4-7 acknowledged.
            assert member.fetch() == [(8, 9)]
            end_txn_v5(client, pe, commit=True)
            wait_for(cluster, lambda s: s["TX_PENDING"] == 0)
            assert min(prune()) >= first
        assert state_partition(cluster, TXN_GROUP, "in")["start_offset"] == 8  # 0-7 acknowledged
        cluster.restart()
        assert state_partition(cluster, TXN_GROUP, "in")["start_offset"] == 8


# ---- cold-partition snapshots ---------------------------------------------------------------------------
BUSY = "busy"
COLD_INTERVAL_MS = 300_000  # Kafka's share.coordinator.cold.partition.snapshot.interval.ms default


def state_partition_zero(cluster: EmbeddedCluster) -> dict[str, Any]:
    """`__share_group_state`-0 as its leader's shard has it: the states of (cold, work, 0) and (hot, busy, 0)
    (copies), the prune bound, the end of the log, and the log start offset on each replica."""
    core = cluster.cluster
    assert core is not None

    def look() -> dict[str, Any]:
        keys = {"cold": ("cold", core.metadata.topics[TOPIC].topic_id, 0),
                "hot": ("hot", core.metadata.topics[BUSY].topic_id, 0)}
        leader = core.metadata.leader(SHARE_STATE_TOPIC, 0)
        shard = core.nodes[leader].share_coordinator.shard(0)
        replicas = [n.replica_manager.get(SHARE_STATE_TOPIC, 0) for n in core.nodes.values()]
        return {**{name: copy.deepcopy(shard.states.get(key)) for name, key in keys.items()},
                "bound": shard.prunable_offset(), "end": shard.next_offset,
                "log_start": {r.log.log_start_offset for r in replicas if r is not None}}

    return cluster.call_soon(look)  # type: ignore[no-any-return]


def test_a_share_partition_nobody_writes_any_more_stops_holding_back_the_pruning(tmp_path: Path,
                                                                                 clock: ManualClock) -> None:
    # One `__share_group_state` partition: both share-partitions' states share it.
    config = {**CONFIG, "share.coordinator.state.topic.num.partitions": 1}
    with EmbeddedCluster(nodes=3, data_dir=tmp_path, config=config, clock=clock) as cluster:
        bs = cluster.bootstrap_servers
        for topic, group in ((TOPIC, "cold"), (BUSY, "hot")):
            cluster.create_topic(topic, 1, 3)
            set_group_configs(bs, group, share_auto_offset_reset="earliest")
        start = clock.millis()
        # "cold": 3 acknowledgements (fewer than the 5 updates per snapshot), then nobody writes it.
        cold_accepted = accept_one_at_a_time(cluster, 3, "cold", TOPIC)
        cold_end = state_partition_zero(cluster)["end"]
        clock.advance(200_000)
        cluster.tick()
        # "hot": 12 acknowledgements 200 s later, so snapshots after all of the cold one's records.
        accept_one_at_a_time(cluster, 12, "hot", BUSY)
        before = state_partition_zero(cluster)
        assert before["bound"] is None  # the cold one's snapshot is the partition's first record: nothing can go
        assert before["cold"].write_timestamp == start  # (its latest snapshot: written before any clock move)

        clock.advance(COLD_INTERVAL_MS - 200_000)  # the prune interval is Kafka's 5 min as well
        cluster.tick()
        after = state_partition_zero(cluster)
        # The cold one got a snapshot of the same state, with the next snapshot epoch, written now; the hot one,
        # whose latest snapshot is 100 s old, none.
        cold_before, cold_after = before["cold"], after["cold"]
        assert (cold_after.start_offset, cold_after.batches) == (cold_before.start_offset, cold_before.batches)
        assert (cold_after.snapshot_epoch, cold_after.create_timestamp, cold_after.write_timestamp) == (
            cold_before.snapshot_epoch + 1, cold_before.create_timestamp, clock.millis())
        assert after["hot"].snapshot_epoch == before["hot"].snapshot_epoch
        # The log start moved past every record of the cold one's (on the leader and its followers), up to the
        # hot one's latest snapshot.
        assert after["bound"] is not None and after["bound"] >= cold_end
        assert after["log_start"] == {after["bound"]}

        cluster.restart()  # replayed from the new log start
        again = state_partition_zero(cluster)
        for name in ("cold", "hot"):
            assert (again[name].start_offset, again[name].batches) == (after[name].start_offset, after[name].batches)
        assert again["log_start"] == after["log_start"]
        # The cold group still has its 3 records acknowledged: only new ones are delivered.
        produce(bs, TOPIC, 2, 1, prefix="new-")
        member = share_consumer(bs, "cold", [TOPIC])
        got = poll_until([member], lambda r: len(r) >= 2)
        extra = poll_until([member], lambda _r: False, timeout_s=1.0)
        member.commit_sync(10)
        member.close()
        delivered = [m.value() for _i, m in got + extra]
        assert sorted(delivered) == [b"new-0", b"new-1"]
        assert not cold_accepted & set(delivered)
