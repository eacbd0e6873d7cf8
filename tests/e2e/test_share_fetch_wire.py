"""ShareFetch / ShareAcknowledge on the wire, request by request (the project's JSON-defined message
classes): share session epochs, acknowledgement errors, and the answer of a broker that does not lead.
Codes are Kafka's: INVALID_REQUEST 42, INVALID_RECORD_STATE 121, SHARE_SESSION_NOT_FOUND 122,
INVALID_SHARE_SESSION_EPOCH 123, NOT_LEADER_OR_FOLLOWER 6."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.formats.messages import (
    ShareAcknowledgeRequest,
    ShareAcknowledgeResponse,
    ShareFetchRequest,
    ShareFetchResponse,
)
from tests.broker.wire import recv_frame, send_request
from tests.e2e.share_support import produce, set_group_configs, share_partitions

GROUP, MEMBER = "wire-group", "member-1"
ACCEPT, RELEASE = 1, 2


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(nodes=3, data_dir=tmp_path) as c:
        c.create_topic("t", 1, 3)
        set_group_configs(c.bootstrap_servers, GROUP, share_auto_offset_reset="earliest")
        produce(c.bootstrap_servers, "t", 5, 1)
        yield c


class Session:
    """One connection to a broker, speaking ShareFetch / ShareAcknowledge."""

    def __init__(self, address: str, topic_id: uuid.UUID) -> None:
        host, port = address.split(":")
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.topic_id = topic_id
        self.correlation = 0

    def _call(self, req: Any, response: Any) -> Any:
        self.correlation += 1
        send_request(self.sock, req, self.correlation)
        return response.decode(recv_frame(self.sock), version=req.API_VERSION, header=True)

    def fetch(self, epoch: int, acks: list[tuple[int, int, int]] = (), partitions: bool = True) -> Any:
        R = ShareFetchRequest
        T = R.FetchTopic
        P = T.FetchPartition
        batches = [P.AcknowledgementBatch(first_offset=a, last_offset=b, acknowledge_types=[t]) for a, b, t in acks]
        topics = [T(topic_id=self.topic_id, partitions=[P(partition_index=0, acknowledgement_batches=batches)])]
        return self._call(R[1](group_id=GROUP, member_id=MEMBER, share_session_epoch=epoch, max_wait_ms=200,
                               min_bytes=1, max_bytes=1 << 20, max_records=100, batch_size=100,
                               topics=topics if partitions or acks else [], forgotten_topics_data=[]),
                          ShareFetchResponse)

    def acknowledge(self, epoch: int, acks: list[tuple[int, int, int]]) -> Any:
        R = ShareAcknowledgeRequest
        T = R.AcknowledgeTopic
        P = T.AcknowledgePartition
        return self._call(R[1](group_id=GROUP, member_id=MEMBER, share_session_epoch=epoch, topics=[T(
            topic_id=self.topic_id, partitions=[P(partition_index=0, acknowledgement_batches=[
                P.AcknowledgementBatch(first_offset=a, last_offset=b, acknowledge_types=[t]) for a, b, t in acks])])]),
            ShareAcknowledgeResponse)

    def close(self) -> None:
        self.sock.close()


def acquired(r: Any) -> list[tuple[int, int, int]]:
    return [(a.first_offset, a.last_offset, a.delivery_count) for t in r.responses for p in t.partitions
            for a in p.acquired_records]


def partition(r: Any) -> Any:
    (t,) = r.responses
    (p,) = t.partitions
    return p


def leader_and_topic_id(cluster: EmbeddedCluster) -> tuple[int, uuid.UUID]:
    assert cluster.cluster is not None
    topic = cluster.cluster.metadata.topics["t"]
    return topic.partitions[0].leader, topic.topic_id


def address(cluster: EmbeddedCluster, node: int) -> str:
    return cluster.bootstrap_servers.split(",")[node]


def test_share_session_epochs(cluster: EmbeddedCluster) -> None:
    leader, topic_id = leader_and_topic_id(cluster)
    s = Session(address(cluster, leader), topic_id)
    try:
        first = s.fetch(0)
        assert (first.error_code, acquired(first)) == (0, [(0, 4, 1)])
        assert first.acquisition_lock_timeout_ms == 30000 and partition(first).records
        assert s.fetch(2).error_code == 123  # the session expects epoch 1
        acked = s.acknowledge(1, [(0, 1, ACCEPT)])
        assert (acked.error_code, partition(acked).error_code) == (0, 0)
        wrong = s.acknowledge(2, [(0, 1, ACCEPT)])  # no longer held: INVALID_RECORD_STATE
        assert (wrong.error_code, partition(wrong).error_code) == (0, 121)
        assert s.fetch(0, acks=[(2, 2, ACCEPT)]).error_code == 42  # no acknowledgements when opening
        # Opening a new session ends the old one: what it held (2-4) is released, not counted as delivered.
        reopened = s.fetch(0)
        assert acquired(reopened) == [(2, 4, 1)]
        released = s.fetch(1, acks=[(2, 2, RELEASE)])
        assert partition(released).acknowledge_error_code == 0
        assert acquired(released) == [(2, 2, 2)]  # released, then fetched again in the same request
        closed = s.acknowledge(-1, [(2, 4, ACCEPT)])
        assert partition(closed).error_code == 0
        assert s.fetch(3).error_code == 122  # the session was closed
        assert s.acknowledge(0, []).error_code == 123  # acknowledging needs an open session
    finally:
        s.close()
    assert share_partitions(cluster, GROUP)[("t", 0)]["start"] == 5


def test_a_broker_that_does_not_lead_names_the_leader(cluster: EmbeddedCluster) -> None:
    leader, topic_id = leader_and_topic_id(cluster)
    other = (leader + 1) % 3
    s = Session(address(cluster, other), topic_id)
    try:
        r = s.fetch(0)
        p = partition(r)
        assert (p.error_code, p.current_leader.leader_id) == (6, leader)
        assert [(e.node_id, f"{e.host}:{e.port}") for e in r.node_endpoints] == [(leader, address(cluster, leader))]
    finally:
        s.close()


def test_v2_record_limit_mode_and_renew(cluster: EmbeddedCluster) -> None:
    leader, topic_id = leader_and_topic_id(cluster)
    s = Session(address(cluster, leader), topic_id)
    try:
        R = ShareFetchRequest
        T = R.FetchTopic
        first = s._call(R[2](group_id=GROUP, member_id=MEMBER, share_session_epoch=0, max_wait_ms=200, min_bytes=1,
                             max_bytes=1 << 20, max_records=2, batch_size=2, share_acquire_mode=1,
                             topics=[T(topic_id=topic_id, partitions=[T.FetchPartition(
                                 partition_index=0, acknowledgement_batches=[])])], forgotten_topics_data=[]),
                        ShareFetchResponse)
        assert acquired(first) == [(0, 1, 1)]  # record-limit mode: exactly MaxRecords, though one batch holds 5
        assert partition(s.acknowledge(1, [(0, 1, 4)])).error_code == 0  # RENEW keeps them, with a new lock
        set_group_configs(cluster.bootstrap_servers, GROUP, share_renew_acknowledge_enable="false")
        assert partition(s.acknowledge(2, [(0, 1, 4)])).error_code == 42
    finally:
        s.close()
