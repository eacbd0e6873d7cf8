"""Kafka's ConfigDef parsing, on plain strings: what Kafka accepts, refuses, and how it prints values."""

from __future__ import annotations

import pytest

from kafka_txn_broker.configs.config_def import ConfigType, parse_value, split_list, to_string
from kafka_txn_broker.formats.errors import InvalidConfigurationError


@pytest.mark.parametrize("kind, text, value", [
    (ConfigType.INT, " 42 ", 42),
    (ConfigType.INT, "-2147483648", -2**31),
    (ConfigType.LONG, "9223372036854775807", 2**63 - 1),
    (ConfigType.SHORT, "+3", 3),
    (ConfigType.BOOLEAN, "TRUE", True),
    (ConfigType.DOUBLE, "0.25", 0.25),
    (ConfigType.DOUBLE, "1e-3", 0.001),
    (ConfigType.LIST, "compact , delete", ["compact", "delete"]),
    (ConfigType.LIST, "  ", []),
    (ConfigType.STRING, " latest ", "latest"),
])
def test_values_parse_as_kafka_parses_them(kind: ConfigType, text: str, value: object) -> None:
    assert parse_value("c", text, kind) == value


@pytest.mark.parametrize("kind, text, reason", [
    (ConfigType.INT, "2147483648", "Not a number of type INT"),  # Integer.parseInt overflows
    (ConfigType.SHORT, "32768", "Not a number of type SHORT"),
    (ConfigType.INT, "1_000", "Not a number of type INT"),  # Python would accept it, Java does not
    (ConfigType.INT, "1.5", "Not a number of type INT"),
    (ConfigType.DOUBLE, "half", "Not a number of type DOUBLE"),
    (ConfigType.BOOLEAN, "yes", "Expected value to be either true or false"),
])
def test_bad_values_get_kafkas_message(kind: ConfigType, text: str, reason: str) -> None:
    with pytest.raises(InvalidConfigurationError) as err:
        parse_value("some.config", text, kind)
    assert str(err.value.args[0]) == f"Invalid value {text} for configuration some.config: {reason}"


@pytest.mark.parametrize("value, text", [
    (True, "true"), (0.5, "0.5"), (1.0, "1.0"), (1e-5, "1.0E-5"), (12345678.0, "1.2345678E7"),
    (["compact", "delete"], "compact,delete"), ((), ""), (None, None), (7, "7"),
])
def test_values_print_as_java_prints_them(value: object, text: str | None) -> None:
    assert to_string(value) == text


def test_list_parts_skip_empty_items() -> None:
    assert split_list("a,,b,") == ["a", "b"]
    assert split_list(None) == []
