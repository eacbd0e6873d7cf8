"""ProduceVerifier on fakes: when the leader asks the transaction coordinator before a transactional append
(KIP-890), which question it asks, and how the answer reaches the producer.

Expected answers follow Kafka: ReplicaManager asks only for a transactional request whose producer epoch has
no open transaction on the partition, and only with transaction.partition.verification.enable (for a verify
question); Produce v12+ makes it an add (AddPartitionsToTxnManager.produceRequestVersionToTransactionSupported-
Operation); AddPartitionsToTxnManager turns PRODUCER_FENCED into INVALID_PRODUCER_EPOCH and, below Produce v11,
TRANSACTION_ABORTABLE into INVALID_TXN_STATE; ReplicaManager answers a retriable coordinator error
(CONCURRENT_TRANSACTIONS, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR) with
NOT_ENOUGH_REPLICAS, which older producers retry, and passes the others through.
"""

from __future__ import annotations

from typing import Any

import pytest
from kafka.errors import (
    BrokerResponseError,
    ConcurrentTransactionsError,
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    InvalidProducerEpochError,
    InvalidProducerIdMappingError,
    InvalidTxnStateError,
    NotCoordinatorError,
    NotEnoughReplicasError,
    ProducerFencedError,
    TransactionAbortableError,
)
from kafka.record.default_records import DefaultRecordBatchBuilder

from kafka_txn_broker.config import BrokerConfig
from kafka_txn_broker.formats.errors import error_code
from kafka_txn_broker.txn.verification import ProduceVerifier
from tests.broker.txn.fakes import AskedCoordinator, FakeCoordinator, FakeReplicas

TXN_ID = "tx"
PID, EPOCH = 7, 3
TP = ("t", 0)


def batch(*, transactional: bool = True, pid: int = PID, epoch: int = EPOCH) -> bytes:
    """A batch from kafka-python's producer-side builder (an independent writer of the format)."""
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=transactional,
                                        producer_id=pid, producer_epoch=epoch, base_sequence=0, batch_size=1 << 20)
    builder.append(0, timestamp=1_700_000_000_000, key=b"k", value=b"v", headers=[])
    return bytes(builder.build())


class Leader:
    """A ProduceVerifier on fakes: this node hosts t-0 (no producer state yet)."""

    def __init__(self, answer: int = 0, **config: Any) -> None:
        self.config = BrokerConfig(config)
        self.replicas = FakeReplicas()
        self.replicas.host(*TP)
        self.coordinators = AskedCoordinator(answer)
        self.verifier = ProduceVerifier(self.config, self.replicas, self.coordinators.coordinator_of)

    def produce(self, version: int = 11, records: Any = None, txn_id: str | None = TXN_ID,
                tp: tuple[str, int] = TP) -> Exception | None:
        return self.verifier.verify(txn_id, version, tp[0], tp[1], batch() if records is None else records)

    def asked_nothing(self) -> bool:
        return self.coordinators.lookups == [] and self.coordinators.asked == []


# ---- when nothing is asked ----------------------------------------------------------------------------
@pytest.mark.parametrize("version", [3, 11])
def test_verification_disabled_asks_nothing(version: int) -> None:
    leader = Leader(**{"transaction.partition.verification.enable": False})
    assert leader.produce(version) is None
    assert leader.asked_nothing()


def test_the_config_is_read_at_each_request() -> None:
    leader = Leader()
    leader.config.set("transaction.partition.verification.enable", False)  # as a dynamic change would
    assert leader.produce() is None
    assert leader.asked_nothing()
    leader.config.set("transaction.partition.verification.enable", True)
    leader.produce()
    assert leader.coordinators.lookups == [TXN_ID]


def test_a_request_without_transactional_id_asks_nothing() -> None:
    leader = Leader()
    assert leader.produce(txn_id=None) is None
    assert leader.asked_nothing()


def test_idempotent_records_ask_nothing() -> None:
    leader = Leader()
    assert leader.produce(records=batch(transactional=False)) is None
    assert leader.asked_nothing()


def test_records_too_short_for_a_batch_ask_nothing() -> None:
    # The append's own validation refuses them (CORRUPT_MESSAGE); nothing to verify.
    leader = Leader()
    assert leader.produce(records=batch()[:20]) is None
    assert leader.asked_nothing()


def test_an_open_transaction_of_the_same_epoch_on_the_partition_asks_nothing() -> None:
    leader = Leader()
    leader.replicas.producer(TP, PID, EPOCH, txn_first_offset=12)
    for version in (10, 11, 12):
        assert leader.produce(version) is None
    assert leader.asked_nothing()


def test_a_partition_this_node_does_not_host_asks_nothing() -> None:
    # Kafka fails such a partition before any question (NOT_LEADER_OR_FOLLOWER); here the append does.
    leader = Leader()
    assert leader.produce(tp=("t", 1)) is None
    assert leader.asked_nothing()


# ---- when the coordinator is asked, and what -------------------------------------------------------------
@pytest.mark.parametrize("state", [
    pytest.param((EPOCH - 1, 12), id="open transaction of an older epoch"),
    pytest.param((EPOCH + 1, 12), id="open transaction of a newer epoch"),
    pytest.param((EPOCH, None), id="same epoch, transaction ended"),
    pytest.param(None, id="producer unknown on the partition"),
])
def test_without_an_open_transaction_of_this_epoch_the_coordinator_verifies(state: tuple[int, int | None] | None
                                                                          ) -> None:
    leader = Leader()
    if state is not None:
        leader.replicas.producer(TP, PID, state[0], txn_first_offset=state[1])
    assert leader.produce(11) is None
    assert leader.coordinators.lookups == [TXN_ID]
    assert leader.coordinators.asked == [("verify", TXN_ID, PID, EPOCH, [TP], None)]


