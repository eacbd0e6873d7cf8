"""Transaction coordinator (placeholder until issue 3 lands)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kafka_txn_broker.apis.context import RequestContext
    from kafka_txn_broker.metadata import PartitionState
    from kafka_txn_broker.node import BrokerNode


class TransactionCoordinator:
    def __init__(self, node: BrokerNode) -> None:
        self.node = node

    def verify_produce(self, ctx: RequestContext, req: Any, topic: str, partition: int,
                       records: Any) -> Exception | None:
        return None

    def on_leadership_change(self, changed: list[PartitionState]) -> None:
        pass

    def tick(self, now_ms: int) -> None:
        pass

    def shutdown(self) -> None:
        pass
