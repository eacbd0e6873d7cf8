"""Broker configs at run time (Kafka's DynamicBrokerConfig): which properties may change without a
restart, how a change is checked, and a node's view of its configuration.

Every broker property (configs/broker_config.py) is described; the `dynamic` ones can be altered for one
broker (resource name "<node id>") or for all (the cluster default, resource name ""). A node reads a
per-broker value first, then the cluster default, then its static config (config file, --set), then
Kafka's default. As in Kafka, a rejected broker change is INVALID_REQUEST (KAFKA-13609), not INVALID_CONFIG.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from kafka_txn_broker.configs import log_config
from kafka_txn_broker.configs.broker_config import DEFINITIONS, BrokerConfig, ConfigError
from kafka_txn_broker.configs.config_def import ConfigRepository, ConfigSource, ResourceType
from kafka_txn_broker.formats.errors import InvalidRequestError

log = logging.getLogger(__name__)

# The broker properties declared `dynamic` (broker_config.py). Applied on change: every reader looks the value
# up when it needs it (the logs' segment size and record size limit are pushed to them, see
# ReplicaManager.on_config_change).
DYNAMIC = frozenset(d.name for d in DEFINITIONS.values() if d.dynamic)
# The topic config each log.* property is the default of, whose bounds a dynamic value must meet.
_TOPIC_SYNONYM_OF = {d.synonym: d for d in log_config.DEFINITIONS.values() if d.synonym in DEFINITIONS}


def validate(configs: Mapping[str, str], per_broker: bool) -> dict[str, Any]:
    """Check a broker resource's whole dynamic config map; returns the parsed values. Raises
    InvalidRequestError naming the property."""
    unknown = sorted(n for n in configs if n not in DEFINITIONS)
    if unknown:
        raise InvalidRequestError(f"Unknown broker configs: {', '.join(unknown)} (see `kafka-txn broker config`)")
    static = sorted(n for n in configs if n not in DYNAMIC)
    if static:
        raise InvalidRequestError(f"Cannot update these configs dynamically: {', '.join(static)}")
    parsed = {}
    for name, text in configs.items():
        try:
            value = BrokerConfig.parse(name, text)
        except ConfigError as exc:
            raise InvalidRequestError(str(exc)) from None
        topic_def = _TOPIC_SYNONYM_OF.get(name)
        if topic_def is not None and topic_def.validator is not None:
            try:
                topic_def.validator(name, value)
            except Exception as exc:  # InvalidConfigurationError with Kafka's message
                raise InvalidRequestError(str(exc.args[0]) if exc.args else str(exc)) from None
        parsed[name] = value
    return parsed


class DynamicBrokerConfig(BrokerConfig):
    """One node's broker configuration: its per-broker dynamic values, then the cluster default ones, over
    the static config shared by all nodes. Reads of other keys go to the static config, so a test's
    `cluster.config.set(...)` still reaches every node; `reload()` after a BROKER config change (the
    cluster calls it). Event-loop owned, like all broker state."""

    def __init__(self, static: BrokerConfig, node_id: int, repository: ConfigRepository) -> None:
        # No super().__init__(): this view keeps no values of its own beyond the dynamic ones.
        self._static = static
        self.node_id = node_id
        self._repository = repository
        self._per_broker: dict[str, Any] = {}
        self._cluster_default: dict[str, Any] = {}
        self._dynamic: dict[str, Any] = {}
        self.reload()

    def reload(self) -> None:
        self._cluster_default = self._parsed(self._repository.resource_configs(ResourceType.BROKER, ""))
        self._per_broker = self._parsed(self._repository.resource_configs(ResourceType.BROKER, str(self.node_id)))
        self._dynamic = {**self._cluster_default, **self._per_broker}
        BrokerConfig.changes += 1

    @staticmethod
    def _parsed(stored: Mapping[str, str]) -> dict[str, Any]:
        out = {}
        for name, text in stored.items():
            try:
                out[name] = BrokerConfig.parse(name, text)
            except (KeyError, ConfigError):  # validated when set; a property since removed is skipped
                log.warning("ignoring the stored dynamic broker config %s=%r", name, text)
        return out

    def __getitem__(self, name: str) -> Any:
        # On every append's path: no dynamic value (the usual case) costs one truth test more than static.
        dynamic = self._dynamic
        if dynamic and name in dynamic:
            return dynamic[name]
        return self._static._values[name]

    def set(self, name: str, value: Any) -> None:
        self._static.set(name, value)

    def is_set(self, name: str) -> bool:
        return self._static.is_set(name)

    def as_dict(self) -> dict[str, Any]:
        return {**self._static.as_dict(), **self._dynamic}

    def sources(self, name: str) -> list[tuple[ConfigSource, Any]]:
        """Where property `name` is set, most specific first (DescribeConfigs synonyms)."""
        found = [(ConfigSource.DYNAMIC_BROKER_CONFIG, self._per_broker.get(name, _MISSING)),
                 (ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, self._cluster_default.get(name, _MISSING)),
                 (ConfigSource.STATIC_BROKER_CONFIG, self._static[name] if self._static.is_set(name) else _MISSING),
                 (ConfigSource.DEFAULT_CONFIG, DEFINITIONS[name].default)]
        return [(source, value) for source, value in found if value is not _MISSING]


_MISSING: Any = object()
