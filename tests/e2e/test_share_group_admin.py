"""The APIs kafka-share-groups.sh and kafka-configs.sh use on share groups, as raw requests (kafka-python's
protocol classes, and the project's JSON-defined ones for the share APIs), against a group a real
ShareConsumer built. Error codes are Kafka's: GROUP_ID_NOT_FOUND 69, NON_EMPTY_GROUP 68,
UNKNOWN_TOPIC_OR_PARTITION 3."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException
from kafka.protocol.admin import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ListGroupsRequest,
    ListGroupsResponse,
)
from kafka.protocol.consumer import JoinGroupRequest, JoinGroupResponse
from kafka.protocol.metadata import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.formats.messages import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsResponse,
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsResponse,
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse,
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
)
from kafka_txn_broker.formats.partitioning import SHARE_STATE_TOPIC
from tests.broker.wire import roundtrip
from tests.e2e.share_support import FAST_GROUPS, poll_until, produce, set_group_configs, share_consumer

TOPIC = "work"


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(nodes=3, data_dir=tmp_path, config=FAST_GROUPS) as c:
        c.create_topic(TOPIC, 3, 3)
        yield c


def coordinator(bs: str, group: str, key_type: int = 0) -> str:
    r = roundtrip(bs, FindCoordinatorRequest[4](key_type=key_type, coordinator_keys=[group]), FindCoordinatorResponse)
    (c,) = r.coordinators
    assert c.error_code == 0, c
    return f"{c.host}:{c.port}"


def offsets(address: str, group: str, topics: list | None = None) -> dict[tuple[str, int], tuple[int, int, int]]:
    """(topic, partition) -> (start offset, lag, error code)."""
    R = DescribeShareGroupOffsetsRequest
    wanted = None if topics is None else [R.DescribeShareGroupOffsetsRequestGroup.DescribeShareGroupOffsetsRequestTopic(
        topic_name=t, partitions=[0, 1, 2]) for t in topics]
    r = roundtrip(address, R[1](groups=[R.DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=wanted)]),
                  DescribeShareGroupOffsetsResponse)
    (g,) = r.groups
    assert g.error_code == 0, g
    return {(t.topic_name, p.partition_index): (p.start_offset, p.lag, p.error_code)
            for t in g.topics for p in t.partitions}


def alter(address: str, group: str, start: int) -> AlterShareGroupOffsetsResponse:
    R = AlterShareGroupOffsetsRequest
    T = R.AlterShareGroupOffsetsRequestTopic
    return roundtrip(address, R[0](group_id=group, topics=[T(topic_name=TOPIC, partitions=[
        T.AlterShareGroupOffsetsRequestPartition(partition_index=p, start_offset=start) for p in range(3)])]),
        AlterShareGroupOffsetsResponse)


def test_the_share_group_admin_apis(cluster: EmbeddedCluster) -> None:
    bs = cluster.bootstrap_servers
    set_group_configs(bs, "g", share_auto_offset_reset="earliest")
    sent = produce(bs, TOPIC, 30, 3)
    member = share_consumer(bs, "g", [TOPIC])
    try:
        assert len(poll_until([member], lambda r: len(r) >= 30)) == 30
        member.commit_sync(10)
        address = coordinator(bs, "g")

        listed = roundtrip(address, ListGroupsRequest[5](states_filter=[], types_filter=["share"]), ListGroupsResponse)
        assert [(g.group_id, g.protocol_type, g.group_state, g.group_type) for g in listed.groups] == [
            ("g", "share", "Stable", "share")]
        assert roundtrip(address, ListGroupsRequest[5](states_filter=[], types_filter=["classic"]),
                         ListGroupsResponse).groups == []

        (described,) = roundtrip(address, ShareGroupDescribeRequest[1](
            group_ids=["g"], include_authorized_operations=False), ShareGroupDescribeResponse).groups
        assert (described.error_code, described.group_state, described.assignor_name) == (0, "Stable", "simple")
        (m,) = described.members
        assert m.subscribed_topic_names == [TOPIC] and m.member_epoch == described.assignment_epoch
        assert [(tp.topic_name, tp.partitions) for tp in m.assignment.topic_partitions] == [(TOPIC, [0, 1, 2])]

        classic = roundtrip(address, DescribeGroupsRequest[5](groups=["g"], include_authorized_operations=False),
                            DescribeGroupsResponse).groups[0]
        assert (classic.error_code, classic.group_state) == (0, "Dead")  # before v6 a share group looks Dead
        v6 = roundtrip(address, DescribeGroupsRequest[6](groups=["g"], include_authorized_operations=False),
                       DescribeGroupsResponse).groups[0]
        assert (v6.error_code, v6.error_message) == (69, "Group g is not a classic group.")

        assert offsets(address, "g") == {(TOPIC, p): (10, 0, 0) for p in range(3)}
        produce(bs, TOPIC, 3, 3)
        assert offsets(address, "g", [TOPIC, "missing"]) == {(TOPIC, p): (10, 1, 0) for p in range(3)} | {
            ("missing", p): (-1, -1, 3) for p in range(3)}
        assert alter(address, "g", 0).error_code == 68  # NON_EMPTY_GROUP: the member is still there
    finally:
        member.close()
    # The member left: the offsets may move. Back to 0: everything is delivered again.
    altered = alter(address, "g", 0)
    assert altered.error_code == 0 and {p.error_code for t in altered.responses for p in t.partitions} == {0}
    assert offsets(address, "g") == {(TOPIC, p): (0, 11, 0) for p in range(3)}
    again = share_consumer(bs, "g", [TOPIC])
    try:
        got = poll_until([again], lambda r: len(r) >= 33)
        assert {m.value() for _, m in got} >= set(sent)
        again.commit_sync(10)
    finally:
        again.close()

    R = DeleteShareGroupOffsetsRequest
    deleted = roundtrip(address, R[0](group_id="g", topics=[R.DeleteShareGroupOffsetsRequestTopic(topic_name=TOPIC),
                                                            R.DeleteShareGroupOffsetsRequestTopic(topic_name="nope")]),
                        DeleteShareGroupOffsetsResponse)
    assert [(t.topic_name, t.error_code) for t in deleted.responses] == [(TOPIC, 0), ("nope", 3)]
    assert offsets(address, "g", [TOPIC]) == {(TOPIC, p): (-1, -1, 0) for p in range(3)}



def state_keys(cluster: EmbeddedCluster, group: str) -> list:
    assert cluster.cluster is not None
    nodes = cluster.cluster.nodes.values()
    return cluster.call_soon(lambda: [k for n in nodes for s in n.share_coordinator.loaded_shards()
                                      for k in s.keys_of_group(group)])


def test_delete_groups_takes_the_share_state_with_it(cluster: EmbeddedCluster) -> None:
    bs = cluster.bootstrap_servers
    set_group_configs(bs, "g", share_auto_offset_reset="earliest")
    produce(bs, TOPIC, 6, 3)
    member = share_consumer(bs, "g", [TOPIC])
    address = coordinator(bs, "g")
    try:
        poll_until([member], lambda r: len(r) >= 6)
        member.commit_sync(10)
        busy = roundtrip(address, DeleteGroupsRequest[2](groups_names=["g"]), DeleteGroupsResponse)
        assert busy.results[0].error_code == 68  # NON_EMPTY_GROUP
    finally:
        member.close()
    assert len(state_keys(cluster, "g")) == 3
    gone = roundtrip(address, DeleteGroupsRequest[2](groups_names=["g"]), DeleteGroupsResponse)
    assert [(r.group_id, r.error_code) for r in gone.results] == [("g", 0)]
    assert state_keys(cluster, "g") == []
    assert roundtrip(address, ListGroupsRequest[5](states_filter=[], types_filter=[]), ListGroupsResponse).groups == []
    again = roundtrip(address, DeleteGroupsRequest[2](groups_names=["g"]), DeleteGroupsResponse)
    assert again.results[0].error_code == 69


def test_a_group_id_is_classic_or_share_never_both(cluster: EmbeddedCluster) -> None:
    bs = cluster.bootstrap_servers
    member = share_consumer(bs, "shared-id", [TOPIC])
    try:
        poll_until([member], lambda r: False, timeout_s=1.0)
        address = coordinator(bs, "shared-id")
        join = roundtrip(address, JoinGroupRequest[5](
            group_id="shared-id", session_timeout_ms=10000, rebalance_timeout_ms=10000, member_id="",
            group_instance_id=None, protocol_type="consumer",
            protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")]), JoinGroupResponse)
        assert join.error_code == 69  # GROUP_ID_NOT_FOUND: the id is a share group's
    finally:
        member.close()
    classic = Consumer({"bootstrap.servers": bs, "group.id": "classic-id", "log_level": 0})
    classic.subscribe([TOPIC])
    try:
        classic.consume(1, 3)
        share = share_consumer(bs, "classic-id", [TOPIC])
        with contextlib.suppress(KafkaException):  # librdkafka: GROUP_ID_NOT_FOUND is fatal for the member
            poll_until([share], lambda r: False, timeout_s=1.0)
        (described,) = roundtrip(coordinator(bs, "classic-id"), ShareGroupDescribeRequest[1](
            group_ids=["classic-id"], include_authorized_operations=False), ShareGroupDescribeResponse).groups
        assert (described.error_code, described.error_message) == (69, "Group classic-id is not a share group.")
        share.close()
    finally:
        classic.close()


def test_api_versions_and_the_share_coordinator(cluster: EmbeddedCluster) -> None:
    bs = cluster.bootstrap_servers
    r = roundtrip(bs, ApiVersionsRequest[3](client_software_name="t", client_software_version="1"),
                  ApiVersionsResponse)
    versions = {k.api_key: (k.min_version, k.max_version) for k in r.api_keys}
    assert {k: versions[k] for k in (76, 77, 78, 79, 90, 91, 92)} == {
        76: (1, 1), 77: (1, 1), 78: (1, 2), 79: (1, 2), 90: (0, 1), 91: (0, 0), 92: (0, 0)}
    assert {(f.name, f.max_version_level) for f in r.finalized_features} >= {("share.version", 1)}
    # Key type 2 (SHARE): the leader of the key's __share_group_state partition.
    address = coordinator(bs, "g:AAAAAAAAAAAAAAAAAAAAAA:0", key_type=2)
    assert SHARE_STATE_TOPIC in cluster.call_soon(lambda: set(cluster.cluster.metadata.topics))
    assert address in bs.split(",")
