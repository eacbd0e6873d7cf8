"""Per-partition producer state: idempotence, epoch fencing and ongoing transactions.

Follows Kafka's ProducerStateManager / ProducerAppendInfo / ProducerStateEntry (see the transactions
chapter in shared/seeds): the leader validates each producer batch against the producer's entry
(epoch, sequence continuity, a dedup window of the last 5 batches), records where each transaction
starts, and completes it on the COMMIT/ABORT marker. Followers and log replay apply the same updates
without raising. Snapshots (`<offset>.snapshot`) persist the table at segment rolls and clean close.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import NamedTuple

from kafka_txn_broker.clock import Clock
from kafka_txn_broker.formats import producer_snapshot as snap
from kafka_txn_broker.formats.errors import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceNumberError,
    TransactionCoordinatorFencedError,
    UnknownProducerIdError,
)
from kafka_txn_broker.formats.record_batch import (
    INT32_MAX,
    NO_SEQUENCE,
    TRANSACTIONAL_FLAG,
    BatchHeader,
    decrement_sequence,
)
from kafka_txn_broker.formats.transactions import LATE_TRANSACTION_BUFFER_MS, NO_PRODUCER_EPOCH

log = logging.getLogger(__name__)

NUM_BATCHES_TO_RETAIN = 5
SNAPSHOTS_TO_KEEP = 3


class AppendOrigin(StrEnum):
    CLIENT = "client"  # full validation
    COORDINATOR = "coordinator"  # epochs checked, no sequence numbers (offset commits, markers)
    REPLICATION = "replication"  # already validated by the leader: never raise


class BatchMetadata(NamedTuple):
    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        return decrement_sequence(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


class CompletedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int  # the marker's offset
    is_aborted: bool


class ActiveProducer(NamedTuple):
    """One row of DescribeProducers."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_txn_start_offset: int  # -1: none


class ProducerStateEntry:
    __slots__ = ("producer_id", "producer_epoch", "coordinator_epoch", "last_timestamp",
                 "current_txn_first_offset", "batches")

    def __init__(self, producer_id: int, producer_epoch: int = NO_PRODUCER_EPOCH, coordinator_epoch: int = -1,
                 last_timestamp: int = -1, current_txn_first_offset: int | None = None,
                 batches: list[BatchMetadata] | None = None) -> None:
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.coordinator_epoch = coordinator_epoch
        self.last_timestamp = last_timestamp
        self.current_txn_first_offset = current_txn_first_offset
        self.batches: list[BatchMetadata] = batches if batches is not None else []

    def copy(self) -> ProducerStateEntry:
        return ProducerStateEntry(self.producer_id, self.producer_epoch, self.coordinator_epoch,
                                  self.last_timestamp, self.current_txn_first_offset, list(self.batches))

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def first_seq(self) -> int:
        return self.batches[0].first_seq if self.batches else NO_SEQUENCE

    @property
    def last_data_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    @property
    def last_offset_delta(self) -> int:
        return self.batches[-1].offset_delta if self.batches else 0

    def maybe_update_epoch(self, epoch: int) -> None:
        """A new epoch starts a new sequence space: forget the old batches."""
        if epoch != self.producer_epoch:
            self.batches.clear()
            self.producer_epoch = epoch

    def add_batch(self, epoch: int, last_seq: int, last_offset: int, offset_delta: int,
                  timestamp: int) -> None:
        self.maybe_update_epoch(epoch)
        if len(self.batches) >= NUM_BATCHES_TO_RETAIN:
            del self.batches[0]
        self.batches.append(BatchMetadata(last_seq, last_offset, offset_delta, timestamp))
        self.last_timestamp = timestamp

    def find_duplicate(self, header: BatchHeader) -> BatchMetadata | None:
        if header.producer_epoch != self.producer_epoch:
            return None
        first, last = header.base_sequence, header.last_sequence
        for batch in self.batches:
            if batch.first_seq == first and batch.last_seq == last:
                return batch
        return None

    def to_snapshot(self) -> snap.SnapshotEntry:
        txn = -1 if self.current_txn_first_offset is None else self.current_txn_first_offset
        return snap.SnapshotEntry(self.producer_id, self.producer_epoch, self.last_seq, self.last_data_offset,
                                  self.last_offset_delta, self.last_timestamp, self.coordinator_epoch, txn)

    @classmethod
    def from_snapshot(cls, e: snap.SnapshotEntry) -> ProducerStateEntry:
        batches = [BatchMetadata(e.last_sequence, e.last_offset, e.offset_delta, e.timestamp)] \
            if e.last_offset >= 0 else []
        txn = e.current_txn_first_offset if e.current_txn_first_offset >= 0 else None
        return cls(e.producer_id, e.producer_epoch, e.coordinator_epoch, e.timestamp, txn, batches)

    def __repr__(self) -> str:
        return (f"ProducerStateEntry(pid={self.producer_id}, epoch={self.producer_epoch}, "
                f"coord_epoch={self.coordinator_epoch}, txn_first={self.current_txn_first_offset}, "
                f"batches={self.batches})")


