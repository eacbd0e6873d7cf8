"""The state of a share-partition as `__share_group_state` records build it, for the share coordinator
and for anyone reading that topic (the kafka-txn share view): Kafka's ShareGroupOffset and its
PersisterStateBatchCombiner. Pure.

- A ShareSnapshot replaces the state; a ShareUpdate of the same snapshot epoch is applied on top of it
  (an update of an older snapshot is already in the newer one), and a tombstone deletes it.
- A transactional ShareUpdate (KIP-1289: acknowledgements TxnShareAcknowledge staged in a producer's
  transaction) is held per producer (StagedUpdates) until that producer's marker in the same partition:
  COMMIT applies it on top of the state as it is then, ABORT drops it, so the log alone says which staged
  acknowledgements took effect, and a reader sees the rest as still pending.
- combine(): newer batches override the offsets they cover, batches below the start offset are dropped,
  and neighbours in the same state with the same delivery count are merged:

    combine([StateBatch(0, 9, 0, 1)], [StateBatch(3, 4, 2, 1)], start_offset=2)
    # -> [StateBatch(2, 2, 0, 1), StateBatch(3, 4, 2, 1), StateBatch(5, 9, 0, 1)]
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from kafka_txn_broker.formats.errors import CorruptRecordError, InvalidRecordError
from kafka_txn_broker.formats.record_batch import BatchHeader, iter_records, parse_control_record
from kafka_txn_broker.formats.share_coordinator_records import (
    SHARE_SNAPSHOT,
    SHARE_UPDATE,
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

    def apply_update(self, v: ShareUpdateValue) -> bool:
        """Apply an update of this snapshot; False (nothing changes) for an older snapshot's update. The
        timestamps stay the snapshot's (Kafka's merge: an update carries none), so a state rebuilt by replay
        equals the live one, and the write timestamp says how old the latest snapshot is."""
        if v.snapshot_epoch != self.snapshot_epoch:
            return False
        if v.start_offset >= 0:
            self.start_offset = v.start_offset
        self.batches = combine(self.batches, v.state_batches, self.start_offset)
        self.leader_epoch = max(self.leader_epoch, v.leader_epoch)
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


def state_key_of(key: bytes) -> tuple[int, StateKey]:
    """(record type, state key) of a `__share_group_state` record key (RecordFormatError if unreadable)."""
    k = decode_key(key)
    return k.record_type, (k.group_id, k.topic_id, k.partition)


@dataclass(slots=True)
class StagedUpdates:
    """The transactional ShareUpdate records of open transactions, per producer id, in log order."""

    by_producer: dict[int, list[tuple[StateKey, ShareUpdateValue]]] = field(default_factory=dict)

    def add(self, producer_id: int, key: StateKey, value: ShareUpdateValue) -> None:
        self.by_producer.setdefault(producer_id, []).append((key, value))

    def of_key(self, key: StateKey) -> list[tuple[int, list[StateBatch]]]:
        """What each producer's open transaction staged on one share-partition."""
        found = [(pid, [b for k, v in staged if k == key for b in v.state_batches])
                 for pid, staged in self.by_producer.items()]
        return sorted((pid, batches) for pid, batches in found if batches)

    def complete(self, states: dict[StateKey, ShareGroupOffset], producer_id: int, commit: bool) -> int:
        """The producer's marker: COMMIT applies what it staged to `states`, ABORT drops it. A staged update
        was written against the snapshot of its time; it applies to whatever snapshot is current now (a
        snapshot written meanwhile could not hold it). Returns how many staged updates it resolved."""
        staged = self.by_producer.pop(producer_id, [])
        if commit:
            for key, value in staged:
                state = states.get(key)
                if state is not None:
                    state.apply_update(replace(value, snapshot_epoch=state.snapshot_epoch))
        return len(staged)


def replay_batch(states: dict[StateKey, ShareGroupOffset], staged: StagedUpdates, batch: bytes,
                 header: BatchHeader) -> list[tuple[int, Exception]]:
    """Apply one whole `__share_group_state` batch: a marker resolves its producer's staged updates, a
    transactional batch's updates are staged, any other record applies. Returns the records it skipped as
    unreadable, (offset, error), so the caller can say so; the rest of the batch still applies."""
    if header.is_control:
        try:
            commit, _coordinator_epoch = parse_control_record(batch)
        except (CorruptRecordError, InvalidRecordError) as exc:
            return [(header.base_offset, exc)]
        staged.complete(states, header.producer_id, commit)
        return []
    skipped: list[tuple[int, Exception]] = []
    for rec in iter_records(batch):
        if rec.key is None:
            continue
        try:
            if header.is_transactional:
                record_type, key = state_key_of(rec.key)
                if record_type == SHARE_UPDATE and rec.value is not None:
                    staged.add(header.producer_id, key, decode_update_value(rec.value))
            else:
                apply_record(states, rec.key, rec.value)
        except (RecordFormatError, UnicodeDecodeError, ValueError) as exc:
            skipped.append((rec.offset, exc))
    return skipped


__all__ = ["RecordFormatError", "ShareGroupOffset", "StagedUpdates", "StateKey", "apply_record", "combine",
           "replay_batch", "state_key_of"]


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
