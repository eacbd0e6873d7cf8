"""TxnOffsetCommitVerifier on fakes: the group coordinator's question to the transaction coordinator before a
transactional offset commit (KIP-890), and the answer the committer gets.

Expected answers follow Kafka 4.x: the `__consumer_offsets` partition of the group is verified (TxnOffsetCommit
v0-v4) or added (v5+, AddPartitionsToTxnManager.txnOffsetCommitRequestVersionToTransactionSupportedOperation:
ADD_PARTITION) unless the producer epoch already has an open transaction there. CoordinatorPartitionWriter.
maybeStartTransactionVerification goes through ReplicaManager.maybeSendPartitionsToTransactionCoordinator, which
skips only a question without supportsEpochBump when transaction.partition.verification.enable is false, and
fails a partition this node does not host before any question (getPartitionOrException: NOT_LEADER_OR_FOLLOWER).
AddPartitionsToTxnManager turns PRODUCER_FENCED into INVALID_PRODUCER_EPOCH and, below v4, TRANSACTION_ABORTABLE
into INVALID_TXN_STATE. The produce path's NOT_ENOUGH_REPLICAS translation is not on this path: the error goes
to GroupCoordinatorService.commitTransactionalOffsets' handleOperationException (CoordinatorOperationException-
Helper), which maps NETWORK_EXCEPTION to COORDINATOR_LOAD_IN_PROGRESS; UNKNOWN_TOPIC_OR_PARTITION,
NOT_ENOUGH_REPLICAS and REQUEST_TIMED_OUT to COORDINATOR_NOT_AVAILABLE; NOT_LEADER_OR_FOLLOWER and
KAFKA_STORAGE_ERROR to NOT_COORDINATOR; MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE and INVALID_FETCH_SIZE to
UNKNOWN_SERVER_ERROR; and passes every other code (CONCURRENT_TRANSACTIONS, NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, INVALID_TXN_STATE, ...) through unchanged.
"""

from __future__ import annotations

from typing import Any

import pytest

from kafka_txn_broker.configs.broker_config import BrokerConfig
from kafka_txn_broker.formats.partitioning import GROUP_TOPIC
from kafka_txn_broker.txn.offset_commit_verification import TxnOffsetCommitVerifier
from tests.broker.txn.fakes import AskedCoordinator, FakeReplicas

TXN_ID = "tx"
PID, EPOCH = 11, 2
PARTITION = 4  # the group's __consumer_offsets partition
OFFSETS_TP = (GROUP_TOPIC, PARTITION)

# Kafka's error codes (org.apache.kafka.common.protocol.Errors).
NONE = 0
UNKNOWN_SERVER_ERROR = -1
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_FETCH_SIZE = 4
NOT_LEADER_OR_FOLLOWER = 6
REQUEST_TIMED_OUT = 7
MESSAGE_TOO_LARGE = 10
NETWORK_EXCEPTION = 13
COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
RECORD_LIST_TOO_LARGE = 18
NOT_ENOUGH_REPLICAS = 19
CONCURRENT_TRANSACTIONS = 51
KAFKA_STORAGE_ERROR = 56
INVALID_PRODUCER_EPOCH = 47
INVALID_TXN_STATE = 48
INVALID_PRODUCER_ID_MAPPING = 49
PRODUCER_FENCED = 90
TRANSACTION_ABORTABLE = 120


class GroupLeader:
    """A TxnOffsetCommitVerifier on fakes: this node hosts the group's __consumer_offsets partition."""

    def __init__(self, answer: int = NONE, **config: Any) -> None:
        self.config = BrokerConfig(config)
        self.replicas = FakeReplicas()
        self.replicas.host(*OFFSETS_TP)
        self.coordinators = AskedCoordinator(answer)
        self.verifier = TxnOffsetCommitVerifier(self.config, self.replicas, self.coordinators.coordinator_of)

    def commit(self, version: int = 4, epoch: int = EPOCH) -> int:
        return self.verifier.verify(version, TXN_ID, PID, epoch, PARTITION)

    def asked_nothing(self) -> bool:
        return self.coordinators.lookups == [] and self.coordinators.asked == []


