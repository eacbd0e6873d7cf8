"""The inter-broker channel: the one way a node reaches another node's objects in the embedded cluster. A node
that stopped is out of reach; each request goes to the node that leads what it is about."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.partitioning import GROUP_TOPIC, TXN_TOPIC, partition_for
from kafka_txn_broker.server.cluster import Cluster
from kafka_txn_broker.server.inter_broker import BrokerEndpoint


@pytest.fixture
def cluster(tmp_path) -> Iterator[EmbeddedCluster]:
    config = {"transaction.state.log.num.partitions": 3, "offsets.topic.num.partitions": 3}
    with EmbeddedCluster(nodes=3, data_dir=tmp_path, config=config) as c:
        yield c


def _core(cluster: EmbeddedCluster) -> Cluster:
    assert cluster.cluster is not None
    return cluster.cluster


def test_only_live_brokers_are_reachable(cluster: EmbeddedCluster) -> None:
    core = _core(cluster)
    channel = core.channel
    assert [b.node_id for b in channel.live_brokers()] == [0, 1, 2]
    node = core.nodes[2]
    assert channel.endpoint(2) == BrokerEndpoint(2, node.host, node.port)
    cluster.stop_node(2)
    assert [b.node_id for b in channel.live_brokers()] == [0, 1]
    assert channel.endpoint(2) is None and channel.replica_manager(2) is None
    assert channel.controller_id() == 0


def test_a_transactional_id_goes_to_the_coordinator_leading_its_partition(cluster: EmbeddedCluster) -> None:
    core = _core(cluster)
    channel = core.channel
    assert channel.txn_coordinator_of("app") is None  # no __transaction_state yet: no coordinator
    topic = cluster.call_soon(channel.controller.internal_topic, TXN_TOPIC, core.config)
    leader = topic.partitions[partition_for("app", len(topic.partitions))].leader
    assert channel.txn_coordinator_of("app") is core.nodes[leader].txn_coordinator
    cluster.stop_node(leader)
    new_leader = core.metadata.leader(TXN_TOPIC, partition_for("app", len(topic.partitions)))
    assert new_leader != leader
    assert channel.txn_coordinator_of("app") is core.nodes[new_leader].txn_coordinator  # type: ignore[index]


def test_a_share_members_standing_is_asked_of_its_groups_coordinator(cluster: EmbeddedCluster) -> None:
    core = _core(cluster)
    channel = core.channel
    # Without __consumer_offsets no node coordinates the group yet (Kafka: NOT_COORDINATOR).
    assert cluster.call_soon(channel.share_member_error, "g", "m", 0) == E.NOT_COORDINATOR
    cluster.call_soon(channel.controller.internal_topic, GROUP_TOPIC, core.config)

    async def once_loaded() -> int:
        # The coordinator loads its new partition on the next turns of the loop (no clock involved).
        for _ in range(1000):
            code = channel.share_member_error("g", "m", 0)
            if code != E.COORDINATOR_LOAD_IN_PROGRESS:
                return code
            await asyncio.sleep(0)
        return code

    # A group nobody joined has no such member.
    assert cluster.call(once_loaded()) == E.UNKNOWN_MEMBER_ID
