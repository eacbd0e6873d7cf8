"""The accessor the group and share coordinators read: a group's override, else the broker default."""

from __future__ import annotations

import pytest

from kafka_txn_broker.configs.broker_config import BrokerConfig, ConfigError
from kafka_txn_broker.configs.config_def import ResourceType
from kafka_txn_broker.configs.group_config import ShareAutoOffsetReset
from kafka_txn_broker.configs.group_config_manager import GroupConfigManager
from tests.broker.configs.fakes import FakeRepository


def test_effective_values_are_the_override_else_the_broker_default() -> None:
    repo = FakeRepository()
    repo.stored[(ResourceType.GROUP, "g1")] = {"share.record.lock.duration.ms": "20000",
                                                "share.auto.offset.reset": "by_duration:PT10S",
                                                "share.isolation.level": "read_committed"}
    manager = GroupConfigManager(repo, BrokerConfig({"group.share.record.lock.duration.ms": 45000,
                                                     "group.share.delivery.count.limit": 3}))
    assert manager.share_record_lock_duration_ms("g1") == 20000
    assert manager.share_record_lock_duration_ms("g2") == 45000
    assert manager.share_delivery_count_limit("g1") == 3
    assert manager.share_auto_offset_reset("g1") == ShareAutoOffsetReset("by_duration", 10_000)
    assert manager.share_auto_offset_reset("g2") == ShareAutoOffsetReset("latest")
    assert manager.share_isolation_level("g1") == "read_committed"
    assert manager.share_isolation_level("g2") == "read_uncommitted"
    assert manager.share_renew_acknowledge_enable("g2") is True
    assert (manager.share_session_timeout_ms("g2"), manager.share_heartbeat_interval_ms("g2")) == (45000, 5000)
    assert (manager.consumer_session_timeout_ms("g2"), manager.consumer_heartbeat_interval_ms("g2")) == (45000, 5000)
    assert manager.share_partition_max_record_locks("g2") == 2000


def test_a_change_is_seen_once_the_cluster_reports_it() -> None:
    repo = FakeRepository()
    manager = GroupConfigManager(repo, BrokerConfig())
    assert manager.share_delivery_count_limit("g") == 5
    reads = repo.reads
    assert manager.share_delivery_count_limit("g") == 5
    assert repo.reads == reads  # cached: a share fetch does not re-read the store
    repo.stored[(ResourceType.GROUP, "g")] = {"share.delivery.count.limit": "8"}
    manager.on_config_change(ResourceType.TOPIC, "g")
    assert manager.share_delivery_count_limit("g") == 5
    manager.on_config_change(ResourceType.GROUP, "g")
    assert manager.share_delivery_count_limit("g") == 8


def test_a_broker_whose_defaults_break_its_bounds_does_not_start() -> None:
    with pytest.raises(ConfigError, match="group.share.delivery.count.limit=1 must be greater than or equal to "
                                          "group.share.min.delivery.count.limit=2"):
        GroupConfigManager(FakeRepository(), BrokerConfig({"group.share.delivery.count.limit": 1}))
