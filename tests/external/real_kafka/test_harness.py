"""The harness itself: a real cluster starts, answers, and a node killed with -9 comes back on its own log."""

from __future__ import annotations

from kafka_txn_broker.testing.raw_client import RawKafkaClient
from tests.external.real_kafka.conftest import RELEASE
from tests.support.real_kafka import KafkaCluster, UpstreamTool


def test_a_real_cluster_answers_upstreams_tool(real_kafka: KafkaCluster, upstream: UpstreamTool) -> None:
    run = upstream.run("--bootstrap-server", real_kafka.bootstrap_servers, "list")
    assert run.returncode == 0, run.stderr
    assert run.stdout.split()[:4] == ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
    assert real_kafka.version == RELEASE


def test_a_killed_node_restarts_with_its_topic(real_kafka3: KafkaCluster) -> None:
    with RawKafkaClient(real_kafka3.nodes[1].address) as client:
        client.create_topic("harness", 3, 3)
    real_kafka3.kill(2)
    assert not real_kafka3.nodes[2].running
    real_kafka3.restart(2)
    with RawKafkaClient(real_kafka3.nodes[2].address) as client:
        leaders = client.partition_leaders("harness")
    assert sorted(leaders) == [0, 1, 2]
