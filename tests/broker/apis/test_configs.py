"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs on the wire: what admin clients cannot send
(the cluster-default BROKER resource ""), Kafka's per-resource errors in one request, and the ACL checks."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka.protocol.admin import (
    AlterConfigsRequest,
    AlterConfigsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)

from kafka_txn_broker.configs.config_def import ConfigSource, ConfigType
from kafka_txn_broker.embedded import EmbeddedCluster
from tests.broker.security.support import broker_config, call, sasl_plain_socket
from tests.broker.wire import roundtrip

TOPIC, BROKER, BROKER_LOGGER, GROUP = 2, 4, 8, 32
SET, DELETE = 0, 1
UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC = 3, 17
TOPIC_AUTH, GROUP_AUTH, CLUSTER_AUTH = 29, 30, 31
INVALID_CONFIG, INVALID_REQUEST = 40, 42


def describe(resources: list[tuple[int, str, list[str] | None]], synonyms: bool = False, docs: bool = False) -> Any:
    R = DescribeConfigsRequest[4]
    return R(resources=[R.DescribeConfigsResource(resource_type=t, resource_name=n, configuration_keys=keys)
                        for t, n, keys in resources], include_synonyms=synonyms, include_documentation=docs)


Ops = list[tuple[str, int, str | None]]


def incremental(resources: list[tuple[int, str, Ops]], validate_only: bool = False) -> Any:
    R = IncrementalAlterConfigsRequest[1]
    A = R.AlterConfigsResource
    return R(resources=[A(resource_type=t, resource_name=n, configs=[
        A.AlterableConfig(name=k, config_operation=op, value=v) for k, op, v in ops]) for t, n, ops in resources],
             validate_only=validate_only)


def legacy(resources: list[tuple[int, str, dict[str, str | None]]]) -> Any:
    R = AlterConfigsRequest[2]
    A = R.AlterConfigsResource
    return R(resources=[A(resource_type=t, resource_name=n, configs=[
        A.AlterableConfig(name=k, value=v) for k, v in configs.items()]) for t, n, configs in resources],
             validate_only=False)


def codes(response: Any) -> list[tuple[int, str | None]]:
    return [(r.error_code, r.error_message) for r in getattr(response, "responses", None) or response.results]


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(nodes=2, data_dir=tmp_path) as c:
        c.create_topic("t", 1, 2)
        yield c


def _address(cluster: EmbeddedCluster, node: int) -> str:
    assert cluster.cluster is not None
    return cluster.cluster.nodes[node].address


