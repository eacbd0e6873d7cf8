"""BROKER_LOGGER (KIP-412) on the wire, as `kafka-configs.sh --entity-type broker-loggers` uses it: a broker's
loggers and their levels through DescribeConfigs, changed through IncrementalAlterConfigs, refused by the
legacy AlterConfigs, guarded by the CLUSTER permissions.

Expected values come from Kafka's ConfigHelper (describe), RuntimeLoggerManager and ConfigAdminManager
(alter) and LogLevelConfig (the six level names); the loggers are Python's, named as the project documents
(root as "root", Kafka's TRACE as Python level 5, WARN as WARNING, FATAL as CRITICAL)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from kafka.protocol.admin import (
    AlterConfigsResponse,
    DescribeConfigsResponse,
    IncrementalAlterConfigsResponse,
)

from kafka_txn_broker.embedded import EmbeddedCluster
from tests.broker.apis.test_configs import codes, describe, incremental, legacy
from tests.broker.security.support import broker_config, call, sasl_plain_socket
from tests.broker.wire import roundtrip

BROKER_LOGGER = 8
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
INVALID_CONFIG, CLUSTER_AUTH, INVALID_REQUEST = 40, 31, 42
DYNAMIC_BROKER_LOGGER_CONFIG = 6
PACKAGE = "kafka_txn_broker"
REPLICA_MANAGER = "kafka_txn_broker.replica.replica_manager"
VALID = "DEBUG, ERROR, FATAL, INFO, TRACE, WARN"  # LogLevelConfig.VALID_LOG_LEVELS, sorted as Kafka prints them


def _package_loggers() -> list[logging.Logger]:
    return [logging.getLogger(), *(logger for name, logger in list(logging.Logger.manager.loggerDict.items())
                                   if isinstance(logger, logging.Logger)
                                   and (name == PACKAGE or name.startswith(PACKAGE + ".")))]


@pytest.fixture(autouse=True)
def restore_levels() -> Iterator[None]:
    """The loggers are process-wide: put every level back after each test."""
    saved = [(logger, logger.level) for logger in _package_loggers()]
    yield
    for logger, level in saved:
        logger.setLevel(level)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(nodes=2, data_dir=tmp_path_factory.mktemp("broker-logger")) as c:
        yield c


def _address(cluster: EmbeddedCluster, node: int = 0) -> str:
    assert cluster.cluster is not None
    return cluster.cluster.nodes[node].address


def _describe(cluster: EmbeddedCluster, name: str = "0", keys: list[str] | None = None, node: int = 0) -> Any:
    (result,) = roundtrip(_address(cluster, node), describe([(BROKER_LOGGER, name, keys)], synonyms=True, docs=True),
                          DescribeConfigsResponse).results
    return result


def _levels(cluster: EmbeddedCluster) -> dict[str, str]:
    result = _describe(cluster)
    assert result.error_code == 0
    return {c.name: c.value for c in result.configs}


def _alter(cluster: EmbeddedCluster, ops: list[tuple[str, int, str | None]], name: str = "0",
           validate_only: bool = False) -> list[tuple[int, str | None]]:
    return codes(roundtrip(_address(cluster), incremental([(BROKER_LOGGER, name, ops)], validate_only),
                           IncrementalAlterConfigsResponse))


def test_describe_lists_every_logger_with_its_effective_level(cluster: EmbeddedCluster) -> None:
    logging.getLogger().setLevel(logging.INFO)
    logging.getLogger(PACKAGE).setLevel(logging.WARNING)
    logging.getLogger("kafka_txn_broker.txn").setLevel(logging.CRITICAL)
    logging.getLogger("kafka_txn_broker.share.share_coordinator").setLevel(logging.NOTSET)
    logging.getLogger(REPLICA_MANAGER).setLevel(logging.ERROR)

    result = _describe(cluster)
    assert (result.error_code, result.resource_type, result.resource_name) == (0, BROKER_LOGGER, "0")
    expected_names = {"root"} | {logger.name for logger in _package_loggers()[1:]}
    assert {c.name for c in result.configs} == expected_names
    assert len(result.configs) == len(expected_names)
    for entry in result.configs:  # as Kafka's ConfigHelper builds them
        assert (entry.config_source, entry.read_only, entry.is_sensitive, entry.synonyms) == (
            DYNAMIC_BROKER_LOGGER_CONFIG, False, False, [])
    levels = {c.name: c.value for c in result.configs}
    assert levels["root"] == "INFO"
    assert levels[PACKAGE] == "WARN"
    assert levels["kafka_txn_broker.share.share_coordinator"] == "WARN"  # unset: its ancestor's level
    assert levels["kafka_txn_broker.txn.coordinator"] == "FATAL"
    assert levels[REPLICA_MANAGER] == "ERROR"

    (only,) = _describe(cluster, keys=[REPLICA_MANAGER]).configs
    assert (only.name, only.value) == (REPLICA_MANAGER, "ERROR")


def test_describe_names_the_receiving_broker(cluster: EmbeddedCluster) -> None:
    assert _describe(cluster, "1", node=1).error_code == 0
    for name, message in [("", "Broker id must not be empty"),
                          ("1", "Unexpected broker id, expected 0 but received 1"),
                          ("zero", "Broker id must be an integer, but it is: zero")]:
        result = _describe(cluster, name)
        assert (result.error_code, result.error_message, result.configs) == (INVALID_REQUEST, message, [])


def test_set_then_delete_a_loggers_level(cluster: EmbeddedCluster) -> None:
    logging.getLogger(PACKAGE).setLevel(logging.WARNING)
    logging.getLogger(REPLICA_MANAGER).setLevel(logging.NOTSET)

    assert _alter(cluster, [(REPLICA_MANAGER, SET, "DEBUG")]) == [(0, None)]
    assert logging.getLogger(REPLICA_MANAGER).level == logging.DEBUG
    assert _levels(cluster)[REPLICA_MANAGER] == "DEBUG"
    assert logging.getLogger(REPLICA_MANAGER).isEnabledFor(logging.DEBUG)

    assert _alter(cluster, [(REPLICA_MANAGER, SET, "TRACE")]) == [(0, None)]
    assert _levels(cluster)[REPLICA_MANAGER] == "TRACE"
    assert logging.getLogger(REPLICA_MANAGER).isEnabledFor(5) and not logging.getLogger(
        REPLICA_MANAGER).isEnabledFor(4)

    assert _alter(cluster, [(REPLICA_MANAGER, DELETE, None)]) == [(0, None)]
    assert logging.getLogger(REPLICA_MANAGER).level == logging.NOTSET
    assert _levels(cluster)[REPLICA_MANAGER] == "WARN"  # its parent's again

    # the root logger and the package logger can be set; levels apply to the loggers below them
    assert _alter(cluster, [("root", SET, "ERROR"), (PACKAGE, SET, "FATAL")]) == [(0, None)]
    assert (logging.getLogger().level, logging.getLogger(PACKAGE).level) == (logging.ERROR, logging.CRITICAL)
    assert _levels(cluster)[REPLICA_MANAGER] == "FATAL"


def test_validate_only_changes_nothing(cluster: EmbeddedCluster) -> None:
    logging.getLogger(REPLICA_MANAGER).setLevel(logging.INFO)
    assert _alter(cluster, [(REPLICA_MANAGER, SET, "DEBUG"), (PACKAGE, SET, "TRACE")], validate_only=True) == [
        (0, None)]
    assert logging.getLogger(REPLICA_MANAGER).level == logging.INFO
    assert _levels(cluster)[REPLICA_MANAGER] == "INFO"
    # and the checks still run
    assert _alter(cluster, [(REPLICA_MANAGER, SET, "LOUD")], validate_only=True)[0][0] == INVALID_CONFIG


@pytest.mark.parametrize(("ops", "error"), [
    ([(REPLICA_MANAGER, SET, "debug")],
     (INVALID_CONFIG, f"Cannot set the log level of {REPLICA_MANAGER} to debug as it is not a supported log level. "
                      f"Valid log levels are {VALID}")),
    ([(REPLICA_MANAGER, SET, "WARNING")],
     (INVALID_CONFIG, f"Cannot set the log level of {REPLICA_MANAGER} to WARNING as it is not a supported log "
                      f"level. Valid log levels are {VALID}")),
    ([("kafka.server.ReplicaManager", SET, "DEBUG")],
     (INVALID_CONFIG, "Logger kafka.server.ReplicaManager does not exist!")),
    ([("kafka_txn_broker.no_such_module", DELETE, None)],
     (INVALID_CONFIG, "Logger kafka_txn_broker.no_such_module does not exist!")),
    ([("asyncio", SET, "DEBUG")], (INVALID_CONFIG, "Logger asyncio does not exist!")),  # not the broker's
    ([("root", DELETE, None)], (INVALID_REQUEST, "Removing the log level of the root logger is not allowed")),
    ([(REPLICA_MANAGER, APPEND, "DEBUG")],
     (INVALID_REQUEST, "APPEND operation is not allowed for the BROKER_LOGGER resource")),
    ([(REPLICA_MANAGER, SUBTRACT, "DEBUG")],
     (INVALID_REQUEST, "SUBTRACT operation is not allowed for the BROKER_LOGGER resource")),
    ([(REPLICA_MANAGER, 7, "DEBUG")],
     (INVALID_REQUEST, "Unknown operation type 7 is not allowed for the BROKER_LOGGER resource")),
    ([(REPLICA_MANAGER, SET, None)], (INVALID_REQUEST, f"Null value not supported for : {REPLICA_MANAGER}")),
    ([(REPLICA_MANAGER, SET, "DEBUG"), (REPLICA_MANAGER, DELETE, None)],
     (INVALID_REQUEST, "Error due to duplicate config keys")),
    # a good change before a bad one is not applied either: every change is checked first
    ([(PACKAGE, SET, "DEBUG"), (REPLICA_MANAGER, SET, "VERBOSE")],
     (INVALID_CONFIG, f"Cannot set the log level of {REPLICA_MANAGER} to VERBOSE as it is not a supported log "
                      f"level. Valid log levels are {VALID}")),
])
def test_invalid_changes_are_refused_and_change_nothing(cluster: EmbeddedCluster, ops: list[Any],
                                                        error: tuple[int, str]) -> None:
    logging.getLogger(PACKAGE).setLevel(logging.INFO)
    logging.getLogger(REPLICA_MANAGER).setLevel(logging.NOTSET)
    before = _levels(cluster)
    assert _alter(cluster, ops) == [error]
    assert _levels(cluster) == before
    assert (logging.getLogger(PACKAGE).level, logging.getLogger(REPLICA_MANAGER).level) == (logging.INFO,
                                                                                            logging.NOTSET)


def test_alter_names_the_receiving_broker(cluster: EmbeddedCluster) -> None:
    ops = [(REPLICA_MANAGER, SET, "DEBUG")]
    assert _alter(cluster, ops, name="1") == [(INVALID_REQUEST, "Unexpected node id. Expected 0, but received 1")]
    assert _alter(cluster, ops, name="") == [(INVALID_REQUEST, "Node id must be an integer, but it is: ")]
    assert _alter(cluster, ops, name="zero") == [(INVALID_REQUEST, "Node id must be an integer, but it is: zero")]
    assert logging.getLogger(REPLICA_MANAGER).level != logging.DEBUG


def test_legacy_alter_configs_refuses_broker_logger(cluster: EmbeddedCluster) -> None:
    logging.getLogger(REPLICA_MANAGER).setLevel(logging.NOTSET)
    response = roundtrip(_address(cluster), legacy([(BROKER_LOGGER, "0", {REPLICA_MANAGER: "DEBUG"})]),
                         AlterConfigsResponse)
    assert codes(response) == [(INVALID_REQUEST, "Unknown resource type 8")]
    assert logging.getLogger(REPLICA_MANAGER).level == logging.NOTSET


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    cfg = broker_config("SASL_PLAINTEXT", **{
        "authorizer.class.name": "acl", "super.users": "User:admin",
        "authorizer.acls": ["User:alice ALLOW AlterConfigs Cluster kafka-cluster",
                            "User:bob ALLOW AlterConfigs Topic kafka-cluster"]})
    with EmbeddedCluster(nodes=1, data_dir=tmp_path_factory.mktemp("broker-logger-acl"), config=cfg) as cluster:
        yield cluster


def _as(cluster: EmbeddedCluster, user: str, request: Any, response: Any) -> list[int]:
    with sasl_plain_socket(cluster.bootstrap_servers, user) as s:
        return [code for code, _m in codes(call(s, request, response))]


def test_broker_logger_needs_the_cluster_permissions(secured: EmbeddedCluster) -> None:
    logging.getLogger(REPLICA_MANAGER).setLevel(logging.NOTSET)
    read = describe([(BROKER_LOGGER, "0", None)])
    # the permission is checked before the node id, as in Kafka's RuntimeLoggerManager
    write = incremental([(BROKER_LOGGER, "0", [(REPLICA_MANAGER, SET, "DEBUG")]),
                         (BROKER_LOGGER, "7", [(REPLICA_MANAGER, SET, "DEBUG")])])
    assert _as(secured, "bob", read, DescribeConfigsResponse) == [CLUSTER_AUTH]
    assert _as(secured, "bob", write, IncrementalAlterConfigsResponse) == [CLUSTER_AUTH, CLUSTER_AUTH]
    assert logging.getLogger(REPLICA_MANAGER).level == logging.NOTSET
    # AlterConfigs on the cluster implies DescribeConfigs on it
    assert _as(secured, "alice", read, DescribeConfigsResponse) == [0]
    assert _as(secured, "alice", write, IncrementalAlterConfigsResponse) == [0, INVALID_REQUEST]
    assert logging.getLogger(REPLICA_MANAGER).level == logging.DEBUG
    assert _as(secured, "admin", read, DescribeConfigsResponse) == [0]
