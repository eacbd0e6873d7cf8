"""TxnOffsetCommitVerifier on fakes: the group coordinator's question to the transaction coordinator before a
transactional offset commit (KIP-890), and the answer the committer gets.

Expected answers follow Kafka: the `__consumer_offsets` partition of the group is verified (TxnOffsetCommit
v0-v4) or added (v5+, AddPartitionsToTxnManager.txnOffsetCommitRequestVersionToTransactionSupportedOperation)
unless the producer epoch already has an open transaction there; AddPartitionsToTxnManager turns
PRODUCER_FENCED into INVALID_PRODUCER_EPOCH and, below v4, TRANSACTION_ABORTABLE into INVALID_TXN_STATE; the
group coordinator answers NOT_ENOUGH_REPLICAS with COORDINATOR_NOT_AVAILABLE (GroupCoordinatorService.
handleOperationException) and passes INVALID_TXN_STATE and the like through.
"""

from __future__ import annotations

from typing import Any

import pytest

from kafka_txn_broker.config import BrokerConfig
from kafka_txn_broker.formats.partitioning import GROUP_TOPIC
from kafka_txn_broker.group.txn_verification import TxnOffsetCommitVerifier
from tests.broker.txn.fakes import AskedCoordinator, FakeReplicas

TXN_ID = "tx"
PID, EPOCH = 11, 2
PARTITION = 4  # the group's __consumer_offsets partition
OFFSETS_TP = (GROUP_TOPIC, PARTITION)

# Kafka's error codes (org.apache.kafka.common.protocol.Errors).
NONE = 0
NOT_ENOUGH_REPLICAS = 19
COORDINATOR_NOT_AVAILABLE = 15
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


def test_verification_disabled_asks_nothing() -> None:
    leader = GroupLeader(**{"transaction.partition.verification.enable": False})
    assert leader.commit(4) == NONE
    assert leader.asked_nothing()


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
    (NOT_ENOUGH_REPLICAS, 4, COORDINATOR_NOT_AVAILABLE),
    (COORDINATOR_NOT_AVAILABLE, 4, COORDINATOR_NOT_AVAILABLE),
    (INVALID_PRODUCER_EPOCH, 4, INVALID_PRODUCER_EPOCH),
    (INVALID_PRODUCER_ID_MAPPING, 4, INVALID_PRODUCER_ID_MAPPING),
])
def test_the_coordinators_answer_per_client_version(answer: int, version: int, expected: int) -> None:
    assert GroupLeader(answer, **{"transaction.version": 2}).commit(version) == expected
