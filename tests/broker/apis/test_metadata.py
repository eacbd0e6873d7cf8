"""Metadata and DescribeCluster while a cluster stops: a connection still open after every node went offline
(as Cluster.stop() takes them offline before closing their listeners) gets a clean answer: no brokers and
Kafka's "no controller" (-1), not a handler error."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from kafka.protocol.admin import DescribeClusterRequest, DescribeClusterResponse
from kafka.protocol.metadata import MetadataRequest, MetadataResponse

from kafka_txn_broker import EmbeddedCluster
from tests.broker.wire import connect, recv_frame, send_request


@pytest.fixture
def cluster(tmp_path: Any) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(nodes=1, data_dir=tmp_path / "kafka") as c:
        yield c


def ask(s: socket.socket, req: Any, response_cls: Any) -> Any:
    send_request(s, req, 7)
    return response_cls.decode(recv_frame(s), version=req.API_VERSION, header=True)


def set_online(cluster: EmbeddedCluster, online: bool) -> None:
    assert cluster.cluster is not None
    node = cluster.cluster.nodes[0]
    cluster.call_soon(setattr, node, "online", online)


def test_a_connection_open_while_the_cluster_stops_gets_clean_answers(
        cluster: EmbeddedCluster, caplog: pytest.LogCaptureFixture) -> None:
    with connect(cluster.bootstrap_servers) as s:
        assert ask(s, MetadataRequest[12](topics=None, allow_auto_topic_creation=False,
                                          include_topic_authorized_operations=False),
                   MetadataResponse).controller_id == 0
        set_online(cluster, False)  # the first step of BrokerNode.stop()
        try:
            with caplog.at_level(logging.ERROR, logger="kafka_txn_broker"):
                meta = ask(s, MetadataRequest[12](topics=None, allow_auto_topic_creation=False,
                                                  include_topic_authorized_operations=False), MetadataResponse)
                described = ask(s, DescribeClusterRequest[0](include_cluster_authorized_operations=False),
                                DescribeClusterResponse)
        finally:
            set_online(cluster, True)
    assert (meta.controller_id, meta.brokers) == (-1, [])
    assert (described.error_code, described.controller_id, described.brokers) == (0, -1, [])
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
