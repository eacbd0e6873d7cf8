"""TxnOffsetCommit's transaction check (KIP-890): is the group's `__consumer_offsets` partition in the
producer's open transaction? TV1 clients added it with AddOffsetsToTxn, so the coordinator only confirms;
a TV2 client (TxnOffsetCommit v5 with transaction.version >= 2) sends no AddOffsetsToTxn and the
partition is added here. Without this a late or stray commit could open a transaction nobody ends.

As on the produce path (txn/verification.py), transaction.partition.verification.enable switches off only
the verify-only question: a TV2 client's add is asked whatever it says, or the offsets would never be in
the transaction. Before any question this node must hold the partition (Kafka's ReplicaManager fails
the verification with NOT_LEADER_OR_FOLLOWER, which the group coordinator answers as NOT_COORDINATOR).

The transaction coordinator's answer reaches the committer as Kafka's group coordinator passes it on:
AddPartitionsToTxnManager's per-version translation (PRODUCER_FENCED, TRANSACTION_ABORTABLE below v4),
then GroupCoordinatorService's handleOperationException, which remaps only storage-level errors and
passes the coordinator errors (CONCURRENT_TRANSACTIONS, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
COORDINATOR_NOT_AVAILABLE) through; the committing client retries those.

TxnOffsetCommitVerifier gets the broker config, this node's replicas and the transaction coordinator
lookup through its constructor (the same collaborators as txn/verification.py's ProduceVerifier).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.partitioning import GROUP_TOPIC
from kafka_txn_broker.txn.verification import ask_coordinator, in_open_transaction

if TYPE_CHECKING:
    from kafka_txn_broker.configs.broker_config import BrokerConfig
    from kafka_txn_broker.txn.verification import CoordinatorLookup, LocalReplicas

# TxnOffsetCommit v4 understands TRANSACTION_ABORTABLE; v5 is a TV2 client.
ABORTABLE_VERSION = 4
IMPLICIT_ADD_VERSION = 5
# What the group coordinator's exception handler makes of a storage-level error; every other code reaches
# the client unchanged.
_AS_GROUP_COORDINATOR_ERROR = {
    E.NETWORK_EXCEPTION: E.COORDINATOR_LOAD_IN_PROGRESS,  # retried without a coordinator lookup
    E.UNKNOWN_TOPIC_OR_PARTITION: E.COORDINATOR_NOT_AVAILABLE,
    E.NOT_ENOUGH_REPLICAS: E.COORDINATOR_NOT_AVAILABLE,
    E.REQUEST_TIMED_OUT: E.COORDINATOR_NOT_AVAILABLE,
    E.NOT_LEADER_OR_FOLLOWER: E.NOT_COORDINATOR,
    E.KAFKA_STORAGE_ERROR: E.NOT_COORDINATOR,
    E.MESSAGE_TOO_LARGE: E.UNKNOWN_SERVER_ERROR,
    E.RECORD_LIST_TOO_LARGE: E.UNKNOWN_SERVER_ERROR,
    E.INVALID_FETCH_SIZE: E.UNKNOWN_SERVER_ERROR,
}


class TxnOffsetCommitVerifier:
    """The group coordinator's check before a transactional offset commit. Event-loop owned like all broker
    state: the TxnOffsetCommit handler calls it on the cluster's loop, and the transaction coordinator
    answers within the call (no await, no lock)."""

    def __init__(self, config: BrokerConfig, replicas: LocalReplicas, coordinator_of: CoordinatorLookup) -> None:
        self.config = config
        self.replicas = replicas
        self.coordinator_of = coordinator_of

    def verify(self, api_version: int, transactional_id: str, producer_id: int, producer_epoch: int,
               partition: int) -> int:
        """NONE if the commit may be written into the transaction, else the error for every partition."""
        add = api_version >= IMPLICIT_ADD_VERSION and self.config["transaction.version"] >= 2
        if not add and not self.config["transaction.partition.verification.enable"]:
            return E.NONE  # the config switches off the verify-only question, never a TV2 client's add
        part = self.replicas.get(GROUP_TOPIC, partition)
        if part is None:
            return _for_client(E.NOT_LEADER_OR_FOLLOWER, api_version)  # not ours: nothing to ask
        if in_open_transaction(part, producer_id, producer_epoch):
            return E.NONE
        code = ask_coordinator(self.coordinator_of, transactional_id, producer_id, producer_epoch,
                               (GROUP_TOPIC, partition), add=add)
        return _for_client(code, api_version)


def _for_client(code: int, api_version: int) -> int:
    if code == E.PRODUCER_FENCED:
        return E.INVALID_PRODUCER_EPOCH
    if code == E.TRANSACTION_ABORTABLE:
        return code if api_version >= ABORTABLE_VERSION else E.INVALID_TXN_STATE
    return _AS_GROUP_COORDINATOR_ERROR.get(code, code)
