"""An internal topic's partitions on one node, as its coordinator writes and loads them.

The transaction and group coordinators keep their state in `__transaction_state` and
`__consumer_offsets`: they append through the partition leader with acks=all and, when they become a
partition's coordinator, replay its log. They see it through `CoordinatorLog` (so their unit tests use
a fake log); `ReplicaCoordinatorLog` is the real one, over this node's replicas. On the cluster's
event loop, like all broker state.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Protocol

from kafka.errors import NotLeaderForPartitionError

from kafka_txn_broker.formats.record_batch import iter_batches

if TYPE_CHECKING:
    from kafka_txn_broker.replica.replica_manager import ReplicaManager


class CoordinatorLog(Protocol):
    def append(self, partition: int, records: bytes) -> int:
        """Append as the partition's leader with acks=all and return the first offset. Raises the Kafka
        error (NOT_LEADER_OR_FOLLOWER when this node does not lead the partition)."""
        ...

    def read(self, partition: int) -> Iterator[bytes]:
        """The partition's log from its start to its end, in chunks of whole batches; nothing when this
        node has no replica of it. The end is re-read before each chunk."""
        ...


class ReplicaCoordinatorLog:
    def __init__(self, replicas: ReplicaManager, topic: str, chunk_bytes: int) -> None:
        self.replicas = replicas
        self.topic = topic
        self.chunk_bytes = chunk_bytes

    def append(self, partition: int, records: bytes) -> int:
        part = self.replicas.get(self.topic, partition)
        if part is None:
            raise NotLeaderForPartitionError(
                f"node {self.replicas.node_id} has no replica of {self.topic}-{partition}")
        return int(part.append_as_leader(records, -1, origin="coordinator").first_offset)

    def read(self, partition: int) -> Iterator[bytes]:
        part = self.replicas.get(self.topic, partition)
        if part is None:
            return  # e.g. a topic just created: its replicas are being opened, nothing to load
        offset = part.log.log_start_offset
        while offset < part.log.log_end_offset:
            chunk = bytes(part.log.read_for_replication(offset, self.chunk_bytes))
            ends = [header.next_offset for _pos, header in iter_batches(chunk)]
            if not ends:
                raise RuntimeError(f"no progress reading {self.topic}-{partition} at offset {offset}")
            yield chunk
            offset = ends[-1]
