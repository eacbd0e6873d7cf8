"""SharePartition: the in-flight records of one share-partition (group, topic id, partition) on the
partition leader (Kafka's kafka.server.share.SharePartition).

In-flight records are the offsets from the share-partition start offset (SPSO) up to the end of what
was ever fetched (SPEO). They are kept as contiguous ranges, each in one state with one delivery
count (and, while ACQUIRED, one owner and one lock deadline):

    SPSO=10  [10-14 ACKNOWLEDGED] [15-19 ACQUIRED by m1, count 1, lock until t] [20-29 AVAILABLE, count 2]

- acquire(): a ShareFetch hands out AVAILABLE cached records and new records of the fetched batches;
  under read_committed, aborted batches and markers are archived instead.
- acknowledge(): ACCEPT / RELEASE / REJECT / GAP of records the member holds; the new states and the
  start offset are written to the share coordinator before the call returns (an error rolls back).
- release_member(), expire_locks(): records of a closed session or an expired lock go back to
  AVAILABLE, or to ARCHIVED at the delivery-count limit; written the same way.
- The SPSO moves past leading ACKNOWLEDGED / ARCHIVED records; new records are not acquired while
  SPEO - SPSO reaches the in-flight cap.
- Transactional acknowledgements (KIP-1289): stage() moves records the member holds to TX_PENDING for a
  producer's transaction; the manager then makes them durable (staged_batches(): the states the COMMIT
  gives them, written in the producer's transaction); complete_transaction() applies the
  transaction's marker, matched by producer id (a TV2 marker carries the bumped epoch): COMMIT makes
  them ACKNOWLEDGED / ARCHIVED and writes that like any acknowledgement, ABORT gives them back to their
  owner, still ACQUIRED under the same lock. A TX_PENDING record is not released by its lock: it waits
  for the marker (the transaction timeout bounds the wait), so an acknowledgement is never applied
  after its record went to another consumer; expired_pending_locks() counts such records.

Acquisitions are not written (as in Kafka): after a restart or a leader move the new leader reads the
persisted state, and records that were only acquired are delivered again. Records staged by a transaction
still open come back TX_PENDING, with no owner (the KIP keeps TX_PENDING in memory only and redelivers
them; then a COMMIT arriving later would apply an acknowledgement to a record another consumer is
processing again); the marker resolves them, an ABORT making them AVAILABLE as an expired lock would.
Every transition goes through record_state.transition. The clock is injectable (lock deadlines are
monotonic milliseconds).
Threading: one asyncio loop owns it; nothing here awaits.
"""

from __future__ import annotations

import bisect
import itertools
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, NamedTuple, Protocol

from kafka_txn_broker.formats.errors import (
    FencedLeaderEpochError,
    FencedStateEpochError,
    InvalidRecordStateError,
    InvalidRequestError,
)
from kafka_txn_broker.formats.share_coordinator_records import StateBatch, coordinator_key
from kafka_txn_broker.share.record_state import (
    Event,
    RecordState,
    acknowledge_event,
    transactional_commit_event,
    transition,
)

if TYPE_CHECKING:
    from kafka_txn_broker.clock import Clock

EMPTY_MEMBER = ""
UNINITIALIZED = -1


class SharePartitionKey(NamedTuple):
    group_id: str
    topic_id: uuid.UUID
    partition: int

    def coordinator_key(self) -> str:
        """The partitionFor key of `__share_group_state`: "group:topicId:partition"."""
        return coordinator_key(self.group_id, self.topic_id, self.partition)


class LogBatch(Protocol):
    """What acquire() reads of a fetched batch (BatchHeader has these)."""

    @property
    def base_offset(self) -> int: ...

    @property
    def last_offset(self) -> int: ...

    @property
    def producer_id(self) -> int: ...

    @property
    def is_transactional(self) -> bool: ...

    @property
    def is_control(self) -> bool: ...


class ShareLimits(Protocol):
    """The group's effective share configs, read each time they are used (they change dynamically)."""

    def record_lock_duration_ms(self) -> int: ...

    def delivery_count_limit(self) -> int: ...

    def max_in_flight_records(self) -> int: ...


