"""transaction.partition.verification.enable: the leader asks the coordinator before the first
transactional append of a producer epoch on a partition (KIP-890 part 1).

Without it a delayed or misdirected transactional write opens a transaction the coordinator knows
nothing about (a hanging transaction). With it, the leader sends the coordinator an
AddPartitionsToTxn "verify only" question; here the coordinator is another node of the same process,
so the question is a direct call and the answer arrives before the append, on the same loop
iteration, which also makes Kafka's VerificationGuard unnecessary (no abort marker can slip in).

Produce v12+ from a TV2 client (with transaction.version >= 2) asks the coordinator to *add* the
partition instead (KIP-890 part 2: such clients send no AddPartitionsToTxn themselves).
Errors are translated as Kafka's ReplicaManager and AddPartitionsToTxnManager do, per client version.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka.errors import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    NotEnoughReplicasError,
    TransactionAbortableError,
    for_code,
)

from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.record_batch import HEADER_SIZE, iter_batches

if TYPE_CHECKING:
    from kafka_txn_broker.apis.context import RequestContext
    from kafka_txn_broker.server.node import BrokerNode

# Produce versions: v11 understands TRANSACTION_ABORTABLE, v12 is a TV2 client (KIP-890).
GENERIC_ERROR_PRODUCE_VERSION = 11
ADD_PARTITION_PRODUCE_VERSION = 12
# Retriable coordinator answers that old clients would not retry: NOT_ENOUGH_REPLICAS makes them retry.
_RETRY_AS_NOT_ENOUGH_REPLICAS = frozenset({E.CONCURRENT_TRANSACTIONS, E.COORDINATOR_LOAD_IN_PROGRESS,
                                           E.COORDINATOR_NOT_AVAILABLE, E.NOT_COORDINATOR})


def _transactional_producer(records: Any) -> tuple[int, int, int] | None:
    """(producer id, epoch, base sequence) of the transactional batches, None if not transactional."""
    if not isinstance(records, bytes | bytearray | memoryview) or len(records) < HEADER_SIZE:
        return None
    for _pos, header in iter_batches(records):
        if header.is_transactional and header.has_producer_id:
            return header.producer_id, header.producer_epoch, header.base_sequence
    return None


def _has_ongoing_transaction(node: BrokerNode, topic: str, partition: int, producer_id: int, epoch: int) -> bool:
    part = node.replica_manager.get(topic, partition)
    if part is None:
        return True  # not our replica: the append itself will fail with the right error
    entry = part.log.producer_state.last_entry(producer_id)
    return entry is not None and entry.current_txn_first_offset is not None and entry.producer_epoch == epoch


def verify_produce(ctx: RequestContext, req: Any, topic: str, partition: int, records: Any) -> Exception | None:
    node = ctx.node
    transactional_id = getattr(req, "transactional_id", None)
    if transactional_id is None or not node.config["transaction.partition.verification.enable"]:
        return None
    producer = _transactional_producer(records)
    if producer is None:
        return None
    producer_id, epoch, _seq = producer
    if _has_ongoing_transaction(node, topic, partition, producer_id, epoch):
        return None
    add = (ctx.api_version >= ADD_PARTITION_PRODUCE_VERSION and node.config["transaction.version"] >= 2)
    code = ask_coordinator(node, transactional_id, producer_id, epoch, (topic, partition), add=add)
    return _to_produce_error(code, ctx.api_version, add)


def ask_coordinator(node: BrokerNode, transactional_id: str, producer_id: int, epoch: int, tp: tuple[str, int],
                    *, add: bool) -> int:
    """Verify (or, for TV2 clients, add) one partition with the transactional id's coordinator."""
    txn = node.txn_coordinator_of(transactional_id)
    if txn is None:
        return E.COORDINATOR_NOT_AVAILABLE
    if add:
        return txn.add_partitions_to_transaction(transactional_id, producer_id, epoch, [tp], client_tv=2)
    return txn.verify_partitions_in_transaction(transactional_id, producer_id, epoch, [tp])[tp]


def _to_produce_error(code: int, produce_version: int, add: bool) -> Exception | None:
    if code == E.NONE:
        return None
    if code == E.PRODUCER_FENCED:
        return InvalidProducerEpochError("the producer epoch was fenced by the transaction coordinator")
    if code == E.TRANSACTION_ABORTABLE:
        if produce_version >= GENERIC_ERROR_PRODUCE_VERSION:
            return TransactionAbortableError("the partition is not in the producer's open transaction")
        code = E.INVALID_TXN_STATE
    if code == E.INVALID_TXN_STATE:
        return InvalidTxnStateError("Partition was not added to the transaction")
    if code in _RETRY_AS_NOT_ENOUGH_REPLICAS:
        return NotEnoughReplicasError(
            f"Unable to verify the partition has been added to the transaction. Underlying error: {E.name(code)}")
    error_class = for_code(code)
    return error_class(f"transaction verification failed: {E.name(code)}")

