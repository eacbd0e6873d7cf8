"""One replica of one partition on one node: its log, and (on the leader) the ISR and high watermark.

Replication is in-process: after a leader append, each live follower copies the new batches from the
leader's log into its own log (building its own producer state, as a Kafka follower does from Fetch),
then the high watermark moves to the smallest log end offset in the ISR. Because all nodes share one
event loop, an append and its replication happen in one step, so acks=all is satisfied on return.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from kafka_txn_broker.formats.errors import (
    NONE,
    NOT_ENOUGH_REPLICAS,
    KafkaStorageError,
    NotEnoughReplicasError,
    NotLeaderForPartitionError,
    OffsetOutOfRangeError,
    PolicyViolationError,
    error_code,
)
from kafka_txn_broker.formats.record_batch import BatchHeader, iter_batches
from kafka_txn_broker.log.unified_log import UnifiedLog

if TYPE_CHECKING:
    from kafka_txn_broker.metadata.topics import PartitionState
    from kafka_txn_broker.replica.replica_manager import ReplicaManager

_log = logging.getLogger(__name__)

# Replication copies at most this much per read from the leader's log.
_CATCH_UP_CHUNK = 8 * 1024 * 1024
# DeleteRecords' offset -1: up to the high watermark.
DELETE_TO_HIGH_WATERMARK = -1


class Partition:
    __slots__ = ("manager", "state", "log", "follows_epoch", "__weakref__")

    def __init__(self, manager: ReplicaManager, state: PartitionState, log: UnifiedLog) -> None:
        self.manager = manager
        self.state = state
        self.log = log
        # As a follower: the leader epoch whose leader this replica's log was last reconciled with.
        self.follows_epoch = -1

    @property
    def topic(self) -> str:
        return self.state.topic

    @property
    def index(self) -> int:
        return self.state.partition

    @property
    def node_id(self) -> int:
        return self.manager.node_id

    @property
    def is_leader(self) -> bool:
        return self.state.leader == self.manager.node_id

    def check_leader(self) -> None:
        if not self.is_leader:
            raise NotLeaderForPartitionError(
                f"node {self.node_id} is not the leader of {self.topic}-{self.index} (leader {self.state.leader})")

    # ---- leader side -------------------------------------------------------------------------
    def append_as_leader(self, records: Any, required_acks: int, origin: str = "client") -> Any:
        self.check_leader()
        if required_acks == -1 and len(self.state.isr) < self.manager.min_insync_replicas(self.topic):
            raise NotEnoughReplicasError(
                f"{self.topic}-{self.index} has {len(self.state.isr)} in-sync replicas, "
                f"min.insync.replicas needs {self.manager.min_insync_replicas(self.topic)}")
        try:
            info = self.log.append_as_leader(records, self.state.leader_epoch, origin=origin)
        except KafkaStorageError:
            self._fail_over_if_offline()
            raise
        if not info.duplicate:
            self.replicate(info.records, info.first_offset, info.batches)
        return info

    def append_marker(self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                      *, transaction_version: int = 1, txn_start_offset: int | None = None) -> int:
        self.check_leader()
        try:
            info = self.log.append_marker_info(producer_id, producer_epoch, commit, coordinator_epoch,
                                               self.state.leader_epoch, transaction_version=transaction_version,
                                               txn_start_offset=txn_start_offset)
        except KafkaStorageError:
            self._fail_over_if_offline()
            raise
        offset = info.first_offset
        self.replicate(info.records, offset, info.batches)
        self.manager.on_marker(self.topic, self.index, producer_id, commit)
        return int(offset)

    def write_marker(self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                     transaction_version: int, txn_start_offset: int | None = None) -> int:
        """A transaction marker (WriteTxnMarkers, or the coordinator's marker channel) with acks=all
        semantics: the Kafka error code of the result, never an exception."""
        try:
            self.check_leader()
            needed = self.manager.min_insync_replicas(self.topic)
            if len(self.state.isr) < needed:
                return NOT_ENOUGH_REPLICAS
            self.append_marker(producer_id, producer_epoch, commit, coordinator_epoch,
                               transaction_version=transaction_version, txn_start_offset=txn_start_offset)
        except Exception as exc:  # the log raises Kafka errors (epoch fencing, KIP-664 start offset)
            return error_code(exc)
        return NONE

    def _fail_over_if_offline(self) -> None:
        """After a failed write: if the log went offline, hand leadership to an in-sync replica, as
        Kafka's controller does when a leader's log dir fails. This write still fails with
        KAFKA_STORAGE_ERROR; the client refreshes its metadata and retries on the new leader."""
        if self.log.offline and self.manager.controller.leader_log_failed(self.state, self.node_id):
            _log.warning("%s-%s: log on node %s is offline; leadership moves to node %s",
                         self.topic, self.index, self.node_id, self.state.leader)

    def _live_followers(self) -> list[tuple[int, Partition]]:
        """(node id, replica) of every follower whose node is up; looked up once per append."""
        me = self.manager.node_id
        found = []
        for replica in self.state.replicas:
            if replica != me:
                follower = self.manager.peer_replica(replica, self.topic, self.index)
                if follower is not None:
                    found.append((replica, follower))
        return found

    def replicate(self, appended: bytes | bytearray | memoryview = b"", appended_at: int = -1,
                  batches: list[tuple[int, BatchHeader]] | None = None) -> None:
        """Bring every live follower up to the leader's log end, then advance the high watermark.

        `appended` (the batches just written at offset `appended_at`, whose positions and headers are
        `batches`) is handed to followers that were in sync before the append, sparing a read back
        from the leader's segment files and a second parse of the headers."""
        followers = self._live_followers()
        log = self.log
        leader_end = log.log_end_offset
        leader_epoch = self.state.leader_epoch
        for replica, follower in followers:
            flog = follower.log
            if flog.offline:  # its log waits for a node restart: it must not count as in sync
                self._leave_isr(replica, "its log is offline")
                continue
            try:
                if follower.follows_epoch != leader_epoch:
                    follower.truncate_divergence(log)
                    follower.follows_epoch = leader_epoch
                end = flog.log_end_offset
                if appended and end == appended_at:
                    flog.append_as_follower(appended, verified=True, batches=batches)
                    end = flog.log_end_offset
                if end != leader_end:
                    follower.catch_up_from(log)
                    end = flog.log_end_offset
            except KafkaStorageError as exc:
                # A follower's disk failed: it leaves the ISR and the partition carries on with the
                # others (Kafka's follower takes its log dir offline the same way); it rejoins below
                # once a later pass catches it up, or after its node restarts if its log went offline.
                self._leave_isr(replica, str(exc))
                continue
            if end >= leader_end and replica not in self.state.isr:
                self.manager.controller.join_isr(self.state, replica)
        self.update_high_watermark(followers)
        if self.state.reassigning:
            # After the pass, not inside it: completing moves replicas (and maybe leadership) on every node.
            self.manager.controller.maybe_complete_reassignment(self.state)

    def _leave_isr(self, replica: int, why: str) -> None:
        if replica in self.state.isr:
            _log.warning("%s-%s: replica on node %s leaves the ISR: %s", self.topic, self.index, replica, why)
            self.manager.controller.leave_isr(self.state, replica)

    def update_high_watermark(self, followers: list[tuple[int, Partition]] | None = None) -> None:
        if followers is None:
            followers = self._live_followers()
        isr = self.state.isr
        log = self.log
        hw = log.log_end_offset
        for replica, follower in followers:
            if replica in isr:
                end = follower.log.log_end_offset
                if end < hw:
                    hw = end
        start = log.log_start_offset
        if hw < start:
            hw = start
        changed = hw != log.high_watermark
        log.high_watermark = hw
        for _replica, follower in followers:
            # Followers learn the high watermark and the log start offset from fetch responses in Kafka;
            # same effect. A follower that becomes leader then starts from the right offsets.
            flog = follower.log
            end = flog.log_end_offset
            flog.high_watermark = hw if hw < end else end
            if flog.log_start_offset < start and not flog.offline:
                flog.maybe_increment_log_start_offset(min(start, flog.high_watermark))
        if changed:
            self.manager.notify_data()

    # ---- follower side -----------------------------------------------------------------------
    def truncate_divergence(self, leader_log: UnifiedLog) -> None:
        """First contact with a new leader: drop what this replica has that the leader's log does not (Kafka's
        follower truncation by leader epoch). Replication here is synchronous, so only a replica that was out
        of sync when its leader was elected uncleanly can differ. The common case costs two batch reads: the
        batch holding this log's last offset carries the same leader epoch on both sides."""
        end = self.log.log_end_offset
        if end <= self.log.log_start_offset or end <= leader_log.log_start_offset:
            return  # nothing to compare: catch_up_from starts this log over at the leader's start
        if leader_log.log_end_offset >= end and _epoch_at(leader_log, end - 1) == _epoch_at(self.log, end - 1):
            return
        offset = self.log.divergence_with(leader_log)
        if offset < end:
            _log.warning("%s-%s: replica on node %s drops offsets %d-%d, which its leader does not have",
                         self.topic, self.index, self.node_id, offset, end - 1)
            self.log.truncate_to(offset)

    def catch_up_from(self, leader_log: UnifiedLog) -> None:
        if self.log.log_end_offset > leader_log.log_end_offset:
            # After a crash tore the leader's tail, or an unclean election: the follower drops what the
            # leader does not have.
            self.log.truncate_to(leader_log.log_end_offset)
        if self.log.log_end_offset < leader_log.log_start_offset:
            # The leader deleted records this replica never had (DeleteRecords; a new replica of a
            # reassignment): start empty at the batch holding the leader's log start offset, as Kafka's
            # follower does after OFFSET_OUT_OF_RANGE.
            first = leader_log.read_for_replication(leader_log.log_start_offset, 1)
            self.log.truncate_fully_and_start_at(
                next(iter_batches(first))[1].base_offset if first else leader_log.log_start_offset)
        while self.log.log_end_offset < leader_log.log_end_offset:
            chunk = leader_log.log.read(self.log.log_end_offset, _CATCH_UP_CHUNK, leader_log.log_end_offset)
            if not chunk:
                break
            self.log.append_as_follower(chunk, allow_gap=True)  # the leader's compaction leaves gaps

    # ---- DeleteRecords -------------------------------------------------------------------------
    def delete_records_on_leader(self, offset: int, delete_allowed: bool) -> tuple[int, int]:
        """Move the log start offset to `offset` (-1: the high watermark) on the leader and its followers;
        (the offset, the low watermark: the smallest log start offset of the live replicas).
        `delete_allowed`: the topic's cleanup.policy includes delete (else POLICY_VIOLATION)."""
        self.check_leader()
        if not delete_allowed:
            raise PolicyViolationError(f"Records of partition {self.topic}-{self.index} can not be deleted due to "
                                       "the configured policy")
        converted = self.log.high_watermark if offset == DELETE_TO_HIGH_WATERMARK else offset
        if converted < 0:
            raise OffsetOutOfRangeError(f"The offset {converted} for partition {self.topic}-{self.index} is not valid")
        self.log.maybe_increment_log_start_offset(converted)
        followers = self._live_followers()
        self.update_high_watermark(followers)  # followers take the new start with the high watermark
        low = min([self.log.log_start_offset, *(f.log.log_start_offset for _r, f in followers if not f.log.offline)])
        return converted, low

    def close(self, *, clean: bool = True) -> None:
        self.log.close(clean=clean)


def _epoch_at(log: UnifiedLog, offset: int) -> int | None:
    """The leader epoch of the batch holding `offset` (None when the log has no batch there)."""
    data = log.read_for_replication(offset, 1)
    return next(iter_batches(data))[1].partition_leader_epoch if data else None
