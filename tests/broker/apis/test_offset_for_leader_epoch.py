"""OffsetForLeaderEpoch over the wire on a 3-node embedded cluster: epoch ends across leader changes,
CurrentLeaderEpoch fencing, not-leader and unknown partitions, and a leader that kept its epoch across
a restart. Authorization is in tests/broker/apis/test_acls.py, a real consumer across a leader
change in tests/e2e/test_consumer_leader_change.py."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka.protocol.consumer import OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse
from kafka.protocol.producer import ProduceRequest, ProduceResponse

from kafka_txn_broker.embedded import EmbeddedCluster
from kafka_txn_broker.formats.record_batch import build_batch
from kafka_txn_broker.replica.partition import Partition
from tests.broker.wire import roundtrip

TOPIC = "t"
NONE, UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER = 0, 3, 6
KAFKA_STORAGE_ERROR, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH = 56, 74, 75
VERSIONS = (2, 3, 4)


class Env:
    def __init__(self, cluster: EmbeddedCluster) -> None:
        self.cluster = cluster

    def address(self, node: int) -> str:
        assert self.cluster.cluster is not None
        return self.cluster.cluster.nodes[node].address

    def leader(self, topic: str = TOPIC, partition: int = 0) -> tuple[int, int]:
        """(leader node, leader epoch) from the cluster's metadata."""
        assert self.cluster.cluster is not None
        state = self.cluster.cluster.metadata.partition(topic, partition)
        return state.leader, state.leader_epoch

    def replica(self, node: int) -> Partition:
        assert self.cluster.cluster is not None
        part = self.cluster.cluster.nodes[node].replica_manager.get(TOPIC, 0)
        assert part is not None
        return part

    def latest_epoch(self, node: int) -> int:
        """The epoch cache of `node`'s replica, read on the broker's loop without any request."""
        part = self.replica(node)
        return int(self.cluster.call_soon(lambda: part.log.latest_epoch))

    def produce(self, count: int) -> None:
        node, _ = self.leader()
        batch = build_batch([(None, b"v")] * count, timestamp_ms=int(time.time() * 1000))
        P = ProduceRequest[8]
        req = P(transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[P.TopicProduceData(
            name=TOPIC, partition_data=[P.TopicProduceData.PartitionProduceData(index=0, records=batch)])])
        resp = roundtrip(self.address(node), req, ProduceResponse)
        assert resp.responses[0].partition_responses[0].error_code == NONE

    def ask(self, node: int, leader_epoch: int, current: int = -1, *, topic: str = TOPIC, partition: int = 0,
            version: int = 4, replica_id: int = -1) -> tuple[int, int, int]:
        """(error code, epoch, end offset) of one partition, asked of `node`."""
        Req = OffsetForLeaderEpochRequest[version]
        T = OffsetForLeaderEpochRequest.OffsetForLeaderTopic
        args: dict[str, Any] = {"topics": [T(topic=topic, partitions=[T.OffsetForLeaderPartition(
            partition=partition, current_leader_epoch=current, leader_epoch=leader_epoch)])]}
        if version >= 3:
            args["replica_id"] = replica_id
        resp = roundtrip(self.address(node), Req(**args), OffsetForLeaderEpochResponse)
        (t,) = resp.topics
        (p,) = t.partitions
        assert t.topic == topic and p.partition == partition
        return p.error_code, p.leader_epoch, p.end_offset


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    with EmbeddedCluster(nodes=3, data_dir=tmp_path, config={"offsets.topic.num.partitions": 3,
                                                             "transaction.state.log.num.partitions": 3}) as cluster:
        cluster.create_topic(TOPIC, 1, 3)
        cluster.create_topic("solo", 3, 1)
        yield Env(cluster)


def test_old_epoch_ends_where_the_new_leader_started(env: Env) -> None:
    first, e0 = env.leader()
    env.produce(5)
    for version in VERSIONS:
        assert env.ask(first, e0, e0, version=version) == (NONE, e0, 5)  # the latest epoch ends at the log end

    env.cluster.stop_node(first)
    second, e1 = env.leader()
    assert second != first and e1 == e0 + 1
    assert env.latest_epoch(second) == e1  # recorded on becoming leader, not on first use
    # Before the new leader writes anything, it already knows its epoch started at offset 5.
    assert env.ask(second, e0, e1) == (NONE, e0, 5)
    assert env.ask(second, e1, e1) == (NONE, e1, 5)
    env.produce(3)
    for version in VERSIONS:
        assert env.ask(second, e0, e1, version=version) == (NONE, e0, 5)
        assert env.ask(second, e1, e1, version=version) == (NONE, e1, 8)
        assert env.ask(second, e0, -1, version=version) == (NONE, e0, 5)  # -1: no fencing

    env.cluster.start_node(first)  # the preferred leader takes over again, one epoch later
    back, e2 = env.leader()
    assert back == first and e2 == e1 + 1
    assert env.ask(first, e0, e2) == (NONE, e0, 5)
    assert env.ask(first, e1, e2) == (NONE, e1, 8)
    assert env.ask(first, e2, e2) == (NONE, e2, 8)