def test_another_producers_open_transaction_does_not_count() -> None:
    leader = Leader()
    leader.replicas.producer(TP, PID + 1, EPOCH, txn_first_offset=3)
    leader.produce(11)
    assert leader.coordinators.asked == [("verify", TXN_ID, PID, EPOCH, [TP], None)]


@pytest.mark.parametrize("version", [3, 9, 10, 11])
def test_produce_below_v12_only_verifies(version: int) -> None:
    leader = Leader()
    leader.produce(version)
    assert [q[0] for q in leader.coordinators.asked] == ["verify"]


@pytest.mark.parametrize("version", [12, 13])
def test_a_tv2_produce_v12_asks_to_add_the_partition(version: int) -> None:
    leader = Leader(**{"transaction.version": 2})
    assert leader.produce(version) is None
    assert leader.coordinators.asked == [("add", TXN_ID, PID, EPOCH, [TP], 2)]


def test_produce_v12_without_transaction_version_2_only_verifies() -> None:
    # The module's documented rule: the add is for a TV2 client, on a broker with transaction.version >= 2.
    leader = Leader(**{"transaction.version": 1})
    leader.produce(12)
    assert leader.coordinators.asked == [("verify", TXN_ID, PID, EPOCH, [TP], None)]


def test_the_verify_question_reaches_a_real_coordinator() -> None:
    """With a TransactionCoordinator: t-0 outside the producer's transaction is TRANSACTION_ABORTABLE (Kafka
    3.8+), INVALID_TXN_STATE for a producer before v11; a TV2 Produce v12 adds it, so it is then verified."""
    fake = FakeCoordinator()
    _err, pid, epoch = fake.init(TXN_ID)
    replicas = FakeReplicas()
    replicas.host(*TP)
    verifier = ProduceVerifier(fake.config, replicas, fake.coord)
    records = batch(pid=pid, epoch=epoch)
    assert isinstance(verifier.verify(TXN_ID, 11, *TP, records), TransactionAbortableError)
    assert isinstance(verifier.verify(TXN_ID, 10, *TP, records), InvalidTxnStateError)
    assert verifier.verify(TXN_ID, 12, *TP, records) is None
    metadata = fake.metadata(TXN_ID)
    assert metadata is not None and TP in metadata.topic_partitions
    assert verifier.verify(TXN_ID, 11, *TP, records) is None


# ---- the coordinator's answer, as the producer sees it ---------------------------------------------------
def test_no_coordinator_is_not_enough_replicas() -> None:
    leader = Leader()
    leader.coordinators.available = False
    err = leader.produce(11)
    assert isinstance(err, NotEnoughReplicasError)
    assert "Underlying error: COORDINATOR_NOT_AVAILABLE" in str(err)
    assert leader.coordinators.asked == []


@pytest.mark.parametrize(("answer", "version", "expected"), [
    (ProducerFencedError.errno, 11, InvalidProducerEpochError),
    (ProducerFencedError.errno, 3, InvalidProducerEpochError),
    (TransactionAbortableError.errno, 11, TransactionAbortableError),
    (TransactionAbortableError.errno, 10, InvalidTxnStateError),
    (TransactionAbortableError.errno, 3, InvalidTxnStateError),
    (InvalidTxnStateError.errno, 11, InvalidTxnStateError),
    (ConcurrentTransactionsError.errno, 11, NotEnoughReplicasError),
    (ConcurrentTransactionsError.errno, 3, NotEnoughReplicasError),
    (CoordinatorLoadInProgressError.errno, 10, NotEnoughReplicasError),
    (CoordinatorNotAvailableError.errno, 11, NotEnoughReplicasError),
    (NotCoordinatorError.errno, 11, NotEnoughReplicasError),
    (InvalidProducerEpochError.errno, 11, InvalidProducerEpochError),
    (InvalidProducerIdMappingError.errno, 11, InvalidProducerIdMappingError),
])
def test_a_verify_answer_per_produce_version(answer: int, version: int, expected: type[BrokerResponseError]) -> None:
    leader = Leader(answer)
    err = leader.produce(version)
    assert isinstance(err, expected)
    assert error_code(err) == expected.errno


def test_an_invalid_txn_state_says_the_partition_was_not_added() -> None:
    assert "Partition was not added to the transaction" in str(Leader(InvalidTxnStateError.errno).produce(11))


def test_a_retriable_answer_names_the_coordinators_error() -> None:
    err = Leader(CoordinatorLoadInProgressError.errno).produce(11)
    assert "COORDINATOR_LOAD_IN_PROGRESS" in str(err)


@pytest.mark.parametrize(("answer", "expected"), [
    (ProducerFencedError.errno, InvalidProducerEpochError),
    (TransactionAbortableError.errno, TransactionAbortableError),
    (CoordinatorLoadInProgressError.errno, NotEnoughReplicasError),
    (NotCoordinatorError.errno, NotEnoughReplicasError),
])
def test_an_add_answer_for_a_tv2_producer(answer: int, expected: type[Exception]) -> None:
    leader = Leader(answer, **{"transaction.version": 2})
    assert isinstance(leader.produce(12), expected)
    assert [q[0] for q in leader.coordinators.asked] == ["add"]


def test_an_accepted_add_lets_the_append_through() -> None:
    leader = Leader(**{"transaction.version": 2})
    assert leader.produce(12) is None
