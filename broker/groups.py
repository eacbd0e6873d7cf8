"""Group coordinator (placeholder until the consumer-group implementation lands)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kafka_txn_broker.metadata import PartitionState
    from kafka_txn_broker.node import BrokerNode


class GroupCoordinator:
    def __init__(self, node: BrokerNode) -> None:
        self.node = node

    def on_leadership_change(self, changed: list[PartitionState]) -> None:
        pass

    def on_transaction_marker(self, partition: int, producer_id: int, commit: bool) -> None:
        pass

    def tick(self, now_ms: int) -> None:
        pass

    def shutdown(self) -> None:
        pass
