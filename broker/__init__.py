"""Embedded Kafka broker in pure Python: real wire protocol, Kafka-format logs, transactions."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kafka_txn_broker.cluster import EmbeddedCluster

__all__ = ["EmbeddedCluster"]


def __getattr__(name: str) -> Any:
    # Lazy so that `import kafka_txn_broker` (e.g. by the pytest plugin) costs nothing.
    if name == "EmbeddedCluster":
        from kafka_txn_broker.cluster import EmbeddedCluster

        return EmbeddedCluster
    raise AttributeError(name)
