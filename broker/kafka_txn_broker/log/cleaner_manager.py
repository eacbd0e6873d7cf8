"""Which compacted logs of one node are due for cleaning, and when (Kafka's LogCleanerManager).

Every log.cleaner.backoff.ms (checked from ReplicaManager.tick, on the event loop thread) the manager
looks at this node's replicas (leaders and followers alike: each replica is cleaned independently) of
topics with cleanup.policy=compact and cleans the dirtiest one whose dirty ratio (bytes after the
cleaner checkpoint / bytes below the first uncleanable offset) reaches min.cleanable.dirty.ratio, or
whose kept tombstones reached delete.retention.ms. One log per tick bounds the time the loop is held;
after a cleaning it looks again at the next tick, and backs off only when nothing was due (as Kafka's
cleaner thread does). A pass is not split across ticks: it reads the log's cleanable part and writes
what stays at roughly 20 MB/s on a 2-core machine, so a log with 100 MB below its first uncleanable
offset holds the loop for about 5 s (Kafka runs its cleaner on threads of its own). A log with no
rolled segment is skipped before any file is read, so idle partitions cost one attribute lookup per check.

Cleaner checkpoints (the first dirty offset of each log) are kept in memory and written after every
pass to `cleaner-offset-checkpoint` in the node's log dir (Kafka's file and format), so a restart does
not clean every compacted log again. The file is written only once a pass's swaps are durable, so it
may lag the logs (after a crash) but never lead them; a lagging or missing checkpoint only means more
dirty data for the next pass (the offset map then covers more), and one past the log end (after a
truncation) is dropped. A checkpoint never decides what is kept: a record goes only for a later record
of its key that the map saw. The times of past passes, which date tombstones, live in memory only:
after a restart tombstones get their full delete.retention.ms again (kept longer, never removed early).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

from kafka_txn_broker.configs.broker_config import BrokerConfig
from kafka_txn_broker.log import cleaner
from kafka_txn_broker.log.offset_checkpoint import read_checkpoints, write_checkpoints

if TYPE_CHECKING:
    from kafka_txn_broker.log.unified_log import UnifiedLog

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
N = TypeVar("N", int, float)


class Replica(Protocol):
    """A replica the cleaner may compact: only its log matters here (the replica layer's Partition)."""

    @property
    def log(self) -> UnifiedLog: ...


@dataclass(frozen=True)
class TopicCleaning:
    """A compacted topic's effective settings (topic override, else the broker default)."""

    min_dirty_ratio: float
    delete_retention_ms: int
    min_compaction_lag_ms: int


def topic_cleaning(configs: Mapping[str, str], config: BrokerConfig) -> TopicCleaning | None:
    """None unless cleanup.policy includes compact (Kafka's default policy is delete)."""
    policies = {p.strip().lower() for p in str(configs.get("cleanup.policy", "delete")).split(",")}
    if "compact" not in policies:
        return None
    return TopicCleaning(
        _number(configs, "min.cleanable.dirty.ratio", float, config["log.cleaner.min.cleanable.ratio"]),
        _number(configs, "delete.retention.ms", int, config["log.cleaner.delete.retention.ms"]),
        _number(configs, "min.compaction.lag.ms", int, config["log.cleaner.min.compaction.lag.ms"]))


def _number(configs: Mapping[str, str], name: str, kind: type[N], default: N) -> N:
    value = configs.get(name)
    if value is None:
        return default
    try:
        return kind(value)
    except ValueError:
        log.warning("ignoring topic config %s=%r (not a number); using %s", name, value, default)
        return default


@dataclass
class LogCleaningState:
    checkpoint: int = -1  # first dirty offset; -1: unknown (the whole cleanable range is dirty)
    passes: list[tuple[int, int]] = field(default_factory=list)  # (cleaned up to, at ms), oldest first
    tombstones_due_ms: int | None = None  # when a kept tombstone's delete.retention.ms runs out

    def tombstone_horizon(self, now_ms: int, retention_ms: int) -> int:
        """Tombstones below this offset were first cleaned at least retention_ms ago: they may go."""
        expired = [upto for upto, at in self.passes if at + retention_ms <= now_ms]
        return max(expired, default=-1)

    def first_cleaned_at(self, offset: int) -> int | None:
        for upto, at in self.passes:
            if upto > offset:
                return at
        return None

    def record_pass(self, upto: int, now_ms: int, retention_ms: int, first_kept_tombstone: int | None) -> None:
        self.checkpoint = upto
        self.passes.append((upto, now_ms))
        # Passes older than the newest expired one tell nothing more (the horizon is that one's offset).
        expired = [i for i, (_u, at) in enumerate(self.passes) if at + retention_ms <= now_ms]
        if expired:
            del self.passes[:expired[-1]]
        first_at = None if first_kept_tombstone is None else self.first_cleaned_at(first_kept_tombstone)
        self.tombstones_due_ms = None if first_at is None else first_at + retention_ms


@dataclass
class _Candidate:
    key: TopicPartition
    log: UnifiedLog
    settings: TopicCleaning
    first_uncleanable: int
    ratio: float


CHECKPOINT_FILE = "cleaner-offset-checkpoint"
# An unreadable checkpoint reads as empty: every log is then dirty (safe, see the module docstring).


class LogCleanerManager:
    def __init__(self, config: BrokerConfig, log_dir: Path | None = None) -> None:
        self.config = config
        self.states: dict[TopicPartition, LogCleaningState] = {}
        self._checkpoint_path = log_dir / CHECKPOINT_FILE if log_dir is not None else None
        self._checkpoints_loaded = log_dir is None
        self._last_check_ms: int | None = None
        self._busy = False  # the last check cleaned a log: look again at the next tick

    def tick(self, now_ms: int, partitions: Mapping[TopicPartition, Replica],
             topic_configs: Callable[[str], Mapping[str, str]]) -> bool:
        """Clean at most one due log. True if one was cleaned."""
        if not self.config["log.cleaner.enable"]:
            return False
        last = self._last_check_ms
        if not self._busy and last is not None and 0 <= now_ms - last < self.config["log.cleaner.backoff.ms"]:
            return False
        self._last_check_ms = now_ms
        if not self._checkpoints_loaded:  # at the first check, not at node construction: no I/O before start
            self._load_checkpoints()
        candidate = self._dirtiest(now_ms, partitions, topic_configs)
        self._busy = candidate is not None
        if candidate is None:
            return False
        try:
            self._clean(candidate, now_ms)
        except Exception:  # one failing log must not stop the cleaner (nor the tick's other work)
            log.exception("compacting %s-%s failed", *candidate.key)
            self._busy = False
            return False
        return True

    def forget(self, key: TopicPartition) -> None:
        if self.states.pop(key, None) is not None:
            self._save_checkpoints()

    def _load_checkpoints(self) -> None:
        self._checkpoints_loaded = True
        if self._checkpoint_path is not None:
            for key, offset in read_checkpoints(self._checkpoint_path).items():
                self.states.setdefault(key, LogCleaningState(checkpoint=offset))

    def _save_checkpoints(self) -> None:
        if self._checkpoint_path is None:
            return
        offsets = {key: state.checkpoint for key, state in self.states.items() if state.checkpoint >= 0}
        try:
            write_checkpoints(self._checkpoint_path, offsets)
        except OSError as exc:  # the logs are fine; the next start just finds more dirty data
            log.warning("cannot write %s: %s", self._checkpoint_path, exc)

    def _dirtiest(self, now_ms: int, partitions: Mapping[TopicPartition, Replica],
                  topic_configs: Callable[[str], Mapping[str, str]]) -> _Candidate | None:
        settings_by_topic: dict[str, TopicCleaning | None] = {}
        best: _Candidate | None = None
        for key, part in partitions.items():
            ulog = part.log
            if len(ulog.log.segments) < 2 or ulog.offline:  # nothing rolled: no file is read
                continue
            topic = key[0]
            if topic not in settings_by_topic:
                settings_by_topic[topic] = topic_cleaning(topic_configs(topic), self.config)
            settings = settings_by_topic[topic]
            if settings is None:
                continue
            candidate = self._candidate(key, ulog, settings, now_ms)
            if candidate is not None and (best is None or candidate.ratio > best.ratio):
                best = candidate
        return best

    def _candidate(self, key: TopicPartition, ulog: UnifiedLog, settings: TopicCleaning,
                   now_ms: int) -> _Candidate | None:
        first_uncleanable = ulog.first_uncleanable_offset(settings.min_compaction_lag_ms, now_ms)
        count = cleaner.cleanable_segment_count(ulog.log, first_uncleanable)
        if count == 0:
            return None
        state = self.states.get(key) or LogCleaningState()
        if state.checkpoint > ulog.log_end_offset:  # truncated below it: what follows is all new
            state.checkpoint = -1
        segments = ulog.log.segments[:count]
        total = sum(s.size for s in segments)
        dirty = sum(s.size for s in segments if s.base_offset >= state.checkpoint)
        ratio = dirty / total if total else 0.0
        tombstones_due = state.tombstones_due_ms is not None and now_ms >= state.tombstones_due_ms
        if ratio < settings.min_dirty_ratio and not tombstones_due:
            return None
        return _Candidate(key, ulog, settings, first_uncleanable, ratio)

    def _clean(self, candidate: _Candidate, now_ms: int) -> None:
        state = self.states.setdefault(candidate.key, LogCleaningState())
        retention = candidate.settings.delete_retention_ms
        ulog = candidate.log
        count = cleaner.cleanable_segment_count(ulog.log, candidate.first_uncleanable)
        upto = ulog.log.segments[count].base_offset
        stats = ulog.compact(candidate.first_uncleanable, state.tombstone_horizon(now_ms, retention),
                             state.checkpoint)
        if stats is None:
            return
        state.record_pass(upto, now_ms, retention, stats.first_kept_tombstone)
        self._save_checkpoints()
        log.info("compacted %s-%s below offset %d: %d segments -> %d, %d bytes -> %d, %d records removed",
                 *candidate.key, upto, stats.segments_before, stats.segments_after, stats.bytes_before,
                 stats.bytes_after, stats.records_removed)
