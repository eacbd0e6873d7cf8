"""transaction.partition.verification.enable: the leader asks the coordinator before the first
transactional append of a producer epoch on a partition (KIP-890 part 1).

Without it a delayed or misdirected transactional write opens a transaction the coordinator knows
nothing about (a hanging transaction). With it, the leader sends the coordinator an
AddPartitionsToTxn "verify only" question; here the coordinator is another node of the same process,
so the question is a direct call and the answer arrives before the append, on the same loop
iteration, which also makes Kafka's VerificationGuard unnecessary (no abort marker can slip in).

Produce v12+ from a TV2 client (with transaction.version >= 2) asks the coordinator to *add* the
partition instead (KIP-890 part 2: such clients send no AddPartitionsToTxn themselves). That add is not
verification but the client's only way into the transaction, so it is asked whatever
transaction.partition.verification.enable says: the config switches off only the verify-only question
(as Kafka 4.x's ReplicaManager does; skipping the add would leave the partition outside the transaction
and its records hanging after the commit).

Errors are translated as Kafka's ReplicaManager and AddPartitionsToTxnManager do, per client version: a
retriable coordinator error becomes NOT_ENOUGH_REPLICAS (which old producers retry), except
CONCURRENT_TRANSACTIONS for Produce v12+, which a TV2 producer gets as is and retries. (Kafka's leader
also retries that one itself for up to add.partitions.to.txn.retry.backoff.max.ms; here the coordinator
answers within the call, so an immediate retry would get the same answer: the producer retries.)

ProduceVerifier gets what it reads through its constructor: the broker config (read at each request,
so a dynamic change applies at once), this node's replicas (LocalReplicas) and the lookup of an id's
transaction coordinator (CoordinatorLookup). txn/offset_commit_verification.py asks the coordinator the same way
for TxnOffsetCommit, with ask_coordinator().
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol

from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.errors import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    NotEnoughReplicasError,
    TransactionAbortableError,
    for_code,
)
from kafka_txn_broker.formats.record_batch import HEADER_SIZE, BatchHeader, iter_batches

if TYPE_CHECKING:
    from kafka_txn_broker.configs.broker_config import BrokerConfig
    from kafka_txn_broker.log.producer_state import ProducerStateEntry

TopicPartition = tuple[str, int]
# Produce versions: v11 understands TRANSACTION_ABORTABLE, v12 is a TV2 client (KIP-890).
GENERIC_ERROR_PRODUCE_VERSION = 11
ADD_PARTITION_PRODUCE_VERSION = 12
# Retriable coordinator answers that old clients would not retry: NOT_ENOUGH_REPLICAS makes them retry
# (ReplicaManager.handleProduceAppend). CONCURRENT_TRANSACTIONS is one of them only below Produce v12.
_RETRY_AS_NOT_ENOUGH_REPLICAS = frozenset({E.CONCURRENT_TRANSACTIONS, E.NETWORK_EXCEPTION,
                                           E.COORDINATOR_LOAD_IN_PROGRESS, E.COORDINATOR_NOT_AVAILABLE,
                                           E.NOT_COORDINATOR})


# ---- what the verifiers are given ------------------------------------------------------------------
class ProducerStates(Protocol):
    def last_entry(self, producer_id: int) -> ProducerStateEntry | None: ...


class ReplicaLog(Protocol):
    @property
    def producer_state(self) -> ProducerStates: ...


class LocalReplica(Protocol):
    @property
    def log(self) -> ReplicaLog: ...


class LocalReplicas(Protocol):
    """This node's replicas (ReplicaManager): only a replica's producer state is read."""

    def get(self, topic: str, partition: int) -> LocalReplica | None: ...


class PartitionsInTransaction(Protocol):
    """The two AddPartitionsToTxn forms of a TransactionCoordinator."""

    def add_partitions_to_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int,
                                      partitions: Iterable[TopicPartition], client_tv: int) -> int: ...

    def verify_partitions_in_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int,
                                         partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]: ...


# The transaction coordinator of an id (on any node), None when it is unavailable
# (the server's InterBrokerChannel.txn_coordinator_of).
CoordinatorLookup = Callable[[str], PartitionsInTransaction | None]


def in_open_transaction(replica: LocalReplica, producer_id: int, epoch: int) -> bool:
    """Has this producer epoch an open transaction on the replica (so the coordinator already knows it)?"""
    entry = replica.log.producer_state.last_entry(producer_id)
    return entry is not None and entry.current_txn_first_offset is not None and entry.producer_epoch == epoch


def ask_coordinator(coordinator_of: CoordinatorLookup, transactional_id: str, producer_id: int, epoch: int,
                    tp: TopicPartition, *, add: bool) -> int:
    """Verify (or, for TV2 clients, add) one partition with the transactional id's coordinator."""
    txn = coordinator_of(transactional_id)
    if txn is None:
        return E.COORDINATOR_NOT_AVAILABLE
    if add:
        return txn.add_partitions_to_transaction(transactional_id, producer_id, epoch, [tp], client_tv=2)
    return txn.verify_partitions_in_transaction(transactional_id, producer_id, epoch, [tp])[tp]


