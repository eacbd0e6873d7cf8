"""One `__share_group_state` partition as the share coordinator sees it (Kafka's ShareCoordinatorShard):
the durable state of every share-partition whose key hashes to it, rebuilt by replaying the log.

A write is checked against the stored epochs (a lower state epoch: FENCED_STATE_EPOCH, after the
group's offsets were reset; a lower leader epoch: FENCED_LEADER_EPOCH, a share-partition leader that
lost its leadership), appended to the log (acks=all), and applied only once the append succeeded.
It is a ShareUpdate holding the batches the write changed, or, every
`share.coordinator.snapshot.update.records.per.snapshot` updates, a ShareSnapshot of the whole state,
so replay never has to go further back than the last snapshot of each key.

KIP-1289 staged acknowledgements are made durable here: stage_state() appends them as a ShareUpdate in a
transactional batch of the staging producer (this partition is in its transaction: TxnShareAcknowledge
registered it first), held per producer until the producer's marker reaches this partition (live:
complete_transaction(); on load: the marker in the log). COMMIT applies them, ABORT drops them. So a
crash at any point leaves the log saying which staged acknowledgements took effect, and a share-partition
loaded meanwhile gets the still-open ones back as pending (staged_of()) instead of redelivering records
whose acknowledgement may yet commit.

Pruning (Kafka's ShareCoordinatorOffsetsManager): the shard knows, per share-partition, the offset from
which replay rebuilds its state (its latest snapshot, or the first offset of a transaction committed after
that snapshot that staged updates on it), and the first offset of each open staged transaction;
prunable_offset() is the smallest of them, below which the log can go (DeleteRecords) without changing what
replay rebuilds. A deleted share-partition needs nothing.

Cold-partition snapshots (Kafka's snapshotColdPartitions): a share-partition nobody writes any more would keep
its old snapshot, and the updates after it, as where replay starts, holding the bound of the whole partition
back while other share-partitions' writes make it grow. snapshot_cold_partitions() rewrites, as a new snapshot,
the state of every share-partition whose latest snapshot is older than the interval (the share coordinator
calls it on its timer); acknowledgements staged by open transactions stay out of it, held apart as before.

Collaborators come through the constructor: the log writer, the clock, the snapshot interval. The coordinator
runtime (kafka_txn_broker/coordinator/) loads it: replay_batch for each batch of the log, then finish_load.
Threading: the broker's event loop owns it; appends are synchronous.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

from kafka_txn_broker.formats.errors import FencedLeaderEpochError, FencedStateEpochError, InvalidRequestError
from kafka_txn_broker.formats.record_batch import (
    BatchHeader,
    build_batch,
    iter_records,
    parse_control_record,
)
from kafka_txn_broker.formats.share_coordinator_records import (
    SHARE_SNAPSHOT,
    SHARE_UPDATE,
    RecordFormatError,
    ShareSnapshotValue,
    ShareUpdateValue,
    StateBatch,
    encode_key,
    encode_snapshot_value,
    encode_update_value,
)
from kafka_txn_broker.formats.share_state import (
    ShareGroupOffset,
    StagedUpdates,
    StateKey,
    combine,
    replay_batch,
    state_key_of,
)
from kafka_txn_broker.formats.transactions import NO_PRODUCER_EPOCH, NO_PRODUCER_ID

if TYPE_CHECKING:
    from kafka_txn_broker.clock import Clock

log = logging.getLogger(__name__)

NO_EPOCH = -1


class LogWriter(Protocol):
    def append(self, batch: bytes) -> int:
        """Append one batch (acks=all) and return its first offset, or raise."""
        ...


class ShareCoordinatorShard:
    def __init__(self, partition: int, writer: LogWriter, clock: Clock, updates_per_snapshot: int = 500) -> None:
        self.partition = partition
        self.writer = writer
        self.clock = clock
        self.updates_per_snapshot = updates_per_snapshot
        self.states: dict[StateKey, ShareGroupOffset] = {}
        self.staged = StagedUpdates()  # of open transactions, until their marker
        # Pruning bookkeeping: where replay must start for each live share-partition to come back the same,
        # the first offset of each producer's open staged transaction, and the end of what was seen.
        self.replay_from: dict[StateKey, int] = {}
        self.snapshot_offset: dict[StateKey, int] = {}  # of each live share-partition's latest snapshot
        self.open_txn_first_offset: dict[int, int] = {}
        self.next_offset = 0

    # ---- reads ---------------------------------------------------------------------------------------
    def read_state(self, key: StateKey, leader_epoch: int) -> ShareGroupOffset | None:
        """The state (None: never initialized). A share-partition leader reading with a newer leader
        epoch records it first, so writes from its predecessor are fenced from now on."""
        state = self.states.get(key)
        if state is None:
            return None
        if leader_epoch != NO_EPOCH:
            if leader_epoch < state.leader_epoch:
                raise FencedLeaderEpochError(
                    f"leader epoch {leader_epoch} of {_name(key)} is older than {state.leader_epoch}")
            if leader_epoch > state.leader_epoch:
                self._write(key, state.state_epoch, leader_epoch, -1, [])
        return self.states[key]

    def staged_of(self, key: StateKey) -> list[tuple[int, list[StateBatch]]]:
        """(producer id, batches) staged on the share-partition by transactions still open."""
        return self.staged.of_key(key)

    def keys_of_group(self, group_id: str) -> list[StateKey]:
        return [k for k in self.states if k[0] == group_id]

    # ---- writes --------------------------------------------------------------------------------------
    def write_state(self, key: StateKey, state_epoch: int, leader_epoch: int, start_offset: int,
                    batches: list[StateBatch]) -> None:
        if key[2] < 0 or not key[0]:
            raise InvalidRequestError(f"invalid share-partition key {_name(key)}")
        state = self.states.get(key)
        if state is not None:
            if state_epoch < state.state_epoch:
                raise FencedStateEpochError(
                    f"state epoch {state_epoch} of {_name(key)} is older than {state.state_epoch}")
            if leader_epoch != NO_EPOCH and leader_epoch < state.leader_epoch:
                raise FencedLeaderEpochError(
                    f"leader epoch {leader_epoch} of {_name(key)} is older than {state.leader_epoch}")
        self._write(key, state_epoch, leader_epoch, start_offset, batches)

    def stage_state(self, key: StateKey, leader_epoch: int, producer_id: int, producer_epoch: int,
                    batches: list[StateBatch]) -> None:
        """Append acknowledgements staged in the producer's transaction (the states its COMMIT gives the
        records) in a transactional batch of that producer; they take effect with its COMMIT marker."""
        state = self.states.get(key)
        if state is None:
            raise InvalidRequestError(f"share-partition {_name(key)} has no state to stage acknowledgements on")
        if leader_epoch != NO_EPOCH and leader_epoch < state.leader_epoch:
            raise FencedLeaderEpochError(
                f"leader epoch {leader_epoch} of {_name(key)} is older than {state.leader_epoch}")
        value = ShareUpdateValue(state.snapshot_epoch, state.leader_epoch, -1, list(batches))
        offset = self._append([(encode_key(SHARE_UPDATE, *key), encode_update_value(value))],
                              producer_id=producer_id, producer_epoch=producer_epoch, transactional=True)
        self.staged.add(producer_id, key, value)
        self.open_txn_first_offset.setdefault(producer_id, offset)

    def complete_transaction(self, producer_id: int, commit: bool) -> int:
        """The producer's marker was written to this partition: apply (COMMIT) or drop (ABORT) what it
        staged here. A repeated marker finds nothing."""
        keys = self._staged_keys(producer_id)
        resolved = self.staged.complete(self.states, producer_id, commit)
        self._on_marker(producer_id, commit, keys)
        return resolved

    def initialize_state(self, key: StateKey, state_epoch: int, start_offset: int) -> None:
        """A fresh state (InitializeShareGroupState; AlterShareGroupOffsets bumps the state epoch)."""
        self._append_snapshot(key, ShareGroupOffset(0, state_epoch, NO_EPOCH, start_offset, [],
                                                    self.now(), self.now()))

    def delete_state(self, key: StateKey) -> None:
        """Tombstones for both record keys (DeleteShareGroupState)."""
        if key not in self.states:
            return
        records: list[tuple[bytes, bytes | None]] = [(encode_key(t, *key), None)
                                                     for t in (SHARE_SNAPSHOT, SHARE_UPDATE)]
        self._append(records)
        self.states.pop(key, None)
        self._forget(key)

    def _forget(self, key: StateKey) -> None:
        """A deleted share-partition needs no record any more."""
        self.replay_from.pop(key, None)
        self.snapshot_offset.pop(key, None)

    def _write(self, key: StateKey, state_epoch: int, leader_epoch: int, start_offset: int,
               batches: list[StateBatch]) -> None:
        state = self.states.get(key)
        if state is None or state.updates_since_snapshot >= self.updates_per_snapshot \
                or state_epoch > state.state_epoch:  # an update has no state epoch: a new one needs a snapshot
            base = state or ShareGroupOffset(-1, state_epoch, leader_epoch, start_offset, [], self.now())
            start = start_offset if start_offset >= 0 else base.start_offset
            # A snapshot written for a write is created now (Kafka: create and write timestamps equal; only
            # a cold-partition snapshot keeps the older create timestamp).
            merged = ShareGroupOffset(base.snapshot_epoch + 1, state_epoch,
                                      leader_epoch if leader_epoch != NO_EPOCH else base.leader_epoch, start,
                                      combine(base.batches, batches, start), self.now(), self.now())
            self._append_snapshot(key, merged)
            return
        value = ShareUpdateValue(state.snapshot_epoch, leader_epoch if leader_epoch != NO_EPOCH else state.leader_epoch,
                                 start_offset, list(batches))
        self._append([(encode_key(SHARE_UPDATE, *key), encode_update_value(value))])
        self._apply_update(key, value)

    def _append_snapshot(self, key: StateKey, s: ShareGroupOffset) -> None:
        value = ShareSnapshotValue(s.snapshot_epoch, s.state_epoch, s.leader_epoch, s.start_offset,
                                   s.create_timestamp, s.write_timestamp, s.batches, s.delivery_complete_count())
        offset = self._append([(encode_key(SHARE_SNAPSHOT, *key), encode_snapshot_value(value))])
        self._apply_snapshot(key, value)
        self.replay_from[key] = self.snapshot_offset[key] = offset

    def _append(self, records: list[tuple[bytes, bytes | None]], producer_id: int = NO_PRODUCER_ID,
                producer_epoch: int = NO_PRODUCER_EPOCH, transactional: bool = False) -> int:
        """Append one batch of `records`; its first offset."""
        offset = self.writer.append(build_batch(records, timestamp_ms=self.now(), producer_id=producer_id,
                                                producer_epoch=producer_epoch, transactional=transactional))
        self.next_offset = max(self.next_offset, offset + len(records))
        return offset

    # ---- applying records ----------------------------------------------------------------------------
    def _apply_snapshot(self, key: StateKey, v: ShareSnapshotValue) -> None:
        self.states[key] = ShareGroupOffset.of_snapshot(v)

    def _apply_update(self, key: StateKey, v: ShareUpdateValue) -> None:
        state = self.states.get(key)
        if state is not None:
            state.apply_update(v)

    # ---- loading (the coordinator runtime replays the partition log into a fresh shard) ---------------
    def replay_batch(self, batch: bytes, header: BatchHeader) -> None:
        keys = self._staged_keys(header.producer_id) if header.is_control else set()
        skipped = replay_batch(self.states, self.staged, batch, header)
        for offset, exc in skipped:
            log.warning("skipping unreadable __share_group_state-%s record at %s: %s", self.partition, offset, exc)
        self.next_offset = max(self.next_offset, header.next_offset)
        if header.is_control:
            if not skipped:
                self._on_marker(header.producer_id, self._is_commit(batch), keys)
        elif header.is_transactional:
            self.open_txn_first_offset.setdefault(header.producer_id, header.base_offset)
        else:
            self._track_records(batch, {offset for offset, _exc in skipped})

    def _track_records(self, batch: bytes, skipped: set[int]) -> None:
        """Replay starts at a share-partition's latest snapshot; a tombstone means it needs nothing."""
        for rec in iter_records(batch):
            if rec.key is None or rec.offset in skipped:
                continue
            try:
                record_type, key = state_key_of(rec.key)
            except (RecordFormatError, UnicodeDecodeError, ValueError):
                continue  # replay_batch skipped it too
            if rec.value is None:
                self._forget(key)
            elif record_type == SHARE_SNAPSHOT:
                self.replay_from[key] = self.snapshot_offset[key] = rec.offset

    # ---- pruning -------------------------------------------------------------------------------------
    def _staged_keys(self, producer_id: int) -> set[StateKey]:
        return {key for key, _value in self.staged.by_producer.get(producer_id, [])}

    def _on_marker(self, producer_id: int, commit: bool, keys: set[StateKey]) -> None:
        """A COMMIT applied the producer's staged updates after the latest snapshot of the share-partitions
        they were on: replaying those states now needs the transaction's records too."""
        first = self.open_txn_first_offset.pop(producer_id, None)
        if not commit or first is None:
            return
        for key in keys:
            if key in self.replay_from:
                self.replay_from[key] = min(self.replay_from[key], first)

    @staticmethod
    def _is_commit(batch: bytes) -> bool:
        commit, _coordinator_epoch = parse_control_record(batch)
        return commit

    def prunable_offset(self) -> int | None:
        """The offset below which no record is needed (the log start may move up to it), None when nothing
        can go: the smallest offset replay must start from for a live share-partition or an open staged
        transaction; with none of either, everything seen."""
        bound = min([*self.replay_from.values(), *self.open_txn_first_offset.values(), self.next_offset])
        return bound if bound > 0 else None

    # ---- cold-partition snapshots ------------------------------------------------------------------------
    def snapshot_cold_partitions(self, interval_ms: int) -> int:
        """Kafka's snapshotColdPartitions, every `share.coordinator.cold.partition.snapshot.interval.ms`: each
        share-partition whose latest snapshot was written `interval_ms` ago or earlier gets a new one, the
        same state with the next snapshot epoch, its create timestamp kept and written now, so a share-partition
        nobody writes any more stops holding the prune bound at its old snapshot. Nothing at all when every
        share-partition's latest snapshot already is such a snapshot with nothing replay needs before it (the
        partition is quiet: snapshotting again would not move the bound). Returns how many it wrote.

        What open transactions staged stays out of the snapshot (it is held apart until the marker, and the
        bound already stops at the transaction's first offset)."""
        if all(self._cold_snapshotted(key, state) for key, state in self.states.items()):
            return 0
        now = self.now()
        cold = [key for key, state in self.states.items() if now - state.write_timestamp >= interval_ms]
        for key in cold:
            state = self.states[key]
            self._append_snapshot(key, replace(state, snapshot_epoch=state.snapshot_epoch + 1, write_timestamp=now,
                                               batches=list(state.batches), updates_since_snapshot=0))
        return len(cold)

    def _cold_snapshotted(self, key: StateKey, state: ShareGroupOffset) -> bool:
        """The latest snapshot is a cold-partition one (Kafka: its create and write timestamps differ) and
        replay starts at it: a COMMIT since then of acknowledgements staged before it (KIP-1289) sends replay
        back to the transaction's first offset, which only a newer snapshot moves on."""
        replay_starts_at_it = self.replay_from.get(key) == self.snapshot_offset.get(key)
        return state.create_timestamp != state.write_timestamp and replay_starts_at_it

    def finish_load(self) -> None:
        """The whole partition was replayed (the coordinator runtime's hook): nothing more to build."""

    def unload(self) -> None:
        """Leadership moved away: the runtime drops the shard (the next leader replays the log). Nothing
        waits on it, and appends through a stale reference fail (NOT_LEADER_OR_FOLLOWER)."""

    def now(self) -> int:
        return self.clock.millis()


def _name(key: StateKey) -> str:
    return f"{key[0]}:{key[1]}:{key[2]}"
