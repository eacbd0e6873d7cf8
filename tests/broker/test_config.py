from __future__ import annotations

from pathlib import Path

import pytest

from kafka_txn_broker.config import BrokerConfig, ConfigError


def test_defaults_are_kafkas() -> None:
    cfg = BrokerConfig()
    assert cfg["transaction.max.timeout.ms"] == 900_000
    assert cfg["producer.id.expiration.ms"] == 86_400_000
    assert cfg["transaction.state.log.num.partitions"] == 50
    assert cfg["transaction.partition.verification.enable"] is True
    assert cfg["share.coordinator.state.topic.prune.interval.ms"] == 300_000  # ShareCoordinatorConfig: 5 min
    assert cfg["share.coordinator.cold.partition.snapshot.interval.ms"] == 300_000  # ShareCoordinatorConfig: 5 min


def test_yaml_nested_and_set_overrides(tmp_path: Path) -> None:
    f = tmp_path / "b.yaml"
    f.write_text("num:\n  partitions: 6\nlog.segment.bytes: 1048576\n")
    cfg = BrokerConfig.from_sources(f, ["num.partitions=8", "transaction.partition.verification.enable=false"])
    assert cfg["num.partitions"] == 8
    assert cfg["log.segment.bytes"] == 1048576
    assert cfg["transaction.partition.verification.enable"] is False


@pytest.mark.parametrize("item, words", [
    ("num.partition=3", "unknown broker property 'num.partition'"),
    ("num.partitions=many", "is not an integer"),
    ("auto.create.topics.enable=maybe", "is not a boolean"),
    ("num.partitions", "must look like key=value"),
    # Kafka's ShareCoordinatorConfig: atLeast(1)
    ("share.coordinator.state.topic.prune.interval.ms=0", "must be at least 1"),
    ("share.coordinator.cold.partition.snapshot.interval.ms=0", "must be at least 1"),
])
def test_bad_settings_name_the_problem(item: str, words: str) -> None:
    with pytest.raises(ConfigError, match=words.replace(".", r"\.")):
        BrokerConfig.from_sources(None, [item])


def test_the_smallest_prune_interval_is_accepted() -> None:
    cfg = BrokerConfig.from_sources(None, ["share.coordinator.state.topic.prune.interval.ms=1"])
    assert cfg["share.coordinator.state.topic.prune.interval.ms"] == 1


def test_security_keys() -> None:
    cfg = BrokerConfig({"security.protocol": "sasl_ssl", "sasl": {"users": {"alice": "pw:with:colons", "bob": 1234}},
                        "authorizer.acls": ["User:alice ALLOW Read Topic t"]})
    assert cfg["security.protocol"] == "SASL_SSL"
    assert cfg["sasl.users"] == ("alice:pw:with:colons", "bob:1234")
    assert BrokerConfig.from_sources(None, ["sasl.users=a:1,b:2"])["sasl.users"] == ("a:1", "b:2")
    with pytest.raises(ConfigError, match="is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"):
        BrokerConfig({"security.protocol": "TLS"})
    with pytest.raises(ConfigError, match="quote the value for 'alice'") as err:
        BrokerConfig({"sasl.users": {"alice": True}})
    assert "True" not in str(err.value)


def test_the_smallest_cold_partition_snapshot_interval_is_accepted() -> None:
    cfg = BrokerConfig.from_sources(None, ["share.coordinator.cold.partition.snapshot.interval.ms=1"])
    assert cfg["share.coordinator.cold.partition.snapshot.interval.ms"] == 1
