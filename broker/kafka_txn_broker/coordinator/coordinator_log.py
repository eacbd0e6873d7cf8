"""A coordinator topic's partitions on one node, as its coordinator writes and loads them.

The transaction, group and share coordinators keep their state in `__transaction_state`,
`__consumer_offsets` and `__share_group_state`: they append through the partition leader with acks=all
and, when they become a partition's coordinator, replay its log. They see the topic through
`CoordinatorLog` (so unit tests use a fake log); `ReplicaCoordinatorLog` is the real one, over this
node's replicas.

Threading: called on the cluster's event loop only, like all broker state; no method awaits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from kafka_txn_broker.formats.errors import NotLeaderForPartitionError

if TYPE_CHECKING:
    from kafka_txn_broker.replica.replica_manager import ReplicaManager


class CoordinatorLog(Protocol):
    def append(self, partition: int, records: bytes) -> int:
        """Append as the partition's leader with acks=all and return the first offset. Raises the Kafka
        error (NOT_LEADER_OR_FOLLOWER when this node does not lead the partition)."""
        ...

    def log_start_offset(self, partition: int) -> int | None:
        """Where the partition's log starts on this node; None when this node has no replica of it."""
        ...

    def log_end_offset(self, partition: int) -> int | None:
        """The partition's log end offset on this node; None when this node has no replica of it."""
        ...

    def read(self, partition: int, offset: int, max_bytes: int) -> bytes:
        """Whole batches from the one holding `offset`, up to `max_bytes` but at least one batch; empty at
        the log end."""
        ...


class ReplicaCoordinatorLog:
    """One coordinator topic over this node's replica manager."""

    def __init__(self, replicas: ReplicaManager, topic: str) -> None:
        self.replicas = replicas
        self.topic = topic

    def append(self, partition: int, records: bytes) -> int:
        part = self.replicas.get(self.topic, partition)
        if part is None:
            raise NotLeaderForPartitionError(
                f"node {self.replicas.node_id} has no replica of {self.topic}-{partition}")
        return int(part.append_as_leader(records, -1, origin="coordinator").first_offset)

    def log_start_offset(self, partition: int) -> int | None:
        part = self.replicas.get(self.topic, partition)
        return None if part is None else int(part.log.log_start_offset)

    def log_end_offset(self, partition: int) -> int | None:
        part = self.replicas.get(self.topic, partition)
        return None if part is None else int(part.log.log_end_offset)

    def read(self, partition: int, offset: int, max_bytes: int) -> bytes:
        part = self.replicas.get(self.topic, partition)
        if part is None:
            raise NotLeaderForPartitionError(
                f"node {self.replicas.node_id} has no replica of {self.topic}-{partition}")
        return bytes(part.log.read_for_replication(offset, max_bytes))
