"""Details of Apache Kafka's answers that the differential suite (tests/external/fidelity) found the embedded
broker getting wrong, pinned here without a JVM. Expected values: what real Kafka 4.4.0 answered."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.formats.messages import (
    DescribeProducersRequest,
    DescribeProducersResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
)
from kafka_txn_broker.testing.raw_client import RawKafkaClient


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RawKafkaClient]:
    with EmbeddedCluster(nodes=1, data_dir=tmp_path_factory.mktemp("answers"),
                         config={"kafka.version.emulate": "4.4"}) as cluster, \
            RawKafkaClient(cluster.bootstrap_servers) as raw:
        raw.broker_count()
        yield raw


def test_find_coordinator_says_none_on_success(client: RawKafkaClient) -> None:
    single = client.send(FindCoordinatorRequest[3](key="app", key_type=1), 3, response_class=FindCoordinatorResponse)
    batched = client.send(FindCoordinatorRequest[6](key_type=1, coordinator_keys=["app"]), 6,
                          response_class=FindCoordinatorResponse)
    assert (single.error_code, single.error_message) == (0, "NONE")
    assert (batched.coordinators[0].error_code, batched.coordinators[0].error_message) == (0, "")


def test_describe_producers_of_an_unknown_topic_carries_the_errors_text(client: RawKafkaClient) -> None:
    T = DescribeProducersRequest.TopicRequest
    answer = client.send(DescribeProducersRequest[0](topics=[T(name="missing", partition_indexes=[0])]), 0,
                         response_class=DescribeProducersResponse)
    p = answer.topics[0].partitions[0]
    assert (p.error_code, p.error_message) == (3, "This server does not host this topic-partition.")


def test_metadata_v13_is_served(client: RawKafkaClient) -> None:
    answer = client.send(MetadataRequest[13](topics=[], allow_auto_topic_creation=False,
                                             include_topic_authorized_operations=False), 13,
                         response_class=MetadataResponse)
    assert answer.error_code == 0 and answer.brokers
