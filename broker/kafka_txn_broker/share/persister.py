"""The share-partitions' and the admin APIs' way to their durable state (Kafka's DefaultStatePersister):
each call goes to the share coordinator shard of the key's `__share_group_state` partition.

Errors are Kafka's (FENCED_STATE_EPOCH, FENCED_LEADER_EPOCH, NOT_COORDINATOR,
COORDINATOR_NOT_AVAILABLE, NOT_ENOUGH_REPLICAS ...), raised. Event-loop owned.
"""

from __future__ import annotations

from typing import Protocol

from kafka_txn_broker.formats.share_coordinator_records import StateBatch
from kafka_txn_broker.formats.share_state import ShareGroupOffset
from kafka_txn_broker.share.share_coordinator_shard import ShareCoordinatorShard
from kafka_txn_broker.share.share_partition import UNINITIALIZED, PersistedState, SharePartitionKey


class ShardLocator(Protocol):
    def shard_for(self, coordinator_key: str) -> ShareCoordinatorShard: ...


class ShareStatePersister:
    def __init__(self, locator: ShardLocator) -> None:
        self.locator = locator

    def _shard(self, key: SharePartitionKey) -> ShareCoordinatorShard:
        return self.locator.shard_for(key.coordinator_key())

    def read_state(self, key: SharePartitionKey, leader_epoch: int) -> PersistedState:
        state = self._shard(key).read_state(key, leader_epoch)
        if state is None:
            return PersistedState(0, UNINITIALIZED, [])
        return PersistedState(state.state_epoch, state.start_offset, list(state.batches),
                              self._shard(key).staged_of(key))

    def write_state(self, key: SharePartitionKey, state_epoch: int, leader_epoch: int, start_offset: int,
                    batches: list[StateBatch]) -> None:
        self._shard(key).write_state(key, state_epoch, leader_epoch, start_offset, batches)

    def stage_state(self, key: SharePartitionKey, leader_epoch: int, producer_id: int, producer_epoch: int,
                    batches: list[StateBatch]) -> None:
        """KIP-1289: acknowledgements staged in the producer's transaction, durable until its marker."""
        self._shard(key).stage_state(key, leader_epoch, producer_id, producer_epoch, batches)

    def read_summary(self, key: SharePartitionKey) -> ShareGroupOffset | None:
        """The stored state without touching epochs (ReadShareGroupStateSummary)."""
        return self._shard(key).states.get(key)

    def initialize_state(self, key: SharePartitionKey, state_epoch: int, start_offset: int) -> None:
        self._shard(key).initialize_state(key, state_epoch, start_offset)

    def delete_state(self, key: SharePartitionKey) -> None:
        self._shard(key).delete_state(key)
