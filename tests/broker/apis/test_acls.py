"""ACLs over the wire: Describe/Create/DeleteAcls and Kafka's authorization rules per API, KIP-664 included.

One SASL_PLAINTEXT node with the ACL authorizer. `admin` is a super user; alice gets ACLs through
CreateAcls (kafka-python's admin client); bob has none. A transaction of `app-1` is left open on
`orders` and `hidden`, and `other-1` committed on `orders`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer
from kafka.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    KafkaAdminClient,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from kafka.errors import ClusterAuthorizationFailedError, SecurityDisabledError
from kafka.protocol.admin import (
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteAclsRequest,
    DeleteAclsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DescribeProducersRequest,
    DescribeProducersResponse,
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    ListTransactionsRequest,
    ListTransactionsResponse,
)
from kafka.protocol.consumer import (
    FetchRequest,
    FetchResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
)
from kafka.protocol.metadata import FindCoordinatorRequest, FindCoordinatorResponse, MetadataRequest, MetadataResponse
from kafka.protocol.producer import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    EndTxnResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    ProduceRequest,
    ProduceResponse,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)

from kafka_txn_broker.embedded import EmbeddedCluster
from kafka_txn_broker.formats.messages import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse
from kafka_txn_broker.formats.record_batch import build_batch
from tests.broker.security.support import (
    broker_config,
    call,
    confluent_config,
    kafka_python_config,
    sasl_plain_socket,
)

UNKNOWN_TOPIC_OR_PARTITION = 3
TOPIC_AUTH, GROUP_AUTH, CLUSTER_AUTH, TXN_AUTH = 29, 30, 31, 53
OPERATION_NOT_ATTEMPTED = 55


class Env:
    def __init__(self, cluster: EmbeddedCluster, admin: KafkaAdminClient) -> None:
        self.cluster = cluster
        self.admin = admin
        self.bs = cluster.bootstrap_servers

    def grant(self, rtype: ResourceType, name: str, op: ACLOperation, principal: str = "User:alice",
              pattern: ACLResourcePatternType = ACLResourcePatternType.LITERAL,
              permission: ACLPermissionType = ACLPermissionType.ALLOW) -> ACL:
        acl = ACL(principal, "*", op, permission, ResourcePattern(rtype, name, pattern))
        result = self.admin.create_acls([acl])
        assert result["succeeded"] == [acl], result
        return acl

    def revoke(self, acl: ACL) -> None:
        self.admin.delete_acls([acl])

    def as_user(self, user: str, req: Any, resp: Any) -> Any:
        with sasl_plain_socket(self.bs, user) as s:
            return call(s, req, resp)


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    cfg = broker_config("SASL_PLAINTEXT", **{"authorizer.class.name": "acl", "super.users": "User:admin"})
    with EmbeddedCluster(nodes=1, data_dir=tmp_path_factory.mktemp("acl"), config=cfg) as cluster:
        for topic in ("orders", "hidden"):
            cluster.create_topic(topic, 2, 1)
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers,
                                 **kafka_python_config("SASL_PLAINTEXT", "admin", mechanism="PLAIN"))
        producers = _transactions(cluster.bootstrap_servers)
        e = Env(cluster, admin)
        e.grant(ResourceType.TOPIC, "orders", ACLOperation.READ)
        e.grant(ResourceType.TRANSACTIONAL_ID, "app-", ACLOperation.DESCRIBE, pattern=ACLResourcePatternType.PREFIXED)
        e.grant(ResourceType.GROUP, "alice-group", ACLOperation.READ)
        yield e
        admin.close()
        producers[0].abort_transaction(30)


def _transactions(bs: str) -> list[Producer]:
    def producer(txn_id: str) -> Producer:
        p = Producer(confluent_config(bs, "SASL_PLAINTEXT", "admin", mechanism="PLAIN", **{
            "transactional.id": txn_id, "log_level": 0}))
        p.init_transactions(30)
        p.begin_transaction()
        return p

    live = producer("app-1")
    for topic in ("orders", "hidden"):
        live.produce(topic, b"v", partition=0)
    live.flush(30)
    done = producer("other-1")
    done.produce("orders", b"v", partition=1)
    done.commit_transaction(30)
    return [live]


def metadata(topics: list[str] | None, allow_auto: bool = False) -> Any:
    T = MetadataRequest[8].MetadataRequestTopic
    return MetadataRequest[8](topics=None if topics is None else [T(name=t) for t in topics],
                              allow_auto_topic_creation=allow_auto, include_cluster_authorized_operations=False,
                              include_topic_authorized_operations=False)


# ---- the ACL APIs ------------------------------------------------------------------------------------
def test_acls_are_described_and_deleted_by_filter(env: Env) -> None:
    acl = env.grant(ResourceType.TOPIC, "tmp-", ACLOperation.WRITE, pattern=ACLResourcePatternType.PREFIXED)
    everything = ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                           ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY))
    acls, _ = env.admin.describe_acls(everything)
    assert acl in acls and len(acls) >= 4
    match = ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                      ResourcePatternFilter(ResourceType.TOPIC, "tmp-x", ACLResourcePatternType.MATCH))
    assert env.admin.describe_acls(match)[0] == [acl]
    (_, deleted, error), = env.admin.delete_acls([match])
    assert deleted == [acl] and error.errno == 0
    assert env.admin.describe_acls(match)[0] == []


def test_acl_apis_need_cluster_permissions(env: Env) -> None:
    alice = KafkaAdminClient(bootstrap_servers=env.bs, **kafka_python_config("SASL_PLAINTEXT", "alice",
                                                                             mechanism="PLAIN"))
    try:
        with pytest.raises(ClusterAuthorizationFailedError):
            alice.describe_acls(ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                                          ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY)))
    finally:
        alice.close()
    F = DeleteAclsRequest[3].DeleteAclsFilter
    resp = env.as_user("alice", DeleteAclsRequest[3](filters=[F(
        resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1, principal_filter=None,
        host_filter=None, operation=1, permission_type=1)]), DeleteAclsResponse)
    assert resp.filter_results[0].error_code == CLUSTER_AUTH


def test_acl_apis_without_an_authorizer_say_security_disabled(tmp_path: Any) -> None:
    with EmbeddedCluster(nodes=1, data_dir=tmp_path, config=broker_config("PLAINTEXT")) as c:
        admin = KafkaAdminClient(bootstrap_servers=c.bootstrap_servers)
        try:
            with pytest.raises(SecurityDisabledError):
                admin.describe_acls(ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                                              ResourcePatternFilter(ResourceType.ANY, None,
                                                                    ACLResourcePatternType.ANY)))
        finally:
            admin.close()


# ---- topics ------------------------------------------------------------------------------------------
def test_metadata_hides_topics_without_describe(env: Env) -> None:
    names = {t.name: t.error_code for t in env.as_user("alice", metadata(None), MetadataResponse).topics}
    assert names == {"orders": 0}
    named = env.as_user("alice", metadata(["hidden", "missing"], allow_auto=True), MetadataResponse).topics
    assert [(t.name, t.error_code) for t in named] == [("hidden", TOPIC_AUTH), ("missing", TOPIC_AUTH)]
    assert "missing" not in env.cluster.cluster.metadata.topics  # type: ignore[union-attr]
    assert {t.name for t in env.as_user("admin", metadata(None), MetadataResponse).topics} >= {"orders", "hidden"}


def test_produce_fetch_list_offsets_need_their_operations(env: Env) -> None:
    batch = build_batch([(None, b"x")], timestamp_ms=int(time.time() * 1000))
    P = ProduceRequest[8]
    produce = P(transactional_id=None, acks=1, timeout_ms=5000, topic_data=[P.TopicProduceData(
        name="orders", partition_data=[P.TopicProduceData.PartitionProduceData(index=0, records=batch)])])
    resp = env.as_user("alice", produce, ProduceResponse)
    assert resp.responses[0].partition_responses[0].error_code == TOPIC_AUTH  # READ does not grant WRITE
    F = FetchRequest[11]
    fetch = F(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=0, session_id=0,
              session_epoch=-1, topics=[F.FetchTopic(topic=t, partitions=[F.FetchTopic.FetchPartition(
                  partition=0, current_leader_epoch=-1, fetch_offset=0, log_start_offset=-1,
                  partition_max_bytes=1 << 20)]) for t in ("orders", "hidden")],
              forgotten_topics_data=[], rack_id="")
    codes = {t.topic: t.partitions[0].error_code for t in env.as_user("alice", fetch, FetchResponse).responses}
    assert codes == {"orders": 0, "hidden": TOPIC_AUTH}
    L = ListOffsetsRequest[4]
    offsets = L(replica_id=-1, isolation_level=0, topics=[L.ListOffsetsTopic(name=t, partitions=[
        L.ListOffsetsTopic.ListOffsetsPartition(partition_index=0, current_leader_epoch=-1, timestamp=-1)])
        for t in ("orders", "hidden")])
    codes = {t.name: t.partitions[0].error_code for t in env.as_user("alice", offsets, ListOffsetsResponse).topics}
    assert codes == {"orders": 0, "hidden": TOPIC_AUTH}


def test_offset_for_leader_epoch_needs_describe_on_the_topic_or_cluster_action(env: Env) -> None:
    T = OffsetForLeaderEpochRequest.OffsetForLeaderTopic
    req = OffsetForLeaderEpochRequest[4](replica_id=-1, topics=[T(topic=t, partitions=[T.OffsetForLeaderPartition(
        partition=0, current_leader_epoch=-1, leader_epoch=0)]) for t in ("orders", "hidden", "missing")])

    def codes(user: str) -> dict[str, int]:
        resp = env.as_user(user, req, OffsetForLeaderEpochResponse)
        return {t.topic: t.partitions[0].error_code for t in resp.topics}

    # READ implies DESCRIBE; a topic without it is refused before it is looked up (no probing for names).
    assert codes("alice") == {"orders": 0, "hidden": TOPIC_AUTH, "missing": TOPIC_AUTH}
    assert codes("bob") == {"orders": TOPIC_AUTH, "hidden": TOPIC_AUTH, "missing": TOPIC_AUTH}
    acl = env.grant(ResourceType.CLUSTER, "kafka-cluster", ACLOperation.CLUSTER_ACTION, principal="User:bob")
    assert codes("bob") == {"orders": 0, "hidden": 0, "missing": UNKNOWN_TOPIC_OR_PARTITION}  # what brokers hold
    env.revoke(acl)
    assert codes("bob")["orders"] == TOPIC_AUTH


def test_create_and_delete_topics(env: Env) -> None:
    C = CreateTopicsRequest[5]
    create = C(topics=[C.CreatableTopic(name="alice-new", num_partitions=1, replication_factor=1, assignments=[],
                                        configs=[])], timeout_ms=5000, validate_only=False)
    assert env.as_user("alice", create, CreateTopicsResponse).topics[0].error_code == TOPIC_AUTH
    env.grant(ResourceType.TOPIC, "alice-", ACLOperation.CREATE, pattern=ACLResourcePatternType.PREFIXED)
    assert env.as_user("alice", create, CreateTopicsResponse).topics[0].error_code == 0
    delete = DeleteTopicsRequest[4](topic_names=["alice-new"], timeout_ms=5000)
    assert env.as_user("alice", delete, DeleteTopicsResponse).responses[0].error_code == TOPIC_AUTH
    assert env.as_user("admin", delete, DeleteTopicsResponse).responses[0].error_code == 0


# ---- groups and coordinators ---------------------------------------------------------------------------
def test_find_coordinator_needs_describe_on_the_key(env: Env) -> None:
    def code(key: str, key_type: int) -> int:
        req = FindCoordinatorRequest[4](key_type=key_type, coordinator_keys=[key])
        return int(env.as_user("alice", req, FindCoordinatorResponse).coordinators[0].error_code)

    assert code("app-1", 1) == 0
    assert code("other-1", 1) == TXN_AUTH
    assert code("alice-group", 0) == 0
    assert code("bob-group", 0) == GROUP_AUTH


def test_offset_commit_needs_read_on_group_and_topic(env: Env) -> None:
    OC = OffsetCommitRequest[8]
    find = FindCoordinatorRequest[4](key_type=0, coordinator_keys=["alice-group"])  # as a client asks first (the
    assert env.as_user("alice", find, FindCoordinatorResponse).coordinators[0].error_code == 0  # offsets topic)

    def commit(group: str) -> dict[str, int]:
        req = OC(group_id=group, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
                 topics=[OC.OffsetCommitRequestTopic(name=t, partitions=[
                     OC.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
                        partition_index=0, committed_offset=0, committed_leader_epoch=-1, committed_metadata="")])
                    for t in ("orders", "hidden")])
        return {t.name: t.partitions[0].error_code for t in env.as_user("alice", req, OffsetCommitResponse).topics}

    assert commit("alice-group") == {"orders": 0, "hidden": TOPIC_AUTH}
    assert commit("bob-group") == {"orders": GROUP_AUTH, "hidden": GROUP_AUTH}


def test_describe_groups_refuses_a_group_with_the_bare_error_code(env: Env) -> None:
    """As Apache Kafka 4.4.0 answers (tests/external/fidelity): GROUP_AUTHORIZATION_FAILED, no message."""
    from kafka.protocol.admin import DescribeGroupsRequest, DescribeGroupsResponse

    req = DescribeGroupsRequest[6](groups=["bob-group"], include_authorized_operations=False)
    group = env.as_user("alice", req, DescribeGroupsResponse).groups[0]
    assert (group.error_code, group.error_message) == (GROUP_AUTH, None)


# ---- producers -----------------------------------------------------------------------------------------
def test_init_producer_id(env: Env) -> None:
    def init(user: str, txn_id: str | None) -> int:
        req = InitProducerIdRequest[4](transactional_id=txn_id, transaction_timeout_ms=60000)
        return int(env.as_user(user, req, InitProducerIdResponse).error_code)

    assert init("bob", None) == CLUSTER_AUTH        # KIP-679: needs IDEMPOTENT_WRITE or WRITE on a topic
    assert init("bob", "app-9") == TXN_AUTH
    acl = env.grant(ResourceType.TOPIC, "orders", ACLOperation.WRITE, principal="User:bob")
    assert init("bob", None) == 0
    env.revoke(acl)
    assert init("bob", None) == CLUSTER_AUTH


def test_transactional_apis_need_write_on_the_id_and_topics(env: Env) -> None:
    env.grant(ResourceType.TRANSACTIONAL_ID, "alice-txn", ACLOperation.WRITE)
    env.grant(ResourceType.TOPIC, "orders", ACLOperation.WRITE)
    init = env.as_user("alice", InitProducerIdRequest[4](transactional_id="alice-txn", transaction_timeout_ms=60000),
                       InitProducerIdResponse)
    assert init.error_code == 0
    A = AddPartitionsToTxnRequest[3]

    def add(txn_id: str) -> dict[str, int]:
        req = A(v3_and_below_transactional_id=txn_id, v3_and_below_producer_id=init.producer_id,
                v3_and_below_producer_epoch=init.producer_epoch,
                v3_and_below_topics=[A.AddPartitionsToTxnTopic(name=t, partitions=[0]) for t in ("orders", "hidden")])
        resp = env.as_user("alice", req, AddPartitionsToTxnResponse)
        return {t.name: t.results_by_partition[0].partition_error_code for t in resp.results_by_topic_v3_and_below}

    assert add("alice-txn") == {"orders": OPERATION_NOT_ATTEMPTED, "hidden": TOPIC_AUTH}
    assert add("app-1") == {"orders": TXN_AUTH, "hidden": TXN_AUTH}   # DESCRIBE is not WRITE
    end = EndTxnRequest[3](transactional_id="other-1", producer_id=init.producer_id,
                           producer_epoch=init.producer_epoch, committed=False)
    assert env.as_user("alice", end, EndTxnResponse).error_code == TXN_AUTH
    # A transactional batch under someone else's transactional id fails the whole request.
    batch = build_batch([(None, b"x")], timestamp_ms=int(time.time() * 1000), producer_id=init.producer_id,
                        producer_epoch=init.producer_epoch, base_sequence=0, transactional=True)
    P = ProduceRequest[8]
    produce = P(transactional_id="app-1", acks=1, timeout_ms=5000, topic_data=[P.TopicProduceData(
        name="orders", partition_data=[P.TopicProduceData.PartitionProduceData(index=0, records=batch)])])
    assert env.as_user("alice", produce, ProduceResponse).responses[0].partition_responses[0].error_code == TXN_AUTH


# ---- KIP-664 ---------------------------------------------------------------------------------------------
def test_describe_producers_needs_read_on_the_topic(env: Env) -> None:
    T = DescribeProducersRequest[0].TopicRequest
    req = DescribeProducersRequest[0](topics=[T(name=t, partition_indexes=[0, 1]) for t in ("orders", "hidden",
                                                                                            "missing")])
    resp = env.as_user("alice", req, DescribeProducersResponse)
    codes = {t.name: [p.error_code for p in t.partitions] for t in resp.topics}
    assert codes == {"orders": [0, 0], "hidden": [TOPIC_AUTH] * 2, "missing": [TOPIC_AUTH] * 2}
    assert resp.topics[0].partitions[0].active_producers  # app-1's open transaction
    assert "User:alice" in resp.topics[1].partitions[0].error_message


def test_list_transactions_silently_drops_ids_without_describe(env: Env) -> None:
    req = ListTransactionsRequest[1](state_filters=[], producer_id_filters=[], duration_filter=-1)
    alice = env.as_user("alice", req, ListTransactionsResponse)
    assert alice.error_code == 0
    seen = {s.transactional_id for s in alice.transaction_states}
    assert "app-1" in seen and "other-1" not in seen  # (alice-txn too, once granted WRITE: it implies DESCRIBE)
    admin = env.as_user("admin", req, ListTransactionsResponse)
    assert {s.transactional_id for s in admin.transaction_states} >= {"app-1", "other-1"}


def test_describe_transactions_refuses_ids_and_drops_topics(env: Env) -> None:
    req = DescribeTransactionsRequest[0](transactional_ids=["app-1", "other-1"])
    app, other = env.as_user("alice", req, DescribeTransactionsResponse).transaction_states
    assert app.error_code == 0 and app.transaction_state == "Ongoing"
    assert [(t.topic, t.partitions) for t in app.topics] == [("orders", [0])]  # "hidden" dropped silently
    assert other.error_code == TXN_AUTH
    app_admin = env.as_user("admin", req, DescribeTransactionsResponse).transaction_states[0]
    assert [t.topic for t in app_admin.topics] == ["hidden", "orders"]


def test_write_txn_markers_needs_alter_or_cluster_action(env: Env) -> None:
    M = WriteTxnMarkersRequest[1].WritableTxnMarker
    req = WriteTxnMarkersRequest[1](markers=[M(producer_id=424242, producer_epoch=0, transaction_result=False,
                                               topics=[M.WritableTxnMarkerTopic(name="orders",
                                                                                partition_indexes=[0, 1])],
                                               coordinator_epoch=0)])

    def codes(user: str) -> list[int]:
        resp = env.as_user(user, req, WriteTxnMarkersResponse)
        return [p.error_code for t in resp.markers[0].topics for p in t.partitions]

    assert codes("alice") == [CLUSTER_AUTH, CLUSTER_AUTH]
    for op in (ACLOperation.ALTER, ACLOperation.CLUSTER_ACTION):
        acl = env.grant(ResourceType.CLUSTER, "kafka-cluster", op)
        assert CLUSTER_AUTH not in codes("alice")
        env.revoke(acl)
    assert codes("alice") == [CLUSTER_AUTH, CLUSTER_AUTH]


# ---- consumer groups (KIP-848) -------------------------------------------------------------------------
def test_a_regex_subscription_leaves_out_the_topics_the_member_may_not_describe(env: Env) -> None:
    # Kafka's TopicRegexResolver: topics the regex matches but the member may not DESCRIBE are in no
    # subscription. alice may READ (so DESCRIBE) orders, nothing on hidden.
    env.grant(ResourceType.GROUP, "alice-regex", ACLOperation.READ)
    R = ConsumerGroupHeartbeatRequest
    req = R[1](group_id="alice-regex", member_id="m-1", member_epoch=0, instance_id=None, rack_id=None,
               rebalance_timeout_ms=30_000, subscribed_topic_names=None, subscribed_topic_regex="orders|hidden",
               server_assignor=None, topic_partitions=[])
    find = FindCoordinatorRequest[4](key_type=0, coordinator_keys=["alice-regex"])
    assert env.as_user("alice", find, FindCoordinatorResponse).coordinators[0].error_code == 0
    deadline = time.monotonic() + 20
    # COORDINATOR_LOAD_IN_PROGRESS / NOT_AVAILABLE while __consumer_offsets comes up.
    while (resp := env.as_user("alice", req, ConsumerGroupHeartbeatResponse)).error_code in (14, 15, 16):
        assert time.monotonic() < deadline, resp
        time.sleep(0.1)
    assert resp.error_code == 0, resp
    topics = env.cluster.cluster.metadata.topics  # type: ignore[union-attr]
    assigned = {tp.topic_id: sorted(tp.partitions) for tp in resp.assignment.topic_partitions}
    assert assigned == {topics["orders"].topic_id: [0, 1]}
