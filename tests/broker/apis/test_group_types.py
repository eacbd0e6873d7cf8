"""A group id names one group of one type, whichever API looks it up: the describe APIs of the other types
answer GROUP_ID_NOT_FOUND with Kafka's texts ("Group g is not a share group.", "Group g not found.", from
Kafka's GroupMetadataManager), and ListGroups lists every type with its protocol type."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from kafka.protocol.admin import DescribeGroupsRequest, DescribeGroupsResponse, ListGroupsRequest, ListGroupsResponse
from kafka.protocol.consumer import OffsetCommitRequest, OffsetCommitResponse
from kafka.protocol.metadata import FindCoordinatorRequest, FindCoordinatorResponse

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.formats.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)
from tests.broker.wire import roundtrip

NOT_READY = {14, 15, 16}  # COORDINATOR_LOAD_IN_PROGRESS / NOT_AVAILABLE / NOT_COORDINATOR while it comes up


@pytest.fixture(scope="module")
def address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    config = {"offsets.topic.num.partitions": 1, "group.share.heartbeat.interval.ms": 500,
              "group.share.min.heartbeat.interval.ms": 500}
    with EmbeddedCluster(nodes=1, data_dir=tmp_path_factory.mktemp("types"), config=config) as c:
        c.create_topic("t", 1, 1)
        bs = c.bootstrap_servers
        # FindCoordinator creates __consumer_offsets; its partition loads on the next turns of the loop.
        find = roundtrip(bs, FindCoordinatorRequest[4](key_type=0, coordinator_keys=["g"]), FindCoordinatorResponse)
        assert find.coordinators[0].error_code == 0
        _until_ready(bs, ConsumerGroupHeartbeatRequest[1](
            group_id="consumer-g", member_id="m-1", member_epoch=0, instance_id=None, rack_id=None,
            rebalance_timeout_ms=30_000, subscribed_topic_names=["t"], subscribed_topic_regex=None,
            server_assignor=None, topic_partitions=[]), ConsumerGroupHeartbeatResponse)
        _until_ready(bs, ShareGroupHeartbeatRequest[1](
            group_id="share-g", member_id="m-2", member_epoch=0, rack_id=None, subscribed_topic_names=["t"]),
            ShareGroupHeartbeatResponse)
        # A simple (generation -1) commit makes an Empty classic group.
        P = OffsetCommitRequest[8].OffsetCommitRequestTopic.OffsetCommitRequestPartition
        commit = OffsetCommitRequest[8](group_id="classic-g", generation_id_or_member_epoch=-1, member_id="",
                                        group_instance_id=None, topics=[OffsetCommitRequest[8].OffsetCommitRequestTopic(
                                            name="t", partitions=[P(partition_index=0, committed_offset=1,
                                                                    committed_leader_epoch=-1,
                                                                    committed_metadata="")])])
        assert roundtrip(bs, commit, OffsetCommitResponse).topics[0].partitions[0].error_code == 0
        yield bs


def _until_ready(address: str, req: Any, response_cls: Any) -> None:
    deadline = time.monotonic() + 20
    while (resp := roundtrip(address, req, response_cls)).error_code in NOT_READY:
        assert time.monotonic() < deadline, resp
        time.sleep(0.05)
    assert resp.error_code == 0, resp


GROUPS = ["classic-g", "consumer-g", "share-g", "nobody"]


def _expected(kind: str) -> list[tuple[int, str | None]]:
    return [(0, None) if g == f"{kind}-g" else
            (69, "Group nobody not found." if g == "nobody" else f"Group {g} is not a {kind} group.") for g in GROUPS]


def test_share_group_describe(address: str) -> None:
    groups = roundtrip(address, ShareGroupDescribeRequest[1](group_ids=GROUPS, include_authorized_operations=False),
                       ShareGroupDescribeResponse).groups
    assert [(g.error_code, g.error_message) for g in groups] == _expected("share")


def test_consumer_group_describe(address: str) -> None:
    groups = roundtrip(address, ConsumerGroupDescribeRequest[1](group_ids=GROUPS, include_authorized_operations=False),
                       ConsumerGroupDescribeResponse).groups
    assert [(g.error_code, g.error_message) for g in groups] == _expected("consumer")


def test_describe_groups_v6_names_the_problem_and_older_versions_see_a_dead_group(address: str) -> None:
    v6 = roundtrip(address, DescribeGroupsRequest[6](groups=GROUPS, include_authorized_operations=False),
                   DescribeGroupsResponse).groups
    assert [(g.error_code, g.error_message) for g in v6] == _expected("classic")
    v5 = roundtrip(address, DescribeGroupsRequest[5](groups=GROUPS, include_authorized_operations=False),
                   DescribeGroupsResponse).groups
    assert [(g.error_code, g.group_state) for g in v5] == [(0, "Empty"), (0, "Dead"), (0, "Dead"), (0, "Dead")]


def test_list_groups_shows_every_type(address: str) -> None:
    listed = roundtrip(address, ListGroupsRequest[5](states_filter=[], types_filter=[]), ListGroupsResponse)
    assert listed.error_code == 0
    assert sorted((g.group_id, g.group_type, g.protocol_type) for g in listed.groups) == [
        ("classic-g", "classic", ""), ("consumer-g", "consumer", "consumer"), ("share-g", "share", "share")]
    shares = roundtrip(address, ListGroupsRequest[5](states_filter=[], types_filter=["share"]), ListGroupsResponse)
    assert [g.group_id for g in shares.groups] == ["share-g"]
