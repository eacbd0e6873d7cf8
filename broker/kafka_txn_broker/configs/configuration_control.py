"""Config changes (Kafka's ConfigAdminManager and the controller's ConfigurationControlManager): the new
config map of a resource under IncrementalAlterConfigs or AlterConfigs, and its validation.

IncrementalAlterConfigs changes the named keys (SET, DELETE, and APPEND / SUBTRACT on LIST configs);
AlterConfigs replaces the resource's whole dynamic config map, so keys it leaves out go back to their
defaults. Either way the resulting map is validated as a whole, then stored (unless validate-only) in the
metadata log. Errors are Kafka's, per resource: INVALID_REQUEST for malformed requests and BROKER
changes, INVALID_CONFIG for topic and group values, UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC_EXCEPTION.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from kafka_txn_broker.configs import dynamic_broker_config, group_config, log_config
from kafka_txn_broker.configs.broker_config import BrokerConfig
from kafka_txn_broker.configs.config_def import ConfigType, OpType, ResourceType, split_list, to_string
from kafka_txn_broker.formats.errors import InvalidConfigurationError, InvalidRequestError, UnknownTopicOrPartitionError
from kafka_txn_broker.metadata.topics import validate_topic_name
from kafka_txn_broker.metadata.view import MetadataCache

Op = tuple[str, int, str | None]  # (config name, OpType, value)


class ConfigStore(MetadataCache, Protocol):
    """Where dynamic configs are kept: the controller's metadata store (ClusterMetadata), read as a
    MetadataCache, whose alter_configs writes a resource's whole map durably and tells every node."""

    def alter_configs(self, resource_type: int, name: str, configs: dict[str, str]) -> None: ...


def check_request_configs(names: list[str], values: Iterable[tuple[str, str | None]]) -> None:
    """What Kafka's broker refuses before anything else: a key twice, or a null value to set.
    `values`: (name, value) of every change that needs a value."""
    if len(set(names)) != len(names):
        raise InvalidRequestError("Error due to duplicate config keys")
    nulls = [name for name, value in values if value is None]
    if nulls:
        raise InvalidRequestError(f"Null value not supported for : {', '.join(nulls)}")


def check_broker_name(name: str, node_id: int) -> None:
    """A BROKER resource is the cluster default ("") or the receiving broker itself."""
    if not name:
        return
    try:
        broker_id = int(name)
    except ValueError:
        raise InvalidRequestError(f"Node id must be an integer, but it is: {name}") from None
    if broker_id != node_id:
        raise InvalidRequestError(f"Unexpected broker id, expected {node_id}, but received {name}")


def apply_ops(resource_type: int, current: Mapping[str, str], ops: list[Op]) -> dict[str, str]:
    """The config map after IncrementalAlterConfigs' operations."""
    new = dict(current)
    for name, op, value in ops:
        if op == OpType.SET:
            assert value is not None  # check_request_configs refused nulls
            new[name] = value
        elif op == OpType.DELETE:
            new.pop(name, None)
        elif op in (OpType.APPEND, OpType.SUBTRACT):
            new[name] = _list_op(resource_type, name, OpType(op), new.get(name), value or "")
        else:
            raise InvalidRequestError(f"Unknown operation type {op} for {name}: use SET (0), DELETE (1), "
                                      "APPEND (2) or SUBTRACT (3)")
    return new


def _list_op(resource_type: int, name: str, op: OpType, current: str | None, value: str) -> str:
    definition = _definitions(resource_type).get(name)
    if definition is None or definition.type is not ConfigType.LIST:
        raise InvalidConfigurationError(f"Can't {op.name} to key {name} because its type is not LIST.")
    parts = split_list(current if current is not None else to_string(definition.default))
    for item in value.split(","):
        if op is OpType.APPEND and item not in parts:
            parts.append(item)
        elif op is OpType.SUBTRACT and item in parts:
            parts.remove(item)
    return ",".join(parts)


def _definitions(resource_type: int) -> Mapping[str, Any]:
    if resource_type == ResourceType.TOPIC:
        return log_config.DEFINITIONS
    if resource_type == ResourceType.GROUP:
        return group_config.DEFINITIONS
    return {}  # no broker property this broker knows is a LIST that may change at run time


class ConfigurationControl:
    """Validates a resource's new dynamic config map and stores it in the metadata log (for every node:
    all nodes share the metadata). `broker` is the receiving node's view of the broker config. Event-loop
    owned."""

    def __init__(self, metadata: ConfigStore, broker: BrokerConfig, node_id: int) -> None:
        self.metadata = metadata
        self.broker = broker
        self.node_id = node_id

    def current(self, resource_type: int, name: str) -> dict[str, str]:
        return self.metadata.resource_configs(resource_type, name)

    def alter(self, resource_type: int, name: str, new: dict[str, str], validate_only: bool) -> None:
        """Validate `new` as the resource's whole dynamic config map; store it unless validate-only."""
        self.validate(resource_type, name, new)
        if not validate_only and new != self.current(resource_type, name):
            self.metadata.alter_configs(resource_type, name, new)

    def validate(self, resource_type: int, name: str, new: Mapping[str, str]) -> None:
        if resource_type == ResourceType.TOPIC:
            if not name:
                raise InvalidRequestError("Default topic resources are not allowed.")
            validate_topic_name(name)
            log_config.validate(new, self.broker)
            if name not in self.metadata.topics:
                raise UnknownTopicOrPartitionError(f"The topic '{name}' does not exist.")
        elif resource_type == ResourceType.BROKER:
            check_broker_name(name, self.node_id)
            dynamic_broker_config.validate(new, per_broker=bool(name))
        elif resource_type == ResourceType.GROUP:
            if not name:
                raise InvalidRequestError("Default group resources are not allowed.")
            group_config.validate(new, self.broker)
        else:
            raise InvalidRequestError(f"Unknown resource type {resource_type}: the embedded broker alters "
                                      "TOPIC (2), BROKER (4) and GROUP (32) configs")
