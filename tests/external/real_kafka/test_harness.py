"""The harness itself: a real cluster starts, answers, and a node killed with -9 comes back on its own log."""

from __future__ import annotations

from pathlib import Path

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


def test_extra_listeners_are_bound_advertised_and_mapped_on_every_node(kafka_libs: Path, tmp_path: Path) -> None:
    """What test_secured_real.py's broker is started with: a named listener of its own port on each node."""
    cluster = KafkaCluster(kafka_libs, tmp_path, nodes=2, listeners={"SASL": "SASL_PLAINTEXT"},
                           config={"sasl.enabled.mechanisms": "GSSAPI"}, jvm_options=["-Dsome.option=1"])
    node = cluster.nodes[2]
    node.write_properties("1@127.0.0.1:1", cluster.config)
    props = dict(line.split("=", 1) for line in node.properties_file.read_text().splitlines())
    sasl = node.extra_ports["SASL"]
    assert props["listeners"] == (f"PLAINTEXT://127.0.0.1:{node.port},CONTROLLER://127.0.0.1:{node.controller_port},"
                                  f"SASL://127.0.0.1:{sasl}")
    assert props["advertised.listeners"] == f"PLAINTEXT://127.0.0.1:{node.port},SASL://localhost:{sasl}"
    assert props["listener.security.protocol.map"] == "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL:SASL_PLAINTEXT"
    assert props["sasl.enabled.mechanisms"] == "GSSAPI"
    assert cluster.bootstrap("SASL") == f"localhost:{cluster.nodes[1].extra_ports['SASL']},localhost:{sasl}"
    ports = [p for n in cluster.nodes.values() for p in (n.port, n.controller_port, *n.extra_ports.values())]
    assert len(set(ports)) == 6
    assert cluster.jvm_options == ["-Dsome.option=1"]
