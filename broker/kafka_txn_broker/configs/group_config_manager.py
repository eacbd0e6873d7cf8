"""The effective config of one group, for the group and share coordinators (Kafka's GroupConfigManager).

    group_configs.share_record_lock_duration_ms("my-group")   # the group's override, else the broker's

A group's override is capped into the broker's current min/max bounds (Kafka 4.x caps, with a warning,
a value the bounds exclude since it was set); a group without one gets the broker default (e.g.
group.share.record.lock.duration.ms). Parsed overrides are cached per group and dropped when the group's
configs change (`on_config_change`, called by the cluster). Event-loop owned.
"""

from __future__ import annotations

from typing import Any, Literal

from kafka_txn_broker.configs import group_config
from kafka_txn_broker.configs.broker_config import BrokerConfig
from kafka_txn_broker.configs.config_def import ConfigRepository, ResourceType
from kafka_txn_broker.configs.group_config import ShareAutoOffsetReset


class GroupConfigManager:
    def __init__(self, repository: ConfigRepository, broker: BrokerConfig) -> None:
        group_config.check_broker_bounds(broker)
        self._repository = repository
        self._broker = broker
        self._cache: dict[str, dict[str, Any]] = {}

    def on_config_change(self, resource_type: int, name: str) -> None:
        if resource_type == ResourceType.GROUP:
            self._cache.pop(name, None)

    def get(self, group_id: str, name: str) -> Any:
        """The effective value of group config `name` for the group (typed: int, bool, str)."""
        values = self._cache.get(group_id)
        if values is None:
            overrides = self._repository.resource_configs(ResourceType.GROUP, group_id)
            values = self._cache[group_id] = {n: group_config.effective(n, overrides.get(n), self._broker)
                                              for n in group_config.DEFINITIONS}
        return values[name]

    # ---- typed accessors ----------------------------------------------------------------------------
    def consumer_session_timeout_ms(self, group_id: str) -> int:
        return int(self.get(group_id, "consumer.session.timeout.ms"))

    def consumer_heartbeat_interval_ms(self, group_id: str) -> int:
        return int(self.get(group_id, "consumer.heartbeat.interval.ms"))

    def share_session_timeout_ms(self, group_id: str) -> int:
        return int(self.get(group_id, "share.session.timeout.ms"))

    def share_heartbeat_interval_ms(self, group_id: str) -> int:
        return int(self.get(group_id, "share.heartbeat.interval.ms"))

    def share_record_lock_duration_ms(self, group_id: str) -> int:
        return int(self.get(group_id, "share.record.lock.duration.ms"))

    def share_delivery_count_limit(self, group_id: str) -> int:
        return int(self.get(group_id, "share.delivery.count.limit"))

    def share_partition_max_record_locks(self, group_id: str) -> int:
        return int(self.get(group_id, "share.partition.max.record.locks"))

    def share_auto_offset_reset(self, group_id: str) -> ShareAutoOffsetReset:
        return ShareAutoOffsetReset.parse(self.get(group_id, "share.auto.offset.reset"))

    def share_isolation_level(self, group_id: str) -> Literal["read_committed", "read_uncommitted"]:
        level = self.get(group_id, "share.isolation.level")
        return "read_committed" if level == "read_committed" else "read_uncommitted"

    def share_renew_acknowledge_enable(self, group_id: str) -> bool:
        return bool(self.get(group_id, "share.renew.acknowledge.enable"))
