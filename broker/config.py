"""Broker configuration under Kafka's own property names, with Kafka's defaults where they fit here.

Values come from a YAML file (flat `key: value` or nested maps joined with dots) and `--set key=value`
overrides. Unknown keys are rejected with the list of known ones, so a typo never silently does nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

_BOOL_TRUE = {"true", "yes", "1", "on"}
_BOOL_FALSE = {"false", "no", "0", "off"}


@dataclass(frozen=True)
class ConfigKey:
    name: str
    type: type
    default: Any
    doc: str


_KEYS: list[ConfigKey] = [
    ConfigKey("num.partitions", int, 1, "partitions of auto-created topics"),
    ConfigKey("default.replication.factor", int, 1, "replication factor of auto-created topics (capped at node count)"),
    ConfigKey("auto.create.topics.enable", bool, True, "create a topic on first Metadata/Produce for it"),
    ConfigKey("log.segment.bytes", int, 1024 * 1024 * 1024, "roll a segment at this size"),
    ConfigKey("log.roll.ms", int, 7 * 24 * 3600 * 1000, "roll a segment when its first batch is this old"),
    ConfigKey("log.index.interval.bytes", int, 4096, "bytes between offset index entries"),
    ConfigKey("log.flush.interval.messages", int, 2**63 - 1, "fsync after this many messages"),
    ConfigKey("log.flush.interval.ms", int, 2**63 - 1, "fsync when unflushed data is this old"),
    ConfigKey("message.max.bytes", int, 1048588, "largest record batch accepted"),
    ConfigKey("socket.request.max.bytes", int, 104857600, "largest request frame accepted"),
    ConfigKey("producer.id.expiration.ms", int, 86400000, "forget idle producers after this"),
    ConfigKey("producer.id.expiration.check.interval.ms", int, 600000, "how often idle producers are removed"),
    ConfigKey("min.insync.replicas", int, 1, "acks=all needs this many in-sync replicas"),
    ConfigKey("replica.lag.time.max.ms", int, 30000, "drop a follower from the ISR after this lag"),
    ConfigKey("offsets.topic.num.partitions", int, 50, "partitions of __consumer_offsets"),
    ConfigKey("offsets.topic.replication.factor", int, 3, "replication factor of __consumer_offsets (capped)"),
    ConfigKey("group.initial.rebalance.delay.ms", int, 0, "wait before the first rebalance of a new group"),
    ConfigKey("group.min.session.timeout.ms", int, 6000, "smallest session timeout a member may ask for"),
    ConfigKey("group.max.session.timeout.ms", int, 1800000, "largest session timeout a member may ask for"),
    ConfigKey("transaction.state.log.num.partitions", int, 50, "partitions of __transaction_state"),
    ConfigKey("transaction.state.log.replication.factor", int, 3, "replication factor of __transaction_state"),
    ConfigKey("transaction.max.timeout.ms", int, 900000, "largest transaction.timeout.ms a producer may ask for"),
    ConfigKey("transaction.abort.timed.out.transaction.cleanup.interval.ms", int, 10000, "timeout reaper period"),
    ConfigKey("transactional.id.expiration.ms", int, 604800000, "expire idle transactional ids after this"),
    ConfigKey("transaction.remove.expired.transaction.cleanup.interval.ms", int, 3600000, "expiry check period"),
    ConfigKey("transaction.partition.verification.enable", bool, True, "leader verifies with the coordinator"),
    ConfigKey("transaction.version", int, 2, "highest transaction version (1 = TV1, 2 = TV2) advertised"),
    ConfigKey("producer.id.block.size", int, 1000, "producer ids reserved per allocation"),
    ConfigKey("cluster.id", str, "kafka-txn-embedded", "cluster id reported in Metadata"),
    ConfigKey("host", str, "127.0.0.1", "address the listeners bind and advertise"),
]

KEYS: dict[str, ConfigKey] = {k.name: k for k in _KEYS}


class ConfigError(ValueError):
    """A configuration value or key is wrong; the message names it and the fix."""


def _coerce(key: ConfigKey, value: Any) -> Any:
    if key.type is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in _BOOL_TRUE:
            return True
        if text in _BOOL_FALSE:
            return False
        raise ConfigError(f"{key.name}={value!r} is not a boolean: use true or false")
    if key.type is int:
        if isinstance(value, bool):
            raise ConfigError(f"{key.name}={value!r} is not an integer")
        try:
            return int(str(value).strip().replace("_", ""))
        except ValueError:
            raise ConfigError(f"{key.name}={value!r} is not an integer") from None
    return str(value)


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in data.items():
        name = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(_flatten(v, name + "."))
        else:
            out[name] = v
    return out


class BrokerConfig:
    """Typed, validated broker properties. `cfg["log.segment.bytes"]` reads a value."""

    def __init__(self, overrides: Mapping[str, Any] | None = None) -> None:
        self._values: dict[str, Any] = {k.name: k.default for k in _KEYS}
        for name, value in _flatten(overrides or {}).items():
            self.set(name, value)

    def set(self, name: str, value: Any) -> None:
        key = KEYS.get(name)
        if key is None:
            close = [k for k in KEYS if k.split(".")[-1] in name or name.split(".")[-1] in k]
            hint = f" (did you mean {', '.join(sorted(close)[:3])}?)" if close else ""
            raise ConfigError(f"unknown broker property {name!r}{hint}; see `kafka-txn broker config`")
        self._values[name] = _coerce(key, value)

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def as_dict(self) -> dict[str, Any]:
        return dict(self._values)

    @classmethod
    def from_sources(cls, file: Path | None = None, sets: list[str] | None = None,
                     base: Mapping[str, Any] | None = None) -> BrokerConfig:
        cfg = cls(base)
        if file is not None:
            try:
                data = yaml.safe_load(file.read_text()) or {}
            except (OSError, yaml.YAMLError) as exc:
                raise ConfigError(f"cannot read broker config {file}: {exc}") from None
            if not isinstance(data, Mapping):
                raise ConfigError(f"broker config {file} must be a map of property: value")
            for name, value in _flatten(data).items():
                cfg.set(name, value)
        for item in sets or []:
            name, sep, value = item.partition("=")
            if not sep:
                raise ConfigError(f"--set {item!r} must look like key=value, e.g. --set num.partitions=6")
            cfg.set(name.strip(), value)
        return cfg
