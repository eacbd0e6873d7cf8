"""Group configs (Kafka 4.1-4.3's GroupConfig): definitions, validation against the broker's bounds, and
the share groups' `share.auto.offset.reset` strategy.

A group config overrides, for one group, a broker default (its synonym, e.g. share.record.lock.duration.ms
<- group.share.record.lock.duration.ms). Setting one is checked against the broker's min/max properties
(group.share.min.record.lock.duration.ms, ...), as Kafka does since KIP-1240; a stored value the broker
bounds later exclude is capped when used (`effective`). Pure: the broker config is passed in.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from kafka_txn_broker.configs import broker_config
from kafka_txn_broker.configs.broker_config import BrokerConfig, ConfigError
from kafka_txn_broker.configs.config_def import (
    ConfigDefinition,
    ConfigType,
    at_least,
    config_error,
    one_of,
    parse_value,
    sorted_definitions,
)
from kafka_txn_broker.formats.errors import InvalidConfigurationError

_T = ConfigType
_MS = at_least(1)
_INTERVAL = at_least(0)

# ISO-8601 durations as Java's Duration.parse reads them (PnDTnHnMn.nS, case-insensitive).
_DURATION = re.compile(r"([-+]?)P(?:([-+]?\d+)D)?"
                       r"(T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?(?:([-+]?\d+)(?:[.,](\d{0,9}))?S)?)?", re.IGNORECASE)


@dataclass(frozen=True)
class ShareAutoOffsetReset:
    """Where a share partition starts: the log end, the log start, or the first record at most
    `duration_ms` old (Kafka's ShareGroupAutoOffsetResetStrategy)."""

    strategy: Literal["latest", "earliest", "by_duration"]
    duration_ms: int = 0

    def timestamp(self, now_ms: int) -> int:
        """The ListOffsets timestamp to look up: -1 latest, -2 earliest, or now minus the duration."""
        return {"latest": -1, "earliest": -2}.get(self.strategy, now_ms - self.duration_ms)

    @classmethod
    def parse(cls, text: str) -> ShareAutoOffsetReset:
        """'latest', 'earliest' or 'by_duration:<ISO-8601 duration>' (case-sensitive; no negative duration).
        Raises ValueError."""
        if text in ("latest", "earliest"):
            return cls(text)  # type: ignore[arg-type]
        prefix = "by_duration:"
        if not text.startswith(prefix):
            raise ValueError(text)
        duration = iso_duration_ms(text[len(prefix):])
        if duration < 0:
            raise ValueError(text)
        return cls("by_duration", duration)


def iso_duration_ms(text: str) -> int:
    """Milliseconds of a Java ISO-8601 duration such as PT1H, P2D, PT0.5S. Raises ValueError."""
    match = _DURATION.fullmatch(text)
    if match is None or (match[3] is not None and match[3].upper() == "T") or (match[2] is None and match[3] is None):
        raise ValueError(text)
    sign, days, _t, hours, minutes, seconds, fraction = match.groups()
    secs = int(seconds or 0)
    millis = int((fraction or "").ljust(3, "0")[:3]) * (-1 if seconds and seconds.startswith("-") else 1)
    total = ((int(days or 0) * 24 + int(hours or 0)) * 60 + int(minutes or 0)) * 60_000 + secs * 1000 + millis
    return -total if sign == "-" else total


def _auto_offset_reset(name: str, value: Any) -> None:
    try:
        ShareAutoOffsetReset.parse(value)
    except ValueError:
        raise config_error(name, value, f"Invalid value `{value}` for configuration {name}. The value must be "
                                        "either 'earliest', 'latest' or of the format "
                                        "'by_duration:<PnDTnHnMn.nS>'.") from None


_D = ConfigDefinition
DEFINITIONS = sorted_definitions([
    _D("consumer.session.timeout.ms", _T.INT, 45000, "timeout to detect failed members of a consumer group",
       _MS, "group.consumer.session.timeout.ms"),
    _D("consumer.heartbeat.interval.ms", _T.INT, 5000, "heartbeat interval given to consumer group members",
       _MS, "group.consumer.heartbeat.interval.ms"),
    _D("consumer.assignment.interval.ms", _T.INT, 1000, "interval between assignment updates of a consumer "
       "group", _INTERVAL, "group.consumer.assignment.interval.ms"),
    _D("share.session.timeout.ms", _T.INT, 45000, "timeout to detect failed members of a share group", _MS,
       "group.share.session.timeout.ms"),
    _D("share.heartbeat.interval.ms", _T.INT, 5000, "heartbeat interval given to share group members", _MS,
       "group.share.heartbeat.interval.ms"),
    _D("share.record.lock.duration.ms", _T.INT, 30000, "how long a share group member holds acquired records",
       at_least(1000), "group.share.record.lock.duration.ms"),
    _D("share.delivery.count.limit", _T.INT, 5, "deliveries of a record before it is archived", at_least(2),
       "group.share.delivery.count.limit"),
    _D("share.partition.max.record.locks", _T.INT, 2000, "records in flight per share partition",
       at_least(100), "group.share.partition.max.record.locks"),
    _D("share.auto.offset.reset", _T.STRING, "latest", "where a share partition starts: latest, earliest or "
       "by_duration:<ISO-8601 duration>", _auto_offset_reset),
    _D("share.isolation.level", _T.STRING, "read_uncommitted", "read_committed: deliver only committed "
       "transactional records (up to the LSO); read_uncommitted: all records",
       one_of("read_committed", "read_uncommitted")),
    _D("share.renew.acknowledge.enable", _T.BOOLEAN, True, "allow the RENEW acknowledgement type"),
    _D("share.assignment.interval.ms", _T.INT, 1000, "interval between assignment updates of a share group",
       _INTERVAL, "group.share.assignment.interval.ms"),
    _D("streams.session.timeout.ms", _T.INT, 45000, "timeout to detect failed members of a streams group", _MS,
       "group.streams.session.timeout.ms"),
    _D("streams.heartbeat.interval.ms", _T.INT, 5000, "heartbeat interval given to streams group members", _MS,
       "group.streams.heartbeat.interval.ms"),
    _D("streams.num.standby.replicas", _T.INT, 0, "standby replicas of each task", _INTERVAL,
       "group.streams.num.standby.replicas"),
    _D("streams.initial.rebalance.delay.ms", _T.INT, 3000, "wait before the first assignment of a new streams "
       "group", _INTERVAL, "group.streams.initial.rebalance.delay.ms"),
    _D("streams.assignment.interval.ms", _T.INT, 1000, "interval between assignment updates of a streams group",
       _INTERVAL, "group.streams.assignment.interval.ms"),
])

# The broker properties that bound a group's value (None: unbounded on that side).
BOUNDS: dict[str, tuple[str | None, str | None]] = {
    f"{kind}.{what}": (f"group.{kind}.min.{what}", f"group.{kind}.max.{what}")
    for kind in ("consumer", "share", "streams")
    for what in ("session.timeout.ms", "heartbeat.interval.ms", "assignment.interval.ms")
} | {
    "share.record.lock.duration.ms": ("group.share.min.record.lock.duration.ms",
                                      "group.share.max.record.lock.duration.ms"),
    "share.delivery.count.limit": ("group.share.min.delivery.count.limit", "group.share.max.delivery.count.limit"),
    "share.partition.max.record.locks": ("group.share.min.partition.max.record.locks",
                                         "group.share.max.partition.max.record.locks"),
    "streams.num.standby.replicas": (None, "group.streams.max.standby.replicas"),
}
_SESSION_HEARTBEAT = [(f"{kind}.session.timeout.ms", f"{kind}.heartbeat.interval.ms")
                      for kind in ("consumer", "share", "streams")]


def broker_default(name: str, broker: BrokerConfig) -> Any:
    synonym = DEFINITIONS[name].synonym
    return broker[synonym] if synonym in broker_config.DEFINITIONS else DEFINITIONS[name].default


def validate(configs: Mapping[str, str | None], broker: BrokerConfig) -> dict[str, Any]:
    """Kafka's GroupConfig.validate for a group's whole override map: known names, no nulls, parseable
    values within the broker's bounds, each session timeout above its heartbeat interval (a missing one
    taken from the broker). Returns the parsed overrides; raises InvalidConfigurationError."""
    nulls = [name for name, value in configs.items() if value is None]
    if nulls:
        raise InvalidConfigurationError(f"Null value not supported for group configs: {','.join(nulls)}")
    for name in configs:
        if name not in DEFINITIONS:
            raise InvalidConfigurationError(f"Unknown group config name: {name}")
    parsed = {name: DEFINITIONS[name].parse(value) for name, value in configs.items() if value is not None}
    for name, value in parsed.items():
        low, high = _bounds(name, broker)
        if low is not None and high is not None and not low <= value <= high:
            raise InvalidConfigurationError(f"{name} must be in the range {low} to {high} inclusive.")
        if low is None and high is not None and value > high:
            raise InvalidConfigurationError(f"{name} must be less than or equal to {high}")
    for session, heartbeat in _SESSION_HEARTBEAT:
        if session in parsed or heartbeat in parsed:
            s = parsed.get(session, broker_default(session, broker))
            h = parsed.get(heartbeat, broker_default(heartbeat, broker))
            if s <= h:
                raise InvalidConfigurationError(f"{session} must be greater than {heartbeat}")
    return parsed


def effective(name: str, override: str | None, broker: BrokerConfig) -> Any:
    """The value a group gets: its override capped into the broker's current bounds (Kafka's
    GroupConfig.evaluate), else the broker default."""
    if override is None:
        return broker_default(name, broker)
    value = parse_value(name, override, DEFINITIONS[name].type)
    low, high = _bounds(name, broker)
    if low is not None:
        value = max(value, low)
    if high is not None:
        value = min(value, high)
    return value


def _bounds(name: str, broker: BrokerConfig) -> tuple[Any, Any]:
    low, high = BOUNDS.get(name, (None, None))
    return (broker[low] if low else None), (broker[high] if high else None)


def check_broker_bounds(broker: BrokerConfig) -> None:
    """At start-up, as Kafka's GroupCoordinatorConfig: each broker default lies within its own bounds.
    Raises ConfigError naming the property to fix."""
    for name, (low_key, high_key) in BOUNDS.items():
        synonym = DEFINITIONS[name].synonym
        assert synonym is not None
        value = broker[synonym]
        if low_key and value < broker[low_key]:
            raise ConfigError(f"{synonym}={value} must be greater than or equal to {low_key}={broker[low_key]}")
        if high_key and value > broker[high_key]:
            raise ConfigError(f"{synonym}={value} must be less than or equal to {high_key}={broker[high_key]}")
