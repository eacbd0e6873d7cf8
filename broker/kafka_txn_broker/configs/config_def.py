"""Kafka's ConfigDef for dynamic configs: types, parsing, validators, and the protocol's enums.

Values arrive as strings (AlterConfigs, IncrementalAlterConfigs, CreateTopics) and are parsed the way
Kafka's ConfigDef parses them: trimmed, Java integer ranges, `true`/`false` for booleans, comma-separated
lists. A bad value raises InvalidConfigurationError (INVALID_CONFIG) with Kafka's message,
"Invalid value X for configuration Y: <why>". Pure: no I/O, no broker state.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from enum import IntEnum
from typing import Any, Protocol

from kafka.errors import InvalidConfigurationError


class ConfigType(IntEnum):
    """ConfigDef.Type, numbered as DescribeConfigs v3+ reports it (ConfigType field)."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class ConfigSource(IntEnum):
    """Where a described value comes from (DescribeConfigs ConfigSource and synonym Source)."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


class ResourceType(IntEnum):
    """ConfigResource.Type on the wire (not the ACL resource types)."""

    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32


class OpType(IntEnum):
    """IncrementalAlterConfigs ConfigOperation."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


class ConfigRepository(Protocol):
    """The read side of the dynamic config store (ClusterMetadata implements it)."""

    def resource_configs(self, resource_type: int, name: str) -> dict[str, str]: ...


Validator = Callable[[str, Any], None]  # (config name, parsed value); raises InvalidConfigurationError

_JAVA_RANGES = {ConfigType.INT: 2**31, ConfigType.SHORT: 2**15, ConfigType.LONG: 2**63}
_INTEGER = re.compile(r"[+-]?[0-9]+")
_DOUBLE = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[dDfF]?")
_LIST_SEPARATOR = re.compile(r"\s*,\s*")


def config_error(name: str, value: object, reason: str) -> InvalidConfigurationError:
    """Kafka's ConfigException text, as clients show it."""
    return InvalidConfigurationError(f"Invalid value {value} for configuration {name}: {reason}")


def at_least(minimum: int | float) -> Validator:
    def check(name: str, value: Any) -> None:
        if value < minimum:
            raise config_error(name, to_string(value), f"Value must be at least {minimum}")

    return check


def between(minimum: int | float, maximum: int | float) -> Validator:
    def check(name: str, value: Any) -> None:
        if value < minimum:
            raise config_error(name, to_string(value), f"Value must be at least {minimum}")
        if value > maximum:
            raise config_error(name, to_string(value), f"Value must be no more than {maximum}")

    return check


def one_of(*choices: str) -> Validator:
    """Kafka's ValidString (case-sensitive); applied to each element of a LIST value."""

    def check(name: str, value: Any) -> None:
        for item in value if isinstance(value, list | tuple) else [value]:
            if item not in choices:
                raise config_error(name, item, f"String must be one of: {', '.join(choices)}")

    return check


@dataclass(frozen=True)
class ConfigDefinition:
    """One config: its type, default (parsed; None: no default), documentation and checks.

    `synonym` names the broker property that supplies the default of a topic or group config (Kafka's
    ServerTopicConfigSynonyms and GroupConfig synonyms); `internal` ones are accepted but never listed
    (Kafka's defineInternal)."""

    name: str
    type: ConfigType
    default: Any
    doc: str
    validator: Validator | None = None
    synonym: str | None = None
    internal: bool = False

    def parse(self, text: str) -> Any:
        value = parse_value(self.name, text, self.type)
        if self.validator is not None:
            self.validator(self.name, value)
        return value


def parse_value(name: str, text: str, kind: ConfigType) -> Any:
    """Kafka's ConfigDef.parseType for a string value."""
    trimmed = text.strip()
    if kind is ConfigType.BOOLEAN:
        if trimmed.lower() in ("true", "false"):
            return trimmed.lower() == "true"
        raise config_error(name, text, "Expected value to be either true or false")
    if kind in _JAVA_RANGES:
        bound = _JAVA_RANGES[kind]
        if not _INTEGER.fullmatch(trimmed) or not -bound <= int(trimmed) < bound:
            raise config_error(name, text, f"Not a number of type {kind.name}")
        return int(trimmed)
    if kind is ConfigType.DOUBLE:
        if not _DOUBLE.fullmatch(trimmed):
            raise config_error(name, text, "Not a number of type DOUBLE")
        return float(trimmed.rstrip("dDfF"))
    if kind is ConfigType.LIST:
        return [] if not trimmed else _LIST_SEPARATOR.split(trimmed)
    return trimmed


def to_string(value: Any) -> str | None:
    """Kafka's ConfigDef.convertToString: how a parsed value is described."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_double(value)
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def java_double(value: float) -> str:
    """Java's Double.toString (0.5, 1.0E-5, 1.0E7), so described ratios read as Kafka prints them."""
    if value != value or value in (float("inf"), float("-inf")):
        return {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}[repr(value)]
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        return repr(value)  # positional in this range, as Java prints it
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    fraction = "".join(map(str, digits[1:])) or "0"
    return f"{'-' if sign else ''}{digits[0]}.{fraction}E{len(digits) - 1 + exponent}"


def split_list(value: str | None) -> list[str]:
    """The non-empty parts of a comma-separated value (IncrementalAlterConfigs APPEND/SUBTRACT)."""
    return [part for part in (value or "").split(",") if part]


def sorted_definitions(definitions: Sequence[ConfigDefinition]) -> dict[str, ConfigDefinition]:
    return {d.name: d for d in sorted(definitions, key=lambda d: d.name)}
