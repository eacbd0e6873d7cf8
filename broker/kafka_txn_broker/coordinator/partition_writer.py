"""PartitionWriter: how a coordinator shard writes to its partition (Kafka's CoordinatorPartitionWriter).

A shard writes every change to its partition first (acks=all) and applies it in memory only once the
append returned, so a new leader rebuilds the same state by replaying the log. Replication is in-process
and synchronous here: when `append` returns, every in-sync replica has the batch.

Threading: on the cluster's event loop, like all broker state; `append` never awaits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kafka_txn_broker.coordinator.coordinator_log import CoordinatorLog


class PartitionWriter:
    """Appends to this node's leader replica of one partition of a coordinator topic."""

    def __init__(self, log: CoordinatorLog, partition: int) -> None:
        self.log = log
        self.partition = partition

    def append(self, batch: bytes) -> int:
        """Append one batch with acks=all and return its first offset; raises the Kafka error (e.g.
        NOT_LEADER_OR_FOLLOWER when leadership moved, NOT_ENOUGH_REPLICAS)."""
        return self.log.append(self.partition, batch)
