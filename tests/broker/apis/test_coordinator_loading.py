"""What a client gets from a coordinator whose partition is loading, API by API, on the wire; then served.

Each test moves the leadership of a coordinator topic's partition to the other node and holds the new
leader's load after its first chunk (a Gate as the loader's pace), so the partition stays LOADING for as long
as the test needs, without sleeping. Expected answers are Kafka's during a load:
- FindCoordinator still names the loading node (it answers from the metadata);
- the transaction coordinator (Kafka's TransactionStateManager.getTransactionState): InitProducerId,
  AddPartitionsToTxn, AddOffsetsToTxn, EndTxn and DescribeTransactions get COORDINATOR_LOAD_IN_PROGRESS,
  and ListTransactions too while any partition of the node loads;
- the group coordinator (GroupCoordinatorService over the runtime): every group API gets
  COORDINATOR_LOAD_IN_PROGRESS, at the level its response carries errors, except the classic Heartbeat,
  which Kafka answers NONE during a load ("the group is still loading, so blindly respond");
- the share coordinator: Kafka's persister retries its COORDINATOR_LOAD_IN_PROGRESS, so a ShareFetch of a
  share-partition whose state is loading answers later, with no error.
Once the load is let through, the same requests are served with the state the log held.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kafka.protocol.admin import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    ListGroupsRequest,
    ListGroupsResponse,
    ListTransactionsRequest,
    ListTransactionsResponse,
)
from kafka.protocol.consumer import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kafka.protocol.metadata import FindCoordinatorRequest, FindCoordinatorResponse
from kafka.protocol.producer import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    EndTxnResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)

from kafka_txn_broker.embedded import EmbeddedCluster
from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    ShareFetchRequest,
    ShareFetchResponse,
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)
from kafka_txn_broker.formats.partitioning import GROUP_TOPIC, TXN_TOPIC
from kafka_txn_broker.share.share_coordinator import SHARE_STATE_TOPIC
from kafka_txn_broker.testing import share_client
from kafka_txn_broker.testing.raw_client import RawKafkaClient
from tests.broker.coordinator.holding import group_runtime, loading, share_runtime, txn_runtime

WAIT = E.COORDINATOR_LOAD_IN_PROGRESS


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    # One partition per coordinator topic, on both nodes: every id and group lands in partition 0.
    cfg = {"transaction.state.log.num.partitions": 1, "transaction.state.log.replication.factor": 2,
           "offsets.topic.num.partitions": 1, "offsets.topic.replication.factor": 2,
           "share.coordinator.state.topic.num.partitions": 1, "share.coordinator.state.topic.replication.factor": 2}
    with EmbeddedCluster(nodes=2, data_dir=tmp_path_factory.mktemp("loading"), config=cfg) as c:
        c.create_topic("t", 1, 2)
        yield c


@pytest.fixture
def client(cluster: EmbeddedCluster) -> Iterator[RawKafkaClient]:
    with RawKafkaClient(cluster.bootstrap_servers) as c:
        c.broker_count()
        yield c


def find_group_coordinator(client: RawKafkaClient, group: str) -> int:
    resp = client.send(FindCoordinatorRequest[1](key=group, key_type=0), 1, None, FindCoordinatorResponse)
    assert resp.error_code == 0
    return int(resp.node_id)


# ---- the transaction coordinator ---------------------------------------------------------------------------
def txn_answers(client: RawKafkaClient, node: int, txn_id: str, pid: int, epoch: int) -> dict[str, Any]:
    init = client.send(InitProducerIdRequest[3](transactional_id=txn_id, transaction_timeout_ms=60000,
                                                producer_id=pid, producer_epoch=epoch), 3, node,
                       InitProducerIdResponse)
    APT = AddPartitionsToTxnRequest
    added = client.send(APT[3](v3_and_below_transactional_id=txn_id, v3_and_below_producer_id=pid,
                               v3_and_below_producer_epoch=epoch,
                               v3_and_below_topics=[APT.AddPartitionsToTxnTopic(name="t", partitions=[0])]),
                        3, node, AddPartitionsToTxnResponse)
    offsets = client.send(AddOffsetsToTxnRequest[3](transactional_id=txn_id, producer_id=pid, producer_epoch=epoch,
                                                    group_id="g"), 3, node, AddOffsetsToTxnResponse)
    end = client.send(EndTxnRequest[3](transactional_id=txn_id, producer_id=pid, producer_epoch=epoch,
                                       committed=True), 3, node, EndTxnResponse)
    described = client.send(DescribeTransactionsRequest[0](transactional_ids=[txn_id]), 0, node,
                            DescribeTransactionsResponse)
    listed = client.send(ListTransactionsRequest[1](state_filters=[], producer_id_filters=[], duration_filter=-1),
                         1, node, ListTransactionsResponse)
    return {
        "InitProducerId": init.error_code,
        "AddPartitionsToTxn": [p.partition_error_code for t in added.results_by_topic_v3_and_below
                               for p in t.results_by_partition],
        "AddOffsetsToTxn": offsets.error_code,
        "EndTxn": end.error_code,
        "DescribeTransactions": [(s.error_code, s.transaction_state) for s in described.transaction_states],
        "ListTransactions": (listed.error_code, [s.transactional_id for s in listed.transaction_states]),
    }


def test_transaction_requests_wait_for_the_load_and_are_served_after_it(cluster: EmbeddedCluster,
                                                                       client: RawKafkaClient) -> None:
    code, pe = client.init_producer_id("loading-app", 60000)  # a record in __transaction_state-0
    assert code == 0
    with loading(cluster, TXN_TOPIC, txn_runtime) as node:
        assert client.transaction_coordinator("loading-app") == node  # FindCoordinator: the loading node
        assert txn_answers(client, node, "loading-app", pe.producer_id, pe.epoch) == {
            "InitProducerId": WAIT, "AddPartitionsToTxn": [WAIT], "AddOffsetsToTxn": WAIT, "EndTxn": WAIT,
            "DescribeTransactions": [(WAIT, "")], "ListTransactions": (WAIT, [])}
    # Loaded: the id is known with its producer id, and the transaction runs (EndTxn is last, so it commits the
    # partition and the group the requests before it added).
    answers = txn_answers(client, node, "loading-app", pe.producer_id, pe.epoch)
    assert answers["InitProducerId"] == 0
    assert answers["DescribeTransactions"] == [(0, "Empty")] and "loading-app" in answers["ListTransactions"][1]


# ---- the group coordinator ---------------------------------------------------------------------------------
def commit(client: RawKafkaClient, node: int, group: str, offset: int) -> list[int]:
    T = OffsetCommitRequest.OffsetCommitRequestTopic
    req = OffsetCommitRequest[7](group_id=group, generation_id_or_member_epoch=-1, member_id="",
                                 group_instance_id=None, retention_time_ms=-1, topics=[T(name="t", partitions=[
                                     T.OffsetCommitRequestPartition(partition_index=0, committed_offset=offset,
                                                                    committed_leader_epoch=-1,
                                                                    committed_metadata="")])])
    resp = client.send(req, 7, node, OffsetCommitResponse)
    return [p.error_code for t in resp.topics for p in t.partitions]


def fetched(client: RawKafkaClient, node: int, group: str) -> tuple[int, list[tuple[int, int]]]:
    T = OffsetFetchRequest.OffsetFetchRequestTopic
    resp = client.send(OffsetFetchRequest[7](group_id=group, topics=[T(name="t", partition_indexes=[0])],
                                             require_stable=True), 7, node, OffsetFetchResponse)
    return resp.error_code, [(p.error_code, p.committed_offset) for t in resp.topics for p in t.partitions]


def group_answers(client: RawKafkaClient, node: int, group: str) -> dict[str, Any]:
    P = JoinGroupRequest.JoinGroupRequestProtocol
    join = client.send(JoinGroupRequest[5](group_id=group, session_timeout_ms=10000, rebalance_timeout_ms=10000,
                                           member_id="m", group_instance_id=None, protocol_type="consumer",
                                           protocols=[P(name="range", metadata=b"")]), 5, node, JoinGroupResponse)
    sync = client.send(SyncGroupRequest[3](group_id=group, generation_id=1, member_id="m", group_instance_id=None,
                                           assignments=[]), 3, node, SyncGroupResponse)
    beat = client.send(HeartbeatRequest[3](group_id=group, generation_id=1, member_id="m", group_instance_id=None),
                       3, node, HeartbeatResponse)
    M = LeaveGroupRequest.MemberIdentity
    leave = client.send(LeaveGroupRequest[3](group_id=group, members=[M(member_id="m", group_instance_id=None)]),
                        3, node, LeaveGroupResponse)
    TT = TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic
    txn_commit = client.send(TxnOffsetCommitRequest[3](
        transactional_id="nobody", group_id=group, producer_id=1, producer_epoch=0, generation_id=-1, member_id="",
        group_instance_id=None, topics=[TT(name="t", partitions=[TT.TxnOffsetCommitRequestPartition(
            partition_index=0, committed_offset=1, committed_leader_epoch=-1, committed_metadata=None)])]),
        3, node, TxnOffsetCommitResponse)
    described = client.send(DescribeGroupsRequest[5](groups=[group], include_authorized_operations=False), 5, node,
                            DescribeGroupsResponse)
    listed = client.send(ListGroupsRequest[4](states_filter=[]), 4, node, ListGroupsResponse)
    deleted = client.send(DeleteGroupsRequest[2](groups_names=[group]), 2, node, DeleteGroupsResponse)
    OT = OffsetDeleteRequest.OffsetDeleteRequestTopic
    offset_deleted = client.send(OffsetDeleteRequest[0](group_id=group, topics=[OT(name="t", partitions=[
        OT.OffsetDeleteRequestPartition(partition_index=0)])]), 0, node, OffsetDeleteResponse)
    consumer_beat = client.send(ConsumerGroupHeartbeatRequest[0](
        group_id=group + "-848", member_id="m-848", member_epoch=0, instance_id=None, rack_id=None,
        rebalance_timeout_ms=30000, subscribed_topic_names=["t"], server_assignor=None, topic_partitions=[]),
        0, node, ConsumerGroupHeartbeatResponse)
    consumer_described = client.send(ConsumerGroupDescribeRequest[0](
        group_ids=[group + "-848"], include_authorized_operations=False), 0, node, ConsumerGroupDescribeResponse)
    share_beat = client.send(ShareGroupHeartbeatRequest[1](
        group_id=group + "-share", member_id="m-share", member_epoch=0, subscribed_topic_names=["t"]),
        1, node, ShareGroupHeartbeatResponse)
    share_described = client.send(ShareGroupDescribeRequest[1](
        group_ids=[group + "-share"], include_authorized_operations=False), 1, node, ShareGroupDescribeResponse)
    return {
        "JoinGroup": join.error_code, "SyncGroup": sync.error_code, "Heartbeat": beat.error_code,
        "LeaveGroup": leave.error_code,
        "OffsetCommit": commit(client, node, group, 99),
        "TxnOffsetCommit": [p.error_code for t in txn_commit.topics for p in t.partitions],
        "OffsetFetch": fetched(client, node, group)[0],
        "DescribeGroups": [g.error_code for g in described.groups],
        "ListGroups": listed.error_code,
        "DeleteGroups": [r.error_code for r in deleted.results],
        "OffsetDelete": offset_deleted.error_code,
        "ConsumerGroupHeartbeat": consumer_beat.error_code,
        "ConsumerGroupDescribe": [g.error_code for g in consumer_described.groups],
        "ShareGroupHeartbeat": share_beat.error_code,
        "ShareGroupDescribe": [g.error_code for g in share_described.groups],
    }


def test_group_requests_wait_for_the_load_and_are_served_after_it(cluster: EmbeddedCluster,
                                                                 client: RawKafkaClient) -> None:
    node = find_group_coordinator(client, "loading-group")
    assert commit(client, node, "loading-group", 42) == [0]  # a record in __consumer_offsets-0
    with loading(cluster, GROUP_TOPIC, group_runtime) as node:
        assert find_group_coordinator(client, "loading-group") == node
        assert group_answers(client, node, "loading-group") == {
            "JoinGroup": WAIT, "SyncGroup": WAIT, "Heartbeat": 0, "LeaveGroup": WAIT, "OffsetCommit": [WAIT],
            "TxnOffsetCommit": [WAIT], "OffsetFetch": WAIT, "DescribeGroups": [WAIT], "ListGroups": WAIT,
            "DeleteGroups": [WAIT], "OffsetDelete": WAIT, "ConsumerGroupHeartbeat": WAIT,
            "ConsumerGroupDescribe": [WAIT], "ShareGroupHeartbeat": WAIT, "ShareGroupDescribe": [WAIT]}
    assert fetched(client, node, "loading-group") == (0, [(0, 42)])  # loaded from the log


# ---- the share coordinator ---------------------------------------------------------------------------------
def share_fetch(client: RawKafkaClient, leader: int, group: str, member: str, topic_id: uuid.UUID,
                max_wait_ms: int) -> tuple[int, list[int], list[tuple[int, int]]]:
    """One ShareFetch in a new session: (top error, partition errors, acquired ranges)."""
    T = ShareFetchRequest.FetchTopic
    req = ShareFetchRequest[1](group_id=group, member_id=member, share_session_epoch=0, max_wait_ms=max_wait_ms,
                               min_bytes=1, max_bytes=1 << 20, max_records=100, batch_size=100,
                               topics=[T(topic_id=topic_id, partitions=[T.FetchPartition(
                                   partition_index=0, acknowledgement_batches=[])])], forgotten_topics_data=[])
    r = client.send(req, 1, leader, ShareFetchResponse)
    parts = [p for t in r.responses for p in t.partitions]
    return (r.error_code, [p.error_code for p in parts],
            [(a.first_offset, a.last_offset) for p in parts for a in p.acquired_records])


def test_a_share_fetch_waits_for_the_share_state_load_then_gets_the_records(cluster: EmbeddedCluster,
                                                                         client: RawKafkaClient) -> None:
    topic_id, _replicas = share_client.topic_layout(client, "t")
    leader = client.partition_leaders("t")[0]
    for group in ("sg-before", "sg-during"):
        assert share_client.set_group_configs(client, group, {"share.auto.offset.reset": "earliest"}) == 0
    client.produce("t", 0, [b"a", b"b", b"c"], 0)
    # A first share group writes its state: a record in __share_group_state-0 (the fetch creates the topic and
    # waits for the loads that follow).
    share_client.ShareMember(client, "sg-before", "m1", "t", topic_id, 0, leader)
    assert share_fetch(client, leader, "sg-before", "m1", topic_id, 5000) == (0, [0], [(0, 2)])
    share_client.ShareMember(client, "sg-during", "m2", "t", topic_id, 0, leader)
    with loading(cluster, SHARE_STATE_TOPIC, share_runtime):
        # The state of sg-during cannot be read yet: the fetch answers at its max wait, empty and without error.
        assert share_fetch(client, leader, "sg-during", "m2", topic_id, 200) == (0, [], [])
    assert share_fetch(client, leader, "sg-during", "m2", topic_id, 5000) == (0, [0], [(0, 2)])