@pytest.mark.parametrize("version", [0, 3, 4])
def test_verification_disabled_asks_nothing(version: int) -> None:
    leader = GroupLeader(**{"transaction.partition.verification.enable": False})
    assert leader.commit(version) == NONE
    assert leader.asked_nothing()


def test_verification_disabled_still_adds_for_a_tv2_commit() -> None:
    # ReplicaManager.maybeSendPartitionsToTransactionCoordinator skips only !supportsEpochBump: the v5 add is the
    # TV2 client's only way to put the offsets into the transaction.
    leader = GroupLeader(**{"transaction.partition.verification.enable": False, "transaction.version": 2})
    assert leader.commit(5) == NONE
    assert leader.coordinators.asked == [("add", TXN_ID, PID, EPOCH, [OFFSETS_TP], 2)]


def test_verification_disabled_tv2_add_answer_reaches_the_committer() -> None:
    leader = GroupLeader(CONCURRENT_TRANSACTIONS,
                         **{"transaction.partition.verification.enable": False, "transaction.version": 2})
    assert leader.commit(5) == CONCURRENT_TRANSACTIONS


def test_verification_disabled_with_transaction_version_1_asks_nothing_for_v5() -> None:
    # Without transaction.version 2 a v5 commit is only verified (the module's rule), so the config skips it.
    leader = GroupLeader(**{"transaction.partition.verification.enable": False, "transaction.version": 1})
    assert leader.commit(5) == NONE
    assert leader.asked_nothing()


@pytest.mark.parametrize("version", [0, 4, 5])
def test_a_partition_this_node_does_not_host_is_not_coordinator_without_a_question(version: int) -> None:
    # getPartitionOrException fails before any question: NOT_LEADER_OR_FOLLOWER, which handleOperationException
    # answers as NOT_COORDINATOR.
    leader = GroupLeader(**{"transaction.version": 2})
    assert leader.verifier.verify(version, TXN_ID, PID, EPOCH, PARTITION + 1) == NOT_COORDINATOR
    assert leader.asked_nothing()


def test_with_verification_disabled_a_v4_commit_is_not_checked_for_the_replica() -> None:
    # The skip comes first in maybeSendPartitionsToTransactionCoordinator: no question, no replica lookup.
    leader = GroupLeader(**{"transaction.partition.verification.enable": False})
    assert leader.verifier.verify(4, TXN_ID, PID, EPOCH, PARTITION + 1) == NONE


def test_an_open_transaction_of_the_same_epoch_asks_nothing() -> None:
    leader = GroupLeader()
    leader.replicas.producer(OFFSETS_TP, PID, EPOCH, txn_first_offset=30)
    assert leader.commit(4) == NONE
    assert leader.commit(5) == NONE
    assert leader.asked_nothing()


@pytest.mark.parametrize("state", [
    pytest.param((EPOCH - 1, 30), id="open transaction of an older epoch"),
    pytest.param((EPOCH + 1, 30), id="open transaction of a newer epoch"),
    pytest.param((EPOCH, None), id="same epoch, transaction ended"),
    pytest.param(None, id="producer unknown on the partition"),
])
def test_without_an_open_transaction_of_this_epoch_the_coordinator_verifies(state: tuple[int, int | None] | None
                                                                          ) -> None:
    leader = GroupLeader()
    if state is not None:
        leader.replicas.producer(OFFSETS_TP, PID, state[0], txn_first_offset=state[1])
    assert leader.commit(4) == NONE
    assert leader.coordinators.lookups == [TXN_ID]
    assert leader.coordinators.asked == [("verify", TXN_ID, PID, EPOCH, [OFFSETS_TP], None)]


def test_an_open_transaction_on_another_partition_does_not_count() -> None:
    leader = GroupLeader()
    leader.replicas.producer(("t", PARTITION), PID, EPOCH, txn_first_offset=0)
    leader.commit(4)
    assert [q[0] for q in leader.coordinators.asked] == ["verify"]


@pytest.mark.parametrize("version", [0, 3, 4])
def test_txn_offset_commit_below_v5_only_verifies(version: int) -> None:
    leader = GroupLeader(**{"transaction.version": 2})
    leader.commit(version)
    assert [q[0] for q in leader.coordinators.asked] == ["verify"]


