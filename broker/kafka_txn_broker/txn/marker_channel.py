"""TransactionMarkerChannelManager: phase 2 of a commit or abort.

After PREPARE_* is durable, the coordinator hands the transaction here. Markers go to the current
leader of every partition in the transaction (including __consumer_offsets partitions of
transactional offset commits); each partition that acknowledges leaves the set, retriable failures
(no leader, NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS...) are retried on the next pass with the
then-current leader, and once the set is empty COMPLETE_* is appended to __transaction_state.

Kafka sends WriteTxnMarkers requests from a sender thread; here every node shares one event loop, so
a marker is written by a direct call to the leader (the `MarkerWriter`; the node's writes on the leader
replica exactly as the WriteTxnMarkers API does), on the next loop iteration after the EndTxn response,
and again on every tick until the transaction completes or the coordinator loses the partition. Like
all broker state, this class lives on the cluster's event loop.

A partition with no leader is retried, as Apache Kafka up to 4.2 does. From 4.3 Kafka's metadata cache gives
the channel no leader endpoint for it, which the channel reads as "the partition was deleted": it drops the
partition from the transaction and completes it without that marker, and the partition holds the open
transaction for good once its leader returns. `skip_leaderless` (true while `kafka.version.emulate` names 4.3 or
later: `skips_leaderless_partitions`) does the same here.

Collaborators come through the constructor: the state manager (ownership and the COMPLETE_* append),
the metadata view (does a partition still exist, who leads it), the marker writer, and whether the
node is still online. Unit tests give it fakes (tests/broker/txn/test_marker_channel.py).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.txn.state_manager import CoordinatorError
from kafka_txn_broker.txn.transaction_metadata import TopicPartition, TransactionMetadata, TxnTransitMetadata

if TYPE_CHECKING:
    from kafka_txn_broker.configs.broker_config import BrokerConfig
    from kafka_txn_broker.metadata.view import MetadataView
    from kafka_txn_broker.txn.state_manager import TransactionStateManager

log = logging.getLogger(__name__)

_RETRIABLE = frozenset({E.UNKNOWN_TOPIC_OR_PARTITION, E.NOT_LEADER_OR_FOLLOWER, E.NOT_ENOUGH_REPLICAS,
                        E.NOT_ENOUGH_REPLICAS_AFTER_APPEND, E.REQUEST_TIMED_OUT, E.KAFKA_STORAGE_ERROR})
# The producer or coordinator moved on: this coordinator must stop completing the transaction.
_PERMANENT = frozenset({E.INVALID_PRODUCER_EPOCH, E.TRANSACTION_COORDINATOR_FENCED})
# The partition cannot hold markers (the producer could not have written to it either): drop it.
_SKIP = frozenset({E.UNSUPPORTED_FOR_MESSAGE_FORMAT, E.UNSUPPORTED_VERSION})
# The first Apache Kafka release whose coordinator drops a partition without a leader instead of retrying it.
# Read from the releases' jars: 4.2.0's (Scala) KRaftMetadataCache.getPartitionLeaderEndpoint answers Node.noNode
# for a leader that is not a registered broker (the channel queues that and retries); 4.3.0's, in Java
# (org.apache.kafka.metadata.KRaftMetadataCache), answers an empty Optional, the answer for a deleted partition.
# Real clusters agree (tests/external/real_kafka/test_coordinator_side_real.py): 4.2.0 and 4.1.2 retry, 4.3.0 and
# 4.4.0 skip.
SKIPS_LEADERLESS_SINCE = (4, 3)


def skips_leaderless_partitions(config: BrokerConfig) -> bool:
    """Whether the emulated release (`kafka.version.emulate`) drops a partition without a leader from a completing
    transaction. Without emulation, no: the marker is retried until a leader is back, which is what keeps the
    transaction's records (the 4.3+ behaviour hangs the partition)."""
    release = config["kafka.version.emulate"]
    return bool(release) and tuple(int(part) for part in release.split(".")) >= SKIPS_LEADERLESS_SINCE


class MarkerWriter(Protocol):
    def write_marker(self, leader: int, tp: TopicPartition, producer_id: int, producer_epoch: int, commit: bool,
                     coordinator_epoch: int, transaction_version: int, transactional_id: str = "") -> int:
        """Write one partition's marker on node `leader` (WriteTxnMarkers): the Kafka error code of the
        answer; NOT_LEADER_OR_FOLLOWER when that node is down or does not lead the partition.
        `transactional_id` is whose marker it is (Kafka's channel keeps it beside each marker entry)."""
        ...


@dataclass
class PendingCompleteTxn:
    transactional_id: str
    coordinator_epoch: int
    commit: bool
    metadata: TransactionMetadata
    transit: TxnTransitMetadata
    # Partitions still waiting for their marker; the metadata's own set shrinks with acknowledgements.
    partitions: set[TopicPartition] = field(default_factory=set)
    completion_pending: bool = False


