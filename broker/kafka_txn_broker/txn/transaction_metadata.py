"""TransactionMetadata: one transactional id's state on its coordinator, and the 8-state machine.

Mirrors Kafka's TransactionState / TransactionMetadata / TxnTransitMetadata. A change is two-step:
`prepare_*` validates the move, sets `pending_state` and returns the target as a TxnTransitMetadata;
only after that record is durable in __transaction_state does `complete_transition_to` overwrite the
live fields. A pending state blocks any other transition (clients get CONCURRENT_TRANSACTIONS).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from kafka_txn_broker.formats.errors import ProducerFencedError
from kafka_txn_broker.formats.transaction_log import TransactionLogValue
from kafka_txn_broker.formats.transactions import (
    MAX_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TWO_PC_TIMEOUT_MS,
    TransactionState,
)

TopicPartition = tuple[str, int]
log = logging.getLogger(__name__)

S = TransactionState
# Kafka's VALID_PREVIOUS_STATES: the states each state may be entered from.
VALID_PREVIOUS_STATES: dict[TransactionState, frozenset[TransactionState]] = {
    S.EMPTY: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.ONGOING: frozenset({S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    # TV2 lets a client that is unsure of the server's state abort from Empty / Complete* too.
    S.PREPARE_ABORT: frozenset({S.ONGOING, S.PREPARE_EPOCH_FENCE, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: frozenset({S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT}),
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}


def is_epoch_exhausted(epoch: int) -> bool:
    # Clients never get Short.MAX_VALUE, so the coordinator can always fence with one more bump.
    return epoch >= MAX_EPOCH - 1


def supports_epoch_bump(transaction_version: int) -> bool:
    return transaction_version >= 2


class IllegalTransitionError(RuntimeError):
    """A transition Kafka treats as fatal (a coordinator bug, never a client error)."""


@dataclass(frozen=True, slots=True)
class TxnTransitMetadata:
    producer_id: int
    prev_producer_id: int
    next_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    state: TransactionState
    topic_partitions: frozenset[TopicPartition]
    txn_start_timestamp: int
    txn_last_update_timestamp: int
    client_transaction_version: int

    def to_log_value(self) -> TransactionLogValue:
        """The `__transaction_state` value of this transition (partitions sorted: a stable record)."""
        return TransactionLogValue(
            self.producer_id, self.producer_epoch, self.txn_timeout_ms, self.state,
            tuple(sorted(self.topic_partitions)), self.txn_last_update_timestamp, self.txn_start_timestamp,
            self.prev_producer_id, self.next_producer_id, self.client_transaction_version)


@dataclass
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    prev_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    txn_timeout_ms: int = 60000
    state: TransactionState = TransactionState.EMPTY
    topic_partitions: set[TopicPartition] = field(default_factory=set)
    txn_start_timestamp: int = -1
    txn_last_update_timestamp: int = -1
    client_transaction_version: int = 0
    pending_state: TransactionState | None = None
    # Set when a fence's log write failed: the next fence must not bump the epoch again (KAFKA-9666).
    has_failed_epoch_fence: bool = False

    @classmethod
    def from_log(cls, transactional_id: str, v: TransactionLogValue) -> TransactionMetadata:
        # Kafka does not persist lastProducerEpoch: a loaded transaction starts without it.
        return cls(transactional_id, v.producer_id, v.prev_producer_id, v.next_producer_id, v.producer_epoch,
                   NO_PRODUCER_EPOCH, v.timeout_ms, v.state, set(v.partitions), v.start_ms, v.last_update_ms,
                   v.client_transaction_version)

    # ---- queries -----------------------------------------------------------------------------
    @property
    def pending_transition_in_progress(self) -> bool:
        return self.pending_state is not None

    @property
    def is_producer_epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)

    @property
    def is_distributed_two_phase_commit(self) -> bool:
        return self.txn_timeout_ms == TWO_PC_TIMEOUT_MS

    def _has_pending_transaction(self) -> bool:
        return self.state in (S.ONGOING, S.PREPARE_ABORT, S.PREPARE_COMMIT)

    # ---- prepare_* ---------------------------------------------------------------------------
    def _transit(self, state: TransactionState, **changes: object) -> TxnTransitMetadata:
        values: dict[str, object] = {
            "producer_id": self.producer_id, "prev_producer_id": self.producer_id,
            "next_producer_id": self.next_producer_id, "producer_epoch": self.producer_epoch,
            "last_producer_epoch": self.last_producer_epoch, "txn_timeout_ms": self.txn_timeout_ms,
            "state": state, "topic_partitions": frozenset(self.topic_partitions),
            "txn_start_timestamp": self.txn_start_timestamp,
            "txn_last_update_timestamp": self.txn_last_update_timestamp,
            "client_transaction_version": self.client_transaction_version,
        }
        values.update(changes)
        return self._prepare_transition_to(TxnTransitMetadata(**values))  # type: ignore[arg-type]

    def _prepare_transition_to(self, transit: TxnTransitMetadata) -> TxnTransitMetadata:
        if self.pending_state is not None:
            raise IllegalTransitionError(
                f"{self.transactional_id}: preparing {transit.state.state_name} while {self.pending_state.state_name} "
                "is pending")
        if transit.producer_id < 0:
            raise IllegalTransitionError(f"{self.transactional_id}: illegal producer id {transit.producer_id}")
        if transit.state is not S.DEAD and not 0 <= transit.producer_epoch <= MAX_EPOCH:
            # Kafka's epoch is a short: one past Short.MAX_VALUE is negative there, refused the same way.
            raise IllegalTransitionError(f"{self.transactional_id}: illegal producer epoch {transit.producer_epoch}")
        if self.state not in VALID_PREVIOUS_STATES[transit.state]:
            raise IllegalTransitionError(
                f"{self.transactional_id}: {self.state.state_name} -> {transit.state.state_name} is not a valid "
                "transition")
        self.pending_state = transit.state
        return transit

    def prepare_fence_producer_epoch(self) -> TxnTransitMetadata:
        # At Short.MAX_VALUE there is no epoch left to fence with: fence at the same epoch instead (the abort
        # that follows rotates the producer id), as Kafka does since KAFKA-20090; before, this threw and the
        # transaction could never be aborted (kafka_txn_broker/txn/faults.py emulates that).
        if self.producer_epoch == MAX_EPOCH:
            log.error("fencing producer %s of %s at epoch Short.MAX_VALUE: this must not happen unless there is a "
                      "bug", self.producer_id, self.transactional_id)
        keep = self.has_failed_epoch_fence or self.producer_epoch == MAX_EPOCH
        bumped = self.producer_epoch if keep else self.producer_epoch + 1
        return self._transit(S.PREPARE_EPOCH_FENCE, producer_epoch=bumped)

    def prepare_increment_producer_epoch(self, new_timeout_ms: int, expected_epoch: int | None,
                                         now_ms: int) -> TxnTransitMetadata:
        """InitProducerId from Empty/Complete*: bump (or, for a retry, keep) the epoch."""
        if self.is_producer_epoch_exhausted:
            raise IllegalTransitionError(f"no more epochs for producer id {self.producer_id}")
        bumped = self.producer_epoch + 1
        if expected_epoch is None:
            epoch, last = bumped, NO_PRODUCER_EPOCH
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == self.producer_epoch:
            epoch, last = bumped, self.producer_epoch
        elif expected_epoch == self.last_producer_epoch:
            # A retry of an InitProducerId that already succeeded: hand back the same epoch.
            epoch, last = self.producer_epoch, self.last_producer_epoch
        else:
            raise ProducerFencedError(
                f"expected epoch {expected_epoch} is neither the current {self.producer_epoch} nor the last "
                f"{self.last_producer_epoch}")
        return self._transit(S.EMPTY, producer_epoch=epoch, last_producer_epoch=last, txn_timeout_ms=new_timeout_ms,
                             topic_partitions=frozenset(), txn_start_timestamp=-1, txn_last_update_timestamp=now_ms)

    def prepare_producer_id_rotation(self, new_producer_id: int, new_timeout_ms: int, now_ms: int,
                                     record_last_epoch: bool) -> TxnTransitMetadata:
        if self._has_pending_transaction():
            raise IllegalTransitionError("cannot rotate the producer id while a transaction is pending")
        return self._transit(S.EMPTY, producer_id=new_producer_id, producer_epoch=0,
                             last_producer_epoch=self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH,
                             txn_timeout_ms=new_timeout_ms, topic_partitions=frozenset(), txn_start_timestamp=-1,
                             txn_last_update_timestamp=now_ms)

    def prepare_add_partitions(self, added: set[TopicPartition], now_ms: int,
                               client_transaction_version: int) -> TxnTransitMetadata:
        # The first partition starts the transaction and arms its timeout.
        start = now_ms if self.state in (S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT) else self.txn_start_timestamp
        return self._transit(S.ONGOING, topic_partitions=frozenset(self.topic_partitions | added),
                             txn_start_timestamp=start, txn_last_update_timestamp=now_ms,
                             client_transaction_version=client_transaction_version)

    def prepare_abort_or_commit(self, new_state: TransactionState, client_transaction_version: int,
                                next_producer_id: int, now_ms: int, no_partition_added: bool,
                                is_epoch_fence: bool = False, abort_at_max: bool = True) -> TxnTransitMetadata:
        """`abort_at_max`: an abort at Short.MAX_VALUE keeps that epoch instead of overflowing it, so a transaction
        already there can still end (Kafka since KAFKA-20090; False emulates the coordinator before it)."""
        at_max_abort = (abort_at_max and self.producer_epoch == MAX_EPOCH and new_state is S.PREPARE_ABORT)
        if supports_epoch_bump(client_transaction_version) and (is_epoch_fence or at_max_abort):
            # The fence already bumped the epoch; bumping again could overflow at MAX-1 (KAFKA-19367).
            if at_max_abort and not is_epoch_fence:
                log.error("aborting producer %s of %s at epoch Short.MAX_VALUE: this must not happen unless there is "
                          "a bug", self.producer_id, self.transactional_id)
            epoch, last = self.producer_epoch, self.producer_epoch
        elif supports_epoch_bump(client_transaction_version):
            epoch, last = self.producer_epoch + 1, self.producer_epoch
        else:
            epoch, last = self.producer_epoch, self.last_producer_epoch
        # A TV2 abort with no partitions has no known start: the update time stands in for it.
        start = now_ms if no_partition_added else self.txn_start_timestamp
        return self._transit(new_state, producer_epoch=epoch, last_producer_epoch=last, txn_start_timestamp=start,
                             next_producer_id=next_producer_id, txn_last_update_timestamp=now_ms,
                             client_transaction_version=client_transaction_version)

    def prepare_complete(self, now_ms: int) -> TxnTransitMetadata:
        self.has_failed_epoch_fence = False
        target = S.COMPLETE_COMMIT if self.state is S.PREPARE_COMMIT else S.COMPLETE_ABORT
        if supports_epoch_bump(self.client_transaction_version) and self.next_producer_id != NO_PRODUCER_ID:
            # Epoch overflow under TV2: move to the pre-allocated id at epoch 0; last epoch stays what the
            # client last saw.
            pid, epoch = self.next_producer_id, 0
        else:
            pid, epoch = self.producer_id, self.producer_epoch
        return self._transit(target, producer_id=pid, producer_epoch=epoch, next_producer_id=NO_PRODUCER_ID,
                             topic_partitions=frozenset(), txn_last_update_timestamp=now_ms)

    def prepare_dead(self) -> TxnTransitMetadata:
        return self._transit(S.DEAD, topic_partitions=frozenset())

    def remove_partition(self, tp: TopicPartition) -> None:
        """A partition acknowledged its marker (only while PREPARE_*)."""
        if self.state not in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            raise IllegalTransitionError(
                f"{self.transactional_id}: removing marked partition {tp} in state {self.state.state_name}")
        self.topic_partitions.discard(tp)

    # ---- complete ----------------------------------------------------------------------------
    def complete_transition_to(self, t: TxnTransitMetadata) -> None:
        """Apply a transition whose record is durable, re-checking what Kafka re-checks."""
        to = self.pending_state
        if to is None or to is not t.state:
            self._fail(t, "no matching pending state")
        assert to is not None
        if not self._transition_is_consistent(to, t):
            self._fail(t, "unexpected metadata")
        self.producer_id, self.prev_producer_id = t.producer_id, t.prev_producer_id
        self.next_producer_id = t.next_producer_id
        self.producer_epoch, self.last_producer_epoch = t.producer_epoch, t.last_producer_epoch
        self.txn_timeout_ms = t.txn_timeout_ms
        self.topic_partitions = set(t.topic_partitions)
        self.txn_start_timestamp = t.txn_start_timestamp
        self.txn_last_update_timestamp = t.txn_last_update_timestamp
        self.client_transaction_version = t.client_transaction_version
        self.pending_state = None
        self.state = to

    def _transition_is_consistent(self, to: TransactionState, t: TxnTransitMetadata) -> bool:
        if to is S.EMPTY:
            return ((self.producer_epoch == t.producer_epoch or self._valid_epoch_bump(t))
                    and not t.topic_partitions and t.txn_start_timestamp == -1)
        if to is S.ONGOING:
            return (self._valid_producer_epoch(t) and t.topic_partitions >= self.topic_partitions
                    and self.txn_timeout_ms == t.txn_timeout_ms)
        if to in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            empty_abort = (to is S.PREPARE_ABORT and supports_epoch_bump(t.client_transaction_version)
                           and self.state in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT))
            return (self._valid_producer_epoch(t) and set(t.topic_partitions) == self.topic_partitions
                    and self.txn_timeout_ms == t.txn_timeout_ms
                    and (self.txn_start_timestamp == t.txn_start_timestamp or empty_abort))
        if to in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
            return (self._valid_producer_epoch(t) and self.txn_timeout_ms == t.txn_timeout_ms
                    and t.txn_start_timestamp != -1)
        # PREPARE_EPOCH_FENCE is never completed (it turns into PREPARE_ABORT); DEAD ends in removal.
        return False

    def _valid_producer_epoch(self, t: TxnTransitMetadata) -> bool:
        tv2 = supports_epoch_bump(t.client_transaction_version)
        if tv2 and t.state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT) and t.producer_epoch == 0:
            return t.last_producer_epoch == self.last_producer_epoch and t.prev_producer_id == self.producer_id
        if tv2 and t.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return t.last_producer_epoch == self.producer_epoch and t.producer_id == self.producer_id
        return t.producer_epoch == self.producer_epoch and t.producer_id == self.producer_id

    def _valid_epoch_bump(self, t: TxnTransitMetadata) -> bool:
        rotated = t.producer_epoch == 0 and t.producer_id != self.producer_id
        return t.producer_epoch == self.producer_epoch + 1 or rotated

    def _fail(self, t: TxnTransitMetadata, why: str) -> None:
        # Name the target state first: it is what an operator reading the log needs (Kafka names it too).
        raise IllegalTransitionError(
            f"{self.transactional_id} failed transition to {t.state.state_name}: {t} ({why}); state {self}")