class PersistedState(NamedTuple):
    state_epoch: int
    start_offset: int
    batches: list[StateBatch]
    # (producer id, batches) staged by transactions still open: the states their COMMIT gives the records.
    staged: Sequence[tuple[int, Sequence[StateBatch]]] = ()


class StatePersister(Protocol):
    """The share coordinator as a share-partition sees it (Kafka's Persister). Errors are raised as
    Kafka exceptions (FENCED_STATE_EPOCH, FENCED_LEADER_EPOCH, COORDINATOR_NOT_AVAILABLE, ...)."""

    def read_state(self, key: SharePartitionKey, leader_epoch: int) -> PersistedState: ...

    def write_state(self, key: SharePartitionKey, state_epoch: int, leader_epoch: int, start_offset: int,
                    batches: list[StateBatch]) -> None: ...


class AcquiredRange(NamedTuple):
    first_offset: int
    last_offset: int
    delivery_count: int


class AckBatch(NamedTuple):
    """One AcknowledgementBatches entry: one type for the whole range, or one per offset."""

    first_offset: int
    last_offset: int
    ack_types: Sequence[int]


@dataclass(slots=True)
class InFlight:
    """Offsets first..last in one state (Kafka's InFlightBatch / InFlightState, kept per range)."""

    first: int
    last: int
    state: RecordState
    delivery_count: int
    member_id: str = EMPTY_MEMBER
    deadline_ms: int = 0
    # While TX_PENDING: the staging producer, the event its COMMIT applies, when it was staged, and
    # whether its lock ran out meanwhile (counted once).
    txn_producer_id: int = -1
    txn_commit: Event | None = None
    staged_ms: int = 0
    lock_expired: bool = False

    @property
    def size(self) -> int:
        return self.last - self.first + 1

    def same_as(self, other: InFlight) -> bool:
        return (self.state, self.delivery_count, self.member_id, self.deadline_ms, self.txn_producer_id,
                self.txn_commit, self.staged_ms, self.lock_expired) == \
            (other.state, other.delivery_count, other.member_id, other.deadline_ms, other.txn_producer_id,
             other.txn_commit, other.staged_ms, other.lock_expired)

    def clear_txn(self) -> None:
        self.txn_producer_id, self.txn_commit, self.staged_ms, self.lock_expired = -1, None, 0, False


class PendingTxn(NamedTuple):
    """What one producer's open transaction holds TX_PENDING on a share-partition."""

    producer_id: int
    records: int
    oldest_staged_ms: int  # monotonic milliseconds


# Never written by a share-partition itself: acquisitions are delivered again by a new leader; staging is
# written by the manager in the producer's transaction (staged_batches()), and loaded back as pending.
_NOT_PERSISTED = frozenset({RecordState.ACQUIRED, RecordState.TX_PENDING})


def _first(b: InFlight) -> int:
    return b.first


