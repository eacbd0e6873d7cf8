"""IncrementalAlterConfigs operations and the broker's checks of a change, on plain data."""

from __future__ import annotations

import pytest

from kafka_txn_broker.configs import dynamic_broker_config
from kafka_txn_broker.configs.config_def import OpType, ResourceType
from kafka_txn_broker.configs.configuration_control import apply_ops, check_broker_name, check_request_configs
from kafka_txn_broker.formats.errors import InvalidConfigurationError, InvalidRequestError

TOPIC = ResourceType.TOPIC


def test_set_delete_append_subtract() -> None:
    current = {"retention.ms": "1000", "segment.ms": "5000"}
    new = apply_ops(TOPIC, current, [("retention.ms", OpType.DELETE, None), ("segment.ms", OpType.SET, "6000"),
                                     ("cleanup.policy", OpType.APPEND, "compact")])
    # APPEND starts from the default (delete) when the topic has no value of its own, as Kafka's getParts
    assert new == {"segment.ms": "6000", "cleanup.policy": "delete,compact"}
    assert current == {"retention.ms": "1000", "segment.ms": "5000"}
    again = apply_ops(TOPIC, new, [("cleanup.policy", OpType.APPEND, "compact,delete"),
                                   ("leader.replication.throttled.replicas", OpType.APPEND, "0:1")])
    assert again["cleanup.policy"] == "delete,compact"  # no duplicates
    assert again["leader.replication.throttled.replicas"] == "0:1"
    assert apply_ops(TOPIC, again, [("cleanup.policy", OpType.SUBTRACT, "delete")])["cleanup.policy"] == "compact"


def test_append_to_a_non_list_config_is_invalid_config() -> None:
    with pytest.raises(InvalidConfigurationError, match="Can't APPEND to key segment.ms because its type is not LIST"):
        apply_ops(TOPIC, {}, [("segment.ms", OpType.APPEND, "1")])
    with pytest.raises(InvalidConfigurationError, match="Can't SUBTRACT to key share.isolation.level because"):
        apply_ops(ResourceType.GROUP, {}, [("share.isolation.level", OpType.SUBTRACT, "x")])
    with pytest.raises(InvalidRequestError, match="Unknown operation type 7"):
        apply_ops(TOPIC, {}, [("segment.ms", 7, "1")])


def test_request_level_refusals() -> None:
    with pytest.raises(InvalidRequestError, match="Error due to duplicate config keys"):
        check_request_configs(["a", "b", "a"], [])
    with pytest.raises(InvalidRequestError, match="Null value not supported for : b, c"):
        check_request_configs(["a", "b", "c"], [("a", "1"), ("b", None), ("c", None)])
    check_broker_name("", 2)
    check_broker_name("2", 2)
    with pytest.raises(InvalidRequestError, match="Unexpected broker id, expected 2, but received 1"):
        check_broker_name("1", 2)
    with pytest.raises(InvalidRequestError, match="Node id must be an integer, but it is: two"):
        check_broker_name("two", 2)


@pytest.mark.parametrize("configs, message", [
    ({"num.partitions": "3", "log.cleaner.enable": "false"},
     "Cannot update these configs dynamically: log.cleaner.enable, num.partitions"),
    ({"log.segment.byte": "3"}, "Unknown broker configs: log.segment.byte (see `kafka-txn broker config`)"),
    ({"message.max.bytes": "lots"}, "message.max.bytes='lots' is not an integer"),
    # a log.* property keeps the bounds of the topic config it is the default of
    ({"log.segment.bytes": "1000"}, "Invalid value 1000 for configuration log.segment.bytes: Value must be at least "
                                    "1048576"),
    ({"log.cleaner.min.cleanable.ratio": "2"},
     "Invalid value 2.0 for configuration log.cleaner.min.cleanable.ratio: Value must be no more than 1"),
])
def test_dynamic_broker_changes_refused_as_invalid_request(configs: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidRequestError) as err:
        dynamic_broker_config.validate(configs, per_broker=True)
    assert err.value.args[0] == message


def test_dynamic_broker_changes_accepted() -> None:
    parsed = dynamic_broker_config.validate({"message.max.bytes": "2000000", "log.cleaner.min.cleanable.ratio": "0.2",
                                             "transaction.partition.verification.enable": "false"}, per_broker=False)
    assert parsed == {"message.max.bytes": 2_000_000, "log.cleaner.min.cleanable.ratio": 0.2,
                      "transaction.partition.verification.enable": False}
