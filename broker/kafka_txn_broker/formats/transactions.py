"""Kafka's transaction vocabulary: the coordinator's states (ids in `__transaction_state`, names on the
wire), the epoch limits, and the timeouts both the broker and the tools reason with.

Kafka's facts only; what the tools make of them (hanging reasons, defaults of their own) is in
kafka_txn_tools/models.py.
"""

from __future__ import annotations

from enum import IntEnum

# RecordBatch.NO_PRODUCER_ID / NO_PRODUCER_EPOCH: batches and the coordinator alike. (This module imports
# nothing, so the CLI can load the vocabulary at start.)
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
MAX_EPOCH = 32767  # Short.MAX_VALUE
TWO_PC_TIMEOUT_MS = 2**31 - 1  # Integer.MAX_VALUE marks a 2PC transaction that never times out (KIP-939)
# transaction.max.timeout.ms's default, and kafka-transactions.sh find-hanging's --max-transaction-timeout.
DEFAULT_MAX_TRANSACTION_TIMEOUT_MS = 15 * 60 * 1000
# ProducerStateManager.LATE_TRANSACTION_BUFFER_MS: PartitionsWithLateTransactionsCount counts a
# transaction late after transaction.max.timeout.ms plus this.
LATE_TRANSACTION_BUFFER_MS = 5 * 60 * 1000


class TransactionState(IntEnum):
    """Kafka's TransactionState; the value is the id written in `__transaction_state` records."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def state_name(self) -> str:
        """The name on the wire (DescribeTransactions, ListTransactions) and in dump-log output."""
        return STATE_NAMES[self]

    @property
    def expiration_allowed(self) -> bool:
        return self in (TransactionState.EMPTY, TransactionState.COMPLETE_COMMIT, TransactionState.COMPLETE_ABORT)

    @classmethod
    def from_name(cls, name: str) -> TransactionState | None:
        return _BY_NAME.get(name)


# Indexed by state id.
STATE_NAMES = ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead",
               "PrepareEpochFence")
_BY_NAME = {name: TransactionState(i) for i, name in enumerate(STATE_NAMES)}