class SharePartition:
    def __init__(self, key: SharePartitionKey, leader_epoch: int, persister: StatePersister, clock: Clock,
                 limits: ShareLimits) -> None:
        self.key = key
        self.leader_epoch = leader_epoch
        self.persister = persister
        self.clock = clock
        self.limits = limits
        self.state_epoch = 0
        self.start_offset = UNINITIALIZED
        self._end = UNINITIALIZED  # one past the last in-flight offset (SPEO + 1)
        self._ranges: list[InFlight] = []
        self._next_deadline: int | None = None
        self.initialized = False
        self.fenced = False
        # Records whose lock ran out while TX_PENDING, since this share-partition was loaded (a counter).
        self.expired_pending_locks = 0

    # ---- initialization ----------------------------------------------------------------------------
    def initialize(self, reset_offset: Callable[[], int]) -> None:
        """Load the persisted state; a share-partition without one starts at `reset_offset()`
        (share.auto.offset.reset), which is written at once so a restart keeps the same start."""
        state = self.persister.read_state(self.key, self.leader_epoch)
        self.state_epoch = state.state_epoch
        if state.start_offset == UNINITIALIZED:
            start = reset_offset()
            self.persister.write_state(self.key, self.state_epoch, self.leader_epoch, start, [])
            self._load(start, [])
        else:
            self._load(state.start_offset, state.batches)
            self._restore_staged(state.staged)
        self.initialized = True

    def _load(self, start: int, batches: Iterable[StateBatch]) -> None:
        self.start_offset = self._end = start
        self._ranges = []
        for b in sorted(batches):
            if b.last_offset < self._end:
                continue  # below the start offset, or overlapping: the start offset covers it
            first = max(b.first_offset, self._end)
            if first > self._end:
                # Never acknowledged, so never written: offsets that were fetched at most; deliverable.
                self._ranges.append(InFlight(self._end, first - 1, RecordState.AVAILABLE, 0))
            self._ranges.append(InFlight(first, b.last_offset, RecordState(b.delivery_state), b.delivery_count))
            self._end = b.last_offset + 1
        self._advance_start()

    def _restore_staged(self, staged: Sequence[tuple[int, Sequence[StateBatch]]]) -> None:
        """Records an open transaction staged before this leader loaded: TX_PENDING again, no owner."""
        now, lock_ms = self._now(), self.limits.record_lock_duration_ms()
        for producer_id, batches in staged:
            for b in sorted(batches):
                first = max(b.first_offset, self.start_offset)
                if b.last_offset < first:
                    continue
                if b.last_offset >= self._end:  # acquisitions are not persisted: the log had them
                    self._append_new(self._end, b.last_offset)
                commit = Event.TXN_COMMIT_ACCEPT if b.delivery_state == RecordState.ACKNOWLEDGED \
                    else Event.TXN_COMMIT_REJECT
                lo, hi = self._span(first, b.last_offset)
                for r in self._ranges[lo:hi]:
                    if r.state is RecordState.AVAILABLE:  # a completed record stays completed
                        r.state, r.delivery_count = RecordState.TX_PENDING, b.delivery_count
                        r.deadline_ms = now + lock_ms
                        r.txn_producer_id, r.txn_commit, r.staged_ms = producer_id, commit, now
                self._coalesce()
        if any(r.state is RecordState.TX_PENDING for r in self._ranges):
            self._next_deadline = now + lock_ms  # so an expired pending lock is counted, as for a staged one

    # ---- views -------------------------------------------------------------------------------------
    @property
    def end_offset(self) -> int:
        """The share-partition end offset (SPEO): the last in-flight offset, or SPSO - 1 when none."""
        return self._end - 1

    def in_flight(self) -> list[InFlight]:
        return [replace(r) for r in self._ranges]

    def counts_by_state(self) -> dict[RecordState, int]:
        counts = dict.fromkeys(RecordState, 0)
        for r in self._ranges:
            counts[r.state] += r.size
        return counts

    def next_fetch_offset(self) -> int:
        """The first AVAILABLE in-flight offset, else the end of the in-flight records."""
        for r in self._ranges:
            if r.state is RecordState.AVAILABLE:
                return r.first
        return self._end

    def can_acquire(self) -> bool:
        """Something to hand out: available in-flight records, or room under the in-flight cap."""
        if self.next_fetch_offset() < self._end:
            return True
        return self._end - self.start_offset < self.limits.max_in_flight_records()

    def acquired_by(self, member_id: str) -> int:
        return sum(r.size for r in self._ranges if r.state is RecordState.ACQUIRED and r.member_id == member_id)

    # ---- acquire -----------------------------------------------------------------------------------
    def acquire(self, member_id: str, batches: Sequence[LogBatch], max_records: int, *,
                fetch_offset: int, read_committed: bool = False, aborted: Sequence[tuple[int, int]] = (),
                record_limit: bool = False) -> list[AcquiredRange]:
        """Acquire the records of `batches` (read from `fetch_offset`) that are AVAILABLE or new, whole
        batches at a time, until `max_records` is reached (a soft limit, as in Kafka's batch-optimized
        mode; with `record_limit`, ShareFetch v2's record-limit mode, a hard one that may split a batch).
        `aborted` holds the (producer id, first offset) of aborted transactions in the read, for
        read_committed."""
        self._check_usable()
        if not batches or max_records <= 0:
            return []
        self._archive_vanished(fetch_offset, batches[0].base_offset)
        now = self._now()
        lock_ms = self.limits.record_lock_duration_ms()
        acquired: list[AcquiredRange] = []
        count = 0
        for batch, hidden in _classify(batches, read_committed, aborted):
            if count >= max_records:
                break
            first, last = max(batch.base_offset, self.start_offset), batch.last_offset
            if record_limit and not hidden:
                last = min(last, self._last_within(first, last, max_records - count))
            if last < first:
                continue
            if first >= self._end and not self._room_for_new():
                break
            if last >= self._end:
                self._append_new(first, last)
            event = Event.ARCHIVE if hidden else Event.ACQUIRE
            count += self._apply_available(first, last, event, member_id, now + lock_ms, acquired)
        self._advance_start()
        return _merge_acquired(acquired)

    def _last_within(self, first: int, last: int, budget: int) -> int:
        """The last offset of first..last that keeps the acquired records within `budget` (offsets not
        AVAILABLE, and offsets beyond the in-flight records, which are new, count as they come)."""
        taken = 0
        for r in self._ranges[max(self._index(first), 0):] if first < self._end else ():
            if r.first > last:
                break
            lo, hi = max(r.first, first), min(r.last, last)
            if r.state is RecordState.AVAILABLE:
                if taken + hi - lo + 1 >= budget:
                    return lo + budget - taken - 1
                taken += hi - lo + 1
        # Within the budget still (taken < budget): when nothing of first..last is new, this is `last`.
        new_from = max(first, self._end)
        return min(last, new_from + budget - taken - 1)

    def _room_for_new(self) -> bool:
        return self._end - self.start_offset < self.limits.max_in_flight_records()

    def _append_new(self, first: int, last: int) -> None:
        if first > self._end:
            # Offsets the log no longer has (compaction): nothing to deliver.
            self._ranges.append(InFlight(self._end, first - 1, RecordState.ARCHIVED, 0))
        start = max(first, self._end)
        self._ranges.append(InFlight(start, last, RecordState.AVAILABLE, 0))
        self._end = last + 1

    def _apply_available(self, first: int, last: int, event: Event, member_id: str, deadline: int,
                         acquired: list[AcquiredRange]) -> int:
        """Move the AVAILABLE records in first..last through `event`; return how many were acquired."""
        taken = 0
        limit = self.limits.delivery_count_limit()
        lo, hi = self._span(first, last)  # acquire() appended whatever of first..last was new
        for r in self._ranges[lo:hi]:
            if r.state is not RecordState.AVAILABLE:
                continue
            r.state, r.delivery_count = transition(r.state, event, r.delivery_count, limit)
            if r.state is RecordState.ACQUIRED:
                r.member_id, r.deadline_ms = member_id, deadline
                taken += r.size
                acquired.append(AcquiredRange(r.first, r.last, r.delivery_count))
                self._next_deadline = deadline if self._next_deadline is None else min(self._next_deadline, deadline)
        self._coalesce()
        return taken

    def _archive_vanished(self, fetch_offset: int, first_fetched: int) -> None:
        """AVAILABLE in-flight records below the first batch the log returned no longer exist
        (compaction removed them): archive them so the start offset can move (Kafka's
        maybeArchiveStaleBatches)."""
        last = min(first_fetched, self._end) - 1
        if last < max(fetch_offset, self.start_offset):
            return
        lo, hi = self._span(max(fetch_offset, self.start_offset), last)
        limit = self.limits.delivery_count_limit()
        for r in self._ranges[lo:hi]:
            if r.state is RecordState.AVAILABLE:
                r.state, r.delivery_count = transition(r.state, Event.ARCHIVE, r.delivery_count, limit)
        self._coalesce()

    # ---- acknowledge -------------------------------------------------------------------------------
    def acknowledge(self, member_id: str, acks: Sequence[AckBatch]) -> None:
        """Apply a member's acknowledgements and write them; all or nothing.

        Raises InvalidRequestError for malformed batches and InvalidRecordStateError when an offset is
        not ACQUIRED by this member (Kafka's INVALID_RECORD_STATE), writing nothing in either case."""
        self._check_usable()
        plan = [(a, _ack_events(a)) for a in acks]
        # Overlapping batches would pass the ownership check and then fail half-applied (as Kafka, refuse
        # them whole: INVALID_REQUEST).
        self._check_disjoint([(a.first_offset, a.last_offset) for a in acks])
        for ack, _events in plan:
            self._check_owned(member_id, ack.first_offset, ack.last_offset)
        saved = self._save()
        touched: list[tuple[int, int]] = []
        limit = self.limits.delivery_count_limit()
        deadline = self._now() + self.limits.record_lock_duration_ms()
        for ack, events in plan:
            if len(events) == 1:
                self._apply_owned(ack.first_offset, ack.last_offset, events[0], limit, deadline)
            else:
                for i, event in enumerate(events):
                    offset = ack.first_offset + i
                    self._apply_owned(offset, offset, event, limit, deadline)
            touched.append((ack.first_offset, ack.last_offset))
        self._persist_or_restore(saved, touched)

    # ---- transactional acknowledgements (KIP-1289) --------------------------------------------------
    def stage(self, member_id: str, producer_id: int, acks: Sequence[AckBatch]) -> int:
        """Stage a member's ACCEPT / REJECT acknowledgements in the producer's transaction: its records go
        TX_PENDING, keeping owner and lock. All or nothing; nothing is written. Raises InvalidRecordStateError
        for another type or a record the member does not hold ACQUIRED (a TX_PENDING one included),
        InvalidRequestError for malformed batches. Returns how many records were staged."""
        self._check_usable()
        plan = [(a, _txn_events(a)) for a in acks]
        for ack, _events in plan:
            self._check_owned(member_id, ack.first_offset, ack.last_offset)
        self._check_disjoint([(a.first_offset, a.last_offset) for a in acks])
        now = self._now()
        for ack, events in plan:
            for first, last, commit in _runs(ack.first_offset, ack.last_offset, events):
                lo, hi = self._span(first, last)
                for r in self._ranges[lo:hi]:
                    r.state, _ = transition(r.state, Event.TXN_STAGE, r.delivery_count, 0)
                    r.txn_producer_id, r.txn_commit, r.staged_ms = producer_id, commit, now
                self._coalesce()
        return sum(a.last_offset - a.first_offset + 1 for a in acks)

    def staged_batches(self, producer_id: int, acks: Sequence[AckBatch]) -> list[StateBatch]:
        """What stage() of these batches holds for the producer, as the states its COMMIT gives them."""
        limit = self.limits.delivery_count_limit()
        out: list[StateBatch] = []
        for ack in acks:
            for r in self._ranges[self._index(ack.first_offset):self._index(ack.last_offset) + 1]:
                if r.state is RecordState.TX_PENDING and r.txn_producer_id == producer_id:
                    assert r.txn_commit is not None
                    target, count = transition(r.state, r.txn_commit, r.delivery_count, limit)
                    out.append(StateBatch(max(r.first, ack.first_offset), min(r.last, ack.last_offset),
                                          int(target), count))
        return _merge_state_batches(out)  # in offset order: stage() accepts batches only in that order

    def unstage(self, producer_id: int, acks: Sequence[AckBatch]) -> None:
        """Undo stage() of these batches (another partition of the same request failed)."""
        for ack in acks:
            self._resolve(producer_id, Event.TXN_ABORT, ack.first_offset, ack.last_offset)

    def complete_transaction(self, producer_id: int, commit: bool) -> int:
        """The marker of the producer's transaction: COMMIT applies what it staged here (written before
        returning; an error leaves the records TX_PENDING and is raised, so the caller can retry), ABORT
        gives the records back to their owner. Records of other producers are untouched; a repeated marker
        finds nothing. Returns how many records it resolved."""
        if not self.initialized or self.fenced:
            return 0
        picked = [(r.first, r.last) for r in self._ranges
                  if r.state is RecordState.TX_PENDING and r.txn_producer_id == producer_id]
        if not picked:
            return 0
        saved = self._save()
        ownerless = any(r.member_id == EMPTY_MEMBER for r in self._ranges
                        if r.state is RecordState.TX_PENDING and r.txn_producer_id == producer_id)
        for first, last in picked:
            self._resolve(producer_id, None if commit else Event.TXN_ABORT, first, last)
        if commit or ownerless:  # an ownerless record aborted is released, and may archive at the limit
            self._persist_or_restore(saved, picked)
        return sum(last - first + 1 for first, last in picked)

    def _resolve(self, producer_id: int, event: Event | None, first: int, last: int) -> None:
        """TX_PENDING records of the producer in first..last through `event` (None: their COMMIT event)."""
        lo, hi = self._span(first, last)
        limit = self.limits.delivery_count_limit()
        for r in self._ranges[lo:hi]:
            if r.state is not RecordState.TX_PENDING or r.txn_producer_id != producer_id:
                continue
            step = event if event is not None else r.txn_commit
            assert step is not None
            r.state, r.delivery_count = transition(r.state, step, r.delivery_count, limit)
            if r.state is RecordState.ACQUIRED and r.member_id == EMPTY_MEMBER:
                # Restored after a restart or leader move: no owner to give it back to; released, as
                # an expired lock would (archived at the delivery-count limit).
                r.state, r.delivery_count = transition(r.state, Event.LOCK_EXPIRED, r.delivery_count, limit)
            if r.state is RecordState.ACQUIRED:  # aborted: its lock runs on
                self._next_deadline = r.deadline_ms if self._next_deadline is None \
                    else min(self._next_deadline, r.deadline_ms)
            else:
                r.member_id, r.deadline_ms = EMPTY_MEMBER, 0
            r.clear_txn()
        self._coalesce()

    def pending_transactions(self) -> list[PendingTxn]:
        """Per producer: how many records its open transaction holds TX_PENDING here, staged since when."""
        found: dict[int, PendingTxn] = {}
        for r in self._ranges:
            if r.state is RecordState.TX_PENDING:
                p = found.get(r.txn_producer_id)
                found[r.txn_producer_id] = PendingTxn(r.txn_producer_id, r.size + (p.records if p else 0),
                                                      min(r.staged_ms, p.oldest_staged_ms) if p else r.staged_ms)
        return sorted(found.values())

    def _check_disjoint(self, spans: list[tuple[int, int]]) -> None:
        """Batches in offset order, none overlapping the one before (Kafka's validateAcknowledgementBatches
        refuses the partition's acknowledgements otherwise, INVALID_REQUEST)."""
        for (a, b), (c, d) in itertools.pairwise(spans):
            if c <= b:
                what = "overlap" if d >= a else "are out of offset order"
                raise InvalidRequestError(f"acknowledgement batches {a}-{b} and {c}-{d} {what}")

    def _check_owned(self, member_id: str, first: int, last: int) -> None:
        if first < self.start_offset or last >= self._end:
            raise InvalidRecordStateError(
                f"offsets {first}-{last} are not in flight ({self.start_offset}-{self._end - 1})")
        i = self._index(first)
        while i < len(self._ranges) and self._ranges[i].first <= last:
            r = self._ranges[i]
            if r.state is not RecordState.ACQUIRED or r.member_id != member_id:
                held = f" by {r.member_id}" if r.state is RecordState.ACQUIRED else ""
                raise InvalidRecordStateError(
                    f"offsets {max(first, r.first)}-{min(last, r.last)} are {r.state.name}{held}, "
                    f"not acquired by member {member_id}")
            i += 1

    def _apply_owned(self, first: int, last: int, event: Event, limit: int, deadline: int) -> None:
        lo, hi = self._span(first, last)
        for r in self._ranges[lo:hi]:
            r.state, r.delivery_count = transition(r.state, event, r.delivery_count, limit)
            if r.state is RecordState.ACQUIRED:  # RENEW: a new lock for the same owner
                r.deadline_ms = deadline
            else:
                r.member_id, r.deadline_ms = EMPTY_MEMBER, 0
        self._coalesce()

    # ---- release -----------------------------------------------------------------------------------
    def release_member(self, member_id: str) -> int:
        """Give back everything `member_id` holds (its share session closed or it left the group)."""
        return self._release(lambda r: r.member_id == member_id, Event.MEMBER_RELEASE)

    def expire_locks(self) -> int:
        """Release every record whose acquisition lock ran out; return how many were released."""
        now = self._now()
        if self._next_deadline is None or self._next_deadline > now:
            return 0
        released = self._release(lambda r: r.deadline_ms <= now, Event.LOCK_EXPIRED)
        for r in self._ranges:
            if r.state is RecordState.TX_PENDING and r.deadline_ms <= now and not r.lock_expired:
                r.lock_expired = True  # it stays pending: only its transaction's marker resolves it
                self.expired_pending_locks += r.size
        pending = [r.deadline_ms for r in self._ranges if r.state is RecordState.ACQUIRED]
        self._next_deadline = min(pending) if pending else None
        return released

    def _release(self, selected: Callable[[InFlight], bool], event: Event) -> int:
        if not self.initialized or self.fenced:
            return 0
        picked = [(r.first, r.last) for r in self._ranges if r.state is RecordState.ACQUIRED and selected(r)]
        if not picked:
            return 0
        saved = self._save()
        limit = self.limits.delivery_count_limit()
        for first, last in picked:
            self._apply_owned(first, last, event, limit, 0)
        self._persist_or_restore(saved, picked)
        return sum(last - first + 1 for first, last in picked)

    def archive_below(self, offset: int) -> None:
        """The log start moved to `offset`: records below it can no longer be delivered."""
        if offset <= self.start_offset:
            return
        # Archived, every record below it would be terminal and the start offset would pass them at once:
        # drop them (acquired and TX_PENDING ones too; nothing is written, as for any archiving).
        del self._ranges[:self._split(offset)]
        self.start_offset = offset
        self._end = max(self._end, offset)
        self._advance_start()  # a completed record at the new start

    # ---- persistence -------------------------------------------------------------------------------
    def _persist_or_restore(self, saved: tuple[int, int, list[InFlight]], touched: list[tuple[int, int]]) -> None:
        start_before = saved[0]
        self._advance_start()
        batches = self._batches_for(touched)
        if not batches and self.start_offset == start_before:
            return  # RENEW only: nothing durable changed
        try:
            self.persister.write_state(self.key, self.state_epoch, self.leader_epoch, self.start_offset, batches)
        except (FencedStateEpochError, FencedLeaderEpochError):
            self._restore(saved)
            self.fenced = True
            raise
        except Exception:
            self._restore(saved)
            raise

    def _batches_for(self, touched: list[tuple[int, int]]) -> list[StateBatch]:
        """The state batches covering the touched offsets at or above the start offset (ACQUIRED
        records are never written: after a restart they are deliverable again)."""
        out: list[StateBatch] = []
        for first, last in sorted(touched):
            first = max(first, self.start_offset)
            if first > last:
                continue
            i = self._index(first)
            while i < len(self._ranges) and self._ranges[i].first <= last:
                r = self._ranges[i]
                lo, hi = max(r.first, first), min(r.last, last)
                if r.state not in _NOT_PERSISTED:
                    out.append(StateBatch(lo, hi, int(r.state), r.delivery_count))
                i += 1
        return _merge_state_batches(out)

    def _save(self) -> tuple[int, int, list[InFlight]]:
        return self.start_offset, self._end, [replace(r) for r in self._ranges]

    def _restore(self, saved: tuple[int, int, list[InFlight]]) -> None:
        self.start_offset, self._end, self._ranges = saved[0], saved[1], saved[2]

    # ---- ranges ------------------------------------------------------------------------------------
    def _check_usable(self) -> None:
        if self.fenced:
            raise FencedStateEpochError(f"share-partition {self.key} was fenced; it is loaded again")
        if not self.initialized:
            raise InvalidRequestError(f"share-partition {self.key} is not initialized")

    def _now(self) -> int:
        return int(self.clock.monotonic() * 1000)

    def _index(self, offset: int) -> int:
        """Index of the range holding `offset` (start_offset <= offset < end)."""
        return bisect.bisect_right(self._ranges, offset, key=_first) - 1

    def _split(self, offset: int) -> int:
        """Make a range start at `offset`; return its index (len(ranges) when offset == end)."""
        if offset >= self._end:
            return len(self._ranges)
        i = self._index(offset)
        r = self._ranges[i]
        if r.first == offset:
            return i
        tail = replace(r, first=offset)
        r.last = offset - 1
        self._ranges.insert(i + 1, tail)
        return i + 1

    def _span(self, first: int, last: int) -> tuple[int, int]:
        """Split at both ends; ranges[lo:hi] then cover exactly first..last."""
        lo = self._split(first)
        return lo, self._split(last + 1)  # the second split inserts after lo: lo stays valid

    def _coalesce(self) -> None:
        """Merge equal neighbours so the list stays short: each range a maximal run of one state. The
        whole list is scanned (it is short), so no earlier split is left behind."""
        merged: list[InFlight] = []
        for r in self._ranges:
            if merged and merged[-1].same_as(r):
                merged[-1].last = r.last
            else:
                merged.append(r)
        self._ranges = merged

    def _advance_start(self) -> None:
        k = 0
        while k < len(self._ranges) and self._ranges[k].state.terminal:
            k += 1
        if k:
            self.start_offset = self._ranges[k - 1].last + 1
            del self._ranges[:k]


