"""Producer id allocation in durable blocks (Kafka's ProducerIdManager with a controller-held range).

A node takes a block of ids from the cluster metadata, which records the block's end durably before
any id in it is handed out; after a restart the next block starts past every block ever issued, so an
id is never reissued, even after kill -9.
"""

from __future__ import annotations

from kafka_txn_broker.server.cluster_metadata import ClusterMetadata


class ProducerIdManager:
    def __init__(self, metadata: ClusterMetadata, block_size: int) -> None:
        self._metadata = metadata
        self._block_size = block_size
        self._next = 0
        self._end = 0

    def generate(self) -> int:
        if self._next >= self._end:
            self._next = self._metadata.allocate_producer_id_block(self._block_size)
            self._end = self._next + self._block_size
        pid = self._next
        self._next += 1
        return pid