def test_cluster_default_and_per_broker_configs(cluster: EmbeddedCluster) -> None:
    assert cluster.cluster is not None
    nodes = cluster.cluster.nodes
    ok = roundtrip(_address(cluster, 0), incremental([(BROKER, "", [("min.insync.replicas", SET, "2")])]),
                   IncrementalAlterConfigsResponse)
    assert codes(ok) == [(0, None)]
    ok = roundtrip(_address(cluster, 1), incremental([(BROKER, "1", [("min.insync.replicas", SET, "3")])]),
                   IncrementalAlterConfigsResponse)
    assert codes(ok) == [(0, None)]
    assert [nodes[i].config["min.insync.replicas"] for i in (0, 1)] == [2, 3]

    (default,) = roundtrip(_address(cluster, 1), describe([(BROKER, "", None)]), DescribeConfigsResponse).results
    assert [(c.name, c.value, c.config_source) for c in default.configs] == [
        ("min.insync.replicas", "2", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)]
    (one,) = roundtrip(_address(cluster, 1), describe([(BROKER, "1", ["min.insync.replicas"])], synonyms=True,
                                                      docs=True), DescribeConfigsResponse).results
    (entry,) = one.configs
    assert (entry.value, entry.config_source, entry.config_type, entry.read_only) == (
        "3", ConfigSource.DYNAMIC_BROKER_CONFIG, ConfigType.INT, False)
    assert [(s.name, s.value, s.source) for s in entry.synonyms] == [
        ("min.insync.replicas", "3", ConfigSource.DYNAMIC_BROKER_CONFIG),
        ("min.insync.replicas", "2", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        ("min.insync.replicas", "1", ConfigSource.DEFAULT_CONFIG)]
    assert entry.documentation

    # AlterConfigs replaces the whole set: an empty one clears the cluster default.
    assert codes(roundtrip(_address(cluster, 0), legacy([(BROKER, "", {})]), AlterConfigsResponse)) == [(0, None)]
    assert [nodes[i].config["min.insync.replicas"] for i in (0, 1)] == [1, 3]


def test_each_resource_gets_its_own_error(cluster: EmbeddedCluster) -> None:
    stored = cluster.cluster.metadata.resource_configs  # type: ignore[union-attr]
    request = incremental([
        (TOPIC, "t", [("retention.ms", SET, "1000")]),
        (TOPIC, "t", [("retention.ms", SET, "2000")]),
        (TOPIC, "gone", [("retention.ms", SET, "1000")]),
        (TOPIC, "bad name", [("retention.ms", SET, "1000")]),
        (TOPIC, "", [("retention.ms", SET, "1000")]),
        (GROUP, "", [("share.isolation.level", SET, "read_committed")]),
        (GROUP, "g", [("share.isolation.level", SET, "read_committed"), ("share.isolation.level", DELETE, None)]),
        (GROUP, "h", [("share.isolation.level", SET, None)]),
        (BROKER, "1", [("min.insync.replicas", SET, "2")]),  # sent to node 0
        (BROKER, "zero", [("min.insync.replicas", SET, "2")]),
        (BROKER_LOGGER, "0", [("kafka", SET, "DEBUG")]),
        (GROUP, "ok", [("share.delivery.count.limit", SET, "3")]),
    ])
    assert codes(roundtrip(_address(cluster, 0), request, IncrementalAlterConfigsResponse)) == [
        (INVALID_REQUEST, "Each resource must appear at most once."),
        (INVALID_REQUEST, "Each resource must appear at most once."),
        (UNKNOWN_TOPIC_OR_PARTITION, "The topic 'gone' does not exist."),
        (INVALID_TOPIC, "invalid topic name 'bad name': use 1-249 characters from [a-zA-Z0-9._-]"),
        (INVALID_REQUEST, "Default topic resources are not allowed."),
        (INVALID_REQUEST, "Default group resources are not allowed."),
        (INVALID_REQUEST, "Error due to duplicate config keys"),
        (INVALID_REQUEST, "Null value not supported for : share.isolation.level"),
        (INVALID_REQUEST, "Unexpected broker id, expected 0, but received 1"),
        (INVALID_REQUEST, "Node id must be an integer, but it is: zero"),
        (INVALID_CONFIG, "Logger kafka does not exist!"),  # BROKER_LOGGER: no log4j "kafka" logger here
        (0, None),
    ]
    assert stored(TOPIC, "t") == {} and stored(GROUP, "g") == {} and stored(GROUP, "ok") == {
        "share.delivery.count.limit": "3"}

    results = roundtrip(_address(cluster, 0), describe([(TOPIC, "gone", None), (TOPIC, "bad name", None),
                                                        (GROUP, "", None), (BROKER, "1", None), (TOPIC, "t", [])]),
                        DescribeConfigsResponse).results
    assert [r.error_code for r in results] == [UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC, INVALID_REQUEST,
                                               INVALID_REQUEST, 0]
    assert results[3].error_message == "Unexpected broker id, expected 0 or empty string, but received 1"
    assert len(results[4].configs) > 30  # no keys: every topic config


def test_validate_only_writes_nothing(cluster: EmbeddedCluster) -> None:
    metadata_log = cluster.data_dir / "cluster-metadata.jsonl"
    before = metadata_log.read_bytes()
    request = incremental([(TOPIC, "t", [("retention.ms", SET, "1000")]), (GROUP, "g", [("share.auto.offset.reset",
                                                                                          SET, "earliest")])],
                          validate_only=True)
    assert codes(roundtrip(_address(cluster, 0), request, IncrementalAlterConfigsResponse)) == [(0, None), (0, None)]
    assert metadata_log.read_bytes() == before


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    cfg = broker_config("SASL_PLAINTEXT", **{
        "authorizer.class.name": "acl", "super.users": "User:admin",
        "authorizer.acls": ["User:alice ALLOW DescribeConfigs Topic orders",
                            "User:alice ALLOW AlterConfigs Group g- PREFIXED"]})
    with EmbeddedCluster(nodes=1, data_dir=tmp_path_factory.mktemp("configs-acl"), config=cfg) as cluster:
        cluster.create_topic("orders", 1, 1)
        yield cluster


def _as(cluster: EmbeddedCluster, user: str, request: Any, response: Any) -> list[int]:
    with sasl_plain_socket(cluster.bootstrap_servers, user) as s:
        return [code for code, _m in codes(call(s, request, response))]


def test_describe_configs_needs_describe_configs(secured: EmbeddedCluster) -> None:
    request = describe([(TOPIC, "orders", None), (BROKER, "0", None), (GROUP, "g-1", None), (GROUP, "other", None)])
    assert _as(secured, "bob", request, DescribeConfigsResponse) == [TOPIC_AUTH, CLUSTER_AUTH, GROUP_AUTH, GROUP_AUTH]
    # AlterConfigs implies DescribeConfigs (the group), as in Kafka
    assert _as(secured, "alice", request, DescribeConfigsResponse) == [0, CLUSTER_AUTH, 0, GROUP_AUTH]
    assert _as(secured, "admin", request, DescribeConfigsResponse) == [0, 0, 0, 0]


def test_alter_configs_needs_alter_configs(secured: EmbeddedCluster) -> None:
    metadata = secured.cluster.metadata  # type: ignore[union-attr]
    request = incremental([(TOPIC, "orders", [("retention.ms", SET, "1000")]),
                           (BROKER, "", [("message.max.bytes", SET, "2000")]),
                           (GROUP, "g-1", [("share.delivery.count.limit", SET, "3")])])
    assert _as(secured, "bob", request, IncrementalAlterConfigsResponse) == [TOPIC_AUTH, CLUSTER_AUTH, GROUP_AUTH]
    assert _as(secured, "alice", request, IncrementalAlterConfigsResponse) == [TOPIC_AUTH, CLUSTER_AUTH, 0]
    assert metadata.resource_configs(TOPIC, "orders") == {} and metadata.resource_configs(BROKER, "") == {}
    assert metadata.resource_configs(GROUP, "g-1") == {"share.delivery.count.limit": "3"}
    assert _as(secured, "alice", legacy([(TOPIC, "orders", {"retention.ms": "5"})]), AlterConfigsResponse) == [
        TOPIC_AUTH]


def test_create_topics_validates_and_returns_the_topics_configs(cluster: EmbeddedCluster) -> None:
    R = CreateTopicsRequest[7]
    T = R.CreatableTopic

    def create(name: str, configs: dict[str, str | None]) -> Any:
        topic = T(name=name, num_partitions=1, replication_factor=1, assignments=[],
                  configs=[T.CreatableTopicConfig(name=k, value=v) for k, v in configs.items()])
        (result,) = roundtrip(_address(cluster, 0), R(topics=[topic], timeout_ms=5000, validate_only=False),
                              CreateTopicsResponse).topics
        return result

    refused = create("n1", {"retention.ms": None})
    assert (refused.error_code, refused.error_message) == (
        40, "Null value not supported for topic configs: retention.ms")
    assert "n1" not in cluster.cluster.metadata.topics  # type: ignore[union-attr]
    created = {c.name: (c.value, c.config_source, c.read_only) for c in create("n2", {"retention.ms": "1000"}).configs}
    assert created["retention.ms"] == ("1000", ConfigSource.DYNAMIC_TOPIC_CONFIG, False)
    assert created["segment.bytes"] == ("1073741824", ConfigSource.DEFAULT_CONFIG, False)


def test_internal_topics_describe_kafkas_settings_for_them(cluster: EmbeddedCluster) -> None:
    cluster.call_soon(cluster.cluster.ensure_internal_topic, "__transaction_state", 1, 2)  # type: ignore[union-attr]
    (result,) = roundtrip(_address(cluster, 0), describe([(TOPIC, "__transaction_state", ["segment.bytes",
                                                                                          "cleanup.policy"])]),
                          DescribeConfigsResponse).results
    assert sorted((c.name, c.value, c.config_source) for c in result.configs) == [
        ("cleanup.policy", "compact", ConfigSource.DYNAMIC_TOPIC_CONFIG),
        ("segment.bytes", "104857600", ConfigSource.DYNAMIC_TOPIC_CONFIG)]  # transaction.state.log.segment.bytes