def _ack_events(ack: AckBatch) -> list[Event]:
    _check_batch(ack)
    try:
        return [acknowledge_event(t) for t in ack.ack_types]
    except ValueError:
        raise InvalidRequestError(f"unknown acknowledge type in {list(ack.ack_types)}") from None


def _check_batch(ack: AckBatch) -> None:
    if ack.last_offset < ack.first_offset or ack.first_offset < 0:
        raise InvalidRequestError(f"acknowledgement batch {ack.first_offset}-{ack.last_offset} is empty")
    n = ack.last_offset - ack.first_offset + 1
    if len(ack.ack_types) not in (1, n):
        raise InvalidRequestError(
            f"acknowledgement batch {ack.first_offset}-{ack.last_offset} has {len(ack.ack_types)} types; "
            f"give 1 or {n}")


def _txn_events(ack: AckBatch) -> list[Event]:
    _check_batch(ack)
    return [transactional_commit_event(t) for t in ack.ack_types]


def _runs(first: int, last: int, events: list[Event]) -> Iterable[tuple[int, int, Event]]:
    """(first, last, event) runs of one batch: a single type covers the whole batch."""
    if len(events) == 1:
        yield first, last, events[0]
        return
    start = 0
    for i in range(1, len(events) + 1):
        if i == len(events) or events[i] is not events[start]:
            yield first + start, first + i - 1, events[start]
            start = i


