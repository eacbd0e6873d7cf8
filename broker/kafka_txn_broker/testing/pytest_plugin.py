"""pytest plugin (pytest11 entry point): a `kafka_cluster` fixture backed by the embedded broker.

Use in any project's tests:

    def test_roundtrip(kafka_cluster):
        producer = confluent_kafka.Producer({"bootstrap.servers": kafka_cluster.bootstrap_servers})

Options: `--kafka-nodes N` (default 3). Mark a test with
`@pytest.mark.kafka_config({"num.partitions": 6})` to pass broker properties.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from kafka_txn_broker.embedded import EmbeddedCluster


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kafka_txn_broker")
    group.addoption("--kafka-nodes", type=int, default=3, help="nodes of the embedded kafka_cluster fixture")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "kafka_config(dict): broker properties for the kafka_cluster fixture")


@pytest.fixture
def kafka_cluster(request: pytest.FixtureRequest,
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    """A fresh embedded Kafka cluster for one test, stopped afterwards."""
    from kafka_txn_broker.formats.messages import kafka_python

    kafka_python.load()  # first, so that the user's test run shows none of kafka-python's schema warnings
    from kafka_txn_broker.embedded import EmbeddedCluster

    marker = request.node.get_closest_marker("kafka_config")
    config: dict[str, Any] = dict(marker.args[0]) if marker and marker.args else {}
    nodes = int(request.config.getoption("--kafka-nodes"))
    with EmbeddedCluster(nodes=nodes, data_dir=tmp_path_factory.mktemp("kafka"), config=config) as cluster:
        yield cluster
