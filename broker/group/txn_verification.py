"""TxnOffsetCommit's transaction check (KIP-890): is the group's `__consumer_offsets` partition in the
producer's open transaction? TV1 clients added it with AddOffsetsToTxn, so the coordinator only confirms;
a TV2 client (TxnOffsetCommit v5 with transaction.version >= 2) sends no AddOffsetsToTxn and the
partition is added here. Without this a late or stray commit could open a transaction nobody ends.

TxnOffsetCommitVerifier gets the broker config, this node's replicas and the transaction coordinator
lookup through its constructor (the same collaborators as txn/verification.py's ProduceVerifier).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.partitioning import GROUP_TOPIC
from kafka_txn_broker.txn.verification import ask_coordinator, in_open_transaction

if TYPE_CHECKING:
    from kafka_txn_broker.config import BrokerConfig
    from kafka_txn_broker.txn.verification import CoordinatorLookup, LocalReplicas

# TxnOffsetCommit v4 understands TRANSACTION_ABORTABLE; v5 is a TV2 client.
ABORTABLE_VERSION = 4
IMPLICIT_ADD_VERSION = 5
# Answers of the transaction coordinator that mean "try again": the client retries these on
# TxnOffsetCommit after looking up the group coordinator again.
_RETRIABLE = frozenset({E.CONCURRENT_TRANSACTIONS, E.COORDINATOR_LOAD_IN_PROGRESS, E.COORDINATOR_NOT_AVAILABLE,
                        E.NOT_COORDINATOR, E.NOT_ENOUGH_REPLICAS})


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
        if not self.config["transaction.partition.verification.enable"]:
            return E.NONE
        if self._in_open_transaction(partition, producer_id, producer_epoch):
            return E.NONE
        add = api_version >= IMPLICIT_ADD_VERSION and self.config["transaction.version"] >= 2
        code = ask_coordinator(self.coordinator_of, transactional_id, producer_id, producer_epoch,
                               (GROUP_TOPIC, partition), add=add)
        return _for_client(code, api_version)

    def _in_open_transaction(self, partition: int, producer_id: int, producer_epoch: int) -> bool:
        # Unlike Produce, no replica here is not "open": the coordinator is asked.
        part = self.replicas.get(GROUP_TOPIC, partition)
        return part is not None and in_open_transaction(part, producer_id, producer_epoch)


def _for_client(code: int, api_version: int) -> int:
    if code == E.PRODUCER_FENCED:
        return E.INVALID_PRODUCER_EPOCH
    if code == E.TRANSACTION_ABORTABLE:
        return code if api_version >= ABORTABLE_VERSION else E.INVALID_TXN_STATE
    if code in _RETRIABLE:
        return E.COORDINATOR_NOT_AVAILABLE
    return code
