"""Topic config rules (Kafka 4.x LogConfig) on plain data: what AlterConfigs and CreateTopics refuse, with
Kafka's messages, and which value a topic ends up with."""

from __future__ import annotations

import pytest

from kafka_txn_broker.configs import log_config
from kafka_txn_broker.configs.broker_config import BrokerConfig
from kafka_txn_broker.configs.dynamic_broker_config import DynamicBrokerConfig
from kafka_txn_broker.configs.log_config import LogConfig
from kafka_txn_broker.formats.errors import InvalidConfigurationError
from tests.broker.configs.fakes import FakeRepository

BROKER = BrokerConfig()


@pytest.mark.parametrize("configs, message", [
    ({"segment.byte": "1048576"}, "Unknown topic config name: segment.byte"),
    ({"retention.ms": None, "segment.ms": None}, "Null value not supported for topic configs: retention.ms,segment.ms"),
    ({"segment.bytes": "1048575"},  # Kafka 4.0 raised the minimum to 1 MiB (KIP-1030)
     "Invalid value 1048575 for configuration segment.bytes: Value must be at least 1048576"),
    ({"min.cleanable.dirty.ratio": "1.5"},
     "Invalid value 1.5 for configuration min.cleanable.dirty.ratio: Value must be no more than 1"),
    ({"cleanup.policy": "compact,forever"},
     "Invalid value forever for configuration cleanup.policy: String must be one of: compact, delete"),
    ({"message.timestamp.type": "logappendtime"},
     "Invalid value logappendtime for configuration message.timestamp.type: String must be one of: "
     "CreateTime, LogAppendTime"),
    ({"max.message.bytes": "big"}, "Invalid value big for configuration max.message.bytes: Not a number of type INT"),
    ({"min.compaction.lag.ms": "200", "max.compaction.lag.ms": "100"},
     "conflict topic config setting min.compaction.lag.ms (200) > max.compaction.lag.ms (100)"),
    ({"remote.storage.enable": "true"},
     "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage."),
])
def test_refused_topic_configs(configs: dict[str, str | None], message: str) -> None:
    with pytest.raises(InvalidConfigurationError) as err:
        log_config.validate(configs, BROKER)
    assert err.value.args[0] == message


def test_accepted_topic_configs_come_back_parsed() -> None:
    parsed = log_config.validate({"cleanup.policy": "compact, delete", "min.cleanable.dirty.ratio": "0.1",
                                  "segment.bytes": "1048576", "internal.segment.bytes": "2048",
                                  "follower.replication.throttled.replicas": "0:1,1:2"}, BROKER)
    assert parsed["cleanup.policy"] == ["compact", "delete"]
    assert parsed["min.cleanable.dirty.ratio"] == 0.1
    assert parsed["internal.segment.bytes"] == 2048


def test_a_topic_value_is_its_override_then_the_node_then_the_cluster_then_static_then_kafkas() -> None:
    static = BrokerConfig({"log.segment.bytes": 4_000_000})
    repo = FakeRepository()
    node = DynamicBrokerConfig(static, 1, repo)
    assert LogConfig.of("t", {}, node).segment_bytes == 4_000_000
    assert LogConfig.of("t", {}, BrokerConfig()).segment_bytes == 1073741824
    repo.set_broker("", log_segment_bytes="3000000", message_max_bytes="5000")
    repo.set_broker("1", log_segment_bytes="2000000")
    node.reload()
    effective = LogConfig.of("t", {}, node)
    assert (effective.segment_bytes, effective.max_message_bytes) == (2_000_000, 5000)
    assert LogConfig.of("t", {"segment.bytes": "1048576"}, node).segment_bytes == 1048576
    assert LogConfig.of("t", {"segment.bytes": "1048576", "internal.segment.bytes": "512"}, node).segment_bytes == 512


def test_cleaning_settings_follow_the_topic_then_the_broker() -> None:
    broker = BrokerConfig({"log.cleaner.min.compaction.lag.ms": 7, "log.cleaner.min.cleanable.ratio": 0.3})
    plain = LogConfig.of("t", {}, broker)
    assert (plain.compact, plain.min_compaction_lag_ms, plain.min_cleanable_dirty_ratio) == (False, 7, 0.3)
    compacted = LogConfig.of("t", {"cleanup.policy": "Delete,COMPACT", "min.compaction.lag.ms": "9"}, broker)
    assert (compacted.compact, compacted.min_compaction_lag_ms) == (True, 9)


def test_a_value_only_a_test_fixture_could_store_is_used_if_it_parses_and_skipped_if_not() -> None:
    # EmbeddedCluster.create_topic does not validate: tests use segment.bytes below Kafka's 1 MiB minimum.
    assert LogConfig.of("t", {"segment.bytes": "2048"}, BROKER).segment_bytes == 2048
    assert LogConfig.of("t", {"segment.bytes": "two"}, BROKER).segment_bytes == 1073741824
