"""A small in-memory config store for the config model's unit tests (ClusterMetadata's read side)."""

from __future__ import annotations

from kafka_txn_broker.configs.config_def import ResourceType


class FakeRepository:
    def __init__(self) -> None:
        self.stored: dict[tuple[int, str], dict[str, str]] = {}
        self.reads = 0

    def resource_configs(self, resource_type: int, name: str) -> dict[str, str]:
        self.reads += 1
        return dict(self.stored.get((resource_type, name), {}))

    def set_broker(self, name: str, **configs: str) -> None:
        self.stored[(ResourceType.BROKER, name)] = {k.replace("_", "."): v for k, v in configs.items()}
