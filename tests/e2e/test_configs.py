"""Topic, broker and group configs through real admin clients (librdkafka's and kafka-python's), as
Kafka's kafka-configs.sh uses them; the topic configs the broker honours really change what it does; and
every dynamic config survives a restart."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
    ResourceType,
)
from kafka import KafkaAdminClient
from kafka.admin import ConfigResource as KConfigResource
from kafka.admin import ConfigResourceType as KType

from kafka_txn_broker import EmbeddedCluster

SET, DELETE, APPEND = AlterConfigOpType.SET, AlterConfigOpType.DELETE, AlterConfigOpType.APPEND


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(nodes=3, data_dir=tmp_path, config={"log.cleaner.backoff.ms": 0}) as c:
        yield c


def _describe(admin: AdminClient, rtype: ResourceType, name: str) -> dict[str, Any]:
    resource = ConfigResource(rtype, name)
    return admin.describe_configs([resource])[resource].result()  # type: ignore[no-any-return]


def _alter(admin: AdminClient, rtype: ResourceType, name: str, *ops: tuple[str, Any, str | None],
           validate_only: bool = False) -> None:
    resource = ConfigResource(rtype, name, incremental_configs=[
        ConfigEntry(key, value, incremental_operation=op) for key, op, value in ops])
    admin.incremental_alter_configs([resource], validate_only=validate_only)[resource].result()


def _refused(admin: AdminClient, rtype: ResourceType, name: str, *ops: tuple[str, Any, str | None]) -> KafkaError:
    with pytest.raises(KafkaException) as err:
        _alter(admin, rtype, name, *ops)
    return err.value.args[0]  # type: ignore[no-any-return]


def test_topic_configs_with_librdkafka(cluster: EmbeddedCluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    bad = admin.create_topics([NewTopic("t", 1, 3, config={"cleanup.policy": "compacted"})])["t"]
    with pytest.raises(KafkaException, match="Invalid value compacted for configuration cleanup.policy"):
        bad.result()
    admin.create_topics([NewTopic("t", 1, 3, config={"cleanup.policy": "compact"})], validate_only=True)["t"].result()
    assert "t" not in cluster.cluster.metadata.topics  # type: ignore[union-attr]
    admin.create_topics([NewTopic("t", 1, 3, config={"cleanup.policy": "compact"})])["t"].result()

    configs = _describe(admin, ResourceType.TOPIC, "t")
    assert (configs["cleanup.policy"].value, configs["cleanup.policy"].source) == (
        "compact", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
    assert (configs["max.message.bytes"].value, configs["max.message.bytes"].source) == (
        "1048588", ConfigSource.DEFAULT_CONFIG.value)
    assert configs["max.message.bytes"].synonyms["message.max.bytes"].value == "1048588"

    _alter(admin, ResourceType.TOPIC, "t", ("min.compaction.lag.ms", SET, "60000"), validate_only=True)
    assert _describe(admin, ResourceType.TOPIC, "t")["min.compaction.lag.ms"].value == "0"
    _alter(admin, ResourceType.TOPIC, "t", ("min.compaction.lag.ms", SET, "60000"),
           ("cleanup.policy", APPEND, "delete"), ("retention.ms", SET, "3600000"))
    _alter(admin, ResourceType.TOPIC, "t", ("retention.ms", DELETE, None))
    configs = _describe(admin, ResourceType.TOPIC, "t")
    assert (configs["min.compaction.lag.ms"].value, configs["cleanup.policy"].value, configs["retention.ms"].value) == (
        "60000", "compact,delete", "604800000")

    err = _refused(admin, ResourceType.TOPIC, "t", ("segment.bytes", SET, "1024"))
    assert err.code() == KafkaError.INVALID_CONFIG
    assert err.str() == "Invalid value 1024 for configuration segment.bytes: Value must be at least 1048576"
    assert _refused(admin, ResourceType.TOPIC, "t", ("retention.mins", SET, "1")).code() == KafkaError.INVALID_CONFIG
    assert _refused(admin, ResourceType.TOPIC, "t", ("segment.ms", APPEND, "1")).code() == KafkaError.INVALID_CONFIG
    missing = _refused(admin, ResourceType.TOPIC, "nope", ("retention.ms", SET, "1"))
    assert missing.code() == KafkaError.UNKNOWN_TOPIC_OR_PART

    # AlterConfigs (legacy) replaces the whole set: what it leaves out goes back to its default. The broker must
    # serve it although confluent-kafka deprecates its call (still sent by older clients and tools).
    legacy = ConfigResource(ResourceType.TOPIC, "t", set_config={"retention.ms": "1000"})
    with pytest.warns(DeprecationWarning, match="alter_configs has been deprecated"):
        admin.alter_configs([legacy])[legacy].result()
    configs = _describe(admin, ResourceType.TOPIC, "t")
    assert (configs["retention.ms"].value, configs["cleanup.policy"].value) == ("1000", "delete")


def test_broker_and_group_configs_with_librdkafka(cluster: EmbeddedCluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    _alter(admin, ResourceType.BROKER, "1", ("message.max.bytes", SET, "2000000"))
    one, zero = _describe(admin, ResourceType.BROKER, "1"), _describe(admin, ResourceType.BROKER, "0")
    assert (one["message.max.bytes"].value, one["message.max.bytes"].source) == (
        "2000000", ConfigSource.DYNAMIC_BROKER_CONFIG.value)
    assert (zero["message.max.bytes"].value, zero["message.max.bytes"].source) == (
        "1048588", ConfigSource.DEFAULT_CONFIG.value)
    assert one["num.partitions"].is_read_only and not one["message.max.bytes"].is_read_only
    refused = _refused(admin, ResourceType.BROKER, "1", ("num.partitions", SET, "6"))
    assert (refused.code(), refused.str()) == (KafkaError.INVALID_REQUEST,
                                               "Cannot update these configs dynamically: num.partitions")

    _alter(admin, ResourceType.GROUP, "workers", ("share.auto.offset.reset", SET, "by_duration:PT1H"),
           ("share.record.lock.duration.ms", SET, "20000"))
    group = _describe(admin, ResourceType.GROUP, "workers")
    assert (group["share.auto.offset.reset"].value, group["share.auto.offset.reset"].source) == (
        "by_duration:PT1H", ConfigSource.GROUP_CONFIG.value)
    assert (group["share.isolation.level"].value, group["share.isolation.level"].source) == (
        "read_uncommitted", ConfigSource.DEFAULT_CONFIG.value)
    lock = _refused(admin, ResourceType.GROUP, "workers", ("share.record.lock.duration.ms", SET, "70000"))
    assert (lock.code(), lock.str()) == (KafkaError.INVALID_CONFIG, "share.record.lock.duration.ms must be in the "
                                                                    "range 15000 to 60000 inclusive.")
    manager = cluster.cluster.group_configs  # type: ignore[union-attr]
    assert cluster.call_soon(manager.share_record_lock_duration_ms, "workers") == 20000
    assert cluster.call_soon(manager.share_record_lock_duration_ms, "others") == 30000


def test_kafka_python_admin_describes_and_alters(cluster: EmbeddedCluster) -> None:
    cluster.create_topic("t", 1, 3)
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        result = admin.alter_configs([KConfigResource(KType.TOPIC, "t", {"min.insync.replicas": "2"})])
        assert result == {"topic": {"t": "OK"}}
        assert admin.alter_configs([KConfigResource(KType.TOPIC, "t", {"retention.ms": "1000"})],
                                   incremental=False) == {"topic": {"t": "OK"}}
        described = admin.describe_configs([KConfigResource(KType.TOPIC, "t")], include_synonyms=True)
        modified = described["topic"]["t"]  # kafka-python keeps the modified ones: the legacy call kept both
        assert {name: entry["value"] for name, entry in modified.items()} == {"min.insync.replicas": "2",
                                                                            "retention.ms": "1000"}
        assert modified["min.insync.replicas"]["synonyms"][1] == {"name": "min.insync.replicas", "value": "1",
                                                                  "source": "DEFAULT_CONFIG"}
        bad = admin.alter_configs([KConfigResource(KType.TOPIC, "t", {"min.insync.replicas": "0"})])
        assert bad["topic"]["t"].startswith("[Error 40] InvalidConfigurationError: Invalid value 0 for configuration "
                                            "min.insync.replicas: Value must be at least 1")
        admin.alter_configs([KConfigResource(KType.BROKER, "2", {"log.cleaner.min.cleanable.ratio": "0.2"})])
        broker = admin.describe_configs([KConfigResource(KType.BROKER, "2")])["broker"]["2"]
        assert broker["log.cleaner.min.cleanable.ratio"]["value"] == "0.2"
        assert broker["log.cleaner.min.cleanable.ratio"]["config_source"] == "DYNAMIC_BROKER_CONFIG"
        admin.alter_configs([KConfigResource(KType.GROUP, "g", {"consumer.session.timeout.ms": "50000"})])
        group = admin.describe_configs([KConfigResource(KType.GROUP, "g")])["group"]["g"]
        assert list(group) == ["consumer.session.timeout.ms"]
    finally:
        admin.close()


def _log_bytes(data_dir: Path, partition: str) -> int:
    return sum(f.stat().st_size for f in data_dir.glob(f"node-*/{partition}/*.log"))


def _produce(bootstrap: str, count: int, size: int = 40) -> list[KafkaError | None]:
    errors: list[KafkaError | None] = []
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "retries": 0})
    for i in range(count):
        p.produce("events", key=b"k%d" % (i % 4), value=b"v" * size, on_delivery=lambda e, _m: errors.append(e))
        if i % 20 == 0:
            p.flush(30)
    p.flush(30)
    return errors


def test_changed_topic_configs_change_what_the_broker_does(tmp_path: Path) -> None:
    with EmbeddedCluster(nodes=1, data_dir=tmp_path, config={"log.cleaner.backoff.ms": 0}) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        admin.create_topics([NewTopic("events", 1, 1)])["events"].result()
        (part,) = [p for p in cluster.cluster.nodes[0].replica_manager.partitions.values()  # type: ignore[union-attr]
                   if p.topic == "events"]
        assert not any(e for e in _produce(cluster.bootstrap_servers, 60))
        assert len(part.log.log.segments) == 1  # 1 GiB segments
        _alter(admin, ResourceType.TOPIC, "events", ("internal.segment.bytes", SET, "2048"))
        assert not any(e for e in _produce(cluster.bootstrap_servers, 300))
        assert len(part.log.log.segments) > 5  # rolls at 2 KiB now, without a restart

        def clean() -> None:
            for _ in range(5):
                cluster.tick()

        written = _log_bytes(tmp_path, "events-0")
        clean()
        assert _log_bytes(tmp_path, "events-0") == written  # cleanup.policy=delete: nothing compacted
        _alter(admin, ResourceType.TOPIC, "events", ("cleanup.policy", SET, "compact"),
               ("min.compaction.lag.ms", SET, "3600000"))
        clean()
        assert _log_bytes(tmp_path, "events-0") == written  # every record is younger than the lag
        _alter(admin, ResourceType.TOPIC, "events", ("min.compaction.lag.ms", DELETE, None))
        clean()
        assert _log_bytes(tmp_path, "events-0") < written / 2

        _alter(admin, ResourceType.TOPIC, "events", ("max.message.bytes", SET, "500"))
        too_big = _produce(cluster.bootstrap_servers, 1, size=600)
        assert [e.code() if e else None for e in too_big] == [KafkaError.MSG_SIZE_TOO_LARGE]
        assert _produce(cluster.bootstrap_servers, 1, size=100) == [None]


def test_dynamic_configs_survive_a_restart(tmp_path: Path) -> None:
    with EmbeddedCluster(nodes=3, data_dir=tmp_path) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        admin.create_topics([NewTopic("kept", 1, 3, config={"internal.segment.bytes": "4096"})])["kept"].result()
        _alter(admin, ResourceType.TOPIC, "kept", ("max.message.bytes", SET, "5000"))
        _alter(admin, ResourceType.BROKER, "2", ("min.insync.replicas", SET, "2"))
        _alter(admin, ResourceType.GROUP, "workers", ("share.isolation.level", SET, "read_committed"))
        cluster.restart()
        cluster.restart()  # the second start reads the metadata log as the first one compacted it
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        topic = _describe(admin, ResourceType.TOPIC, "kept")
        assert (topic["max.message.bytes"].value, topic["max.message.bytes"].source) == (
            "5000", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
        assert topic["internal.segment.bytes"].value == "4096"
        broker = _describe(admin, ResourceType.BROKER, "2")
        assert (broker["min.insync.replicas"].value, broker["min.insync.replicas"].source) == (
            "2", ConfigSource.DYNAMIC_BROKER_CONFIG.value)
        assert _describe(admin, ResourceType.GROUP, "workers")["share.isolation.level"].value == "read_committed"
        nodes = cluster.cluster.nodes  # type: ignore[union-attr]
        assert [nodes[i].config["min.insync.replicas"] for i in range(3)] == [1, 1, 2]
        (part,) = [p for p in nodes[0].replica_manager.partitions.values() if p.topic == "kept"]
        assert (part.log.log.segment_bytes, part.log.log.max_message_bytes) == (4096, 5000)
        assert cluster.call_soon(cluster.cluster.group_configs.share_isolation_level,  # type: ignore[union-attr]
                                 "workers") == "read_committed"
