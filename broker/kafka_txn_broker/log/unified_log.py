"""`UnifiedLog`: a partition's log + producer state + aborted-transaction index (Kafka's UnifiedLog).

The partition layer owns the high watermark and sets it here; everything else (offset assignment,
idempotence and transaction checks, markers, LSO, read_committed fetches) lives in this class.

Producer state is loaded lazily after a clean shutdown (the snapshot written at close covers the
whole log, and its file name gives the log end offset), so opening thousands of idle partitions
reads no file contents. After an unclean shutdown the last segment is re-validated, its indexes
rebuilt, and producer state replayed from the newest snapshot at or below that segment, which also
rebuilds its `.txnindex`.

Threading: like all broker state, a log is used from the cluster's event loop only, so it takes no
lock (an append, its replication and a read never interleave within one loop step).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

from kafka_txn_broker.clock import Clock
from kafka_txn_broker.configs.broker_config import BrokerConfig
from kafka_txn_broker.formats.errors import (
    BrokerResponseError,
    CorruptRecordError,
    KafkaStorageError,
    OffsetOutOfRangeError,
    RecordListTooLargeError,
    UnknownError,
)
from kafka_txn_broker.formats.record_batch import (
    CONTROL_FLAG,
    LOG_OVERHEAD,
    MIN_BATCH_LENGTH,
    BatchHeader,
    batch_crc_ok,
    build_control_batch,
    iter_batches,
    parse_control_record,
    validate_batches,
    with_base_offset,
)
from kafka_txn_broker.log import cleaner, leader_epoch_checkpoint
from kafka_txn_broker.log.leader_epoch import LeaderEpochCache
from kafka_txn_broker.log.local_log import LocalLog, scan_dir
from kafka_txn_broker.log.producer_state import (
    AppendOrigin,
    CompletedTxn,
    ProducerAppendInfo,
    ProducerStateManager,
)
from kafka_txn_broker.log.segment import LogSegment
from kafka_txn_broker.log.transaction_index import AbortedTxn

log = logging.getLogger(__name__)

Records = bytes | bytearray | memoryview


_ORIGINS = {origin.value: origin for origin in AppendOrigin}


class UnexpectedAppendOffsetError(UnknownError):
    """A follower append does not start at this log's end offset (the follower must truncate)."""


@dataclass(slots=True)
class AppendInfo:
    first_offset: int
    last_offset: int
    log_append_time: int  # -1: CreateTime
    log_start_offset: int
    duplicate: bool
    record_count: int
    max_timestamp: int = -1
    # The batches exactly as written (offsets assigned): in-process followers append these bytes
    # instead of reading them back from the leader's segment. Empty for a duplicate.
    records: bytes | bytearray | memoryview = b""
    # (position in `records`, header) of each batch written, so followers need not parse them again.
    batches: list[tuple[int, BatchHeader]] | None = None


@dataclass(slots=True)
class FetchDataInfo:
    records: bytes | memoryview
    aborted_transactions: list[AbortedTxn] | None  # None unless read_committed


