"""TransactionCoordinator: InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, the timeout
reaper and transactional.id expiration, following Kafka's TransactionCoordinator.scala.

Every request runs to completion on the event loop: validate under the metadata's pending-state
rule, append the transition to __transaction_state (acks=all), apply it, answer. EndTxn answers once
PREPARE_* is durable; the marker channel then writes markers and COMPLETE_*. TV1 (legacy) and TV2
(KIP-890: the epoch is bumped by every commit/abort, EndTxn v5+ returns the new epoch) both follow
Kafka's tables, including the retry cases.

Collaborators come through the constructor (Kafka's TransactionCoordinator takes its state manager,
marker channel and producer id manager the same way); like all broker state, it lives on the cluster's
event loop.

Two-phase commit (KIP-939, InitProducerId v6): with `transaction.two.phase.commit.enable`, Enable2Pc gives
the transaction the timeout Integer.MAX_VALUE (the reaper never aborts it: an external transaction manager
ends it); KeepPreparedTxn keeps an Ongoing transaction instead of fencing and aborting it, and answers its
producer id and epoch (as OngoingTxnProducerId/Epoch too) so that manager can commit or abort it. Kafka's
own KeepPreparedTxn (not released) hands the client a fresh epoch beside the kept one; here the client
continues at the kept one. Without the config, Enable2Pc gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED.

Test-only fault hooks: with the environment variable KAFKA_TXN_BROKER_FAULT=exit-after-prepare-commit
the process exits (os._exit(137), as kill -9 would) right after a PREPARE_COMMIT record is durable,
before any marker is written or the client is answered. tests/e2e use it to prove recovery. And
`UpstreamBugs` (kafka_txn_broker/txn/faults.py, the `fault.injection` property) emulates KAFKA-20090 here.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Protocol

from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.errors import ProducerFencedError
from kafka_txn_broker.formats.partitioning import TXN_TOPIC
from kafka_txn_broker.formats.transactions import (
    MAX_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TWO_PC_TIMEOUT_MS,
    TransactionState,
)
from kafka_txn_broker.txn.faults import KAFKA_20090, UpstreamBugs
from kafka_txn_broker.txn.marker_channel import TransactionMarkerChannelManager
from kafka_txn_broker.txn.state_manager import (
    CoordinatorError,
    PendingCompletion,
    TransactionListing,
    TransactionStateManager,
)
from kafka_txn_broker.txn.transaction_metadata import (
    IllegalTransitionError,
    TopicPartition,
    TransactionMetadata,
    TxnTransitMetadata,
    supports_epoch_bump,
)

if TYPE_CHECKING:
    import re

    from kafka_txn_broker.clock import Clock
    from kafka_txn_broker.configs.broker_config import BrokerConfig
    from kafka_txn_broker.metadata.topics import PartitionState

log = logging.getLogger(__name__)

S = TransactionState
FAULT_ENV = "KAFKA_TXN_BROKER_FAULT"
FAULT_EXIT_AFTER_PREPARE_COMMIT = "exit-after-prepare-commit"
# (error, producer id, producer epoch) as InitProducerId and EndTxn v5+ answer.
PidResult = tuple[int, int, int]


def _error(code: int) -> PidResult:
    return code, NO_PRODUCER_ID, NO_PRODUCER_EPOCH


class ProducerIdGenerator(Protocol):
    def generate(self) -> int:
        """A producer id never handed out before (ProducerIdManager)."""
        ...


class TransactionCoordinator:
    def __init__(self, node_id: int, config: BrokerConfig, clock: Clock, state_manager: TransactionStateManager,
                 marker_channel: TransactionMarkerChannelManager, producer_ids: ProducerIdGenerator,
                 online: Callable[[], bool], bugs: UpstreamBugs) -> None:
        self.node_id = node_id
        self.config = config
        self.clock = clock
        self.state_manager = state_manager
        self.marker_channel = marker_channel
        self.producer_ids = producer_ids
        self._online = online
        self.bugs = bugs
        # Scan schedules are monotonic seconds: a wall clock stepped back must not pause the reaper.
        now = clock.monotonic()
        self._last_abort_scan = now
        self._last_expiration_scan = now

    # ---- lifecycle hooks ---------------------------------------------------------------------
    def on_leadership_change(self, changed: list[PartitionState]) -> None:
        """Load __transaction_state partitions this node now leads; drop the ones it lost."""
        for state in changed:
            if state.topic != TXN_TOPIC:
                continue
            if state.leader == self.node_id and self._online():
                self._on_election(state.partition, state.leader_epoch)
            elif self.state_manager.holds(state.partition):
                self._on_resignation(state.partition)

    def _on_election(self, partition: int, coordinator_epoch: int) -> None:
        # Loaded or loading at this epoch already: an ISR change announces the same leadership again.
        if self.state_manager.owns(partition, coordinator_epoch) \
                or self.state_manager.is_loading(partition, coordinator_epoch):
            return
        self.marker_channel.remove_markers_for_txn_topic_partition(partition)
        self.state_manager.load_partition(partition, coordinator_epoch, self._send_markers)

    def _send_markers(self, p: PendingCompletion) -> None:
        """A transaction the load found in PREPARE_*: write its markers, then COMPLETE_*."""
        self.marker_channel.add_txn_markers_to_send(p.coordinator_epoch, p.commit, p.metadata, p.transit)

    def _on_resignation(self, partition: int) -> None:
        self.state_manager.remove_partition(partition)
        self.marker_channel.remove_markers_for_txn_topic_partition(partition)

    def tick(self, now_ms: int) -> None:
        self.marker_channel.drive()
        cfg = self.config
        mono = self.clock.monotonic()
        if (mono - self._last_abort_scan) * 1000 >= cfg["transaction.abort.timed.out.transaction.cleanup.interval.ms"]:
            self._last_abort_scan = mono
            self.abort_timed_out_transactions(now_ms)
        if (mono - self._last_expiration_scan) * 1000 >= \
                cfg["transaction.remove.expired.transaction.cleanup.interval.ms"]:
            self._last_expiration_scan = mono
            self.state_manager.remove_expired_transactional_ids(now_ms)

    def shutdown(self) -> None:
        self.marker_channel.clear()
        self.state_manager.clear()

    # ---- InitProducerId ----------------------------------------------------------------------
    async def handle_init_producer_id(self, transactional_id: str | None, timeout_ms: int, producer_id: int = -1,
                                      producer_epoch: int = -1, enable_2pc: bool = False,
                                      keep_prepared: bool = False) -> PidResult:
        return self.init_producer_id(transactional_id, timeout_ms, producer_id, producer_epoch, enable_2pc,
                                     keep_prepared)

    def init_producer_id(self, transactional_id: str | None, timeout_ms: int, producer_id: int = -1,
                         producer_epoch: int = -1, enable_2pc: bool = False, keep_prepared: bool = False) -> PidResult:
        if transactional_id is None:
            return E.NONE, self.producer_ids.generate(), 0
        if not transactional_id:
            return _error(E.INVALID_REQUEST)
        if (producer_id == NO_PRODUCER_ID) != (producer_epoch == NO_PRODUCER_EPOCH):
            return _error(E.INVALID_REQUEST)
        if enable_2pc and not self.config["transaction.two.phase.commit.enable"]:
            return _error(E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)  # not an UNSUPPORTED_*: clients cannot probe
        if keep_prepared and not enable_2pc:
            return _error(E.INVALID_REQUEST)
        if enable_2pc:
            timeout_ms = TWO_PC_TIMEOUT_MS  # owned by an external transaction manager: never times out
        elif not self.state_manager.validate_transaction_timeout_ms(timeout_ms):
            return _error(E.INVALID_TRANSACTION_TIMEOUT)
        expected = None if producer_id == NO_PRODUCER_ID else (producer_id, producer_epoch)
        try:
            coordinator_epoch, md = self._get_or_create(transactional_id, timeout_ms)
            if keep_prepared and md.state is S.ONGOING and not md.pending_transition_in_progress:
                return E.NONE, md.producer_id, md.producer_epoch  # the prepared transaction stays as it is
            transit = self._prepare_init_transit(md, timeout_ms, expected)
        except CoordinatorError as exc:
            return _error(exc.code)
        except IllegalTransitionError as exc:  # Kafka's IllegalStateException: the request fails
            log.error("InitProducerId for %s failed: %s", transactional_id, exc)
            return _error(E.UNKNOWN_SERVER_ERROR)
        if transit.state is S.PREPARE_EPOCH_FENCE:
            # Abort the dangling transaction first; the client retries and gets a fresh epoch then.
            code, _, _ = self.end_transaction(transactional_id, transit.producer_id, transit.producer_epoch, False,
                                              from_client=False,
                                              client_tv=self.state_manager.transaction_version_level())
            return _error(code if code != E.NONE else E.CONCURRENT_TRANSACTIONS)
        code = self.state_manager.append_transaction_to_log(transactional_id, coordinator_epoch, transit)
        if code != E.NONE:
            return _error(code)
        log.info("initialized %s with producer id %s epoch %s", transactional_id, transit.producer_id,
                 transit.producer_epoch)
        return E.NONE, transit.producer_id, transit.producer_epoch

    def _get_or_create(self, transactional_id: str, timeout_ms: int) -> tuple[int, TransactionMetadata]:
        epoch, md = self.state_manager.get(transactional_id)
        if md is not None:
            return epoch, md
        created = TransactionMetadata(transactional_id, self.producer_ids.generate(),
                                      txn_timeout_ms=timeout_ms,
                                      txn_last_update_timestamp=self.clock.millis())
        return self.state_manager.put_if_not_exists(created)

    def _prepare_init_transit(self, md: TransactionMetadata, timeout_ms: int,
                              expected: tuple[int, int] | None) -> TxnTransitMetadata:
        if md.pending_transition_in_progress:
            raise CoordinatorError(E.CONCURRENT_TRANSACTIONS)
        if expected is not None and not _is_valid_producer_id(md, *expected):
            raise CoordinatorError(E.PRODUCER_FENCED)
        if md.state in (S.PREPARE_ABORT, S.PREPARE_COMMIT):
            raise CoordinatorError(E.CONCURRENT_TRANSACTIONS)
        if md.state is S.ONGOING:
            return self._prepare_fence(md)
        if md.state in (S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT):
            now = self.clock.millis()
            if md.is_producer_epoch_exhausted and (expected is None or expected[1] == md.producer_epoch):
                return md.prepare_producer_id_rotation(self.producer_ids.generate(), timeout_ms, now,
                                                       expected is not None)
            try:
                return md.prepare_increment_producer_epoch(timeout_ms, None if expected is None else expected[1], now)
            except ProducerFencedError:
                raise CoordinatorError(E.PRODUCER_FENCED) from None
        raise IllegalTransitionError(f"{md.transactional_id} is in state {md.state.state_name}")

    # ---- AddPartitionsToTxn / AddOffsetsToTxn ------------------------------------------------
    def add_partitions_to_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int,
                                      partitions: Iterable[TopicPartition], client_tv: int) -> int:
        if not transactional_id:
            return E.INVALID_REQUEST
        parts = set(partitions)
        try:
            coordinator_epoch, md = self.state_manager.get(transactional_id)
            if md is None:
                return E.INVALID_PRODUCER_ID_MAPPING
            if _is_overflow_successor(md, producer_id):
                # TV2: the client already moved to the next producer id while COMPLETE_* is pending.
                return E.CONCURRENT_TRANSACTIONS
            transit = self._prepare_add(md, producer_id, producer_epoch, parts, client_tv)
        except CoordinatorError as exc:
            return exc.code
        if transit is None:
            return E.NONE
        return self.state_manager.append_transaction_to_log(transactional_id, coordinator_epoch, transit)

    def _prepare_add(self, md: TransactionMetadata, producer_id: int, producer_epoch: int, parts: set[TopicPartition],
                     client_tv: int) -> TxnTransitMetadata | None:
        if md.producer_id != producer_id:
            raise CoordinatorError(E.INVALID_PRODUCER_ID_MAPPING)
        if md.producer_epoch != producer_epoch:
            raise CoordinatorError(E.PRODUCER_FENCED)
        if md.pending_transition_in_progress or md.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            raise CoordinatorError(E.CONCURRENT_TRANSACTIONS)
        if md.state is S.ONGOING and parts <= md.topic_partitions:
            return None  # already there: answer at once, nothing to write
        return md.prepare_add_partitions(parts, self.clock.millis(), client_tv)

    def verify_partitions_in_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int,
                                         partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """AddPartitionsToTxn v4+ with VerifyOnly: is each partition in this producer's open transaction?"""
        parts = list(partitions)
        if not transactional_id:
            return dict.fromkeys(parts, E.INVALID_REQUEST)
        try:
            _, md = self.state_manager.get(transactional_id)
        except CoordinatorError as exc:
            return dict.fromkeys(parts, exc.code)
        if md is None or md.producer_id != producer_id:
            return dict.fromkeys(parts, E.INVALID_PRODUCER_ID_MAPPING)
        if md.producer_epoch != producer_epoch:
            return dict.fromkeys(parts, E.PRODUCER_FENCED)
        if md.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return dict.fromkeys(parts, E.CONCURRENT_TRANSACTIONS)
        # The pending state is not checked: the append re-validates (Kafka's verification guard).
        return {tp: E.NONE if tp in md.topic_partitions else E.TRANSACTION_ABORTABLE for tp in parts}

    # ---- EndTxn ------------------------------------------------------------------------------
    def end_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool, *,
                        from_client: bool = True, client_tv: int) -> PidResult:
        """EndTxn (and the coordinator's own aborts). Returns (error, producer id, epoch); the id and
        epoch are meaningful for TV2 only, as EndTxn v5+ reports them."""
        if not transactional_id:
            return _error(E.INVALID_REQUEST)
        md: TransactionMetadata | None = None
        try:
            coordinator_epoch, md = self.state_manager.get(transactional_id)
            if md is None:
                return _error(E.INVALID_PRODUCER_ID_MAPPING)
            if supports_epoch_bump(client_tv):
                transit = self._prepare_end_tv2(md, producer_id, producer_epoch, commit, from_client, client_tv)
            else:
                transit = self._prepare_end_tv1(md, producer_id, producer_epoch, commit, from_client)
        except CoordinatorError as exc:
            return self._end_rejected(md, exc.code, from_client, client_tv)
        is_fence = not from_client and not commit
        code = self.state_manager.append_transaction_to_log(transactional_id, coordinator_epoch, transit)
        if code != E.NONE:
            if is_fence:
                self._mark_failed_fence(transactional_id, coordinator_epoch)
            return _error(code)
        if commit and os.environ.get(FAULT_ENV) == FAULT_EXIT_AFTER_PREPARE_COMMIT:
            log.critical("fault hook %s: exiting after PREPARE_COMMIT of %s", FAULT_ENV, transactional_id)
            os._exit(137)
        return self._after_prepare(transactional_id, coordinator_epoch, producer_id, producer_epoch, commit, client_tv)

    @staticmethod
    def _end_rejected(md: TransactionMetadata | None, code: int, from_client: bool, client_tv: int) -> PidResult:
        if md is not None and not from_client and md.pending_state is S.PREPARE_EPOCH_FENCE:
            md.pending_state = None  # the fence never happened: do not leave the id blocked
        if code == E.NONE and md is not None and supports_epoch_bump(client_tv):
            return E.NONE, md.producer_id, md.producer_epoch  # a TV2 retry of an end that completed
        return _error(code)

    def _mark_failed_fence(self, transactional_id: str, coordinator_epoch: int) -> None:
        try:
            epoch, md = self.state_manager.get(transactional_id)
        except CoordinatorError:
            return
        if md is not None and epoch == coordinator_epoch:
            md.has_failed_epoch_fence = True

    def _prepare_end_tv1(self, md: TransactionMetadata, producer_id: int, producer_epoch: int, commit: bool,
                         from_client: bool) -> TxnTransitMetadata:
        if md.producer_id != producer_id:
            raise CoordinatorError(E.INVALID_PRODUCER_ID_MAPPING)
        # Clients must match the epoch exactly; the coordinator's own fence carries the bumped one.
        if (from_client and producer_epoch != md.producer_epoch) or producer_epoch < md.producer_epoch:
            raise CoordinatorError(E.PRODUCER_FENCED)
        if md.pending_transition_in_progress and md.pending_state is not S.PREPARE_EPOCH_FENCE:
            raise CoordinatorError(E.CONCURRENT_TRANSACTIONS)
        if md.state is S.ONGOING:
            if not commit and md.pending_state is S.PREPARE_EPOCH_FENCE:
                self._apply_fence(md, producer_epoch)
            target = S.PREPARE_COMMIT if commit else S.PREPARE_ABORT
            return md.prepare_abort_or_commit(target, 0, NO_PRODUCER_ID, self.clock.millis(), False)
        raise CoordinatorError(_completed_or_invalid(md.state, commit, retry=True))

    def _prepare_end_tv2(self, md: TransactionMetadata, producer_id: int, producer_epoch: int, commit: bool,
                         from_client: bool, client_tv: int) -> TxnTransitMetadata:
        is_fence = md.pending_state is S.PREPARE_EPOCH_FENCE
        retry_on_overflow = (not is_fence and md.prev_producer_id == producer_id
                             and producer_epoch == MAX_EPOCH - 1 and md.producer_epoch == 0)
        retry_on_bump = not is_fence and md.producer_epoch == producer_epoch + 1
        is_retry = retry_on_bump or retry_on_overflow
        if md.producer_id != producer_id and not retry_on_overflow:
            raise CoordinatorError(E.INVALID_PRODUCER_ID_MAPPING)
        if not _tv2_epoch_is_valid(md, producer_epoch, from_client, is_fence, retry_on_bump, retry_on_overflow):
            raise CoordinatorError(E.PRODUCER_FENCED)
        if md.pending_transition_in_progress and not is_fence:
            raise CoordinatorError(E.CONCURRENT_TRANSACTIONS)
        state = md.state
        if state is S.ONGOING:
            return self._tv2_completion(md, S.PREPARE_COMMIT if commit else S.PREPARE_ABORT, False, is_fence,
                                        producer_epoch, client_tv)
        if state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT, S.EMPTY) and not commit and not is_retry:
            # TV2: a client unsure of the server's state may abort with no partitions added.
            return self._tv2_completion(md, S.PREPARE_ABORT, True, is_fence, producer_epoch, client_tv)
        if is_retry and state is (S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT):
            raise CoordinatorError(E.NONE)
        raise CoordinatorError(_completed_or_invalid(state, commit, retry=False))

    def _prepare_fence(self, md: TransactionMetadata) -> TxnTransitMetadata:
        if md.producer_epoch == MAX_EPOCH and self.bugs.emulates(KAFKA_20090, md.transactional_id):
            raise IllegalTransitionError(  # as Kafka's prepareFenceProducerEpoch threw before KAFKA-20090's fix
                f"fault injection {KAFKA_20090}: cannot fence producer {md.producer_id} at epoch Short.MAX_VALUE")
        return md.prepare_fence_producer_epoch()

    def _tv2_completion(self, md: TransactionMetadata, target: TransactionState, no_partition_added: bool,
                        is_fence: bool, producer_epoch: int, client_tv: int) -> TxnTransitMetadata:
        # Rotate to a new producer id when the bump would exhaust the epoch (also for fences, KAFKA-20090).
        rotate = md.is_producer_epoch_exhausted and not (
            is_fence and self.bugs.emulates(KAFKA_20090, md.transactional_id))  # before the fix: not for fences
        next_pid = self.producer_ids.generate() if rotate else NO_PRODUCER_ID
        if is_fence:
            self._apply_fence(md, producer_epoch)
        return md.prepare_abort_or_commit(target, client_tv, next_pid, self.clock.millis(), no_partition_added,
                                          is_epoch_fence=is_fence,
                                          abort_at_max=not self.bugs.emulates(KAFKA_20090, md.transactional_id))

    @staticmethod
    def _apply_fence(md: TransactionMetadata, fenced_epoch: int) -> None:
        # PREPARE_EPOCH_FENCE is never written: it turns into PREPARE_ABORT at the bumped epoch.
        md.pending_state = None
        md.producer_epoch = fenced_epoch
        md.last_producer_epoch = NO_PRODUCER_EPOCH

    def _after_prepare(self, transactional_id: str, coordinator_epoch: int, producer_id: int, producer_epoch: int,
                       commit: bool, client_tv: int) -> PidResult:
        """PREPARE_* is durable: re-check, answer, and hand the markers to the channel."""
        try:
            epoch, md = self.state_manager.get(transactional_id)
        except CoordinatorError as exc:
            return _error(exc.code)
        if md is None or epoch != coordinator_epoch:
            return _error(E.NOT_COORDINATOR)
        if md.producer_id != producer_id:
            return _error(E.INVALID_PRODUCER_ID_MAPPING)
        bumped_ok = supports_epoch_bump(client_tv) and md.producer_epoch == producer_epoch + 1
        if md.producer_epoch != producer_epoch and not bumped_ok:
            return _error(E.PRODUCER_FENCED)
        if md.pending_transition_in_progress:
            return _error(E.CONCURRENT_TRANSACTIONS)
        expected = S.PREPARE_COMMIT if commit else S.PREPARE_ABORT
        if md.state is not expected:
            return _error(E.INVALID_TXN_STATE)
        transit = md.prepare_complete(self.clock.millis())
        self.marker_channel.add_txn_markers_to_send(coordinator_epoch, commit, md, transit)
        if not supports_epoch_bump(client_tv):
            return E.NONE, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if md.next_producer_id != NO_PRODUCER_ID:
            return E.NONE, md.next_producer_id, 0  # epoch overflow: the client continues on the new id
        return E.NONE, md.producer_id, md.producer_epoch

    # ---- timeouts ----------------------------------------------------------------------------
    def abort_timed_out_transactions(self, now_ms: int) -> list[str]:
        """Fence and abort every Ongoing transaction older than its timeout (Kafka's transaction-abort task)."""
        aborted = []
        for txn_id, producer_id, _epoch in self.state_manager.timed_out_transactions(now_ms):
            try:
                _, md = self.state_manager.get(txn_id)
            except CoordinatorError:
                continue
            if md is None or md.producer_id != producer_id or md.pending_transition_in_progress:
                continue
            try:
                fence = self._prepare_fence(md)
            except IllegalTransitionError as exc:  # Kafka logs it and goes on with the other transactions
                log.error("timeout abort of %s failed: %s", txn_id, exc)
            else:
                if self._abort_fenced(txn_id, fence):
                    aborted.append(txn_id)
        return aborted

    def _abort_fenced(self, txn_id: str, fence: TxnTransitMetadata) -> bool:
        """The timeout abort once the epoch fence is prepared; True when it was written."""
        code, _, _ = self.end_transaction(txn_id, fence.producer_id, fence.producer_epoch, False,
                                          from_client=False,
                                          client_tv=self.state_manager.transaction_version_level())
        if code == E.NONE:
            log.info("aborted %s after its transaction timeout", txn_id)
            return True
        log.info("timeout abort of %s returned %s", txn_id, E.name(code))
        return False

    # ---- admin -------------------------------------------------------------------------------
    def describe_transaction(self, transactional_id: str) -> tuple[int, TransactionMetadata | None]:
        if not transactional_id:
            return E.INVALID_REQUEST, None
        try:
            _, md = self.state_manager.get(transactional_id)
        except CoordinatorError as exc:
            return exc.code, None
        if md is None or md.state is S.DEAD:
            return E.TRANSACTIONAL_ID_NOT_FOUND, None
        return E.NONE, md

    def list_transactions(self, producer_ids: set[int], states: set[str], duration_ms: int,
                          pattern: re.Pattern[str] | None) -> tuple[int, list[str], list[TransactionListing]]:
        if not self._online():
            return E.COORDINATOR_NOT_AVAILABLE, [], []
        return self.state_manager.list_transaction_states(producer_ids, states, duration_ms, pattern,
                                                          self.clock.millis())


