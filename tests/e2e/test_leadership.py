"""ElectLeaders (librdkafka's AdminClient, as `kafka-leader-election.sh` uses it), partition reassignments and
DescribeLogDirs (kafka-python's admin client, as `kafka-reassign-partitions.sh` and `kafka-log-dirs.sh` use
them): Kafka's answers, leader epochs that bump as leadership moves, replicas that catch up before the switch,
and data that stays readable throughout."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import ElectionType, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
from kafka import KafkaAdminClient
from kafka import TopicPartition as KTP
from kafka.errors import InvalidReplicationAssignmentError, NoReassignmentInProgressError, UnknownTopicOrPartitionError

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.metadata.topics import PartitionState
from tests.e2e.test_partitions_and_records import consume, produce


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[EmbeddedCluster]:
    # As in Kafka, where the preferred leader comes back only at the next leader.imbalance check, a
    # restarted node does not take its leadership back by itself here.
    config = {"offsets.topic.num.partitions": 3, "transaction.state.log.num.partitions": 3,
              "auto.leader.rebalance.enable": False}
    with EmbeddedCluster(nodes=3, data_dir=tmp_path / "kafka", config=config) as c:
        yield c


@pytest.fixture
def kadmin(cluster: EmbeddedCluster) -> Iterator[KafkaAdminClient]:
    a = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    yield a
    a.close()


def live_admin(cluster: EmbeddedCluster) -> KafkaAdminClient:
    """An admin client that knows only the nodes up now. kafka-python 3.0 sends a controller request through a
    random node from its cached metadata and raises on a refused connection instead of trying another, so a
    client made before a node stops fails at random (kafka-reassign-partitions.sh would retry)."""
    assert cluster.cluster is not None
    return KafkaAdminClient(bootstrap_servers=cluster.cluster.bootstrap_servers)


def state(cluster: EmbeddedCluster, topic: str = "t", partition: int = 0) -> PartitionState:
    assert cluster.cluster is not None
    return cluster.cluster.metadata.partition(topic, partition)


def elect(cluster: EmbeddedCluster, kind: ElectionType, *tps: tuple[str, int]) -> dict[tuple[str, int], str]:
    """Error name per partition (NO_ERROR for success)."""
    a = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    partitions = [TopicPartition(t, p) for t, p in tps] if tps else None
    result = a.elect_leaders(kind, partitions).result()
    return {(tp.topic, tp.partition): "NO_ERROR" if err is None else err.name() for tp, err in result.items()}


def test_preferred_election(cluster: EmbeddedCluster) -> None:
    cluster.create_topic("t", 1, 3)
    preferred = state(cluster).replicas[0]
    assert elect(cluster, ElectionType.PREFERRED, ("t", 0)) == {("t", 0): "ELECTION_NOT_NEEDED"}
    cluster.stop_node(preferred)
    moved = state(cluster)
    assert moved.leader != preferred and moved.leader_epoch == 1
    assert elect(cluster, ElectionType.PREFERRED, ("t", 0)) == {("t", 0): "PREFERRED_LEADER_NOT_AVAILABLE"}
    produce(cluster, "t", 0, 3)
    cluster.start_node(preferred)
    assert state(cluster).leader == moved.leader  # no automatic rebalance here
    assert elect(cluster, ElectionType.PREFERRED, ("t", 0)) == {("t", 0): "NO_ERROR"}
    back = state(cluster)
    assert (back.leader, back.leader_epoch) == (preferred, 2)
    assert consume(cluster, "t", 0, 0, expect=3) == [0, 1, 2]  # the preferred replica caught up
    assert elect(cluster, ElectionType.PREFERRED, ("t", 9))[("t", 9)] == "UNKNOWN_TOPIC_OR_PART"


def test_preferred_election_of_every_partition(cluster: EmbeddedCluster) -> None:
    cluster.create_topic("t", 3, 3)
    node = state(cluster, "t", 1).replicas[0]
    cluster.stop_node(node)
    cluster.start_node(node)
    moved = [("t", p) for p in range(3) if state(cluster, "t", p).replicas[0] == node]
    # No partitions named: Kafka answers only for partitions whose leader changed (or could not).
    assert elect(cluster, ElectionType.PREFERRED) == dict.fromkeys(moved, "NO_ERROR")
    assert all(state(cluster, "t", p).leader == state(cluster, "t", p).replicas[0] for p in range(3))


def test_unclean_election(cluster: EmbeddedCluster) -> None:
    cluster.create_topic("t", 1, 2)
    first, second = state(cluster).replicas
    assert elect(cluster, ElectionType.UNCLEAN, ("t", 0)) == {("t", 0): "ELECTION_NOT_NEEDED"}
    cluster.stop_node(second)  # leaves the ISR
    produce(cluster, "t", 0, 3)  # only `first` has these
    cluster.stop_node(first)
    assert state(cluster).leader == -1  # offline: no in-sync replica is up
    cluster.start_node(second)
    assert state(cluster).leader == -1  # unclean.leader.election.enable=false: it stays offline
    assert elect(cluster, ElectionType.PREFERRED, ("t", 0)) == {("t", 0): "PREFERRED_LEADER_NOT_AVAILABLE"}
    assert elect(cluster, ElectionType.UNCLEAN, ("t", 0)) == {("t", 0): "NO_ERROR"}
    after = state(cluster)
    assert (after.leader, after.isr) == (second, [second])
    produce(cluster, "t", 0, 1)
    cluster.start_node(first)  # it drops what the new leader never had (its offsets 0-2) and follows
    assert consume(cluster, "t", 0, 0, expect=1) == [0]
    assert replica_bytes(cluster, first) == replica_bytes(cluster, second)  # the same offset 0, not its own


def replica_bytes(cluster: EmbeddedCluster, node: int) -> bytes:
    assert cluster.cluster is not None
    part = cluster.cluster.nodes[node].replica_manager.get("t", 0)
    assert part is not None
    return bytes(cluster.call_soon(part.log.read_for_replication, 0, 1 << 20))


def test_unclean_election_without_a_live_replica(cluster: EmbeddedCluster) -> None:
    cluster.create_topic("t", 1, 1)
    cluster.stop_node(state(cluster).replicas[0])
    assert elect(cluster, ElectionType.UNCLEAN, ("t", 0)) == {("t", 0): "ELIGIBLE_LEADERS_NOT_AVAILABLE"}


def test_unclean_election_enabled_on_the_topic(cluster: EmbeddedCluster) -> None:
    cluster.create_topic("t", 1, 2, {"unclean.leader.election.enable": "true"})
    first, second = state(cluster).replicas
    cluster.stop_node(second)
    cluster.stop_node(first)
    cluster.start_node(second)  # the controller elects it by itself
    assert (state(cluster).leader, state(cluster).isr) == (second, [second])


def test_reassignment_moves_replicas_and_leadership(cluster: EmbeddedCluster, kadmin: KafkaAdminClient) -> None:
    cluster.create_topic("t", 1, 2)
    old = list(state(cluster).replicas)
    new = [r for r in range(3) if r not in old] + [old[1]]  # the leader leaves, a new node joins
    produce(cluster, "t", 0, 5)
    epoch = state(cluster).leader_epoch
    assert kadmin.alter_partition_reassignments({KTP("t", 0): new}) == {KTP("t", 0): None}
    done = state(cluster)
    assert (done.replicas, sorted(done.isr), done.leader) == (new, sorted(new), new[0])
    assert done.leader_epoch > epoch and not done.reassigning
    assert kadmin.list_partition_reassignments() == {}
    assert cluster.cluster is not None
    assert cluster.cluster.nodes[old[0]].replica_manager.get("t", 0) is None  # its log was deleted
    assert not (cluster.data_dir / f"node-{old[0]}" / "t-0").exists()
    assert consume(cluster, "t", 0, 0, expect=5) == [0, 1, 2, 3, 4]  # copied before the switch


def test_reassignment_waits_for_catch_up_and_can_be_cancelled(cluster: EmbeddedCluster) -> None:
    cluster.create_topic("t", 1, 1)
    (old,) = state(cluster).replicas
    target = 2 if old == 1 else 1  # node 0 stays up: the admin client's controller
    cluster.stop_node(target)  # the new replica cannot catch up while its node is down
    kadmin = live_admin(cluster)
    produce(cluster, "t", 0, 2)
    assert kadmin.alter_partition_reassignments({KTP("t", 0): [target]}) == {KTP("t", 0): None}
    ongoing = {KTP("t", 0): {"replicas": [target, old], "adding_replicas": [target], "removing_replicas": [old]}}
    assert kadmin.list_partition_reassignments() == ongoing
    assert kadmin.list_partition_reassignments({"t": [0]}) == ongoing
    assert state(cluster).leader == old  # still served by the old replica
    # Cancel (kafka-reassign-partitions.sh --cancel): back to the original replicas.
    assert kadmin.alter_partition_reassignments({KTP("t", 0): None}) == {KTP("t", 0): None}
    assert (state(cluster).replicas, kadmin.list_partition_reassignments()) == ([old], {})
    err = kadmin.alter_partition_reassignments({KTP("t", 0): None})[KTP("t", 0)]
    assert err is NoReassignmentInProgressError
    # Again, and this time the target's node comes back: it catches up, then the old replica leaves.
    kadmin.alter_partition_reassignments({KTP("t", 0): [target]})
    cluster.start_node(target)
    assert (state(cluster).replicas, state(cluster).leader, kadmin.list_partition_reassignments()) == (
        [target], target, {})
    assert consume(cluster, "t", 0, 0, expect=2) == [0, 1]
    kadmin.close()


def test_reassign_partitions_tool_flow(cluster: EmbeddedCluster, kadmin: KafkaAdminClient) -> None:
    """What kafka-reassign-partitions.sh --execute --throttle, then --verify, send: throttles on the topic and
    the brokers (accepted and described; replication here is not throttled), the reassignment, the check
    that nothing is ongoing and the replicas are the target, then the throttles removed."""
    cluster.create_topic("t", 1, 2, assignments=[[0, 1]])
    produce(cluster, "t", 0, 2)
    a = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})

    def configure(resource: ConfigResource) -> None:
        a.incremental_alter_configs([resource])[resource].result(10)

    set_, delete = AlterConfigOpType.SET, AlterConfigOpType.DELETE
    topic_keys = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")
    broker_keys = ("leader.replication.throttled.rate", "follower.replication.throttled.rate",
                   "replica.alter.log.dirs.io.max.bytes.per.second")
    configure(ConfigResource(ResourceType.TOPIC, "t", incremental_configs=[
        ConfigEntry(topic_keys[0], "0:0,0:1", incremental_operation=set_),
        ConfigEntry(topic_keys[1], "0:2", incremental_operation=set_)]))
    for broker in range(3):
        configure(ConfigResource(ResourceType.BROKER, str(broker), incremental_configs=[
            ConfigEntry(k, "1048576", incremental_operation=set_) for k in broker_keys[:2]]))
    assert kadmin.alter_partition_reassignments({KTP("t", 0): [1, 2]}) == {KTP("t", 0): None}
    # --verify
    assert kadmin.list_partition_reassignments({"t": [0]}) == {}
    assert a.list_topics("t").topics["t"].partitions[0].replicas == [1, 2]
    configure(ConfigResource(ResourceType.TOPIC, "t", incremental_configs=[
        ConfigEntry(k, None, incremental_operation=delete) for k in topic_keys]))
    for broker in range(3):
        configure(ConfigResource(ResourceType.BROKER, str(broker), incremental_configs=[
            ConfigEntry(k, None, incremental_operation=delete) for k in broker_keys]))
    resource = ConfigResource(ResourceType.BROKER, "1")
    described = a.describe_configs([resource])[resource].result(10)
    assert described["leader.replication.throttled.rate"].value == str(2**63 - 1)  # Kafka's default again
    assert consume(cluster, "t", 0, 0, expect=2) == [0, 1]


@pytest.mark.parametrize(("tp", "replicas", "error"), [
    (("t", 0), [0, 0], InvalidReplicationAssignmentError),
    (("t", 0), [5], InvalidReplicationAssignmentError),
    (("t", 7), [0], UnknownTopicOrPartitionError),
    (("nope", 0), [0], UnknownTopicOrPartitionError),
])
def test_reassignment_refused(cluster: EmbeddedCluster, kadmin: KafkaAdminClient, tp: tuple[str, int],
                              replicas: list[int], error: Any) -> None:
    cluster.create_topic("t", 1, 2)
    before = list(state(cluster).replicas)
    assert kadmin.alter_partition_reassignments({KTP(*tp): replicas}) == {KTP(*tp): error}
    assert state(cluster).replicas == before


def test_describe_log_dirs(cluster: EmbeddedCluster, kadmin: KafkaAdminClient) -> None:
    cluster.create_topic("t", 1, 3)
    produce(cluster, "t", 0, 4)
    dirs = kadmin.describe_log_dirs({"t": [0]})
    assert len(dirs) == 3  # one log dir per node, each holding a replica
    sizes = set()
    for broker in dirs:
        (log_dir,) = broker["log_dirs"]
        partitions = [p for t in log_dir["topics"] for p in t["partitions"]]
        assert log_dir["error_code"] == 0 and log_dir["log_dir"] == str(cluster.data_dir / f"node-{broker['broker']}")
        assert 0 < log_dir["usable_bytes"] <= log_dir["total_bytes"]
        assert [(p["partition_index"], p["offset_lag"]) for p in partitions] == [(0, 0)]
        sizes.add(partitions[0]["partition_size"])
    assert len(sizes) == 1 and sizes.pop() > 4 * 61  # the same batches on every replica


def test_elect_leaders_needs_alter_on_the_cluster(tmp_path: Path) -> None:
    config = {"authorizer.class.name": "acl", "allow.everyone.if.no.acl.found": False,
              "offsets.topic.num.partitions": 1}
    with EmbeddedCluster(nodes=1, data_dir=tmp_path, config=config) as c:
        c.create_topic("t", 1, 1)
        with pytest.raises(KafkaException) as err:
            elect(c, ElectionType.PREFERRED, ("t", 0))
        assert err.value.args[0].name() == "CLUSTER_AUTHORIZATION_FAILED"