class UnifiedLog:
    __slots__ = ("dir", "config", "clock", "log", "_psm", "_psm_loaded", "_high_watermark", "_epochs",
                 "_pending_epochs", "_epochs_written", "_log_start_offset")

    def __init__(self, directory: Path, config: BrokerConfig, clock: Clock, local_log: LocalLog,
                 psm: ProducerStateManager) -> None:
        self.dir = directory
        self.config = config
        self.clock = clock
        self.log = local_log
        self._psm = psm
        self._psm_loaded = False
        self._high_watermark = local_log.log_start_offset
        # Kafka's logStartOffset: the first segment's base offset, or above it after DeleteRecords (the
        # records below it stay in the segment until the whole segment is below it and is deleted).
        self._log_start_offset = local_log.log_start_offset
        self._epochs: LeaderEpochCache | None = None  # built on first use
        # Epoch starts recorded before the cache was built: (epoch, start offset), in order.
        self._pending_epochs: list[tuple[int, int]] | None = None
        self._epochs_written: list[tuple[int, int]] | None = None  # as the checkpoint file holds them

    # -- opening ---------------------------------------------------------------------------
    @classmethod
    def open(cls, directory: Path, config: BrokerConfig, clock: Clock, *,
             high_watermark: int | None = None, segment_bytes: int | None = None,
             log_start_offset: int | None = None) -> UnifiedLog:
        """Create the partition directory or load it, recovering after an unclean shutdown.
        `segment_bytes`: the topic's segment size (None: log.segment.bytes); `log_start_offset`: from the
        log dir's log-start-offset-checkpoint (kept within the log's offsets)."""
        path = os.fspath(directory)
        os.makedirs(path, exist_ok=True)
        listing = scan_dir(path)
        hint = listing.snapshots[-1] if listing.snapshots else None
        local_log = LocalLog.open(path, config, clock, listing, next_offset_hint=hint, segment_bytes=segment_bytes)
        psm = ProducerStateManager(path, config["producer.id.expiration.ms"], listing.snapshots, clock=clock)
        ulog = cls(Path(directory), config, clock, local_log, psm)
        if not local_log.was_clean and listing.segments:
            ulog._rebuild_after_unclean_shutdown()
        elif not listing.segments:
            psm.truncate_fully_and_start_at(local_log.log_end_offset)
            ulog._psm_loaded = True
        if log_start_offset is not None:
            ulog._log_start_offset = min(max(log_start_offset, local_log.log_start_offset), local_log.log_end_offset)
        if high_watermark is not None:
            ulog.high_watermark = high_watermark
        return ulog

    def _rebuild_after_unclean_shutdown(self) -> None:
        active = self.log.active
        if self.log.recovered_bytes:
            log.warning("%s: truncated %d bytes of torn or corrupt data", self.dir, self.log.recovered_bytes)
        # Snapshots above the recovered segment's start may postdate data we just cut, and the txn
        # index of that segment must be rebuilt from the state at its start.
        self._psm.delete_snapshots_above(active.base_offset)
        active.txn_index.reset()
        self._load_producer_state(txn_index_from=active.base_offset)

    def _load_producer_state(self, txn_index_from: int | None = None) -> None:
        psm = self._psm
        start = psm.load_snapshot(self.log.log_start_offset, self.log.log_end_offset, self.clock.millis())
        for segment, header, raw in self.log.iter_batches(start):
            if header.base_offset < start or not header.has_producer_id:
                continue
            completed = psm.apply_replicated(header, _marker_of(header, raw))
            if completed is not None:
                rebuild = txn_index_from is not None and header.base_offset >= txn_index_from
                self._complete_txn(completed, segment if rebuild else None)
        psm.update_map_end_offset(self.log.log_end_offset)
        psm.on_high_watermark_updated(self._high_watermark)
        psm.stamp_loaded_activity()  # replay touched every producer: age them by their timestamps again
        self._psm_loaded = True

    def _ensure_loaded(self) -> ProducerStateManager:
        if not self._psm_loaded:
            self._load_producer_state()
        return self._psm

    # -- offsets ---------------------------------------------------------------------------
    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @high_watermark.setter
    def high_watermark(self, value: int) -> None:
        hw = min(max(value, self._log_start_offset), self.log.log_end_offset)
        self._high_watermark = hw
        if self._psm_loaded:
            self._psm.on_high_watermark_updated(hw)

    @property
    def producer_state(self) -> ProducerStateManager:
        return self._ensure_loaded()

    @property
    def first_unstable_offset(self) -> int | None:
        """The first offset of the oldest open transaction, or the log start offset once DeleteRecords
        moved past it (the transaction still holds back what follows, as in Kafka)."""
        first = self._ensure_loaded().first_unstable_offset()
        return None if first is None else max(first, self._log_start_offset)

    @property
    def last_stable_offset(self) -> int:
        first = self.first_unstable_offset
        return self._high_watermark if first is None else min(first, self._high_watermark)

    def maybe_increment_log_start_offset(self, offset: int) -> bool:
        """DeleteRecords (and a follower learning its leader's start): records below `offset` are gone for
        readers. Never past the high watermark (OFFSET_OUT_OF_RANGE); never backwards. True if it moved."""
        if offset > self._high_watermark:
            raise OffsetOutOfRangeError(
                f"Cannot increment the log start offset to {offset} of partition {self.dir.name} since it is "
                f"larger than the high watermark {self._high_watermark}")
        self.log.check_online()
        if offset <= self._log_start_offset:
            return False
        self._log_start_offset = offset
        if self._epochs is not None:
            self._epochs.truncate_from_start(offset)
            self._save_epochs()
        return True

    def delete_segments_below_start(self) -> int:
        """Delete the segments wholly below the log start offset (and the high watermark), as Kafka's
        retention does for a log start offset breach. The active segment always stays. Returns how many."""
        segments = self.log.segments
        bound = min(self._log_start_offset, self._high_watermark)
        count = 0
        while count + 1 < len(segments) and segments[count + 1].base_offset <= bound:
            count += 1
        if count:
            try:
                self.log.delete_first_segments(count)
            except OSError as exc:
                raise self._offline(exc) from exc
            self._psm.delete_snapshots_below(self.log.log_start_offset)
        return count

    @property
    def offline(self) -> bool:
        """A storage error left this log unusable until the node restarts (see local_log.py)."""
        return self.log.offline is not None

    @property
    def size_in_bytes(self) -> int:
        return sum(s.size for s in self.log.segments)

    # -- appends ---------------------------------------------------------------------------
    def append_as_leader(self, records: Records, leader_epoch: int, *, origin: str = "client") -> AppendInfo:
        """Validate, assign offsets from the log end, append. A retried batch (same producer, epoch and
        sequence range as one of its last 5) is not written: the original offsets come back."""
        src = _ORIGINS.get(origin) or AppendOrigin(origin)  # the enum's own lookup costs a microsecond
        self._ensure_loaded()
        limit = self.log.max_message_bytes
        batches = validate_batches(records, self.config["message.max.bytes"] if limit is None else limit,
                                   from_client=src is AppendOrigin.CLIENT)
        self._check_set_size(len(records))
        if src is AppendOrigin.CLIENT:
            dup = self._find_duplicate(batches)
            if dup is not None:
                return dup
        buf = bytearray(records)
        assigned = self._assign_offsets(buf, batches, leader_epoch)
        infos, completed = self._validate_producers(buf, assigned, src)
        return self._write(buf, assigned, infos, completed)

    def _check_set_size(self, size: int) -> None:
        if size > self.log.segment_bytes:
            raise RecordListTooLargeError(
                f"append of {size} bytes exceeds the segment size {self.log.segment_bytes} "
                f"(segment.bytes) of {self.dir}")

    def _find_duplicate(self, batches: list[tuple[int, BatchHeader]]) -> AppendInfo | None:
        for _pos, header in batches:
            if not header.has_producer_id:
                continue
            meta = self._psm.find_duplicate(header)
            if meta is not None:
                # Kafka answers a retried batch with the original's offsets and, as its log append time, the
                # original's timestamp (Kafka 3.3.2 does, even on a CreateTime topic: tests/external/fidelity).
                return AppendInfo(meta.first_offset, meta.last_offset, meta.timestamp, self.log_start_offset, True,
                                  header.record_count, meta.timestamp)
        return None

    def _assign_offsets(self, buf: bytearray, batches: list[tuple[int, BatchHeader]],
                        leader_epoch: int) -> list[tuple[int, BatchHeader]]:
        offset = self.log.log_end_offset
        assigned = []
        for pos, header in batches:
            with_base_offset(buf, offset, leader_epoch, pos)
            # header._replace(base_offset=offset, partition_leader_epoch=leader_epoch), without its keyword
            # machinery: the two fields are the first and the third.
            assigned.append((pos, BatchHeader._make((offset, header[1], leader_epoch, *header[3:]))))
            offset += header.last_offset_delta + 1
        return assigned

    def _validate_producers(self, buf: bytearray, batches: list[tuple[int, BatchHeader]], origin: AppendOrigin
                            ) -> tuple[dict[int, ProducerAppendInfo], list[CompletedTxn]]:
        infos: dict[int, ProducerAppendInfo] = {}
        completed: list[CompletedTxn] = []
        for pos, header in batches:
            if not header.has_producer_id:
                continue
            info = infos.get(header.producer_id)
            if info is None:
                info = infos[header.producer_id] = self._psm.prepare_update(header.producer_id, origin)
            marker = _marker_of(header, memoryview(buf)[pos:pos + header.size])
            if marker is None:
                info.append_batch(header)
            else:
                done = info.append_end_txn_marker(marker[0], marker[1], header.producer_epoch,
                                                  header.base_offset, header.max_timestamp)
                if done is not None:
                    completed.append(done)
        return infos, completed

    def _write(self, buf: Records, batches: list[tuple[int, BatchHeader]],
               infos: dict[int, ProducerAppendInfo], completed: list[CompletedTxn]) -> AppendInfo:
        first, last = batches[0][1].base_offset, batches[-1][1].last_offset
        count = batches[0][1].record_count if len(batches) == 1 else sum(h.record_count for _, h in batches)
        try:
            self._maybe_roll(len(buf), last)
            self.log.append(buf, batches, count)
            self._note_epochs(batches)
            for info in infos.values():
                self._psm.update(info)
            for txn in completed:
                self._complete_txn(txn, self.log.active)
        except OSError as exc:
            raise self._offline(exc) from exc
        self._psm.update_map_end_offset(self.log.log_end_offset)
        max_ts = batches[0][1].max_timestamp if len(batches) == 1 else max(h.max_timestamp for _, h in batches)
        return AppendInfo(first, last, -1, self.log_start_offset, False, count, max_ts, buf, batches)

    def _offline(self, exc: OSError) -> KafkaStorageError:
        """An OSError the LocalLog did not handle itself (a snapshot at roll, a .txnindex entry after the
        batch was written) leaves memory and disk apart: take the log offline (see local_log.py). Appends
        catch it inline (try/except, not a context manager: they run tens of thousands of times a second)."""
        self.log.mark_offline(exc)
        return KafkaStorageError(f"storage error in {self.dir}: {exc}")

    def _maybe_roll(self, size: int, last_offset: int) -> None:
        if self.log.maybe_roll(size, last_offset) is not None:
            # Kafka snapshots producer state at every roll, keyed by the new segment's base offset.
            self._psm.update_map_end_offset(self.log.log_end_offset)
            self._psm.take_snapshot()

    def _complete_txn(self, completed: CompletedTxn, segment: LogSegment | None) -> None:
        """Finish a transaction; an aborted one is recorded in `segment`'s txn index (None: replay of
        a segment whose index is already complete)."""
        if completed.is_aborted and segment is not None:
            lso = self._psm.last_stable_offset(completed)
            segment.txn_index.append(AbortedTxn(completed.producer_id, completed.first_offset,
                                                completed.last_offset, lso))
        self._psm.complete_txn(completed)

    def append_marker(self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                      leader_epoch: int, *, transaction_version: int = 1,
                      txn_start_offset: int | None = None) -> int:
        """Write a COMMIT/ABORT marker for the producer (WriteTxnMarkers). Returns its offset."""
        return self.append_marker_info(producer_id, producer_epoch, commit, coordinator_epoch, leader_epoch,
                                       transaction_version=transaction_version,
                                       txn_start_offset=txn_start_offset).first_offset

    def append_marker_info(self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                           leader_epoch: int, *, transaction_version: int,
                           txn_start_offset: int | None = None) -> AppendInfo:
        """append_marker, returning the AppendInfo (with the marker batch, for in-process followers)."""
        psm = self._ensure_loaded()
        offset = self.log.log_end_offset
        now = self.clock.millis()
        info = psm.prepare_update(producer_id, AppendOrigin.COORDINATOR)
        done = info.append_end_txn_marker(commit, coordinator_epoch, producer_epoch, offset, now,
                                          transaction_version, txn_start_offset)
        batch = build_control_batch(producer_id, producer_epoch, commit, coordinator_epoch, now,
                                    base_offset=offset, partition_leader_epoch=leader_epoch)
        return self._write(batch, [(0, BatchHeader.parse(batch))], {producer_id: info}, [done] if done else [])

    def append_as_follower(self, records: Records, *, verified: bool = False,
                           batches: list[tuple[int, BatchHeader]] | None = None, allow_gap: bool = False) -> None:
        """Append batches copied from the leader (offsets already assigned), without validation of
        producer state; markers update the txn index exactly as on the leader.

        `verified`: the bytes come straight from this process's leader append, which validated them,
        so the follower skips re-checking CRCs (it still checks the offsets line up); `batches` are
        that append's parsed headers, when the caller has them. `allow_gap`: the records were read
        from the leader's log at this log's end, where compaction may have removed batches, so they may
        start past it (a Kafka follower accepts that too); they must never start before it."""
        size = len(records)
        if size == 0:
            return
        psm = self._psm if self._psm_loaded else self._ensure_loaded()
        if not verified:
            batches = _check_replicated(records)
        elif batches is None:
            batches = list(iter_batches(records))
        local = self.log
        first, end = batches[0][1].base_offset, local.log_end_offset
        if first < end or (first > end and not allow_gap):
            raise UnexpectedAppendOffsetError(
                f"follower append at offset {first} but the log end offset of {self.dir} is {end}")
        if size > local.segment_bytes:
            self._check_set_size(size)
        # Every follower of every append passes here: the steps are spelled out rather than called.
        try:
            last = batches[-1][1]
            self._maybe_roll(size, last.base_offset + last.last_offset_delta)
            count = batches[0][1].record_count if len(batches) == 1 else sum(h.record_count for _, h in batches)
            local.append(records, batches, count)
            if self._epochs is not None:
                self._note_epochs(batches)
            self._replay_producers(records, batches, psm)
        except OSError as exc:
            raise self._offline(exc) from exc
        psm.last_map_offset = local.log_end_offset

    def _replay_producers(self, records: Records, batches: list[tuple[int, BatchHeader]],
                          psm: ProducerStateManager) -> None:
        for pos, header in batches:
            if header.producer_id < 0:
                continue
            if header.attributes & CONTROL_FLAG:
                marker = _marker_of(header, memoryview(records)[pos:pos + header.batch_length + LOG_OVERHEAD])
                done = psm.apply_replicated(header, marker)
                if done is not None:
                    self._complete_txn(done, self.log.active)
            else:
                psm.apply_replicated(header, None)

    # -- leader epochs ---------------------------------------------------------------------
    def _note_epochs(self, batches: list[tuple[int, BatchHeader]]) -> None:
        if self._epochs is not None:
            latest = self._epochs.latest_epoch
            for _pos, header in batches:
                self._epochs.assign(header.partition_leader_epoch, header.base_offset)
            if self._epochs.latest_epoch != latest:
                self._save_epochs()

    def _epoch_cache(self) -> LeaderEpochCache:
        if self._epochs is None:
            cache = LeaderEpochCache()
            pending = list(self._pending_epochs or ())
            for segment in self.log.segments:
                for _pos, header in segment.iter_headers(0):
                    # Replay the recorded epoch starts where they happened: before the batches after them.
                    while pending and pending[0][1] <= header.base_offset:
                        cache.assign(*pending.pop(0))
                    cache.assign(header.partition_leader_epoch, header.base_offset)
            for epoch, start in pending:
                cache.assign(epoch, start)
            saved = leader_epoch_checkpoint.read(self.dir)
            self._epochs, self._pending_epochs = _with_checkpoint(cache, saved, self.log.log_end_offset), None
            self._epochs_written = saved or None
        return self._epochs

    def _save_epochs(self) -> None:
        """Keep `leader-epoch-checkpoint` equal to the cache: it is what remembers an epoch whose batches
        compaction removed. Only a built cache is saved, and it changes once per leadership change."""
        assert self._epochs is not None
        entries = list(self._epochs.entries)
        if entries == self._epochs_written:
            return
        try:
            leader_epoch_checkpoint.write(self.dir, entries)
        except OSError as exc:
            # Only compaction's corner case depends on the file: the append or leadership change that
            # got here must not fail for it. The next change tries again.
            log.warning("%s: cannot write %s: %s", self.dir, leader_epoch_checkpoint.FILE_NAME, exc)
            return
        self._epochs_written = entries

    def assign_epoch_start(self, leader_epoch: int) -> None:
        """On becoming leader: the new epoch starts at the current log end (Kafka does the same), so
        OffsetForLeaderEpoch knows it before the first append. Building the cache reads every batch
        header of the log, and a node restart moves the leadership of thousands of idle partitions:
        until the cache is first needed, the start is only noted."""
        if self._epochs is not None:
            self._epochs.assign(leader_epoch, self.log.log_end_offset)
            self._save_epochs()
        else:
            self._pending_epochs = [*(self._pending_epochs or ()), (leader_epoch, self.log.log_end_offset)]

    @property
    def latest_epoch(self) -> int:
        return self._epoch_cache().latest_epoch

    def epoch_for_offset(self, offset: int) -> int:
        """The leader epoch that wrote `offset` (ListOffsets answers with it); -1 when unknown."""
        return self._epoch_cache().epoch_for(offset)

    def divergence_with(self, leader: UnifiedLog) -> int:
        """Where this (follower) log stops agreeing with `leader`'s, by leader epoch (Kafka's
        OffsetsForLeaderEpoch truncation): the end of this log's latest epoch on the leader, or, when the
        leader never had that epoch, the end of the latest epoch both know. Never above this log's end."""
        mine = self.latest_epoch
        epoch, leader_end = leader.end_offset_for_epoch(mine)
        if epoch < 0:
            return min(leader.log_end_offset, self.log.log_end_offset, self._high_watermark)
        if epoch != mine:
            leader_end = min(leader_end, self.end_offset_for_epoch(epoch)[1])
        return min(leader_end, self.log.log_end_offset)

    def end_offset_for_epoch(self, leader_epoch: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch: (largest epoch <= leader_epoch, its end offset), or (-1, -1)."""
        return self._epoch_cache().end_offset_for(leader_epoch, self.log.log_end_offset)

    # -- reads -----------------------------------------------------------------------------
    def read(self, fetch_offset: int, max_bytes: int, isolation_read_committed: bool,
             min_one_batch: bool = True) -> FetchDataInfo:
        """Batches from `fetch_offset` up to the high watermark (read_uncommitted) or the last stable
        offset (read_committed, with the aborted transactions overlapping the returned range)."""
        if fetch_offset < self._log_start_offset:
            raise OffsetOutOfRangeError(f"offset {fetch_offset} is below the log start offset "
                                        f"{self._log_start_offset} of {self.dir}")
        upper = self.last_stable_offset if isolation_read_committed else self._high_watermark
        data = self.log.read(fetch_offset, max_bytes, upper, min_one_batch)
        if not isolation_read_committed:
            return FetchDataInfo(data, None)
        if not data:
            return FetchDataInfo(data, [])
        end = _next_offset_after(data)
        return FetchDataInfo(data, self.collect_aborted_transactions(fetch_offset, end))

    def collect_aborted_transactions(self, start_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        """Aborted txns overlapping [start_offset, upper_bound_offset), from the segment holding
        start_offset on, until an entry's LSO shows no later segment can add more."""
        found: list[AbortedTxn] = []
        for segment in self.log.segments[self.log.segment_for(start_offset):]:
            txns, complete = segment.txn_index.collect(start_offset, upper_bound_offset)
            found.extend(txns)
            if complete:
                break
        return found

    def read_for_replication(self, fetch_offset: int, max_bytes: int) -> bytes:
        """Whole batches from `fetch_offset` up to the log end (a follower copies past the HW)."""
        return self.log.read(fetch_offset, max_bytes, self.log.log_end_offset, True)

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with timestamp >= `timestamp` (ListOffsets)."""
        return self.log.offset_for_timestamp(timestamp, self._log_start_offset)

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record carrying the log's largest timestamp
        (ListOffsets MAX_TIMESTAMP, -3); None for an empty log."""
        return self.log.max_timestamp_offset()

    # -- maintenance -----------------------------------------------------------------------
    def truncate_to(self, offset: int) -> None:
        """Drop everything at or above `offset` (to a batch boundary), with producer state and txn
        index; snapshots above the new end are deleted and the state reloaded."""
        if offset >= self.log.log_end_offset:
            return
        if offset <= self.log.log_start_offset:
            self.truncate_fully_and_start_at(offset)
            return
        else:
            self.log.truncate_to(offset)
            self._psm.delete_snapshots_above(self.log.log_end_offset)
            self._load_producer_state()
        self._high_watermark = min(self._high_watermark, self.log.log_end_offset)
        self._psm.on_high_watermark_updated(self._high_watermark)
        if self._epochs is not None:
            self._epochs.truncate_from_end(self.log.log_end_offset)
            self._save_epochs()
        elif self._pending_epochs:
            end = self.log.log_end_offset
            self._pending_epochs = [(e, start) for e, start in self._pending_epochs if start < end] or None

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Empty the log and start it at `offset` (a follower whose leader's log starts past its end, or
        whose first batch straddles the leader's log start)."""
        self.log.truncate_fully_and_start_at(offset)
        self._psm.truncate_fully_and_start_at(offset)
        self._psm_loaded = True
        self._log_start_offset = offset
        self._high_watermark = offset
        self._psm.on_high_watermark_updated(offset)
        if self._epochs is not None:
            self._epochs.truncate_from_end(offset)
            self._save_epochs()
        else:
            self._pending_epochs = None

    # -- compaction (log/cleaner.py does the work; log/cleaner_manager.py decides when) -------
    def first_uncleanable_offset(self, min_compaction_lag_ms: int, now_ms: int) -> int:
        """Kafka's LogCleanerManager.cleanableOffsets: nothing at or above the active segment, the high
        watermark, the first unstable offset (an open or hanging transaction pins it), or the first
        segment holding a record younger than min.compaction.lag.ms is ever cleaned."""
        first = min(self.log.active.base_offset, self._high_watermark)
        unstable = self._ensure_loaded().first_unstable_offset()
        if unstable is not None:
            first = min(first, unstable)
        if min_compaction_lag_ms > 0:
            for segment in self.log.segments[:-1]:
                if segment.base_offset >= first:
                    break
                if segment.max_timestamp_hint() > now_ms - min_compaction_lag_ms:
                    return segment.base_offset
        return first

    def compact(self, first_uncleanable: int, tombstone_horizon: int, first_dirty: int = -1
                ) -> cleaner.CleanStats | None:
        """Clean the segments wholly below `first_uncleanable` (the offset map covers `first_dirty` on);
        None if there are none."""
        self.log.check_online()
        count = cleaner.cleanable_segment_count(self.log, first_uncleanable)
        if count == 0:
            return None
        # The leader-epoch cache is rebuilt from batch headers: build it while every batch is still
        # there and save it, so an epoch whose batches compaction removes stays known, restarts included.
        self._epoch_cache()
        self._save_epochs()
        try:
            return cleaner.clean_log(self.log, count, tombstone_horizon, first_dirty)
        except cleaner.SwapIncomplete as exc:
            raise self._offline(exc) from exc
        except OSError as exc:  # before the commit: the old segments are intact and still in use
            raise KafkaStorageError(f"cannot compact {self.dir}: {exc}") from exc

    def take_snapshot(self) -> Path | None:
        psm = self._ensure_loaded()
        psm.update_map_end_offset(self.log.log_end_offset)
        return psm.take_snapshot()

    def flush(self) -> None:
        self.log.flush()

    def flush_if_due(self) -> bool:
        """Apply log.flush.interval.ms without an append (for a periodic caller). True if flushed."""
        return self.log.flush_if_due()

    def has_late_transaction(self, now_ms: int) -> bool:
        """For PartitionsWithLateTransactionsCount (a leader-side metric)."""
        return self._ensure_loaded().has_late_transaction(now_ms, self.config["transaction.max.timeout.ms"])

    def remove_expired_producers(self, now_ms: int) -> list[int]:
        """Expire idle producers of a loaded producer state. An unloaded one (idle since a clean start) is
        left alone: the periodic check must not read every snapshot of every replica, and nothing looks
        at those producers until the state is loaded, after which the next check expires them."""
        if not self._psm_loaded:
            return []
        return self._psm.remove_expired_producers(now_ms)

    def close(self, *, clean: bool = True) -> None:
        """Flush, snapshot producer state at the log end, leave the clean-shutdown marker (an offline
        log is only released: its state in memory may not match its files). `clean=False` is a crash (a
        node killed with SIGKILL): what was appended stays in the files, but no snapshot and no marker are
        written, so the next open recovers the log as after kill -9."""
        if self.log.offline is not None or not clean:
            self.log.close(clean=False)
            return
        end = self.log.log_end_offset
        has_data = self.log.active.size > 0 or len(self.log.segments) > 1
        # The snapshot at the log end doubles as the record of that end offset for the next open.
        if has_data and (self._psm_loaded or end not in self._psm.snapshots):
            self.take_snapshot()
        self.log.close(clean=True)

    def delete(self) -> None:
        self.log.delete()

    def __repr__(self) -> str:
        return f"UnifiedLog({self.dir}, start={self.log_start_offset}, end={self.log_end_offset})"


def _with_checkpoint(cache: LeaderEpochCache, saved: list[tuple[int, int]], log_end_offset: int) -> LeaderEpochCache:
    """The cache built from the log, completed by the checkpoint: for each epoch the earliest start either
    knows (compaction may have removed an epoch's first batches, or all of them), replayed in epoch
    order, then cut at the log end (the file may predate a truncation)."""
    if not saved:
        return cache
    starts: dict[int, int] = {}
    for epoch, start in [*saved, *cache.entries]:
        starts[epoch] = min(start, starts.get(epoch, start))
    merged = LeaderEpochCache()
    for epoch in sorted(starts):
        merged.assign(epoch, starts[epoch])
    merged.truncate_from_end(log_end_offset + 1)
    return merged


def _marker_of(header: BatchHeader, raw: Records) -> tuple[bool, int] | None:
    """(commit, coordinator epoch) of a transaction marker; None for data and other control batches."""
    if not header.is_control:
        return None
    try:
        return parse_control_record(raw)
    except (BrokerResponseError, ValueError):
        return None


def _check_replicated(records: Records) -> list[tuple[int, BatchHeader]]:
    """Framing and CRC of batches a follower copies (it trusts the leader for everything else)."""
    batches = list(iter_batches(records))
    end = batches[-1][0] + batches[-1][1].size if batches else 0
    if end != len(records):
        raise CorruptRecordError(f"replicated records end with {len(records) - end} bytes of partial batch")
    prev_next = None
    for pos, header in batches:
        bad_frame = header.magic != 2 or header.batch_length < MIN_BATCH_LENGTH
        if bad_frame or not batch_crc_ok(records, pos, header):
            raise CorruptRecordError(f"replicated batch at offset {header.base_offset} is corrupt")
        if prev_next is not None and header.base_offset < prev_next:
            raise CorruptRecordError(f"replicated batch offsets go backwards at {header.base_offset}")
        prev_next = header.next_offset
    return batches


def _next_offset_after(data: Records) -> int:
    last = None
    for _pos, header in iter_batches(data):
        last = header
    assert last is not None
    return last.next_offset