@dataclass(slots=True)
class TxnMetadata:
    producer_id: int
    first_offset: int
    last_offset: int | None = None


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


class ProducerAppendInfo:
    """Validates one producer's batches of one append against a copy of its entry; the manager
    applies the result only when the whole append succeeded."""

    __slots__ = ("producer_id", "origin", "is_new", "entry", "started_txns", "strict_unknown")

    def __init__(self, producer_id: int, current: ProducerStateEntry | None, origin: AppendOrigin,
                 strict_unknown: bool, *, in_place: bool = False) -> None:
        """`in_place`: change `current` itself rather than a copy (replication, where nothing can refuse
        the batch, so there is nothing to roll back)."""
        self.producer_id = producer_id
        self.origin = origin
        self.is_new = current is None
        if current is None:
            self.entry = ProducerStateEntry(producer_id)
        else:
            self.entry = current if in_place else current.copy()
        self.started_txns: list[TxnMetadata] = []
        self.strict_unknown = strict_unknown

    # -- data batches ----------------------------------------------------------------------
    def append_data_batch(self, epoch: int, first_seq: int, last_seq: int, timestamp: int,
                          first_offset: int, last_offset: int, is_transactional: bool) -> None:
        self._check_data_epoch(epoch, first_offset)
        if self.origin is AppendOrigin.CLIENT:
            self._check_sequence(epoch, first_seq, first_offset)
        self.entry.add_batch(epoch, last_seq, last_offset, last_offset - first_offset, timestamp)
        open_txn = self.entry.current_txn_first_offset
        if open_txn is not None and not is_transactional:
            if self.origin is not AppendOrigin.REPLICATION:
                raise InvalidTxnStateError(
                    f"non-transactional write from producer {self.producer_id} at offset {first_offset} "
                    f"while its transaction from offset {open_txn} is open")
        elif open_txn is None and is_transactional:
            self.entry.current_txn_first_offset = first_offset
            self.started_txns.append(TxnMetadata(self.producer_id, first_offset))

    def append_batch(self, header: BatchHeader) -> None:
        """A data batch already carrying its offsets (follower / replay path)."""
        self.append_data_batch(header.producer_epoch, header.base_sequence, header.last_sequence,
                               header.max_timestamp, header.base_offset, header.last_offset,
                               header.is_transactional)

    def _check_data_epoch(self, epoch: int, offset: int) -> None:
        # Since Kafka 2.7 the partition leader answers INVALID_PRODUCER_EPOCH (abortable) for a stale
        # data batch, transactional or not; PRODUCER_FENCED (fatal) comes only from the coordinator.
        current = self.entry.producer_epoch
        if epoch < current:
            msg = (f"epoch {epoch} of producer {self.producer_id} at offset {offset} is older than "
                   f"the last seen epoch {current}")
            if self.origin is AppendOrigin.REPLICATION:
                log.warning(msg)
            else:
                raise InvalidProducerEpochError(msg)

    def _check_sequence(self, epoch: int, first_seq: int, offset: int) -> None:
        entry = self.entry
        if self.is_new:
            # No state at all: either a brand-new producer (starts at 0) or one whose state expired.
            if first_seq != 0 and self.strict_unknown:
                raise UnknownProducerIdError(
                    f"producer {self.producer_id} has no state on this partition (expired after "
                    f"producer.id.expiration.ms?) and sent sequence {first_seq}")
            return
        if epoch != entry.producer_epoch:
            if first_seq != 0 and entry.producer_epoch != NO_PRODUCER_EPOCH:
                raise OutOfOrderSequenceNumberError(
                    f"new epoch {epoch} of producer {self.producer_id} must start at sequence 0, "
                    f"got {first_seq} at offset {offset}")
            return
        if entry.producer_epoch == NO_PRODUCER_EPOCH:
            return  # all of its data is gone: accept any sequence
        if not _in_sequence(entry.last_seq, first_seq):
            raise OutOfOrderSequenceNumberError(
                f"out of order sequence {first_seq} for producer {self.producer_id} at offset {offset}: "
                f"expected {0 if entry.last_seq == INT32_MAX else entry.last_seq + 1}")

    # -- transaction markers ---------------------------------------------------------------
    def append_end_txn_marker(self, commit: bool, coordinator_epoch: int, producer_epoch: int,
                              offset: int, timestamp: int, transaction_version: int = 1,
                              txn_start_offset: int | None = None) -> CompletedTxn | None:
        self._check_marker_epoch(producer_epoch, offset, transaction_version)
        self._check_coordinator_epoch(coordinator_epoch, offset)
        open_txn = self.entry.current_txn_first_offset
        if txn_start_offset is not None and open_txn != txn_start_offset and \
                self.origin is not AppendOrigin.REPLICATION:
            raise InvalidTxnStateError(
                f"producer {self.producer_id} has no open transaction starting at offset {txn_start_offset} "
                f"(its open transaction starts at {open_txn if open_txn is not None else 'none'})")
        completed = None
        if open_txn is not None:  # a marker without data in this partition completes nothing here
            completed = CompletedTxn(self.producer_id, open_txn, offset, not commit)
        entry = self.entry
        entry.maybe_update_epoch(producer_epoch)
        entry.coordinator_epoch = coordinator_epoch
        entry.current_txn_first_offset = None
        entry.last_timestamp = timestamp
        return completed

    def _check_marker_epoch(self, epoch: int, offset: int, transaction_version: int) -> None:
        current = self.entry.producer_epoch
        # TV2 bumps the epoch before writing markers, so a valid marker is strictly newer; a marker at
        # the current epoch with no open transaction is a retry of one already written (accepted).
        if transaction_version >= 2:
            open_txn = self.entry.current_txn_first_offset is not None
            invalid = epoch < current or (epoch == current and open_txn)
        else:
            invalid = epoch < current
        if not invalid:
            return
        op = "<=" if transaction_version >= 2 else "<"
        msg = (f"marker epoch {epoch} of producer {self.producer_id} at offset {offset} is {op} "
               f"the last seen epoch {current} (TV{transaction_version})")
        if self.origin is AppendOrigin.REPLICATION:
            log.warning(msg)
        else:
            raise InvalidProducerEpochError(msg)

    def _check_coordinator_epoch(self, coordinator_epoch: int, offset: int) -> None:
        if self.entry.coordinator_epoch > coordinator_epoch:
            msg = (f"coordinator epoch {coordinator_epoch} of the marker for producer {self.producer_id} at "
                   f"offset {offset} is older than {self.entry.coordinator_epoch} (zombie coordinator)")
            if self.origin is AppendOrigin.REPLICATION:
                log.info(msg)
            else:
                raise TransactionCoordinatorFencedError(msg)


