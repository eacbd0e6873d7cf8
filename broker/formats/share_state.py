"""The state of a share-partition as `__share_group_state` records build it, for the share coordinator
and for anyone reading that topic (the kafka-txn share view): Kafka's ShareGroupOffset and its
PersisterStateBatchCombiner. Pure.

- A ShareSnapshot replaces the state; a ShareUpdate of the same snapshot epoch is applied on top of it
  (an update of an older snapshot is already in the newer one), and a tombstone deletes it.
- combine(): newer batches override the offsets they cover, batches below the start offset are dropped,
  and neighbours in the same state with the same delivery count are merged:

    combine([StateBatch(0, 9, 0, 1)], [StateBatch(3, 4, 2, 1)], start_offset=2)
    # -> [StateBatch(2, 2, 0, 1), StateBatch(3, 4, 2, 1), StateBatch(5, 9, 0, 1)]
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field

from kafka_txn_broker.formats.share_coordinator_records import (
    SHARE_SNAPSHOT,
    RecordFormatError,
    ShareSnapshotValue,
    ShareUpdateValue,
    StateBatch,
    decode_key,
    decode_snapshot_value,
    decode_update_value,
)

StateKey = tuple[str, uuid.UUID, int]  # (group id, topic id, partition)
ACKNOWLEDGED, ARCHIVED = 2, 4


@dataclass(slots=True)
class ShareGroupOffset:
    """The persisted state of one share-partition (Kafka's ShareGroupOffset)."""

    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    batches: list[StateBatch] = field(default_factory=list)
    create_timestamp: int = -1
    write_timestamp: int = -1
    updates_since_snapshot: int = 0

    @classmethod
    def of_snapshot(cls, v: ShareSnapshotValue) -> ShareGroupOffset:
        return cls(v.snapshot_epoch, v.state_epoch, v.leader_epoch, v.start_offset, list(v.state_batches),
                   v.create_timestamp, v.write_timestamp)

    def apply_update(self, v: ShareUpdateValue, write_timestamp: int = -1) -> bool:
        """Apply an update of this snapshot; False (nothing changes) for an older snapshot's update."""
        if v.snapshot_epoch != self.snapshot_epoch:
            return False
        if v.start_offset >= 0:
            self.start_offset = v.start_offset
        self.batches = combine(self.batches, v.state_batches, self.start_offset)
        self.leader_epoch = max(self.leader_epoch, v.leader_epoch)
        self.write_timestamp = write_timestamp
        self.updates_since_snapshot += 1
        return True

    def delivery_complete_count(self) -> int:
        """ACKNOWLEDGED and ARCHIVED records at or above the start offset (KIP-1226)."""
        return sum(b.last_offset - b.first_offset + 1 for b in self.batches if b.delivery_state in (ACKNOWLEDGED,
                                                                                                    ARCHIVED))


def apply_record(states: dict[StateKey, ShareGroupOffset], key: bytes, value: bytes | None) -> None:
    """Apply one `__share_group_state` record to `states` (RecordFormatError if unreadable)."""
    k = decode_key(key)
    state_key = (k.group_id, k.topic_id, k.partition)
    if value is None:
        states.pop(state_key, None)
    elif k.record_type == SHARE_SNAPSHOT:
        states[state_key] = ShareGroupOffset.of_snapshot(decode_snapshot_value(value))
    else:
        state = states.get(state_key)
        if state is not None:
            state.apply_update(decode_update_value(value))


__all__ = ["RecordFormatError", "ShareGroupOffset", "StateKey", "apply_record", "combine"]


def combine(current: Iterable[StateBatch], newer: Iterable[StateBatch], start_offset: int) -> list[StateBatch]:
    result: list[StateBatch] = [b for b in sorted(current) if b.last_offset >= start_offset]
    for b in sorted(newer):
        if b.last_offset < start_offset:
            continue
        result = _overlay(result, b._replace(first_offset=max(b.first_offset, start_offset)))
    return _trim_and_merge(result, start_offset)


def _overlay(batches: list[StateBatch], new: StateBatch) -> list[StateBatch]:
    out: list[StateBatch] = []
    placed = False
    for b in batches:
        if b.last_offset < new.first_offset or b.first_offset > new.last_offset:
            if not placed and b.first_offset > new.last_offset:
                out.append(new)
                placed = True
            out.append(b)
            continue
        if b.first_offset < new.first_offset:
            out.append(b._replace(last_offset=new.first_offset - 1))
        if not placed:
            out.append(new)
            placed = True
        if b.last_offset > new.last_offset:
            out.append(b._replace(first_offset=new.last_offset + 1))
    if not placed:
        out.append(new)
    return out


def _trim_and_merge(batches: list[StateBatch], start_offset: int) -> list[StateBatch]:
    out: list[StateBatch] = []
    for b in batches:
        if b.last_offset < start_offset:
            continue
        b = b._replace(first_offset=max(b.first_offset, start_offset))
        if out and out[-1].last_offset + 1 == b.first_offset and out[-1][2:] == b[2:]:
            out[-1] = out[-1]._replace(last_offset=b.last_offset)
        else:
            out.append(b)
    return out
