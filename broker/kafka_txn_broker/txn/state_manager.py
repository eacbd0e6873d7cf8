"""TransactionStateManager: the coordinator's cache of transactional ids and its __transaction_state log.

Kafka's design, on one event loop: a node owns the transactional ids of the __transaction_state
partitions it leads; `load_partition` has the coordinator runtime (kafka_txn_broker/coordinator/) replay such
a partition, in chunks, into a cache entry when the node becomes its leader (coordinator epoch = that
partition's leader epoch), and `remove_partition` drops it when leadership moves. While a partition loads,
its ids are answered COORDINATOR_LOAD_IN_PROGRESS (ListTransactions too, while any partition loads), as
Kafka's TransactionStateManager does; once it is loaded, the transactions found in PREPARE_* are handed to
the marker channel. Every transition is appended through the partition leader with acks=all before the
cache changes; the append re-checks the coordinator epoch, so a node that lost leadership in between
answers NOT_COORDINATOR instead of applying a stale transition.

Appends and replication are synchronous here (replication is in-process), so no locks are needed: like all
broker state, this class lives on the cluster's event loop.

Collaborators come through the constructor: the node's replicas of __transaction_state as a
CoordinatorLog (append, read), the metadata view (the topic's partition count), the config, the clock and
optionally the loader (default: chunks of transaction.state.log.load.buffer.size over that log). Unit tests
give it fakes (tests/broker/txn/test_state_manager.py).

Timers run on the monotonic clock: the wall-clock timestamps of a transaction are recorded (and
reported) as Kafka does, but the timeout reaper and transactional.id expiration measure elapsed time
from monotonic marks taken when a transaction starts and when an id last changes, so an NTP step of
the wall clock neither aborts a live transaction early nor keeps a dead one. Ids loaded from the log
get marks from their recorded wall-clock age (never negative: a wall clock behind a timestamp counts
as "just now").
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kafka_txn_broker.coordinator.loader import CoordinatorLoader
from kafka_txn_broker.coordinator.partition_writer import PartitionWriter
from kafka_txn_broker.coordinator.runtime import CoordinatorRuntime
from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.errors import ApiError, error_code
from kafka_txn_broker.formats.partitioning import TXN_TOPIC, partition_for
from kafka_txn_broker.formats.record_batch import BatchHeader, build_batch, iter_records
from kafka_txn_broker.formats.transaction_log import (
    TransactionLogError,
    UnknownKeyError,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    value_version_for,
)
from kafka_txn_broker.formats.transactions import TransactionState
from kafka_txn_broker.txn.transaction_metadata import TransactionMetadata, TxnTransitMetadata

if TYPE_CHECKING:
    from kafka_txn_broker.clock import Clock
    from kafka_txn_broker.configs.broker_config import BrokerConfig
    from kafka_txn_broker.coordinator.coordinator_log import CoordinatorLog
    from kafka_txn_broker.metadata.view import MetadataView

log = logging.getLogger(__name__)

# Append errors become the coordinator errors clients know how to handle (Kafka's updateCacheCallback).
_APPEND_ERROR_MAP = {
    E.UNKNOWN_TOPIC_OR_PARTITION: E.COORDINATOR_NOT_AVAILABLE,
    E.NOT_ENOUGH_REPLICAS: E.COORDINATOR_NOT_AVAILABLE,
    E.NOT_ENOUGH_REPLICAS_AFTER_APPEND: E.COORDINATOR_NOT_AVAILABLE,
    E.REQUEST_TIMED_OUT: E.COORDINATOR_NOT_AVAILABLE,
    E.NOT_LEADER_OR_FOLLOWER: E.NOT_COORDINATOR,
    E.KAFKA_STORAGE_ERROR: E.NOT_COORDINATOR,
    E.MESSAGE_TOO_LARGE: E.UNKNOWN_SERVER_ERROR,
    E.RECORD_LIST_TOO_LARGE: E.UNKNOWN_SERVER_ERROR,
}


class CoordinatorError(ApiError):
    """A coordinator outcome other than NONE (NOT_COORDINATOR, CONCURRENT_TRANSACTIONS...), carried
    through helpers that would otherwise return tuples."""

    def __init__(self, code: int, message: str = "") -> None:
        super().__init__(message, code)


@dataclass
class TxnMetadataCacheEntry:
    """One loaded partition's ids (the runtime's shard of __transaction_state): replayed record by record,
    the latest record of an id wins and a tombstone removes it."""

    coordinator_epoch: int
    metadata: dict[str, TransactionMetadata] = field(default_factory=dict)

    def replay_batch(self, batch: bytes, header: BatchHeader) -> None:
        if not header.is_control:
            _apply_batch(self.metadata, batch)

    def finish_load(self) -> None:
        """Nothing to build: the state manager takes it from here (TransactionStateManager._on_loaded)."""

    def unload(self) -> None:
        """Nothing waits on an entry: the state manager forgets its ids (remove_partition)."""


# What load_partition hands each transaction it finds in PREPARE_* (Kafka's sendTxnMarkers callback).
SendTxnMarkers = Callable[["PendingCompletion"], None]


@dataclass(frozen=True)
class PendingCompletion:
    """A transaction loaded in PREPARE_*: its markers must be (re)sent and COMPLETE_* written."""

    transactional_id: str
    coordinator_epoch: int
    commit: bool
    metadata: TransactionMetadata
    transit: TxnTransitMetadata


@dataclass(frozen=True)
class TransactionListing:
    transactional_id: str
    producer_id: int
    state: str


class TransactionStateManager:
    def __init__(self, node_id: int, config: BrokerConfig, clock: Clock, log: CoordinatorLog,
                 metadata: MetadataView, loader: CoordinatorLoader | None = None) -> None:
        self.node_id = node_id
        self.config = config
        self.clock = clock
        self.log = log
        self.metadata = metadata
        if loader is None:
            loader = CoordinatorLoader(log, int(config["transaction.state.log.load.buffer.size"]), clock)
        self.runtime: CoordinatorRuntime[TxnMetadataCacheEntry] = CoordinatorRuntime(
            TXN_TOPIC, node_id, loader, lambda _partition, epoch: TxnMetadataCacheEntry(epoch), self._on_loaded)
        self._send_markers: dict[int, SendTxnMarkers] = {}
        # Monotonic seconds: when each id's current transaction started, and when the id last changed.
        self._started: dict[str, float] = {}
        self._touched: dict[str, float] = {}

    # ---- configuration ---------------------------------------------------------------------
    @property
    def partition_count(self) -> int:
        count = self.metadata.partition_count(TXN_TOPIC)
        return count if count is not None else int(self.config["transaction.state.log.num.partitions"])

    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.partition_count)

    def transaction_version_level(self) -> int:
        """The cluster's finalized transaction.version (advertised by ApiVersions)."""
        return int(self.config["transaction.version"])

    def validate_transaction_timeout_ms(self, timeout_ms: int) -> bool:
        return 0 < timeout_ms <= self.config["transaction.max.timeout.ms"]

    # ---- cache -----------------------------------------------------------------------------
    def get(self, transactional_id: str) -> tuple[int, TransactionMetadata | None]:
        """(coordinator epoch, metadata or None); CoordinatorError when this node does not own the id."""
        entry = self._entry(self.partition_for(transactional_id))
        return entry.coordinator_epoch, entry.metadata.get(transactional_id)

    def _entry(self, partition: int) -> TxnMetadataCacheEntry:
        """The loaded partition; COORDINATOR_LOAD_IN_PROGRESS while it loads, NOT_COORDINATOR otherwise."""
        try:
            return self.runtime.active(partition)
        except Exception as exc:  # the runtime raises the Kafka error
            raise CoordinatorError(error_code(exc), str(exc)) from exc

    def put_if_not_exists(self, metadata: TransactionMetadata) -> tuple[int, TransactionMetadata]:
        entry = self._entry(self.partition_for(metadata.transactional_id))
        existing = entry.metadata.setdefault(metadata.transactional_id, metadata)
        return entry.coordinator_epoch, existing

    def all_metadata(self) -> Iterator[TransactionMetadata]:
        for entry in self.runtime.active_shards():
            yield from entry.metadata.values()

    def owns(self, partition: int, coordinator_epoch: int | None = None) -> bool:
        """Loaded here (at that coordinator epoch)."""
        entry = self.runtime.active_or_none(partition)
        return entry is not None and (coordinator_epoch is None or entry.coordinator_epoch == coordinator_epoch)

    def is_loading(self, partition: int, coordinator_epoch: int) -> bool:
        """Being loaded here at that coordinator epoch."""
        return partition in self.runtime.loading_partitions() and self.runtime.epoch(partition) == coordinator_epoch

    def holds(self, partition: int) -> bool:
        """Loaded or being loaded here (whatever the epoch, or a load that failed)."""
        return self.runtime.state(partition) is not None

    # ---- appending -------------------------------------------------------------------------
    def append_transaction_to_log(self, transactional_id: str, coordinator_epoch: int, transit: TxnTransitMetadata,
                                  retry_on_error: Callable[[int], bool] = lambda _code: False) -> int:
        """Write the transition with acks=all, then apply it to the cache; returns a Kafka error code."""
        try:
            epoch, metadata = self.get(transactional_id)
        except CoordinatorError as exc:
            return exc.code
        if metadata is None or epoch != coordinator_epoch:
            return E.NOT_COORDINATOR
        value = encode_value(transit.to_log_value(), value_version_for(self.transaction_version_level()))
        code = self._append(transactional_id, value)
        if code != E.NONE:
            self._on_append_failure(transactional_id, coordinator_epoch, code, retry_on_error)
            return code
        return self._complete(transactional_id, coordinator_epoch, transit)

    def _append(self, transactional_id: str, value: bytes | None) -> int:
        records = build_batch([(encode_key(transactional_id), value)], timestamp_ms=self.clock.millis())
        return self._append_records(self.partition_for(transactional_id), records)

    def _append_records(self, partition: int, records: bytes) -> int:
        try:
            PartitionWriter(self.log, partition).append(records)
        except Exception as exc:  # storage errors carry their Kafka code
            code = error_code(exc)
            return _APPEND_ERROR_MAP.get(code, code)
        return E.NONE

    def _complete(self, transactional_id: str, coordinator_epoch: int, transit: TxnTransitMetadata) -> int:
        try:
            epoch, metadata = self.get(transactional_id)
        except CoordinatorError as exc:
            return exc.code
        if metadata is None or epoch != coordinator_epoch:
            # Leadership moved while appending: the client must find the new coordinator.
            return E.NOT_COORDINATOR
        was_ongoing = metadata.state is TransactionState.ONGOING
        metadata.complete_transition_to(transit)
        now = self.clock.monotonic()
        if metadata.state is TransactionState.ONGOING and not was_ongoing:
            self._started[transactional_id] = now  # the first partition started a transaction
        self._touched[transactional_id] = now
        return E.NONE

    def _mark_loaded(self, loaded: dict[str, TransactionMetadata]) -> None:
        wall, mono = self.clock.millis(), self.clock.monotonic()
        for txn_id, md in loaded.items():
            self._started[txn_id] = mono - max(0, wall - md.txn_start_timestamp) / 1000.0
            self._touched[txn_id] = mono - max(0, wall - md.txn_last_update_timestamp) / 1000.0

    def _elapsed_ms(self, marks: dict[str, float], transactional_id: str, wall_since: int) -> float:
        """Milliseconds since the mark; an id without one (created before this code ran) is measured
        from its wall-clock timestamp."""
        mark = marks.get(transactional_id)
        if mark is None:
            return float(max(0, self.clock.millis() - wall_since))
        return (self.clock.monotonic() - mark) * 1000.0

    def _on_append_failure(self, transactional_id: str, coordinator_epoch: int, code: int,
                           retry_on_error: Callable[[int], bool]) -> None:
        try:
            epoch, metadata = self.get(transactional_id)
        except CoordinatorError:
            return
        if metadata is not None and epoch == coordinator_epoch and not retry_on_error(code):
            # No transition happened: unblock the id (the caller may retry with the pending state kept).
            metadata.pending_state = None

    # ---- loading and unloading -------------------------------------------------------------
    def load_partition(self, partition: int, coordinator_epoch: int,
                       send_markers: SendTxnMarkers | None = None) -> None:
        """Become the coordinator of one partition (Kafka's loadTransactionsForTxnTopicPartition): whatever
        this node held of it is dropped, then the runtime replays its log; once loaded, each transaction in
        PREPARE_* goes to `send_markers`. Outside an event loop the load is done when this returns."""
        self.remove_partition(partition)
        if send_markers is not None:
            self._send_markers[partition] = send_markers
        self.runtime.schedule_load(partition, coordinator_epoch)

    def _on_loaded(self, partition: int, entry: TxnMetadataCacheEntry) -> None:
        """The runtime's listener: the partition is active, its ids are served from now on."""
        loaded = entry.metadata
        self._mark_loaded(loaded)
        now = self.clock.millis()
        pending = []
        for txn_id, md in loaded.items():
            if md.state in (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT):
                commit = md.state is TransactionState.PREPARE_COMMIT
                pending.append(PendingCompletion(txn_id, entry.coordinator_epoch, commit, md,
                                                 md.prepare_complete(now)))
        log.info("node %s loaded %d transactional ids from %s-%s at coordinator epoch %s (%d to complete)",
                 self.node_id, len(loaded), TXN_TOPIC, partition, entry.coordinator_epoch, len(pending))
        send = self._send_markers.pop(partition, None)
        if send is not None:
            for completion in pending:
                send(completion)

    def remove_partition(self, partition: int) -> None:
        self._send_markers.pop(partition, None)
        entry = self.runtime.active_or_none(partition)
        self.runtime.schedule_unload(partition)
        if entry is not None:
            self._forget(entry.metadata)
            log.info("node %s unloaded %s-%s", self.node_id, TXN_TOPIC, partition)

    def _forget(self, ids: Iterable[str]) -> None:
        for txn_id in ids:
            self._started.pop(txn_id, None)
            self._touched.pop(txn_id, None)

    def clear(self) -> None:
        self.runtime.close()
        self._send_markers.clear()
        self._started.clear()
        self._touched.clear()

    # ---- scans -----------------------------------------------------------------------------
    def timed_out_transactions(self, now_ms: int) -> list[tuple[str, int, int]]:
        """(id, producer id, epoch) of Ongoing transactions past their timeout (2PC ones never time out).
        Elapsed time is monotonic (see the module docstring); `now_ms` is kept for the callers."""
        out = []
        for md in self.all_metadata():
            if md.pending_transition_in_progress or md.state is not TransactionState.ONGOING:
                continue
            if md.is_distributed_two_phase_commit:
                continue
            if self._elapsed_ms(self._started, md.transactional_id, md.txn_start_timestamp) > md.txn_timeout_ms:
                out.append((md.transactional_id, md.producer_id, md.producer_epoch))
        return out

    def remove_expired_transactional_ids(self, now_ms: int) -> list[str]:
        """Write tombstones for ids idle past transactional.id.expiration.ms; drop them once durable."""
        idle_ms = self.config["transactional.id.expiration.ms"]
        removed: list[str] = []
        for partition, entry in self.runtime.active_by_partition().items():
            expired = [md for md in entry.metadata.values()
                       if md.pending_state is None and md.state.expiration_allowed
                       and self._elapsed_ms(self._touched, md.transactional_id,
                                            md.txn_last_update_timestamp) >= idle_ms]
            if expired:
                removed.extend(self._write_tombstones(partition, entry, expired, now_ms))
        return removed

    def _write_tombstones(self, partition: int, entry: TxnMetadataCacheEntry, expired: list[TransactionMetadata],
                          now_ms: int) -> list[str]:
        transits = [(md, md.prepare_dead()) for md in expired]
        records = build_batch([(encode_key(md.transactional_id), None) for md in expired], timestamp_ms=now_ms)
        code = self._append_records(partition, records)
        removed = []
        for md, transit in transits:
            still_ours = self.runtime.active_or_none(partition) is entry and md.pending_state is TransactionState.DEAD
            if code == E.NONE and still_ours and md.producer_epoch == transit.producer_epoch:
                del entry.metadata[md.transactional_id]
                self._forget([md.transactional_id])
                removed.append(md.transactional_id)
            else:
                log.warning("could not expire %s: tombstone append returned %s", md.transactional_id, E.name(code))
                md.pending_state = None
        return removed

    def list_transaction_states(self, producer_ids: set[int], state_names: set[str], duration_ms: int,
                                pattern: re.Pattern[str] | None, now_ms: int
                                ) -> tuple[int, list[str], list[TransactionListing]]:
        """(error code, unknown state filters, listings), Kafka's filters; Dead ids are never listed."""
        if self.runtime.loading:
            return E.COORDINATOR_LOAD_IN_PROGRESS, [], []
        unknown = [s for s in state_names if TransactionState.from_name(s) is None]
        states = {TransactionState.from_name(s) for s in state_names} - {None}
        out = []
        for md in self.all_metadata():
            if md.state is TransactionState.DEAD:
                continue
            if producer_ids and md.producer_id not in producer_ids:
                continue
            if state_names and md.state not in states:
                continue
            if duration_ms >= 0 and now_ms - md.txn_start_timestamp <= duration_ms:
                continue
            if pattern is not None and pattern.fullmatch(md.transactional_id) is None:
                continue
            out.append(TransactionListing(md.transactional_id, md.producer_id, md.state.state_name))
        return E.NONE, unknown, out


def _apply_batch(loaded: dict[str, TransactionMetadata], batch: bytes) -> None:
    for record in iter_records(batch):
        if record.key is None:
            log.warning("skipping a %s record without a key", TXN_TOPIC)
            continue
        try:
            txn_id = decode_key(record.key)
        except UnknownKeyError:
            log.warning("skipping a %s record with an unknown key type", TXN_TOPIC)
            continue
        except TransactionLogError as exc:
            log.warning("skipping a %s record with an undecodable key: %s", TXN_TOPIC, exc)
            continue
        if record.value is None:
            loaded.pop(txn_id, None)  # tombstone: the id expired
            continue
        try:
            loaded[txn_id] = TransactionMetadata.from_log(txn_id, decode_value(record.value))
        except TransactionLogError as exc:
            log.warning("skipping undecodable %s record for %r: %s", TXN_TOPIC, txn_id, exc)