class ProducerStateManager:
    """The producer table of one partition plus its ongoing and not yet replicated transactions."""

    __slots__ = ("dir", "producer_id_expiration_ms", "strict_unknown_producer", "producers",
                 "ongoing_txns", "unreplicated_txns", "snapshots", "last_map_offset", "last_snap_offset",
                 "clock", "_active_at")

    def __init__(self, directory: Path | str, producer_id_expiration_ms: int,
                 snapshots: list[int] | None = None, *, strict_unknown_producer: bool = True,
                 clock: Clock | None = None) -> None:
        self.dir = str(directory)
        # With a clock, producer expiration measures idleness on the monotonic clock from the last
        # append seen here (a wall-clock step must not expire a live producer nor keep a dead one);
        # without one, Kafka's rule on the wall clock and the producer's last batch timestamp.
        self.clock = clock
        self._active_at: dict[int, float] = {}  # producer id -> monotonic seconds of its last append
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self.strict_unknown_producer = strict_unknown_producer
        self.producers: dict[int, ProducerStateEntry] = {}
        self.ongoing_txns: dict[int, TxnMetadata] = {}  # first offset -> txn
        self.unreplicated_txns: dict[int, TxnMetadata] = {}  # decided, marker not yet below the HW
        # `snapshots`: the directory's snapshot offsets when the caller has just listed it (the log's
        # open does): opening thousands of partitions then reads each directory once, not twice.
        found = snapshots if snapshots is not None else snap.list_snapshots(self.dir)
        self.snapshots: list[int] = sorted(found)
        self.last_map_offset = 0
        self.last_snap_offset = 0

    # -- queries ---------------------------------------------------------------------------
    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self.producers.get(producer_id)

    def first_undecided_offset(self) -> int | None:
        return min(self.ongoing_txns) if self.ongoing_txns else None

    def first_unstable_offset(self) -> int | None:
        """Lowest first offset of a transaction that is undecided, or decided with its marker not yet
        below the high watermark (Kafka keeps both out of read_committed reach)."""
        candidates = [min(d) for d in (self.ongoing_txns, self.unreplicated_txns) if d]
        return min(candidates) if candidates else None

    def active_producers(self) -> list[ActiveProducer]:
        return [ActiveProducer(e.producer_id, e.producer_epoch, e.last_seq, e.last_timestamp,
                               e.coordinator_epoch,
                               -1 if e.current_txn_first_offset is None else e.current_txn_first_offset)
                for e in self.producers.values()]

    def oldest_txn_last_timestamp(self) -> int:
        """Last-append time of the producer owning the lowest open transaction (-1: none); the
        late-transaction metric compares it with transaction.max.timeout.ms."""
        first = self.first_undecided_offset()
        if first is None:
            return -1
        entry = self.producers.get(self.ongoing_txns[first].producer_id)
        return entry.last_timestamp if entry is not None else -1

    def has_late_transaction(self, now_ms: int, max_transaction_timeout_ms: int) -> bool:
        """Kafka's late-transaction test: the oldest open transaction's producer has been silent for
        longer than transaction.max.timeout.ms plus a 5-minute buffer."""
        last = self.oldest_txn_last_timestamp()
        return last > 0 and now_ms - last > max_transaction_timeout_ms + LATE_TRANSACTION_BUFFER_MS

    def find_duplicate(self, header: BatchHeader) -> BatchMetadata | None:
        entry = self.producers.get(header.producer_id)
        return entry.find_duplicate(header) if entry is not None else None

    # -- updates ---------------------------------------------------------------------------
    def prepare_update(self, producer_id: int, origin: AppendOrigin) -> ProducerAppendInfo:
        return ProducerAppendInfo(producer_id, self.producers.get(producer_id), origin,
                                  self.strict_unknown_producer)

    def update(self, info: ProducerAppendInfo) -> None:
        self.producers[info.producer_id] = info.entry
        if self.clock is not None:
            self._active_at[info.producer_id] = self.clock.monotonic()
        for txn in info.started_txns:
            self.ongoing_txns[txn.first_offset] = txn

    def update_map_end_offset(self, offset: int) -> None:
        self.last_map_offset = offset

    def last_stable_offset(self, completed: CompletedTxn) -> int:
        """The LSO to record with an aborted txn: the first offset of the earliest other open
        transaction, else just past the marker."""
        others = [off for off, txn in self.ongoing_txns.items() if txn.producer_id != completed.producer_id]
        return min(others) if others else completed.last_offset + 1

    def complete_txn(self, completed: CompletedTxn) -> None:
        txn = self.ongoing_txns.pop(completed.first_offset, None)
        if txn is None:
            raise ValueError(f"cannot complete {completed}: no transaction started there")
        txn.last_offset = completed.last_offset
        self.unreplicated_txns[completed.first_offset] = txn

    def on_high_watermark_updated(self, high_watermark: int) -> None:
        if not self.unreplicated_txns:  # every replica's high watermark moves on every append
            return
        done = [first for first, txn in self.unreplicated_txns.items()
                if txn.last_offset is not None and txn.last_offset < high_watermark]
        for first in done:
            del self.unreplicated_txns[first]

    def apply_replicated(self, header: BatchHeader, marker: tuple[bool, int] | None) -> CompletedTxn | None:
        """Follower / replay path for one stored batch: update without validation. The checks only log
        on this path, never refuse, so the entry is updated in place (no copy to validate against)."""
        if marker is None:
            self._apply_replicated_data(header)
            return None
        info = ProducerAppendInfo(header.producer_id, self.producers.get(header.producer_id),
                                  AppendOrigin.REPLICATION, self.strict_unknown_producer, in_place=True)
        completed = info.append_end_txn_marker(marker[0], marker[1], header.producer_epoch,
                                               header.base_offset, header.max_timestamp)
        self.update(info)
        return completed

    def _apply_replicated_data(self, header: BatchHeader) -> None:
        """ProducerAppendInfo.append_batch with the REPLICATION origin, then update(), written out: every
        data batch of every follower passes here, and on this path the append info only ever warns."""
        producer_id = header.producer_id
        entry = self.producers.get(producer_id)
        if entry is None:
            entry = self.producers[producer_id] = ProducerStateEntry(producer_id)
        epoch, first_offset, delta = header.producer_epoch, header.base_offset, header.last_offset_delta
        if epoch < entry.producer_epoch:
            log.warning("epoch %s of producer %s at offset %s is older than the last seen epoch %s", epoch,
                        producer_id, first_offset, entry.producer_epoch)
        entry.add_batch(epoch, header.last_sequence, first_offset + delta, delta, header.max_timestamp)
        if entry.current_txn_first_offset is None and header.attributes & TRANSACTIONAL_FLAG:
            entry.current_txn_first_offset = first_offset
            self.ongoing_txns[first_offset] = TxnMetadata(producer_id, first_offset)
        if self.clock is not None:
            self._active_at[producer_id] = self.clock.monotonic()

    def _is_expired(self, entry: ProducerStateEntry, now_ms: int) -> bool:
        return entry.current_txn_first_offset is None and \
            now_ms - entry.last_timestamp >= self.producer_id_expiration_ms

    def remove_expired_producers(self, now_ms: int) -> list[int]:
        expired = [pid for pid, e in self.producers.items() if self._is_idle(pid, e, now_ms)]
        for pid in expired:
            del self.producers[pid]
            self._active_at.pop(pid, None)
        return expired

    def _is_idle(self, producer_id: int, entry: ProducerStateEntry, now_ms: int) -> bool:
        mark = self._active_at.get(producer_id)
        if self.clock is None or mark is None:
            return self._is_expired(entry, now_ms)
        idle_ms = (self.clock.monotonic() - mark) * 1000.0
        return entry.current_txn_first_offset is None and idle_ms >= self.producer_id_expiration_ms

    def stamp_loaded_activity(self) -> None:
        """After loading (snapshot + replay): each producer's activity mark from the wall-clock age of
        its last timestamp, the only record of it, counted as "now" if that lies in the future."""
        if self.clock is None:
            return
        wall, mono = self.clock.millis(), self.clock.monotonic()
        self._active_at = {pid: mono - max(0, wall - e.last_timestamp) / 1000.0 for pid, e in self.producers.items()}

    # -- snapshots, loading and truncation -------------------------------------------------
    def take_snapshot(self, log_dir: Path | str | None = None, offset: int | None = None) -> Path | None:
        """Write `<offset>.snapshot` (default: the map end offset) unless one already covers it."""
        directory = self.dir if log_dir is None else str(log_dir)
        at = self.last_map_offset if offset is None else offset
        if at <= self.last_snap_offset and at in self.snapshots:
            return None
        path = snap.write_snapshot(directory, at, [e.to_snapshot() for e in self.producers.values()])
        if at not in self.snapshots:
            self.snapshots.append(at)
            self.snapshots.sort()
        self.last_snap_offset = at
        self._prune_snapshots()
        return path

    def _prune_snapshots(self) -> None:
        while len(self.snapshots) > SNAPSHOTS_TO_KEEP:
            snap.delete_snapshot(self.dir, self.snapshots.pop(0))

    def delete_snapshots_above(self, offset: int) -> None:
        for at in [s for s in self.snapshots if s > offset]:
            snap.delete_snapshot(self.dir, at)
            self.snapshots.remove(at)

    def delete_snapshots_below(self, offset: int) -> None:
        """Segments below `offset` were deleted: their snapshots go too (Kafka's deleteSnapshotsBefore)."""
        for at in [s for s in self.snapshots if s < offset]:
            snap.delete_snapshot(self.dir, at)
            self.snapshots.remove(at)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        self.producers.clear()
        self._active_at.clear()
        self.ongoing_txns.clear()
        self.unreplicated_txns.clear()
        for at in self.snapshots:
            snap.delete_snapshot(self.dir, at)
        self.snapshots.clear()
        self.last_map_offset = offset
        self.last_snap_offset = 0

    def load_snapshot(self, log_start_offset: int, max_offset: int, now_ms: int) -> int:
        """Reset, then load the newest readable snapshot at or below `max_offset` (newer ones are
        deleted: they describe data that is gone). Returns the offset to replay the log from."""
        self.producers.clear()
        self._active_at.clear()
        self.ongoing_txns.clear()
        self.unreplicated_txns.clear()
        self.delete_snapshots_above(max_offset)
        while self.snapshots:
            at = self.snapshots[-1]
            try:
                entries = snap.read_snapshot(snap.snapshot_path(self.dir, at))
            except (snap.CorruptSnapshotError, OSError) as exc:
                log.warning("dropping unreadable producer snapshot: %s", exc)
                snap.delete_snapshot(self.dir, at)
                self.snapshots.pop()
                continue
            if at < log_start_offset:
                break
            for e in entries:
                entry = ProducerStateEntry.from_snapshot(e)
                if not self._is_expired(entry, now_ms):
                    self._load_entry(entry)
            self.last_map_offset = self.last_snap_offset = at
            return at
        self.last_map_offset = self.last_snap_offset = log_start_offset
        return log_start_offset

    def _load_entry(self, entry: ProducerStateEntry) -> None:
        self.producers[entry.producer_id] = entry
        if entry.current_txn_first_offset is not None:
            first = entry.current_txn_first_offset
            self.ongoing_txns[first] = TxnMetadata(entry.producer_id, first)
