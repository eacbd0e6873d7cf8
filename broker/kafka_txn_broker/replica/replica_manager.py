"""The replicas one node hosts: opening their logs, routing appends and reads, waking long polls.

Threading: on the cluster's event loop, like all broker state (see the package docstring).
"""

from __future__ import annotations

import asyncio
import logging
import shutil
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_txn_broker.configs.config_def import ResourceType
from kafka_txn_broker.formats.errors import KafkaStorageError, NotLeaderForPartitionError
from kafka_txn_broker.formats.partitioning import GROUP_TOPIC, TXN_TOPIC
from kafka_txn_broker.log.cleaner_manager import LogCleanerManager
from kafka_txn_broker.log.offset_checkpoint import read_checkpoints, write_checkpoints
from kafka_txn_broker.log.unified_log import UnifiedLog
from kafka_txn_broker.metadata.topics import PartitionState
from kafka_txn_broker.replica.partition import Partition

if TYPE_CHECKING:
    from kafka_txn_broker.clock import Clock
    from kafka_txn_broker.configs.broker_config import BrokerConfig
    from kafka_txn_broker.metadata.view import MetadataCache
    from kafka_txn_broker.replica.alter_partition import AlterPartition

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
# The replica manager of a live node, by node id (None: the node is down): in-process replication.
PeerLookup = Callable[[int], "ReplicaManager | None"]
# Told of every transaction marker a leader replica writes: (topic, partition, producer id, commit).
MarkerListener = Callable[[str, int, int, bool], None]
# Kafka's file of log start offsets moved past a log's first segment (DeleteRecords), one per log dir.
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"