# ---- Produce -------------------------------------------------------------------------------------------
# KIP-890 part 1 (leaders verify transactional writes with the coordinator) shipped in Apache Kafka 3.6: a node
# emulating an older release appends them unverified, as those brokers did.
VERIFYING_SINCE = (3, 6)


def verification_enabled(config: BrokerConfig) -> bool:
    """transaction.partition.verification.enable, and the emulated release (if any) has verification."""
    release = config["kafka.version.emulate"]
    if release and tuple(int(p) for p in release.split(".")) < VERIFYING_SINCE:
        return False
    return bool(config["transaction.partition.verification.enable"])


class ProduceVerifier:
    """The leader's check before a transactional Produce append. Event-loop owned like all broker state:
    the Produce handler calls it on the cluster's loop, and the coordinator answers within the call (no
    await, no lock)."""

    def __init__(self, config: BrokerConfig, replicas: LocalReplicas, coordinator_of: CoordinatorLookup) -> None:
        self.config = config
        self.replicas = replicas
        self.coordinator_of = coordinator_of

    def verify(self, transactional_id: str | None, produce_version: int, topic: str, partition: int,
               records: Any) -> Exception | None:
        """None if the records may be appended, else the error to answer for this partition."""
        if transactional_id is None:
            return None
        add = produce_version >= ADD_PARTITION_PRODUCE_VERSION and self.config["transaction.version"] >= 2
        if not add and not verification_enabled(self.config):
            return None  # the config switches off the verify-only question, never a TV2 client's add
        producer = _transactional_producer(records)
        if producer is None:
            return None
        producer_id, epoch, _seq = producer
        if self._has_ongoing_transaction(topic, partition, producer_id, epoch):
            return None
        code = ask_coordinator(self.coordinator_of, transactional_id, producer_id, epoch, (topic, partition), add=add)
        return _to_produce_error(code, produce_version)

    def _has_ongoing_transaction(self, topic: str, partition: int, producer_id: int, epoch: int) -> bool:
        part = self.replicas.get(topic, partition)
        if part is None:
            return True  # not our replica: the append itself will fail with the right error
        return in_open_transaction(part, producer_id, epoch)


def _transactional_producer(records: Any) -> tuple[int, int, int] | None:
    """(producer id, epoch, base sequence) of the transactional batches, None if not transactional."""
    if not isinstance(records, bytes | bytearray | memoryview) or len(records) < HEADER_SIZE:
        return None
    first = BatchHeader.parse(records)
    if first.size == len(records):  # one batch, as every client sends: no scan
        return _producer_of(first)
    for _pos, header in iter_batches(records):
        found = _producer_of(header)
        if found is not None:
            return found
    return None


def _producer_of(header: BatchHeader) -> tuple[int, int, int] | None:
    if header.is_transactional and header.has_producer_id:
        return header.producer_id, header.producer_epoch, header.base_sequence
    return None


def _to_produce_error(code: int, produce_version: int) -> Exception | None:
    if code == E.NONE:
        return None
    if code == E.PRODUCER_FENCED:
        return InvalidProducerEpochError("the producer epoch was fenced by the transaction coordinator")
    if code == E.TRANSACTION_ABORTABLE:
        if produce_version >= GENERIC_ERROR_PRODUCE_VERSION:
            # No message: Kafka 4.4.0 answers this one with the bare code (tests/external/fidelity).
            return TransactionAbortableError()
        code = E.INVALID_TXN_STATE
    if code == E.INVALID_TXN_STATE:
        return InvalidTxnStateError("Partition was not added to the transaction")
    # A TV2 producer (Produce v12+) retries CONCURRENT_TRANSACTIONS itself: it gets it as is.
    tv2_retries_it = code == E.CONCURRENT_TRANSACTIONS and produce_version >= ADD_PARTITION_PRODUCE_VERSION
    if code in _RETRY_AS_NOT_ENOUGH_REPLICAS and not tv2_retries_it:
        return NotEnoughReplicasError(
            f"Unable to verify the partition has been added to the transaction. Underlying error: {E.name(code)}")
    error_class = for_code(code)
    return error_class(f"transaction verification failed: {E.name(code)}")