def _is_valid_producer_id(md: TransactionMetadata, producer_id: int, producer_epoch: int) -> bool:
    """InitProducerId's fencing check when the client names its current producer id and epoch."""
    from kafka_txn_broker.txn.transaction_metadata import is_epoch_exhausted

    return (md.producer_epoch == NO_PRODUCER_EPOCH or producer_id == md.producer_id
            or (producer_id == md.prev_producer_id and is_epoch_exhausted(producer_epoch)))


def _is_overflow_successor(md: TransactionMetadata, producer_id: int) -> bool:
    return (md.next_producer_id != NO_PRODUCER_ID and producer_id == md.next_producer_id
            and md.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT))


def _tv2_epoch_is_valid(md: TransactionMetadata, producer_epoch: int, from_client: bool, is_fence: bool,
                        retry_on_bump: bool, retry_on_overflow: bool) -> bool:
    if is_fence:
        return (not from_client or producer_epoch == md.producer_epoch) and producer_epoch >= md.producer_epoch
    if md.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
        return retry_on_bump
    if md.state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
        return retry_on_bump or retry_on_overflow or producer_epoch == md.producer_epoch
    return producer_epoch == md.producer_epoch


def _completed_or_invalid(state: TransactionState, commit: bool, retry: bool) -> int:
    """EndTxn outcomes outside Ongoing: NONE for a TV1 retry of a completed end, CONCURRENT_TRANSACTIONS
    while the same end is in progress, INVALID_TXN_STATE otherwise."""
    if state is (S.PREPARE_COMMIT if commit else S.PREPARE_ABORT):
        return E.CONCURRENT_TRANSACTIONS
    if retry and state is (S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT):
        return E.NONE
    if state in (S.DEAD, S.PREPARE_EPOCH_FENCE):
        raise IllegalTransitionError(f"EndTxn found the illegal state {state.state_name}")
    return E.INVALID_TXN_STATE
