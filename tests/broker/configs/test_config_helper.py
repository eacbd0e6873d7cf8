"""DescribeConfigs entries on plain data: values, sources and synonyms as Kafka's ConfigHelper reports them."""

from __future__ import annotations

from kafka_txn_broker.configs import config_helper
from kafka_txn_broker.configs.broker_config import BrokerConfig
from kafka_txn_broker.configs.config_def import ConfigSource as S
from kafka_txn_broker.configs.config_def import ConfigType
from kafka_txn_broker.configs.dynamic_broker_config import DynamicBrokerConfig
from tests.broker.configs.fakes import FakeRepository


def _node(static: dict[str, object] | None = None) -> tuple[DynamicBrokerConfig, FakeRepository]:
    repo = FakeRepository()
    return DynamicBrokerConfig(BrokerConfig(static), 0, repo), repo


def _by_name(entries: list[config_helper.ConfigEntry]) -> dict[str, config_helper.ConfigEntry]:
    return {e.name: e for e in entries}


def test_topic_entries_name_their_override_then_every_broker_level_setting() -> None:
    node, repo = _node({"log.segment.bytes": 4_000_000})
    repo.set_broker("", log_segment_bytes="3000000")
    repo.set_broker("0", log_segment_bytes="2000000")
    node.reload()
    entries = _by_name(config_helper.describe_topic({"segment.bytes": "1048576", "cleanup.policy": "compact, delete"},
                                                    node))
    seg = entries["segment.bytes"]
    assert (seg.value, seg.source, seg.type) == ("1048576", S.DYNAMIC_TOPIC_CONFIG, ConfigType.INT)
    assert seg.synonyms == [("segment.bytes", "1048576", S.DYNAMIC_TOPIC_CONFIG),
                            ("log.segment.bytes", "2000000", S.DYNAMIC_BROKER_CONFIG),
                            ("log.segment.bytes", "3000000", S.DYNAMIC_DEFAULT_BROKER_CONFIG),
                            ("log.segment.bytes", "4000000", S.STATIC_BROKER_CONFIG),
                            ("log.segment.bytes", "1073741824", S.DEFAULT_CONFIG)]
    assert entries["cleanup.policy"].value == "compact,delete"  # as parsed, not as typed
    ratio = entries["min.cleanable.dirty.ratio"]
    assert (ratio.value, ratio.source, ratio.synonyms) == (
        "0.5", S.DEFAULT_CONFIG, [("log.cleaner.min.cleanable.ratio", "0.5", S.DEFAULT_CONFIG)])
    # a broker property this broker does not have: Kafka's default stands for it
    assert entries["compression.type"].synonyms == [("compression.type", "producer", S.DEFAULT_CONFIG)]
    assert entries["retention.ms"].synonyms == []  # Kafka's log.retention.ms has no default either
    assert "internal.segment.bytes" not in entries


def test_broker_entries_are_read_only_unless_dynamic_and_secrets_have_no_value() -> None:
    node, repo = _node({"sasl.users": ["alice:secret"], "num.partitions": 3})
    repo.set_broker("", min_insync_replicas="2")
    node.reload()
    entries = _by_name(config_helper.describe_broker(node, per_broker=True))
    assert (entries["num.partitions"].value, entries["num.partitions"].source) == ("3", S.STATIC_BROKER_CONFIG)
    assert entries["num.partitions"].read_only and not entries["min.insync.replicas"].read_only
    isr = entries["min.insync.replicas"]
    assert (isr.value, isr.source) == ("2", S.DYNAMIC_DEFAULT_BROKER_CONFIG)
    users = entries["sasl.users"]
    assert (users.value, users.sensitive, users.type) == (None, True, ConfigType.PASSWORD)
    assert all(value is None for _n, value, _s in users.synonyms)
    assert entries["log.roll.ms"].type is ConfigType.LONG
    assert entries["offsets.topic.replication.factor"].type is ConfigType.SHORT
    cluster_default = config_helper.describe_broker(node, per_broker=False)
    assert [(e.name, e.value, e.synonyms) for e in cluster_default] == [
        ("min.insync.replicas", "2", [("min.insync.replicas", "2", S.DYNAMIC_DEFAULT_BROKER_CONFIG)])]


def test_group_entries_come_from_the_group_then_the_broker_defaults() -> None:
    node, _repo = _node({"group.share.delivery.count.limit": 4})
    entries = _by_name(config_helper.describe_group({"share.isolation.level": "read_committed"}, node))
    assert (entries["share.isolation.level"].value, entries["share.isolation.level"].source) == (
        "read_committed", S.GROUP_CONFIG)
    limit = entries["share.delivery.count.limit"]
    assert (limit.value, limit.source) == ("4", S.STATIC_BROKER_CONFIG)
    assert limit.synonyms == [("group.share.delivery.count.limit", "4", S.STATIC_BROKER_CONFIG),
                              ("group.share.delivery.count.limit", "5", S.DEFAULT_CONFIG)]
    reset = entries["share.auto.offset.reset"]
    assert (reset.value, reset.source, reset.synonyms) == ("latest", S.DEFAULT_CONFIG, [])
    assert not any(e.read_only for e in entries.values())
