"""DescribeConfigs answers (Kafka's ConfigHelper): every config of a topic, broker or group with its value,
source, type, documentation and synonyms, in name order; and a broker's loggers with their levels.

A topic or group config's synonyms are its own override (DYNAMIC_TOPIC_CONFIG / GROUP_CONFIG) followed by
where the broker property it defaults to is set, most specific first; the entry's source is the first of
them. Secrets (PASSWORD) are described without a value. Pure: the caller passes the stored overrides and
the describing node's broker config.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kafka_txn_broker.configs import group_config, log_config
from kafka_txn_broker.configs.broker_config import DEFINITIONS as BROKER
from kafka_txn_broker.configs.config_def import (
    ConfigDefinition,
    ConfigSource,
    ConfigType,
    parse_value,
    to_string,
)
from kafka_txn_broker.configs.dynamic_broker_config import DynamicBrokerConfig
from kafka_txn_broker.formats.errors import InvalidConfigurationError

Synonym = tuple[str, str | None, ConfigSource]


@dataclass(frozen=True)
class ConfigEntry:
    name: str
    value: str | None
    source: ConfigSource
    type: ConfigType
    doc: str | None
    read_only: bool = False
    sensitive: bool = False
    synonyms: list[Synonym] = field(default_factory=list)


def describe_topic(overrides: Mapping[str, str], broker: DynamicBrokerConfig) -> list[ConfigEntry]:
    """Every topic config; internal ones only when set."""
    return [_overridable(d, overrides, broker, ConfigSource.DYNAMIC_TOPIC_CONFIG)
            for d in log_config.DEFINITIONS.values() if not d.internal or d.name in overrides]


def describe_group(overrides: Mapping[str, str], broker: DynamicBrokerConfig) -> list[ConfigEntry]:
    return [_overridable(d, overrides, broker, ConfigSource.GROUP_CONFIG) for d in group_config.DEFINITIONS.values()]


def describe_broker(broker: DynamicBrokerConfig, per_broker: bool) -> list[ConfigEntry]:
    """One broker's configs (`per_broker`), or the cluster default: only what is set there."""
    entries = []
    for name in sorted(BROKER):
        chain = broker.sources(name)
        if not per_broker:
            chain = [s for s in chain if s[0] is ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG]
            if not chain:
                continue
        definition = BROKER[name]
        sensitive = definition.secret
        synonyms = [(name, None if sensitive else to_string(value), source) for source, value in chain]
        entries.append(ConfigEntry(name, synonyms[0][1], synonyms[0][2], definition.described_type, definition.doc,
                                   read_only=not definition.dynamic, sensitive=sensitive, synonyms=synonyms))
    return entries


def describe_loggers(levels: Mapping[str, str]) -> list[ConfigEntry]:
    """BROKER_LOGGER: each logger with its level, as Kafka describes them (no type, documentation or
    synonyms; alterable, not sensitive)."""
    return [ConfigEntry(name, level, ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG, ConfigType.UNKNOWN, None)
            for name, level in levels.items()]


def _overridable(definition: ConfigDefinition, overrides: Mapping[str, str], broker: DynamicBrokerConfig,
                 override_source: ConfigSource) -> ConfigEntry:
    synonyms: list[Synonym] = []
    name = definition.name
    if name in overrides:
        synonyms.append((name, _normalised(definition, overrides[name]), override_source))
    synonym = definition.synonym
    if synonym in BROKER:
        synonyms += [(synonym, to_string(value), source) for source, value in broker.sources(synonym)]
    elif synonym is not None:  # a broker property this broker lacks: Kafka's default stands for it
        synonyms.append((synonym, to_string(definition.default), ConfigSource.DEFAULT_CONFIG))
    value, source = (synonyms[0][1], synonyms[0][2]) if synonyms else (to_string(definition.default),
                                                                         ConfigSource.DEFAULT_CONFIG)
    return ConfigEntry(name, value, source, definition.type, definition.doc, synonyms=synonyms)


def _normalised(definition: ConfigDefinition, text: str) -> str | None:
    """The stored string as Kafka describes it once parsed ("compact, delete" -> "compact,delete")."""
    try:
        parsed: Any = parse_value(definition.name, text, definition.type)
    except InvalidConfigurationError:  # only the unvalidated fixture path stores such a value: show it as is
        return text
    return to_string(parsed)