class TransactionMarkerChannelManager:
    def __init__(self, state_manager: TransactionStateManager, metadata: MetadataView, markers: MarkerWriter,
                 online: Callable[[], bool], skip_leaderless: bool = False) -> None:
        self.state_manager = state_manager
        self.skip_leaderless = skip_leaderless
        self.metadata = metadata
        self.markers = markers
        self._online = online
        self.pending: dict[str, PendingCompleteTxn] = {}
        self._scheduled = False

    # ---- entry points ----------------------------------------------------------------------
    def add_txn_markers_to_send(self, coordinator_epoch: int, commit: bool, metadata: TransactionMetadata,
                                transit: TxnTransitMetadata) -> None:
        self.pending[metadata.transactional_id] = PendingCompleteTxn(
            metadata.transactional_id, coordinator_epoch, commit, metadata, transit, set(metadata.topic_partitions))
        self._schedule()

    def _schedule(self) -> None:
        # After the current request's response: the EndTxn reply goes out before the markers.
        if self._scheduled:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.drive()
            return
        self._scheduled = True
        loop.call_soon(self._run_scheduled)

    def _run_scheduled(self) -> None:
        self._scheduled = False
        if self._online():
            self.drive()

    def remove_markers_for_txn_topic_partition(self, partition: int) -> None:
        for txn_id in [t for t, p in self.pending.items()
                       if self.state_manager.partition_for(p.transactional_id) == partition]:
            del self.pending[txn_id]

    def clear(self) -> None:
        self.pending.clear()

    def drive(self) -> None:
        """One pass: send outstanding markers, write completions that are due."""
        for txn in list(self.pending.values()):
            if self.pending.get(txn.transactional_id) is not txn:
                continue
            try:
                self._drive_one(txn)
            except Exception:  # one broken transaction must not stop the others
                log.exception("completing transaction %s failed; will retry", txn.transactional_id)

    # ---- one transaction -------------------------------------------------------------------
    def _still_ours(self, txn: PendingCompleteTxn) -> bool:
        try:
            epoch, metadata = self.state_manager.get(txn.transactional_id)
        except CoordinatorError:
            return False  # NOT_COORDINATOR / loading: the new coordinator re-drives it
        return metadata is txn.metadata and epoch == txn.coordinator_epoch

    def _drive_one(self, txn: PendingCompleteTxn) -> None:
        if not self._still_ours(txn):
            log.info("no longer the coordinator of %s at epoch %s: dropping its markers", txn.transactional_id,
                     txn.coordinator_epoch)
            del self.pending[txn.transactional_id]
            return
        if not txn.completion_pending:
            for tp in sorted(txn.partitions):
                if not self._send_marker(txn, tp):
                    del self.pending[txn.transactional_id]
                    return
            if txn.partitions:
                return  # retry the rest on the next pass
            txn.completion_pending = True
        self._write_completion(txn)

    def _send_marker(self, txn: PendingCompleteTxn, tp: TopicPartition) -> bool:
        """Write the marker for one partition; False when the transaction must be abandoned."""
        md = txn.metadata
        code = self._write_to_leader(tp, md.producer_id, md.producer_epoch, txn.commit, txn.coordinator_epoch,
                                     md.client_transaction_version, txn.transactional_id)
        if code == E.NONE or code in _SKIP:
            txn.partitions.discard(tp)
            md.remove_partition(tp)
        elif code in _PERMANENT:
            log.info("marker for %s of %s failed permanently with %s", tp, txn.transactional_id, E.name(code))
            return False
        elif code not in _RETRIABLE:
            log.error("unexpected error %s writing the marker for %s of %s; retrying", E.name(code), tp,
                      txn.transactional_id)
        return True

    def _write_to_leader(self, tp: TopicPartition, producer_id: int, producer_epoch: int, commit: bool,
                         coordinator_epoch: int, transaction_version: int, transactional_id: str) -> int:
        leader = self.metadata.leader(*tp)
        if leader is None:
            # Kafka drops partitions that were deleted so the transaction can still complete.
            return E.UNSUPPORTED_FOR_MESSAGE_FORMAT
        if leader < 0:
            if self.skip_leaderless:
                log.info("no leader for %s while completing %s: dropped as a deleted partition (Apache Kafka "
                         "4.3+); its open transaction stays when a leader returns", tp, transactional_id)
                return E.UNSUPPORTED_FOR_MESSAGE_FORMAT
            return E.NOT_LEADER_OR_FOLLOWER
        return self.markers.write_marker(leader, tp, producer_id, producer_epoch, commit, coordinator_epoch,
                                         transaction_version, transactional_id=transactional_id)

    def _write_completion(self, txn: PendingCompleteTxn) -> None:
        code = self.state_manager.append_transaction_to_log(
            txn.transactional_id, txn.coordinator_epoch, txn.transit,
            retry_on_error=lambda c: c == E.COORDINATOR_NOT_AVAILABLE)
        if code == E.COORDINATOR_NOT_AVAILABLE:
            return  # e.g. not enough in-sync replicas: retried on the next pass
        del self.pending[txn.transactional_id]
        if code != E.NONE:
            log.info("writing %s for %s returned %s", txn.transit.state.state_name, txn.transactional_id,
                     E.name(code))

