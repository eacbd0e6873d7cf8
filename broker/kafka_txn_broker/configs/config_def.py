"""Kafka's ConfigDef, the one config schema of the broker: types, parsing, validators, and the protocol's enums.

Every config, whether a broker property (broker_config), a topic config (log_config) or a group config
(group_config), is one ConfigDefinition: its name, Kafka's type, default, documentation, validator and, for
some, allowed values. Values are parsed the way Kafka's ConfigDef parses them: strings (AlterConfigs,
CreateTopics, `--set`, a properties-style YAML value) trimmed, Java integer ranges, `true`/`false` for booleans,
comma-separated lists; typed values (a YAML file's numbers, booleans and lists) are taken as Kafka takes a
typed value of the same type. A bad value raises ConfigValueError, an InvalidConfigurationError
(INVALID_CONFIG) with Kafka's message, "Invalid value X for configuration Y: <why>", which also carries the
same problem in a command line's words (`cli`). Pure: no I/O, no broker state.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from enum import IntEnum
from typing import Any, Protocol

from kafka_txn_broker.formats.errors import InvalidConfigurationError


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


class ConfigValueError(InvalidConfigurationError):
    """A value Kafka's ConfigDef refuses. Its text is Kafka's ("Invalid value X for configuration Y: why");
    `cli` says the same for a command line or config file ("num.partitions='many' is not an integer")."""

    def __init__(self, message: str, cli: str) -> None:
        super().__init__(message)
        self.cli = cli


def config_error(name: str, value: object, reason: str, cli: str | None = None) -> ConfigValueError:
    """Kafka's ConfigException text, as clients show it; `cli` defaults to the same text."""
    message = f"Invalid value {value} for configuration {name}: {reason}"
    return ConfigValueError(message, cli if cli is not None else message)


def at_least(minimum: int | float) -> Validator:
    def check(name: str, value: Any) -> None:
        if value < minimum:
            raise config_error(name, to_string(value), f"Value must be at least {minimum}",
                               f"{name}={value} must be at least {minimum}")

    return check


def between(minimum: int | float, maximum: int | float) -> Validator:
    def check(name: str, value: Any) -> None:
        if value < minimum:
            raise config_error(name, to_string(value), f"Value must be at least {minimum}",
                               f"{name}={value} must be at least {minimum}")
        if value > maximum:
            raise config_error(name, to_string(value), f"Value must be no more than {maximum}",
                               f"{name}={value} must be no more than {maximum}")

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
    """One config: its Kafka type, default (parsed; None: no default), documentation and checks.

    `choices` are the allowed values of a STRING config, matched case-insensitively and kept as spelled
    here (Kafka's CaseInsensitiveValidString, with the canonical spelling). `synonym` names the broker
    property that supplies the default of a topic or group config (Kafka's ServerTopicConfigSynonyms and
    GroupConfig synonyms); `internal` ones are accepted but never listed (Kafka's defineInternal). Broker
    properties only: `dynamic` ones may change at run time (Kafka's DynamicBrokerConfig), `sensitive` ones
    are described without their value (as PASSWORD configs always are)."""

    name: str
    type: ConfigType
    default: Any
    doc: str
    validator: Validator | None = None
    synonym: str | None = None
    internal: bool = False
    choices: tuple[str, ...] = ()
    dynamic: bool = False
    sensitive: bool = False

    @property
    def secret(self) -> bool:
        return self.sensitive or self.type is ConfigType.PASSWORD

    @property
    def described_type(self) -> ConfigType:
        """The type DescribeConfigs reports: PASSWORD for every secret."""
        return ConfigType.PASSWORD if self.secret else self.type

    def parse(self, value: Any) -> Any:
        """The value parsed as Kafka parses it, then checked; raises ConfigValueError."""
        parsed = parse_value(self.name, value, self.type)
        if self.choices:
            parsed = _choice(self.name, parsed, self.choices)
        if self.validator is not None:
            self.validator(self.name, parsed)
        return parsed


def _choice(name: str, value: str, choices: tuple[str, ...]) -> str:
    chosen = [c for c in choices if c.lower() == value.lower()]
    if not chosen:
        raise config_error(name, value, f"String must be one of (case insensitive): {', '.join(choices)}",
                           f"{name}={value!r} is not one of {', '.join(choices)}")
    return chosen[0]


# A type error in a command line's words.
_TYPE_WORDS = {ConfigType.BOOLEAN: "is not a boolean: use true or false",
               ConfigType.DOUBLE: "is not a number, e.g. 0.5", ConfigType.INT: "is not an integer",
               ConfigType.SHORT: "is not an integer", ConfigType.LONG: "is not an integer",
               ConfigType.LIST: "must be a list"}


def _not_of_type(name: str, value: Any, kind: ConfigType, reason: str) -> ConfigValueError:
    words = _TYPE_WORDS.get(kind, f"is not a {kind.name.lower()}")
    cli = f"{name} {words}" if kind is ConfigType.LIST else f"{name}={value!r} {words}"
    return config_error(name, value, reason, cli)


def parse_value(name: str, value: Any, kind: ConfigType) -> Any:
    """Kafka's ConfigDef.parseType: a string as Kafka parses one; a typed value (YAML) as Kafka takes a
    value of its type (a number for INT/SHORT/LONG/DOUBLE, a boolean for BOOLEAN, a list for LIST)."""
    if isinstance(value, str):
        return _parse_text(name, value, kind)
    if kind is ConfigType.BOOLEAN:
        if isinstance(value, bool):
            return value
        raise _not_of_type(name, value, kind, "Expected value to be either true or false")
    if kind in _JAVA_RANGES:
        if isinstance(value, int) and not isinstance(value, bool) and \
                -_JAVA_RANGES[kind] <= value < _JAVA_RANGES[kind]:
            return value
        raise _not_of_type(name, value, kind, f"Not a number of type {kind.name}")
    if kind is ConfigType.DOUBLE:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        raise _not_of_type(name, value, kind, "Not a number of type DOUBLE")
    if kind is ConfigType.LIST:
        if isinstance(value, list | tuple):
            return [v if isinstance(v, Mapping) else str(v) for v in value]
        raise _not_of_type(name, value, kind, "Expected a comma separated list")
    # STRING, PASSWORD, CLASS: a scalar YAML read as something else (cluster.id: 123, version: 3.8) is its text.
    return str(value).strip()


def _parse_text(name: str, text: str, kind: ConfigType) -> Any:
    trimmed = text.strip()
    if kind is ConfigType.BOOLEAN:
        if trimmed.lower() in ("true", "false"):
            return trimmed.lower() == "true"
        raise _not_of_type(name, text, kind, "Expected value to be either true or false")
    if kind in _JAVA_RANGES:
        bound = _JAVA_RANGES[kind]
        if not _INTEGER.fullmatch(trimmed) or not -bound <= int(trimmed) < bound:
            raise _not_of_type(name, text, kind, f"Not a number of type {kind.name}")
        return int(trimmed)
    if kind is ConfigType.DOUBLE:
        if not _DOUBLE.fullmatch(trimmed):
            raise _not_of_type(name, text, kind, "Not a number of type DOUBLE")
        return float(trimmed.rstrip("dDfF"))
    if kind is ConfigType.LIST:
        parts = [] if not trimmed else _LIST_SEPARATOR.split(trimmed)
        while parts and not parts[-1]:  # Java's String.split drops trailing empty strings
            parts.pop()
        return parts
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
