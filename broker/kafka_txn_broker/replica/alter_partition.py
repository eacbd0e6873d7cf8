"""What a partition's leader asks the controller (Kafka's AlterPartition and the controller's fail-over):
a follower joins or leaves the ISR, a reassignment whose targets are in sync completes, and leadership
moves off a replica whose log went offline.

The controller's store (server's ClusterMetadata) answers it in this process, changing the shared
PartitionState in place and telling every node; a multi-process cluster would send the request instead.
"""

from __future__ import annotations

from typing import Protocol

from kafka_txn_broker.metadata.topics import PartitionState


class AlterPartition(Protocol):
    def join_isr(self, p: PartitionState, node_id: int) -> None:
        """`node_id` caught up with the leader: it counts for the high watermark from now on."""
        ...

    def leave_isr(self, p: PartitionState, node_id: int) -> None:
        """A follower that cannot keep up (a storage error) stops counting for the high watermark."""
        ...

    def maybe_complete_reassignment(self, p: PartitionState) -> bool:
        """After the ISR grew: complete the partition's reassignment if its targets are all in sync."""
        ...

    def leader_log_failed(self, p: PartitionState, node_id: int) -> bool:
        """The leader `node_id`'s log went offline: move leadership to a live in-sync replica if any."""
        ...