def test_epochs_the_log_cannot_place(env: Env) -> None:
    node, e0 = env.leader()
    env.produce(2)
    env.cluster.stop_node(node)
    leader, e1 = env.leader()
    env.cluster.start_node(node)
    leader, e2 = env.leader()
    # Newer than any epoch the log knows: Kafka answers UNDEFINED_EPOCH / UNDEFINED_EPOCH_OFFSET, no error.
    assert env.ask(leader, e2 + 3, e2) == (NONE, -1, -1)
    assert env.ask(leader, -1, e2) == (NONE, -1, -1)
    # An epoch between known ones ends where the next known one starts (e1 wrote nothing on this log).
    assert env.ask(leader, e1, e2) == (NONE, e0, 2)


def test_current_leader_epoch_fencing(env: Env) -> None:
    node, e0 = env.leader()
    env.produce(1)
    env.cluster.stop_node(node)
    leader, e1 = env.leader()
    for version in VERSIONS:
        assert env.ask(leader, e0, e0, version=version) == (FENCED_LEADER_EPOCH, -1, -1)
        assert env.ask(leader, e0, e1 + 1, version=version) == (UNKNOWN_LEADER_EPOCH, -1, -1)
    follower = next(n for n in env.cluster.node_ids if n not in (node, leader))
    # Fencing comes before the leader check, as in Kafka: a follower also knows the current epoch.
    assert env.ask(follower, e0, e0) == (FENCED_LEADER_EPOCH, -1, -1)


def test_only_the_leader_answers(env: Env) -> None:
    leader, epoch = env.leader()
    env.produce(1)
    for follower in (n for n in env.cluster.node_ids if n != leader):
        assert env.ask(follower, epoch, epoch) == (NOT_LEADER_OR_FOLLOWER, -1, -1)
        # A follower's own request (ReplicaId >= 0) too: Kafka's ReplicaManager always requires the leader.
        assert env.ask(follower, epoch, epoch, version=3, replica_id=leader) == (NOT_LEADER_OR_FOLLOWER, -1, -1)
    solo_leader, solo_epoch = env.leader("solo", 1)
    elsewhere = next(n for n in env.cluster.node_ids if n != solo_leader)
    # A node with no replica at all: NOT_LEADER_OR_FOLLOWER (the partition exists, the client must refresh).
    assert env.ask(elsewhere, solo_epoch, solo_epoch, topic="solo", partition=1) == (NOT_LEADER_OR_FOLLOWER, -1, -1)


def test_unknown_topic_or_partition(env: Env) -> None:
    leader, epoch = env.leader()
    assert env.ask(leader, epoch, epoch, partition=7) == (UNKNOWN_TOPIC_OR_PARTITION, -1, -1)
    assert env.ask(leader, epoch, epoch, partition=-1) == (UNKNOWN_TOPIC_OR_PARTITION, -1, -1)
    assert env.ask(leader, 0, -1, topic="missing") == (UNKNOWN_TOPIC_OR_PARTITION, -1, -1)


def test_a_leader_that_kept_its_epoch_across_a_restart(env: Env) -> None:
    node, e0 = env.leader()
    env.produce(4)
    env.cluster.stop_node(node)
    env.produce(2)
    env.cluster.start_node(node)
    leader, e2 = env.leader()
    env.cluster.restart()  # every node comes back; no election, so the leader keeps epoch e2
    assert env.leader() == (leader, e2)
    # e2 has no batch yet: the answer must still place it at the log end, as before the restart.
    assert env.ask(leader, e2, e2) == (NONE, e2, 6)
    assert env.ask(leader, e0, e2) == (NONE, e0, 4)
    env.produce(1)
    assert env.ask(leader, e2, e2) == (NONE, e2, 7)


def test_an_offline_log_answers_storage_error(env: Env) -> None:
    leader, epoch = env.leader()
    env.produce(1)
    part = env.replica(leader)
    env.cluster.call_soon(part.log.log.mark_offline, OSError("disk gone"))
    assert env.ask(leader, epoch, epoch) == (KAFKA_STORAGE_ERROR, -1, -1)
