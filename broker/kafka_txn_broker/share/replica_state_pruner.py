"""Pruning `__share_group_state`: DeleteRecords on this node's leader replica of a share-state partition, up
to where the share coordinator's replay no longer needs the records (its ShareSnapshot offsets), never past
an open transaction or unreplicated data. Event-loop owned, like the replicas it writes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_txn_broker.formats.partitioning import SHARE_STATE_TOPIC

if TYPE_CHECKING:
    from kafka_txn_broker.replica.replica_manager import ReplicaManager


class ReplicaStatePruner:
    """DeleteRecords on this node's leader replica of a `__share_group_state` partition, as the share
    coordinator prunes it (the same log start offset advance as the DeleteRecords API, which refuses
    internal topics to clients)."""

    def __init__(self, replicas: ReplicaManager) -> None:
        self.replicas = replicas

    def prune(self, partition: int, offset: int) -> int | None:
        part = self.replicas.get(SHARE_STATE_TOPIC, partition)
        if part is None:
            return None
        # Records of open transactions stay, and so does anything not yet replicated.
        bound = min(offset, part.log.last_stable_offset, part.log.high_watermark)
        if bound <= part.log.log_start_offset:
            return None
        self.replicas.delete_records(SHARE_STATE_TOPIC, partition, bound)
        return int(part.log.log_start_offset)
