"""Group coordinator APIs on the wire, version by version, with a raw client (exact error codes)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kafka.protocol.admin import DescribeGroupsRequest, DescribeGroupsResponse, ListGroupsRequest, ListGroupsResponse
from kafka.protocol.consumer import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kafka.protocol.metadata import FindCoordinatorRequest, FindCoordinatorResponse
from kafka.protocol.producer import TxnOffsetCommitRequest, TxnOffsetCommitResponse

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.formats.partitioning import GROUP_TOPIC
from tests.broker.wire import roundtrip

NOT_COORDINATOR = 16
MEMBER_ID_REQUIRED = 79
UNKNOWN_MEMBER_ID = 25
INVALID_SESSION_TIMEOUT = 26
GROUP_ID_NOT_FOUND = 69
UNKNOWN_TOPIC_OR_PARTITION = 3
COORDINATOR_LOAD_IN_PROGRESS = 14


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(nodes=2, data_dir=tmp_path_factory.mktemp("groups")) as c:
        c.create_topic("t", 2, 2)
        yield c


def _address(cluster: EmbeddedCluster, node_id: int) -> str:
    assert cluster.cluster is not None
    return cluster.cluster.nodes[node_id].address


def coordinator_of(cluster: EmbeddedCluster, group: str) -> str:
    req = FindCoordinatorRequest[1](key=group, key_type=0)
    resp = roundtrip(cluster.bootstrap_servers, req, FindCoordinatorResponse)
    assert resp.error_code == 0
    return f"{resp.host}:{resp.port}"


def other_node(cluster: EmbeddedCluster, address: str) -> str:
    return next(_address(cluster, n) for n in cluster.node_ids if _address(cluster, n) != address)


def call(address: str, req: Any, resp_cls: Any) -> Any:
    return roundtrip(address, req, resp_cls)


def join(address: str, group: str, version: int, member_id: str = "", session: int = 10000) -> Any:
    P = JoinGroupRequest.JoinGroupRequestProtocol
    req = JoinGroupRequest[version](group_id=group, session_timeout_ms=session, rebalance_timeout_ms=10000,
                                    member_id=member_id, group_instance_id=None, protocol_type="consumer",
                                    protocols=[P(name="range", metadata=b"meta")], reason=None)
    return call(address, req, JoinGroupResponse)


def test_join_sync_heartbeat_leave_v0(cluster: EmbeddedCluster) -> None:
    addr = coordinator_of(cluster, "old")
    j = join(addr, "old", 0)
    assert (j.error_code, j.generation_id, j.protocol_name, j.leader) == (0, 1, "range", j.member_id)
    A = SyncGroupRequest.SyncGroupRequestAssignment
    s = call(addr, SyncGroupRequest[0](group_id="old", generation_id=1, member_id=j.member_id,
                                       assignments=[A(member_id=j.member_id, assignment=b"mine")]),
             SyncGroupResponse)
    assert (s.error_code, s.assignment) == (0, b"mine")
    h = call(addr, HeartbeatRequest[0](group_id="old", generation_id=1, member_id=j.member_id), HeartbeatResponse)
    assert h.error_code == 0
    bye = call(addr, LeaveGroupRequest[0](group_id="old", member_id=j.member_id), LeaveGroupResponse)
    assert bye.error_code == 0
    again = call(addr, LeaveGroupRequest[0](group_id="old", member_id=j.member_id), LeaveGroupResponse)
    assert again.error_code == UNKNOWN_MEMBER_ID


def test_join_v9_needs_a_member_id_first_and_sync_v5_echoes_the_protocol(cluster: EmbeddedCluster) -> None:
    addr = coordinator_of(cluster, "new")
    first = join(addr, "new", 9)
    assert first.error_code == MEMBER_ID_REQUIRED and first.member_id
    j = join(addr, "new", 9, first.member_id)
    assert (j.error_code, j.protocol_type, j.protocol_name) == (0, "consumer", "range")
    assert [m.member_id for m in j.members] == [first.member_id]
    s = call(addr, SyncGroupRequest[5](group_id="new", generation_id=j.generation_id, member_id=j.member_id,
                                       group_instance_id=None, protocol_type="consumer", protocol_name="range",
                                       assignments=[]), SyncGroupResponse)
    assert (s.error_code, s.protocol_type, s.protocol_name, s.assignment) == (0, "consumer", "range", b"")
    M = LeaveGroupRequest.MemberIdentity
    bye = call(addr, LeaveGroupRequest[5](group_id="new", members=[M(member_id=j.member_id, reason="done"),
                                                                   M(member_id="ghost")]), LeaveGroupResponse)
    assert bye.error_code == 0
    assert [m.error_code for m in bye.members] == [0, UNKNOWN_MEMBER_ID]


def test_wrong_node_and_bad_session_timeout(cluster: EmbeddedCluster) -> None:
    addr = coordinator_of(cluster, "g1")
    assert join(other_node(cluster, addr), "g1", 5).error_code == NOT_COORDINATOR
    assert join(addr, "g1", 5, session=100).error_code == INVALID_SESSION_TIMEOUT
    hb = call(other_node(cluster, addr), HeartbeatRequest[4](group_id="g1", generation_id=1, member_id="m"),
              HeartbeatResponse)
    assert hb.error_code == NOT_COORDINATOR


def _commit(addr: str, group: str, version: int, offsets: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
    T = OffsetCommitRequest.OffsetCommitRequestTopic
    P = T.OffsetCommitRequestPartition
    topics = [T(name=t, partitions=[P(partition_index=p, committed_offset=o, committed_leader_epoch=-1,
                                      committed_metadata="md")])
              for (t, p), o in offsets.items()]
    req = OffsetCommitRequest[version](group_id=group, generation_id_or_member_epoch=-1, member_id="",
                                       group_instance_id=None, retention_time_ms=-1, topics=topics)
    resp = call(addr, req, OffsetCommitResponse)
    return {(t.name, p.partition_index): p.error_code for t in resp.topics for p in t.partitions}


def test_offset_commit_and_fetch_in_every_form(cluster: EmbeddedCluster) -> None:
    addr = coordinator_of(cluster, "offs")
    assert _commit(addr, "offs", 2, {("t", 0): 11, ("t", 1): 12, ("nope", 0): 1}) == {
        ("t", 0): 0, ("t", 1): 0, ("nope", 0): UNKNOWN_TOPIC_OR_PARTITION}
    assert _commit(addr, "offs", 9, {("t", 1): 13}) == {("t", 1): 0}

    FT = OffsetFetchRequest.OffsetFetchRequestTopic
    v1 = call(addr, OffsetFetchRequest[1](group_id="offs", topics=[FT(name="t", partition_indexes=[0, 1])]),
              OffsetFetchResponse)
    assert [(p.partition_index, p.committed_offset, p.metadata) for p in v1.topics[0].partitions] == [
        (0, 11, "md"), (1, 13, "md")]
    every = call(addr, OffsetFetchRequest[7](group_id="offs", topics=None, require_stable=True), OffsetFetchResponse)
    assert every.error_code == 0
    assert {(p.partition_index, p.committed_offset) for t in every.topics for p in t.partitions} == {(0, 11), (1, 13)}

    G = OffsetFetchRequest.OffsetFetchRequestGroup
    GT = G.OffsetFetchRequestTopics
    other = coordinator_of(cluster, "missing")
    multi = call(addr, OffsetFetchRequest[8](groups=[
        G(group_id="offs", topics=[GT(name="t", partition_indexes=[0])]),
        G(group_id="missing", topics=None)], require_stable=False), OffsetFetchResponse)
    by_group = {g.group_id: g for g in multi.groups}
    assert by_group["offs"].topics[0].partitions[0].committed_offset == 11
    missing = by_group["missing"]
    assert missing.error_code == (0 if other == addr else NOT_COORDINATOR) and missing.topics == []


def test_describe_and_list_groups(cluster: EmbeddedCluster) -> None:
    addr = coordinator_of(cluster, "described")
    j = join(addr, "described", 3)
    described = call(addr, DescribeGroupsRequest[5](groups=["described", "ghost-group"],
                                                    include_authorized_operations=False), DescribeGroupsResponse)
    got, ghost = described.groups
    assert (got.error_code, got.group_state, got.protocol_type) == (0, "CompletingRebalance", "consumer")
    assert [m.member_id for m in got.members] == [j.member_id]
    assert ghost.group_state == "Dead"
    assert ghost.error_code in (0, NOT_COORDINATOR)
    v6 = call(coordinator_of(cluster, "ghost-group"), DescribeGroupsRequest[6](
        groups=["ghost-group"], include_authorized_operations=False), DescribeGroupsResponse)
    assert v6.groups[0].error_code == GROUP_ID_NOT_FOUND
    listed = call(addr, ListGroupsRequest[5](states_filter=["completingrebalance"], types_filter=[]),
                  ListGroupsResponse)
    assert [(g.group_id, g.group_state, g.group_type) for g in listed.groups] == [
        ("described", "CompletingRebalance", "classic")]


def test_txn_offset_commit_outside_a_transaction_is_refused(cluster: EmbeddedCluster) -> None:
    addr = coordinator_of(cluster, "txg")
    # creates __transaction_state, so the transaction coordinator can answer for "nobody"
    call(cluster.bootstrap_servers, FindCoordinatorRequest[1](key="nobody", key_type=1), FindCoordinatorResponse)
    T = TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic
    P = T.TxnOffsetCommitRequestPartition
    req = TxnOffsetCommitRequest[3](transactional_id="nobody", group_id="txg", producer_id=4242, producer_epoch=0,
                                    generation_id=-1, member_id="", group_instance_id=None,
                                    topics=[T(name="t", partitions=[P(partition_index=0, committed_offset=5,
                                                                      committed_leader_epoch=-1,
                                                                      committed_metadata=None)])])
    resp = call(addr, req, TxnOffsetCommitResponse)
    code = resp.topics[0].partitions[0].error_code
    assert code == 49, code  # INVALID_PRODUCER_ID_MAPPING: the coordinator never heard of it
    fetched = call(addr, OffsetFetchRequest[7](group_id="txg", topics=None, require_stable=True),
                   OffsetFetchResponse)
    assert fetched.topics == []


def test_requests_during_a_load_get_load_in_progress(cluster: EmbeddedCluster) -> None:
    assert cluster.cluster is not None
    inner = cluster.cluster

    async def reload() -> int:
        partition, _leader = inner.nodes[0].group_coordinator.partition_of("loading")
        state = inner.metadata.partition(GROUP_TOPIC, partition)
        node = inner.nodes[state.leader]
        coordinator = node.group_coordinator
        coordinator.on_leadership_change([_moved(state, -1)])
        assert coordinator.runtime.state(state.partition) is None
        coordinator.on_leadership_change([state])  # leader again: the replay starts on the next loop turn
        try:
            coordinator.shard("loading")
        except Exception as exc:
            return int(getattr(exc, "errno", -1))
        return 0

    assert cluster.call(reload()) == COORDINATOR_LOAD_IN_PROGRESS
    addr = coordinator_of(cluster, "loading")
    assert _commit(addr, "loading", 8, {("t", 0): 1}) == {("t", 0): 0}


def _moved(state: Any, leader: int) -> Any:
    from dataclasses import replace

    return replace(state, leader=leader)