def _classify(batches: Sequence[LogBatch], read_committed: bool,
              aborted: Sequence[tuple[int, int]]) -> Iterable[tuple[LogBatch, bool]]:
    """Each batch with whether a read_committed member must never see it: data of an aborted
    transaction, or a transaction marker (Kafka archives both instead of handing them out)."""
    if not read_committed:
        for b in batches:
            yield b, False
        return
    pending = sorted(aborted, key=lambda a: a[1])
    i = 0
    open_aborts: set[int] = set()
    for b in batches:
        while i < len(pending) and pending[i][1] <= b.last_offset:
            open_aborts.add(pending[i][0])
            i += 1
        if b.is_control:
            open_aborts.discard(b.producer_id)
            yield b, True
        else:
            yield b, b.is_transactional and b.producer_id in open_aborts


def _merge_acquired(ranges: list[AcquiredRange]) -> list[AcquiredRange]:
    out: list[AcquiredRange] = []
    for r in sorted(ranges):
        if out and out[-1].last_offset + 1 == r.first_offset and out[-1].delivery_count == r.delivery_count:
            out[-1] = out[-1]._replace(last_offset=r.last_offset)
        else:
            out.append(r)
    return out


def _merge_state_batches(batches: list[StateBatch]) -> list[StateBatch]:
    out: list[StateBatch] = []
    for b in batches:
        # The touched spans are disjoint (acknowledge refuses overlapping batches; releases and markers
        # pick whole ranges), so a batch either continues the last one or starts after it.
        if out and out[-1].last_offset + 1 == b.first_offset and out[-1][2:] == b[2:]:
            out[-1] = out[-1]._replace(last_offset=b.last_offset)
        else:
            out.append(b)
    return out
