"""`__share_group_state` is pruned as Kafka's share coordinator prunes it, and pruning loses nothing.

Share-group traffic with a ShareSnapshot every 5 updates (`share.coordinator.snapshot.update.records.per.snapshot`)
writes snapshots; once `share.coordinator.state.topic.prune.interval.ms` (Kafka's default, 5 min) has passed
on the cluster's manual clock, the coordinator's tick moves the state partition's log start offset up, on
the leader and its followers. After a restart the coordinator replays only what is left and still has the
same state: the records acknowledged stay acknowledged, none is delivered again."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import AcknowledgeType

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.clock import ManualClock
from kafka_txn_broker.formats.share_coordinator_records import coordinator_key
from kafka_txn_broker.share.share_coordinator import SHARE_STATE_TOPIC
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


def accept_one_at_a_time(cluster: EmbeddedCluster, count: int) -> set[bytes]:
    """Produce and acknowledge records one by one: each acknowledgement is a state write."""
    bs = cluster.bootstrap_servers
    member = share_consumer(bs, GROUP, [TOPIC], explicit=True)
    accepted: set[bytes] = set()

    def accept(_i: int, consumer: Any, batch: list[Any]) -> None:
        for m in batch:
            consumer.acknowledge(m, AcknowledgeType.ACCEPT)
            accepted.add(m.value())
        consumer.commit_sync(10)

    for i in range(count):
        produce(bs, TOPIC, 1, 1, prefix=f"r{i}-")
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
    # The leader moved its log start to the share-partition's latest snapshot, and its followers with it.
    assert set(pruned["log_start"].values()) == {before["bound"]}
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
