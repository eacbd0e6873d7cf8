from __future__ import annotations

from pathlib import Path

import pytest

from kafka_txn_broker.configs.broker_config import BrokerConfig, ConfigError


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


# ---- one schema: every broker property parsed as Kafka's ConfigDef parses its type ----------------------------
@pytest.mark.parametrize("item", [
    "auto.create.topics.enable=yes",  # Kafka's BOOLEAN: true or false only (yes/on/1 are not booleans there)
    "auto.create.topics.enable=1",
    "unclean.leader.election.enable=on",
])
def test_booleans_are_true_or_false_only(item: str) -> None:
    with pytest.raises(ConfigError, match="is not a boolean: use true or false"):
        BrokerConfig.from_sources(None, [item])


def test_boolean_text_is_case_insensitive_and_trimmed_as_in_kafka() -> None:
    cfg = BrokerConfig.from_sources(None, ["auto.create.topics.enable= FALSE ", "log.cleaner.enable=True"])
    assert cfg["auto.create.topics.enable"] is False and cfg["log.cleaner.enable"] is True


@pytest.mark.parametrize("item", [
    "num.partitions=1_000",  # Integer.parseInt refuses the underscore Python's int() accepts
    "num.partitions=2147483648",  # above Integer.MAX_VALUE: an INT property
    "offsets.topic.replication.factor=32768",  # above Short.MAX_VALUE: a SHORT property
    "num.partitions=3.0",
])
def test_integers_are_javas(item: str) -> None:
    with pytest.raises(ConfigError, match="is not an integer"):
        BrokerConfig.from_sources(None, [item])


def test_a_long_property_takes_a_long() -> None:
    cfg = BrokerConfig.from_sources(None, ["log.roll.ms=2147483648"])  # LONG in Kafka: above Integer.MAX_VALUE
    assert cfg["log.roll.ms"] == 2**31


def test_yaml_values_of_the_property_type_are_taken(tmp_path: Path) -> None:
    f = tmp_path / "b.yaml"
    f.write_text("auto.create.topics.enable: no\nnum.partitions: 4\nlog.cleaner.min.cleanable.ratio: 1\n"
                 "kafka.version.emulate: 3.8\nauthorizer.acls:\n  - User:a ALLOW Read Topic t\n")
    cfg = BrokerConfig.from_sources(f)
    assert cfg["auto.create.topics.enable"] is False and cfg["num.partitions"] == 4
    assert cfg["log.cleaner.min.cleanable.ratio"] == 1.0
    assert cfg["kafka.version.emulate"] == "3.8"  # YAML read a number: the property is a string
    assert cfg["authorizer.acls"] == ("User:a ALLOW Read Topic t",)


@pytest.mark.parametrize("yaml_text", ["num.partitions: true\n", "auto.create.topics.enable: 1\n"])
def test_yaml_values_of_another_type_are_refused(tmp_path: Path, yaml_text: str) -> None:
    f = tmp_path / "b.yaml"
    f.write_text(yaml_text)
    with pytest.raises(ConfigError, match="is not an integer|is not a boolean"):
        BrokerConfig.from_sources(f)


def test_a_list_property_splits_as_kafka_does() -> None:
    # Kafka's LIST: split on commas with the spaces around them; a trailing comma adds nothing.
    cfg = BrokerConfig.from_sources(None, ["sasl.users=a:1 , b:2,"])
    assert cfg["sasl.users"] == ("a:1", "b:2")


def test_every_default_is_a_value_of_its_declared_type() -> None:
    """The schema is consistent: each default survives Kafka's parse of its own described text."""
    from kafka_txn_broker.configs.broker_config import DEFINITIONS
    from kafka_txn_broker.configs.config_def import to_string

    for d in DEFINITIONS.values():
        text = to_string(d.default)
        assert text is not None
        parsed = BrokerConfig.parse(d.name, text)
        assert parsed == (tuple(d.default) if isinstance(d.default, tuple) else d.default), d.name


def test_the_config_command_lists_every_property_with_its_default() -> None:
    from typer.testing import CliRunner

    from kafka_txn_broker.configs.broker_config import DEFINITIONS
    from kafka_txn_tools.cli.app import app

    out = CliRunner().invoke(app, ["broker", "config"])
    assert out.exit_code == 0
    lines = out.output.splitlines()
    assert len(lines) == len(DEFINITIONS)
    # Kafka's defaults, in the order the properties are declared; secrets show their empty default.
    assert lines[:3] == ["num.partitions=1    # partitions of auto-created topics",
                         "default.replication.factor=1    # replication factor of auto-created topics (capped at "
                         "node count)",
                         "auto.create.topics.enable=True    # create a topic on first Metadata/Produce for it"]
    assert "transaction.max.timeout.ms=900000    # largest transaction.timeout.ms a producer may ask for" in lines
    assert "log.cleaner.min.cleanable.ratio=0.5    # compact a log once this share of its cleanable bytes is " \
           "dirty (min.cleanable.dirty.ratio)" in lines
    assert any(line.startswith("sasl.users=()    # SASL users") for line in lines)
