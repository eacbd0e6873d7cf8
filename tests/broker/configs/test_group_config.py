"""Group config rules (Kafka 4.x GroupConfig, KIP-1240 bounds) on plain data."""

from __future__ import annotations

import pytest

from kafka_txn_broker.configs import group_config
from kafka_txn_broker.configs.broker_config import BrokerConfig, ConfigError
from kafka_txn_broker.configs.group_config import ShareAutoOffsetReset, iso_duration_ms
from kafka_txn_broker.formats.errors import InvalidConfigurationError

BROKER = BrokerConfig()


@pytest.mark.parametrize("configs, message", [
    ({"share.lock.duration.ms": "1"}, "Unknown group config name: share.lock.duration.ms"),
    ({"share.isolation.level": None}, "Null value not supported for group configs: share.isolation.level"),
    # Kafka's broker defaults: group.share.{min,max}.record.lock.duration.ms = 15000, 60000
    ({"share.record.lock.duration.ms": "14999"}, "share.record.lock.duration.ms must be in the range 15000 to 60000 "
                                                 "inclusive."),
    ({"share.record.lock.duration.ms": "999"},  # GroupConfig's own lower bound comes first
     "Invalid value 999 for configuration share.record.lock.duration.ms: Value must be at least 1000"),
    ({"share.delivery.count.limit": "11"}, "share.delivery.count.limit must be in the range 2 to 10 inclusive."),
    ({"share.partition.max.record.locks": "4001"},
     "share.partition.max.record.locks must be in the range 100 to 4000 inclusive."),
    ({"consumer.session.timeout.ms": "44999"}, "consumer.session.timeout.ms must be in the range 45000 to 60000 "
                                               "inclusive."),
    ({"streams.num.standby.replicas": "3"}, "streams.num.standby.replicas must be less than or equal to 2"),
    ({"share.isolation.level": "READ_COMMITTED"},
     "Invalid value READ_COMMITTED for configuration share.isolation.level: String must be one of: read_committed, "
     "read_uncommitted"),
    ({"share.renew.acknowledge.enable": "1"}, "Invalid value 1 for configuration share.renew.acknowledge.enable: "
                                               "Expected value to be either true or false"),
])
def test_refused_group_configs(configs: dict[str, str | None], message: str) -> None:
    with pytest.raises(InvalidConfigurationError) as err:
        group_config.validate(configs, BROKER)
    assert err.value.args[0] == message


def test_a_session_timeout_must_exceed_the_heartbeat_interval_including_the_brokers() -> None:
    broker = BrokerConfig({"group.share.max.heartbeat.interval.ms": 50000})
    with pytest.raises(InvalidConfigurationError, match="share.session.timeout.ms must be greater than "
                                                        "share.heartbeat.interval.ms$"):
        group_config.validate({"share.heartbeat.interval.ms": "45000"}, broker)  # vs the broker's 45000 timeout
    group_config.validate({"share.heartbeat.interval.ms": "45000", "share.session.timeout.ms": "50000"}, broker)


@pytest.mark.parametrize("text, reset", [
    ("latest", ShareAutoOffsetReset("latest")),
    ("earliest", ShareAutoOffsetReset("earliest")),
    ("by_duration:PT1H", ShareAutoOffsetReset("by_duration", 3_600_000)),
    ("by_duration:P1DT0.5S", ShareAutoOffsetReset("by_duration", 86_400_500)),
    ("by_duration:pt-30m", None),  # negative: refused
    ("LATEST", None), ("none", None), ("by_duration:", None), ("by_duration", None), ("by_duration:PT", None),
    ("by_duration:1H", None), ("by_duration:P", None),
])
def test_share_auto_offset_reset(text: str, reset: ShareAutoOffsetReset | None) -> None:
    if reset is None:
        with pytest.raises(InvalidConfigurationError, match="The value must be either 'earliest', 'latest' or of the "
                                                            "format 'by_duration:<PnDTnHnMn.nS>'"):
            group_config.validate({"share.auto.offset.reset": text}, BROKER)
    else:
        assert group_config.validate({"share.auto.offset.reset": text}, BROKER)["share.auto.offset.reset"] == text
        assert ShareAutoOffsetReset.parse(text) == reset


def test_reset_timestamps_are_list_offsets_lookups() -> None:
    assert ShareAutoOffsetReset.parse("latest").timestamp(10_000) == -1
    assert ShareAutoOffsetReset.parse("earliest").timestamp(10_000) == -2
    assert ShareAutoOffsetReset.parse("by_duration:PT2S").timestamp(10_000) == 8_000


def test_iso_durations_as_java_reads_them() -> None:
    assert iso_duration_ms("PT1M30S") == 90_000
    assert iso_duration_ms("-PT1S") == -1000
    assert iso_duration_ms("PT-1.5S") == -1500
    assert iso_duration_ms("P2D") == 172_800_000


def test_a_stored_value_outside_todays_bounds_is_capped_when_used() -> None:
    narrow = BrokerConfig({"group.share.max.record.lock.duration.ms": 40000})
    assert group_config.effective("share.record.lock.duration.ms", "55000", narrow) == 40000
    assert group_config.effective("share.record.lock.duration.ms", None, narrow) == 30000
    assert group_config.effective("share.isolation.level", "read_committed", narrow) == "read_committed"


def test_broker_defaults_must_lie_within_their_bounds() -> None:
    group_config.check_broker_bounds(BROKER)
    with pytest.raises(ConfigError, match=r"group.share.record.lock.duration.ms=70000 must be less than or equal "
                                          r"to group.share.max.record.lock.duration.ms=60000"):
        group_config.check_broker_bounds(BrokerConfig({"group.share.record.lock.duration.ms": 70000}))
