"""Rehearsal of the remediation find-hanging recommends for a transaction stuck on the coordinator's side:
move the `__transaction_state` partition's leadership (kafka-reassign-partitions.sh, then
kafka-leader-election.sh), so that a new coordinator loads the partition and re-sends the markers.

The incident: a commit reaches PrepareCommit while the only replica of one of its partitions (RF 1) is down;
the markers cannot land. The operator reassigns the coordinator's partition and elects its new preferred
leader; the new coordinator takes over (coordinator epoch = the partition's new leader epoch) while the old
one drops the transaction; once the node comes back the commit completes through the new coordinator."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import ElectionType, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from kafka import KafkaAdminClient
from kafka import TopicPartition as KTP

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.formats.partitioning import TXN_TOPIC
from kafka_txn_broker.formats.record_batch import iter_batches, parse_control_record
from kafka_txn_broker.metadata.topics import PartitionState
from tests.e2e.test_partitions_and_records import consume

TXN_ID = "payments"


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[EmbeddedCluster]:
    config = {"transaction.state.log.num.partitions": 1, "offsets.topic.num.partitions": 1,
              "auto.leader.rebalance.enable": False}
    with EmbeddedCluster(nodes=3, data_dir=tmp_path / "kafka", config=config) as c:
        yield c


def txn_partition(cluster: EmbeddedCluster) -> PartitionState:
    assert cluster.cluster is not None
    return cluster.cluster.metadata.partition(TXN_TOPIC, 0)


def described(cluster: EmbeddedCluster) -> tuple[str, int]:
    """(state, coordinator id) of the transaction, as DescribeTransactions answers through FindCoordinator
    (a new client each time: kafka-python keeps a coordinator it found, and the old one says NOT_COORDINATOR)."""
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        d = admin.describe_transactions([TXN_ID])[TXN_ID]
        return d.state.value, d.coordinator_id
    finally:
        admin.close()


def wait_for_state(cluster: EmbeddedCluster, state: str, timeout_s: float = 15.0) -> tuple[str, int]:
    deadline = time.monotonic() + timeout_s
    while True:
        found = described(cluster)
        if found[0] == state or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def markers(cluster: EmbeddedCluster, node: int, topic: str) -> list[tuple[bool, int]]:
    """(commit, coordinator epoch) of every transaction marker in `node`'s replica of topic-0."""
    assert cluster.cluster is not None
    part = cluster.cluster.nodes[node].replica_manager.get(topic, 0)
    assert part is not None

    def read() -> bytes:
        return bytes(part.log.read_for_replication(0, 1 << 20))

    data = cluster.call_soon(read)
    return [parse_control_record(memoryview(data)[pos:pos + h.size])
            for pos, h in iter_batches(data) if h.is_control]


def test_a_stuck_commit_completes_through_the_new_coordinator(cluster: EmbeddedCluster) -> None:
    assert cluster.cluster is not None
    cluster.call_soon(cluster.cluster.ensure_internal_topic, TXN_TOPIC, 1, 3)
    old = txn_partition(cluster)
    old_coordinator, old_epoch = old.leader, old.leader_epoch
    data_node, new_coordinator = [n for n in old.replicas if n != old_coordinator]
    cluster.create_topic("orders", assignments=[[data_node]])  # RF 1, away from the coordinator
    kadmin: KafkaAdminClient | None = None
    try:
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": TXN_ID})
        producer.init_transactions(10)
        producer.begin_transaction()
        producer.produce("orders", value=b"order-1", partition=0)
        producer.flush(10)
        cluster.stop_node(data_node)  # the partition's only replica goes down mid-commit
        producer.commit_transaction(10)  # PREPARE_COMMIT is durable: the client is done
        time.sleep(0.3)  # several marker passes (the cluster ticks every 0.1 s): none can land
        assert described(cluster) == ("PrepareCommit", old_coordinator)

        # kafka-reassign-partitions.sh: the new coordinator's node first, the down node out. kafka-python 3.0
        # raises on a refused connection to a node of its cached metadata: it starts from the nodes up now.
        kadmin = KafkaAdminClient(bootstrap_servers=cluster.cluster.bootstrap_servers)
        reassignment = {KTP(TXN_TOPIC, 0): [new_coordinator, old_coordinator]}
        assert kadmin.alter_partition_reassignments(reassignment) == {KTP(TXN_TOPIC, 0): None}
        assert kadmin.list_partition_reassignments() == {}  # both targets were in sync: done at once
        # kafka-leader-election.sh --election-type PREFERRED: leadership moves to the new first replica.
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        result = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(TXN_TOPIC, 0)]).result(10)
        assert list(result.values()) == [None]
        moved = txn_partition(cluster)
        assert moved.leader == new_coordinator and moved.leader_epoch > old_epoch
        assert described(cluster) == ("PrepareCommit", new_coordinator)  # loaded, re-sending the markers
        old_state = cluster.cluster.nodes[old_coordinator].txn_coordinator.state_manager
        assert not cluster.call_soon(old_state.owns, 0)  # the old coordinator let go

        cluster.start_node(data_node)
        assert wait_for_state(cluster, "CompleteCommit") == ("CompleteCommit", new_coordinator)
        assert markers(cluster, data_node, "orders") == [(True, moved.leader_epoch)]  # written by the new one
        assert consume(cluster, "orders", 0, 0, read_committed=True, expect=1) == [0]
    finally:
        if kadmin is not None:
            kadmin.close()