def test_a_tv2_txn_offset_commit_v5_adds_the_offsets_partition() -> None:
    leader = GroupLeader(**{"transaction.version": 2})
    assert leader.commit(5) == NONE
    assert leader.coordinators.asked == [("add", TXN_ID, PID, EPOCH, [OFFSETS_TP], 2)]


def test_v5_without_transaction_version_2_only_verifies() -> None:
    # The module's documented rule: the add is for a TV2 client, on a broker with transaction.version >= 2.
    leader = GroupLeader(**{"transaction.version": 1})
    leader.commit(5)
    assert leader.coordinators.asked == [("verify", TXN_ID, PID, EPOCH, [OFFSETS_TP], None)]


def test_no_coordinator_is_coordinator_not_available() -> None:
    leader = GroupLeader()
    leader.coordinators.available = False
    assert leader.commit(4) == COORDINATOR_NOT_AVAILABLE


@pytest.mark.parametrize(("answer", "version", "expected"), [
    (PRODUCER_FENCED, 4, INVALID_PRODUCER_EPOCH),
    (PRODUCER_FENCED, 0, INVALID_PRODUCER_EPOCH),
    (TRANSACTION_ABORTABLE, 4, TRANSACTION_ABORTABLE),
    (TRANSACTION_ABORTABLE, 5, TRANSACTION_ABORTABLE),
    (TRANSACTION_ABORTABLE, 3, INVALID_TXN_STATE),
    (INVALID_TXN_STATE, 4, INVALID_TXN_STATE),
    (INVALID_PRODUCER_EPOCH, 4, INVALID_PRODUCER_EPOCH),
    (INVALID_PRODUCER_ID_MAPPING, 4, INVALID_PRODUCER_ID_MAPPING),
    # handleOperationException's default branch: the coordinator errors reach the client unchanged.
    (CONCURRENT_TRANSACTIONS, 4, CONCURRENT_TRANSACTIONS),
    (CONCURRENT_TRANSACTIONS, 5, CONCURRENT_TRANSACTIONS),
    (CONCURRENT_TRANSACTIONS, 0, CONCURRENT_TRANSACTIONS),
    (NOT_COORDINATOR, 4, NOT_COORDINATOR),
    (NOT_COORDINATOR, 5, NOT_COORDINATOR),
    (COORDINATOR_LOAD_IN_PROGRESS, 4, COORDINATOR_LOAD_IN_PROGRESS),
    (COORDINATOR_LOAD_IN_PROGRESS, 5, COORDINATOR_LOAD_IN_PROGRESS),
    (COORDINATOR_NOT_AVAILABLE, 4, COORDINATOR_NOT_AVAILABLE),
    (COORDINATOR_NOT_AVAILABLE, 5, COORDINATOR_NOT_AVAILABLE),
    # handleOperationException's remapped storage-level errors.
    (NETWORK_EXCEPTION, 4, COORDINATOR_LOAD_IN_PROGRESS),
    (NOT_ENOUGH_REPLICAS, 4, COORDINATOR_NOT_AVAILABLE),
    (NOT_ENOUGH_REPLICAS, 5, COORDINATOR_NOT_AVAILABLE),
    (UNKNOWN_TOPIC_OR_PARTITION, 4, COORDINATOR_NOT_AVAILABLE),
    (REQUEST_TIMED_OUT, 4, COORDINATOR_NOT_AVAILABLE),
    (NOT_LEADER_OR_FOLLOWER, 4, NOT_COORDINATOR),
    (KAFKA_STORAGE_ERROR, 4, NOT_COORDINATOR),
    (MESSAGE_TOO_LARGE, 4, UNKNOWN_SERVER_ERROR),
    (RECORD_LIST_TOO_LARGE, 4, UNKNOWN_SERVER_ERROR),
    (INVALID_FETCH_SIZE, 4, UNKNOWN_SERVER_ERROR),
])
def test_the_coordinators_answer_per_client_version(answer: int, version: int, expected: int) -> None:
    assert GroupLeader(answer, **{"transaction.version": 2}).commit(version) == expected