class ReplicaManager:
    def __init__(self, node_id: int, log_dir: Path, config: BrokerConfig, clock: Clock, metadata: MetadataCache,
                 controller: AlterPartition, peers: PeerLookup, on_marker: MarkerListener) -> None:
        self.node_id = node_id
        self.log_dir = log_dir
        self.config = config
        self.clock = clock
        self.metadata = metadata
        # ISR changes and a leader's fail-over are the controller's to decide.
        self.controller = controller
        self._peers = peers
        self.on_marker = on_marker
        self.partitions: dict[TopicPartition, Partition] = {}
        self._data_waiters: list[asyncio.Future[None]] = []
        self._last_expiration_check = clock.monotonic()  # a wall-clock step must not pause the check
        self._last_flush_check = clock.millis()  # compared with tick's now_ms
        self._last_retention_check = clock.millis()
        self.cleaner = LogCleanerManager(config, log_dir)
        self._start_offsets: dict[TopicPartition, int] = {}  # read from the checkpoint when the logs open

    # ---- lifecycle ---------------------------------------------------------------------------
    def open_replicas(self) -> None:
        """Open (recovering as needed) the log of every replica assigned to this node; delete the logs of
        partitions moved away while it was down (Kafka's stray replicas), so a later move back starts clean."""
        self._start_offsets = read_checkpoints(self.log_dir / LOG_START_OFFSET_CHECKPOINT)
        for state in self.metadata.all_partitions():
            if self.node_id in state.replicas:
                self.ensure_replica(state)
        self._delete_strays()

    def _delete_strays(self) -> None:
        if not self.log_dir.is_dir():
            return
        for entry in self.log_dir.iterdir():
            topic, _, index = entry.name.rpartition("-")
            t = self.metadata.topics.get(topic)
            if entry.is_dir() and index.isdigit() and t is not None and int(index) < len(t.partitions) \
                    and self.node_id not in t.partitions[int(index)].replicas:
                log.info("node %s: deleting the stray replica %s (not assigned here)", self.node_id, entry.name)
                shutil.rmtree(entry, ignore_errors=True)

    def ensure_replica(self, state: PartitionState) -> Partition:
        key = (state.topic, state.partition)
        part = self.partitions.get(key)
        if part is None:
            path = self.log_dir / f"{state.topic}-{state.partition}"
            log_ = UnifiedLog.open(path, self.config, self.clock, segment_bytes=self.segment_bytes(state.topic),
                                   log_start_offset=self._start_offsets.get(key))
            log_.log.max_message_bytes = self._topic_int(state.topic, "max.message.bytes")
            part = Partition(self, state, log_)
            self.partitions[key] = part
        return part

    def shutdown(self, *, clean: bool = True) -> None:
        """Close every log; `clean=False` is a crash: no checkpoint, no snapshot, no clean-shutdown marker."""
        if clean:
            self.checkpoint_log_start_offsets()
        for part in self.partitions.values():
            try:
                part.close(clean=clean)
            except Exception:  # one failing log must not stop the others from closing cleanly
                log.exception("closing %s-%s failed", part.topic, part.index)
        self.partitions.clear()
        for fut in self._data_waiters:
            if not fut.done():
                fut.set_result(None)

    def add_topic(self, states: Iterable[PartitionState]) -> list[Partition]:
        return [self.ensure_replica(s) for s in states if self.node_id in s.replicas]

    def apply_assignments(self, changed: Iterable[PartitionState]) -> None:
        """Replicas assigned here (new partitions, a reassignment adding this node) are created; the
        ones moved away are stopped and their logs deleted (Kafka's StopReplica with delete)."""
        for state in changed:
            key = (state.topic, state.partition)
            if self.node_id in state.replicas:
                if key not in self.partitions:
                    self.ensure_replica(state)
            elif key in self.partitions:
                part = self.partitions.pop(key)
                part.log.delete()
                self.cleaner.forget(key)
                self._start_offsets.pop(key, None)
                log.info("node %s: replica of %s-%s removed", self.node_id, *key)

    # ---- DeleteRecords and the log start offset -------------------------------------------------
    def delete_records(self, topic: str, partition: int, offset: int) -> tuple[int, int]:
        """DeleteRecords on this node's leader replica: (offset, low watermark), or the Kafka error."""
        part = self.partitions.get((topic, partition))
        if part is None:
            raise NotLeaderForPartitionError(f"node {self.node_id} hosts no replica of {topic}-{partition}")
        policy = self.topic_configs(topic).get("cleanup.policy", "delete")
        result = part.delete_records_on_leader(offset, "delete" in policy)
        self._checkpoint_everywhere()
        return result

    def _checkpoint_everywhere(self) -> None:
        # At once on every node, not on Kafka's 60 s schedule: DeleteRecords is rare, and a restart must
        # not bring deleted records back.
        self.checkpoint_log_start_offsets()
        for node_id in self.metadata.live_nodes:
            peer = self._peers(node_id)
            if peer is not None and peer is not self:
                peer.checkpoint_log_start_offsets()

    def checkpoint_log_start_offsets(self) -> None:
        """Write `log-start-offset-checkpoint`: the logs whose start offset is past their first segment."""
        offsets = {key: p.log.log_start_offset for key, p in self.partitions.items()
                   if not p.log.offline and p.log.log_start_offset > p.log.log.log_start_offset}
        path = self.log_dir / LOG_START_OFFSET_CHECKPOINT
        if not offsets and not path.exists():
            return
        try:
            write_checkpoints(path, offsets)
        except OSError as exc:
            log.warning("cannot write %s: %s", path, exc)

    def delete_topic(self, name: str) -> None:
        for key in [k for k in self.partitions if k[0] == name]:
            part = self.partitions.pop(key)
            part.log.delete()
            self.cleaner.forget(key)
        for leftover in self.log_dir.glob(f"{name}-*"):
            if leftover.is_dir() and leftover.name.rsplit("-", 1)[0] == name:
                shutil.rmtree(leftover, ignore_errors=True)

    # ---- lookups -----------------------------------------------------------------------------
    def get(self, topic: str, partition: int) -> Partition | None:
        return self.partitions.get((topic, partition))

    def peer_replica(self, node_id: int, topic: str, partition: int) -> Partition | None:
        peer = self._peers(node_id)
        return peer.get(topic, partition) if peer is not None else None

    def min_insync_replicas(self, topic: str) -> int:
        value = self._topic_int(topic, "min.insync.replicas")
        return value if value is not None else int(self.config["min.insync.replicas"])

    def segment_bytes(self, topic: str) -> int | None:
        """The topic's internal.segment.bytes or segment.bytes; Kafka's own settings for the internal topics;
        None: log.segment.bytes."""
        for name in ("internal.segment.bytes", "segment.bytes"):
            value = self._topic_int(topic, name)
            if value is not None:
                return value
        if topic == TXN_TOPIC:
            return int(self.config["transaction.state.log.segment.bytes"])
        if topic == GROUP_TOPIC:
            return int(self.config["offsets.topic.segment.bytes"])
        return None

    def _topic_int(self, topic: str, name: str) -> int | None:
        """An integer topic config's override (validated when set; only a fixture can store a bad one)."""
        t = self.metadata.topics.get(topic)
        value = t.configs.get(name) if t else None
        if value is None:
            return None
        try:
            return int(value)
        except ValueError:
            log.warning("ignoring %s=%r of topic %s (not an integer)", name, value, topic)
            return None

    def on_config_change(self, resource_type: int, name: str) -> None:
        """Dynamic configs changed: the logs of the topic (or, for the broker, all logs) take their segment
        size and record size limit at once. Everything else reads the configs when it needs them."""
        if resource_type not in (ResourceType.TOPIC, ResourceType.BROKER):
            return
        for (topic, _index), part in self.partitions.items():
            if resource_type == ResourceType.BROKER or topic == name:
                segment_bytes = self.segment_bytes(topic)
                part.log.log.segment_bytes = (segment_bytes if segment_bytes is not None
                                              else int(self.config["log.segment.bytes"]))
                part.log.log.max_message_bytes = self._topic_int(topic, "max.message.bytes")

    def leader_partitions(self) -> list[Partition]:
        return [p for p in self.partitions.values() if p.is_leader]

    def on_leadership_change(self, changed: list[PartitionState]) -> None:
        """A new leader records where its epoch starts, catches its followers up and recomputes the high
        watermark at once."""
        for state in changed:
            part = self.partitions.get((state.topic, state.partition))
            if part is not None and part.is_leader:
                # As Kafka's makeLeader: OffsetForLeaderEpoch must place the new epoch (and end the
                # previous one) at this log end even before the new leader appends anything.
                part.log.assign_epoch_start(state.leader_epoch)
                part.replicate()

    def tick(self, now_ms: int) -> None:
        self._delete_old_segments(now_ms)
        self._flush_due_logs(now_ms)
        self._expire_producers(now_ms)
        self._clean_logs(now_ms)

    def _clean_logs(self, now_ms: int) -> None:
        """Log compaction of this node's replicas of compacted topics (log/cleaner_manager.py): one log
        per tick at most, and nothing at all until a compacted log has a rolled segment."""
        if self.partitions:
            self.cleaner.tick(now_ms, self.partitions, self.topic_configs)

    def topic_configs(self, topic: str) -> Mapping[str, str]:
        t = self.metadata.topics.get(topic)
        return t.configs if t is not None else {}

    def _delete_old_segments(self, now_ms: int) -> None:
        """Every log.retention.check.interval.ms: segments wholly below a log's start offset go (time and
        size retention are not applied)."""
        if now_ms - self._last_retention_check < self.config["log.retention.check.interval.ms"]:
            return
        self._last_retention_check = now_ms
        deleted = 0
        for key, part in self.partitions.items():
            if part.log.log_start_offset > part.log.log.log_start_offset and not part.log.offline:
                try:
                    deleted += part.log.delete_segments_below_start()
                except KafkaStorageError as exc:
                    log.warning("deleting old segments of %s-%s failed: %s", *key, exc)
        if deleted:
            self.checkpoint_log_start_offsets()

    def _flush_due_logs(self, now_ms: int) -> None:
        """log.flush.interval.ms for logs that got no append since their data became due."""
        interval = self.config["log.flush.interval.ms"]
        if interval >= 2**62 or now_ms - self._last_flush_check < min(interval, 1000):
            return  # the default (never) costs nothing, even with 60,000 replicas
        self._last_flush_check = now_ms
        for part in self.partitions.values():
            part.log.flush_if_due()

    def _expire_producers(self, now_ms: int) -> None:
        """Forget idle producers every producer.id.expiration.check.interval.ms (Kafka's schedule)."""
        interval = self.config["producer.id.expiration.check.interval.ms"]
        mono = self.clock.monotonic()
        if (mono - self._last_expiration_check) * 1000 < interval:
            return
        self._last_expiration_check = mono
        for part in self.partitions.values():
            part.log.remove_expired_producers(now_ms)

    # ---- long polling ------------------------------------------------------------------------
    def notify_data(self) -> None:
        """Wake every waiting Fetch: new data, a high watermark or an LSO moved somewhere."""
        waiters, self._data_waiters = self._data_waiters, []
        for fut in waiters:
            if not fut.done():
                fut.set_result(None)

    async def wait_for_data(self, timeout_s: float) -> None:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._data_waiters.append(fut)
        try:
            await asyncio.wait_for(fut, timeout_s)
        except TimeoutError:
            pass
        finally:
            if fut in self._data_waiters:
                self._data_waiters.remove(fut)
