"""Topic configs (Kafka 4.x's LogConfig): definitions, validation, and a topic's effective values.

A topic's value is its override (set by CreateTopics or AlterConfigs), else the broker property named as
its synonym (Kafka's ServerTopicConfigSynonyms, e.g. segment.bytes <- log.segment.bytes) when this broker
has that property, else Kafka's default. The broker honours the configs in HONOURED when they change,
without a restart; the others are validated, stored and described only (docs/broker/configs.md lists both).
Pure: the broker config is passed in.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kafka_txn_broker.configs import broker_config
from kafka_txn_broker.configs.broker_config import BrokerConfig
from kafka_txn_broker.configs.config_def import (
    ConfigDefinition,
    ConfigType,
    Validator,
    at_least,
    between,
    config_error,
    one_of,
    parse_value,
    sorted_definitions,
)
from kafka_txn_broker.formats.errors import InvalidConfigurationError

log = logging.getLogger(__name__)

LONG_MAX = 2**63 - 1
_D = ConfigDefinition
_T = ConfigType


def _gzip_level(name: str, value: Any) -> None:
    if value != -1 and not 1 <= value <= 9:
        raise config_error(name, value, "Value must be -1 or between 1 and 9")


def _throttled_replicas(name: str, value: Any) -> None:
    """`*`, or partition:broker pairs (Kafka's ThrottledReplicaListValidator)."""
    if value == ["*"]:
        return
    for item in value:
        partition, sep, broker = item.strip().partition(":")
        if not (sep and partition.isdigit() and broker.isdigit()):
            raise config_error(name, ",".join(value), "must be the literal '*' or a list of replicas in the "
                                                     "following format: [partitionId]:[brokerId],...")


_LAG: Validator = at_least(0)
DEFINITIONS = sorted_definitions([
    _D("cleanup.policy", _T.LIST, ["delete"], "delete: old segments go by retention; compact: keep the latest "
       "record per key; both: compact, then delete by retention", one_of("compact", "delete"), "log.cleanup.policy"),
    _D("compression.gzip.level", _T.INT, -1, "gzip level when compression.type=gzip", _gzip_level,
       "compression.gzip.level"),
    _D("compression.lz4.level", _T.INT, 9, "lz4 level when compression.type=lz4", between(1, 17),
       "compression.lz4.level"),
    _D("compression.type", _T.STRING, "producer", "codec of the stored batches; producer keeps the producer's",
       one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"), "compression.type"),
    _D("compression.zstd.level", _T.INT, 3, "zstd level when compression.type=zstd", between(-131072, 22),
       "compression.zstd.level"),
    _D("delete.retention.ms", _T.LONG, 86400000, "how long tombstones of a compacted topic stay readable",
       _LAG, "log.cleaner.delete.retention.ms"),
    _D("file.delete.delay.ms", _T.LONG, 60000, "wait before deleting a removed segment's files", _LAG,
       "log.segment.delete.delay.ms"),
    _D("flush.messages", _T.LONG, LONG_MAX, "fsync after this many messages", at_least(1),
       "log.flush.interval.messages"),
    _D("flush.ms", _T.LONG, LONG_MAX, "fsync when unflushed data is this old", _LAG, "log.flush.interval.ms"),
    _D("follower.replication.throttled.replicas", _T.LIST, [], "replicas throttled on the follower side",
       _throttled_replicas),
    _D("index.interval.bytes", _T.INT, 4096, "bytes between offset index entries", _LAG,
       "log.index.interval.bytes"),
    _D("leader.replication.throttled.replicas", _T.LIST, [], "replicas throttled on the leader side",
       _throttled_replicas),
    _D("local.retention.bytes", _T.LONG, -2, "local bytes kept under tiered storage (-2: retention.bytes)",
       at_least(-2), "log.local.retention.bytes"),
    _D("local.retention.ms", _T.LONG, -2, "local time kept under tiered storage (-2: retention.ms)",
       at_least(-2), "log.local.retention.ms"),
    _D("max.compaction.lag.ms", _T.LONG, LONG_MAX, "compact a record at the latest this long after it was "
       "written", at_least(1), "log.cleaner.max.compaction.lag.ms"),
    _D("max.message.bytes", _T.INT, 1048588, "largest record batch the topic accepts", _LAG,
       "message.max.bytes"),
    _D("message.downconversion.enable", _T.BOOLEAN, True, "no-op since Kafka 4.0 (no down-conversion)", None,
       "log.message.downconversion.enable"),
    _D("message.timestamp.after.max.ms", _T.LONG, 3600000, "refuse records whose timestamp is this far ahead "
       "of the broker's clock", _LAG, "log.message.timestamp.after.max.ms"),
    _D("message.timestamp.before.max.ms", _T.LONG, LONG_MAX, "refuse records whose timestamp is this far "
       "behind the broker's clock", _LAG, "log.message.timestamp.before.max.ms"),
    _D("message.timestamp.type", _T.STRING, "CreateTime", "CreateTime (the producer's) or LogAppendTime",
       one_of("CreateTime", "LogAppendTime"), "log.message.timestamp.type"),
    _D("min.cleanable.dirty.ratio", _T.DOUBLE, 0.5, "compact once this share of the log is dirty",
       between(0, 1), "log.cleaner.min.cleanable.ratio"),
    _D("min.compaction.lag.ms", _T.LONG, 0, "never compact records younger than this", _LAG,
       "log.cleaner.min.compaction.lag.ms"),
    _D("min.insync.replicas", _T.INT, 1, "acks=all needs this many in-sync replicas", at_least(1),
       "min.insync.replicas"),
    _D("preallocate", _T.BOOLEAN, False, "preallocate segment files", None, "log.preallocate"),
    _D("remote.log.copy.disable", _T.BOOLEAN, False, "stop copying to tiered storage"),
    _D("remote.log.delete.on.disable", _T.BOOLEAN, False, "delete tiered data when tiering is disabled"),
    _D("remote.storage.enable", _T.BOOLEAN, False, "tiered storage for this topic"),
    _D("retention.bytes", _T.LONG, -1, "delete old segments beyond this size (-1: no limit)", None,
       "log.retention.bytes"),
    _D("retention.ms", _T.LONG, 604800000, "delete segments older than this (-1: no limit)", at_least(-1)),
    _D("segment.bytes", _T.INT, 1073741824, "roll a segment at this size", at_least(1024 * 1024),
       "log.segment.bytes"),
    _D("segment.index.bytes", _T.INT, 10485760, "size of a segment's offset index", at_least(4),
       "log.index.size.max.bytes"),
    _D("segment.jitter.ms", _T.LONG, 0, "random jitter subtracted from segment.ms", _LAG),
    _D("segment.ms", _T.LONG, 604800000, "roll a segment when its first record is this old", at_least(1),
       "log.roll.ms"),
    _D("unclean.leader.election.enable", _T.BOOLEAN, False, "let an out-of-sync replica become leader", None,
       "unclean.leader.election.enable"),
    # Kafka 4.x: segment.bytes may not go below 1 MiB; tests and tools set smaller segments through this.
    _D("internal.segment.bytes", _T.INT, None, "segment size overriding segment.bytes (internal, for tests)",
       at_least(0), internal=True),
])

# What the embedded broker applies, on change and without a restart; the rest is stored and described.
HONOURED = frozenset({"cleanup.policy", "delete.retention.ms", "max.message.bytes", "min.cleanable.dirty.ratio",
                      "min.compaction.lag.ms", "min.insync.replicas", "segment.bytes", "internal.segment.bytes",
                      "unclean.leader.election.enable"})


def validate(configs: Mapping[str, str | None], broker: BrokerConfig) -> dict[str, Any]:
    """Kafka's LogConfig.validate for a topic's whole override map: known names, no nulls, parseable
    values within bounds, min.compaction.lag.ms <= max.compaction.lag.ms, no tiered storage (this broker
    has none). Returns the parsed overrides; raises InvalidConfigurationError (INVALID_CONFIG)."""
    nulls = [name for name, value in configs.items() if value is None]
    if nulls:
        raise InvalidConfigurationError(f"Null value not supported for topic configs: {','.join(nulls)}")
    for name in configs:
        if name not in DEFINITIONS:
            raise InvalidConfigurationError(f"Unknown topic config name: {name}")
    parsed = {name: DEFINITIONS[name].parse(value) for name, value in configs.items() if value is not None}
    effective = {**{n: broker_default(n, broker) for n in ("min.compaction.lag.ms", "max.compaction.lag.ms")},
                 **parsed}
    low, high = effective["min.compaction.lag.ms"], effective["max.compaction.lag.ms"]
    if low > high:
        raise InvalidConfigurationError(f"conflict topic config setting min.compaction.lag.ms ({low}) > "
                                        f"max.compaction.lag.ms ({high})")
    if parsed.get("remote.storage.enable"):
        raise InvalidConfigurationError("Tiered Storage functionality is disabled in the broker. "
                                        "Topic cannot be configured with remote log storage.")
    return parsed


def broker_default(name: str, broker: BrokerConfig) -> Any:
    """The value a topic without an override gets: the synonym broker property if this broker has one,
    else Kafka's default."""
    definition = DEFINITIONS[name]
    if definition.synonym in broker_config.DEFINITIONS:
        return broker[definition.synonym]
    return definition.default


@dataclass(frozen=True)
class LogConfig:
    """A topic's effective values of the configs the broker applies (Kafka's LogConfig)."""

    compact: bool
    delete_retention_ms: int
    min_compaction_lag_ms: int
    min_cleanable_dirty_ratio: float
    segment_bytes: int
    max_message_bytes: int
    min_insync_replicas: int

    @classmethod
    def of(cls, topic: str, overrides: Mapping[str, str], broker: BrokerConfig) -> LogConfig:
        def value(name: str) -> Any:
            text = overrides.get(name)
            if text is not None:
                try:  # types only: EmbeddedCluster.create_topic (a test fixture) may set a small segment.bytes
                    return parse_value(name, text, DEFINITIONS[name].type)
                except InvalidConfigurationError as exc:
                    log.warning("topic %s: ignoring %s (%s)", topic, name, exc)
            return broker_default(name, broker)

        internal_segment = value("internal.segment.bytes")
        return cls(
            compact="compact" in [p.lower() for p in value("cleanup.policy")],
            delete_retention_ms=value("delete.retention.ms"),
            min_compaction_lag_ms=value("min.compaction.lag.ms"),
            min_cleanable_dirty_ratio=value("min.cleanable.dirty.ratio"),
            segment_bytes=internal_segment if internal_segment is not None else value("segment.bytes"),
            max_message_bytes=value("max.message.bytes"),
            min_insync_replicas=value("min.insync.replicas"),
        )
