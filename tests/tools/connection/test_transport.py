"""connection/transport.py over the embedded 3-node cluster: a request any broker can answer (Metadata,
FindCoordinator) still gets its answer when the broker kafka-python picks for it is down, or listens without
answering (as one restarting does while it recovers its logs). kafka-python picks at random among the brokers
the last Metadata named, and a broker killed a moment ago is still named: without going to the next broker, one
broker of three down failed a third of the monitor's scans, as "the cluster is unreachable" or as a timeout
(seen on real Kafka: tests/external/real_kafka/test_monitor_faults_real.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_tools.batches import iter_batches
from kafka_txn_tools.connection import wire
from kafka_txn_tools.connection.client import AdminClient
from kafka_txn_tools.connection.config import ClientSettings
from kafka_txn_tools.errors import ConnectionFailed
from kafka_txn_tools.models import TopicPartition
from tests.support.tcp_proxy import BLACKHOLE, TcpProxy


def test_a_request_for_any_broker_goes_to_the_next_when_the_one_picked_is_down(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with EmbeddedCluster(nodes=3, data_dir=tmp_path / "kafka") as cluster, \
            AdminClient(ClientSettings(bootstrap_servers=cluster.bootstrap_servers), timeout_ms=5000) as admin:
        assert {b.node_id for b in admin.metadata().brokers} == set(cluster.node_ids)
        down = cluster.node_ids[0]
        cluster.stop_node(down, clean=False)
        # kafka-python's random pick lands on the broker that is down (still in its last Metadata).
        monkeypatch.setattr(admin._manager, "least_loaded_node", lambda: down)
        for _ in range(3):
            info = admin.metadata()
            assert {b.node_id for b in info.brokers} <= set(cluster.node_ids)
        found, failed = admin._run(admin._find_coordinators, ["some-transactional-id"])
        assert "some-transactional-id" in {**found, **failed}  # a broker answered (found, or an error code)


def test_every_broker_down_still_fails_naming_the_cluster(tmp_path: Path) -> None:
    with EmbeddedCluster(nodes=3, data_dir=tmp_path / "kafka") as cluster, \
            AdminClient(ClientSettings(bootstrap_servers=cluster.bootstrap_servers), timeout_ms=5000) as admin:
        for node in cluster.node_ids:
            cluster.stop_node(node, clean=False)
        with pytest.raises(ConnectionFailed, match="unreachable"):
            admin.metadata()


@pytest.fixture
def proxied(tmp_path: Path) -> Iterator[tuple[EmbeddedCluster, dict[int, TcpProxy]]]:
    """3 brokers that bind 127.0.0.2 but advertise 127.0.0.1, where a proxy to each listens."""
    with EmbeddedCluster(nodes=3, data_dir=tmp_path / "kafka", config={"host": "127.0.0.2"}) as cluster, \
            ExitStack() as proxies:
        assert cluster.cluster is not None
        by_node = {}
        for node_id, node in cluster.cluster.nodes.items():
            by_node[node_id] = proxies.enter_context(TcpProxy(("127.0.0.1", node.port), ("127.0.0.2", node.port)))
            node.host = "127.0.0.1"  # what Metadata answers
        yield cluster, by_node


def test_a_request_for_any_broker_goes_to_another_when_the_one_picked_does_not_answer(
        proxied: tuple[EmbeddedCluster, dict[int, TcpProxy]], monkeypatch: pytest.MonkeyPatch) -> None:
    cluster, proxies = proxied
    bootstrap = ",".join(p.address for p in proxies.values())
    with AdminClient(ClientSettings(bootstrap_servers=bootstrap), timeout_ms=1500) as admin:
        assert {b.node_id for b in admin.metadata().brokers} == set(proxies)
        for node in proxies:  # connected to each (a new connection would wait for its set-up timeout instead)
            admin.send(wire.metadata_request([]), node)
        silent = cluster.node_ids[0]
        proxies[silent].mode = BLACKHOLE  # it takes connections and requests, and answers nothing
        monkeypatch.setattr(admin._manager, "least_loaded_node", lambda: silent)
        began = time.monotonic()
        assert {b.node_id for b in admin.metadata().brokers} == set(proxies)  # the next broker answered
        assert time.monotonic() - began < 2 * 1.5  # one timeout, then the answer

        for p in proxies.values():  # the whole cluster dark: two timeouts, not one per broker
            p.mode = BLACKHOLE
        still_connected = cluster.node_ids[1]
        monkeypatch.setattr(admin._manager, "least_loaded_node", lambda: still_connected)
        began = time.monotonic()
        with pytest.raises(ConnectionFailed, match="timed out|no answer within"):
            admin.metadata()
        assert 2 * 1.5 <= time.monotonic() - began < 3 * 1.5


def test_a_fan_out_of_more_requests_than_kafka_python_keeps_in_flight_waits_its_turn(tmp_path: Path) -> None:
    """One Fetch per partition, 24 partitions led by one broker: kafka-python fails a send beyond its in-flight
    limit (5) at once, as if the broker were down, so without a turn to wait for 19 partitions came back
    "unreachable" (a find-hanging with many hangs lost the coordinator's decisions on them)."""
    from kafka_txn_broker.testing.raw_client import RawKafkaClient
    from tests.support.real_kafka.hang import seed_idempotent

    with EmbeddedCluster(nodes=1, data_dir=tmp_path / "kafka") as cluster, \
            AdminClient(ClientSettings(bootstrap_servers=cluster.bootstrap_servers), timeout_ms=5000) as admin:
        with RawKafkaClient(cluster.bootstrap_servers) as raw:
            raw.create_topic("wide", 24, 1)
        seed_idempotent(cluster.bootstrap_servers, "wide", 24, producers=2)
        leader = cluster.node_ids[0]
        reads = {TopicPartition("wide", p): (leader, 0) for p in range(24)}
        data, errors = admin.read_log(reads, 1 << 20)
        assert errors == []
        assert {tp: len(list(iter_batches(raw))) for tp, raw in data.items()} == dict.fromkeys(reads, 2)
        assert admin._slots.in_flight(leader) == 0  # every slot given back


def test_a_burst_to_a_broker_that_does_not_answer_fails_together_not_four_at_a_time(
        proxied: tuple[EmbeddedCluster, dict[int, TcpProxy]], monkeypatch: pytest.MonkeyPatch) -> None:
    """Twelve Fetches to a broker cut off by the network: the first four (the in-flight limit) time out, and the
    eight waiting for their slots fail with them instead of each waiting out a timeout of its own in turn
    (a monitor's scan would take three timeouts more per broker cut off)."""
    cluster, proxies = proxied
    bootstrap = ",".join(p.address for p in proxies.values())
    with AdminClient(ClientSettings(bootstrap_servers=bootstrap), timeout_ms=1500) as admin:
        silent = cluster.node_ids[0]
        admin.send(wire.metadata_request([]), silent)  # connected: requests then wait for answers, not a connection
        proxies[silent].mode = BLACKHOLE
        sent: list[object] = []
        start = admin._start
        monkeypatch.setattr(admin, "_start", lambda request, *rest: sent.append(request) or start(request, *rest))
        reads = {TopicPartition("cut-off", p): (silent, 0) for p in range(12)}
        data, errors = admin.read_log(reads, 1 << 20)
        assert len(sent) == admin._slots.limit == 4
        assert sorted(e.api for e in errors) == ["Fetch"] * 12 and set(data) == set(reads)
        assert all(raw == b"" for raw in data.values())
