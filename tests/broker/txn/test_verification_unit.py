"""ProduceVerifier on fakes: when the leader asks the transaction coordinator before a transactional append
(KIP-890), which question it asks, and how the answer reaches the producer.

Expected answers follow Kafka 4.x: ReplicaManager asks only for a transactional request whose producer epoch
has no open transaction on the partition; Produce v12+ makes the question an add (AddPartitionsToTxnManager.
produceRequestVersionToTransactionSupportedOperation: ADD_PARTITION, supportsEpochBump); ReplicaManager.
maybeSendPartitionsToTransactionCoordinator skips the question only when the operation does not support the
epoch bump AND transaction.partition.verification.enable is false, so a TV2 add is asked with verification
off; AddPartitionsToTxnManager turns PRODUCER_FENCED into INVALID_PRODUCER_EPOCH and, for DEFAULT_ERROR (below
Produce v11), TRANSACTION_ABORTABLE into INVALID_TXN_STATE; ReplicaManager.handleProduceAppend answers a
retriable coordinator error (NETWORK_EXCEPTION, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE,
NOT_COORDINATOR, and CONCURRENT_TRANSACTIONS unless the operation supports the epoch bump) with
NOT_ENOUGH_REPLICAS, which older producers retry, and passes the others through (CONCURRENT_TRANSACTIONS
to a Produce v12+ producer).
"""

from __future__ import annotations

from typing import Any

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from kafka_txn_broker.configs.broker_config import BrokerConfig
from kafka_txn_broker.formats.errors import (
    BrokerResponseError,
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    InvalidProducerEpochError,
    InvalidTxnStateError,
    NotCoordinatorError,
    NotEnoughReplicasError,
    ProducerFencedError,
    TransactionAbortableError,
    error_code,
    for_code,
)
from kafka_txn_broker.txn.verification import ProduceVerifier
from tests.broker.txn.fakes import AskedCoordinator, FakeCoordinator, FakeReplicas

# The exceptions of two codes the verifier passes on without naming them (the class that carries each code).
ConcurrentTransactionsError = for_code(51)  # CONCURRENT_TRANSACTIONS, org.apache.kafka.common.protocol.Errors
InvalidProducerIdMappingError = for_code(49)  # INVALID_PRODUCER_ID_MAPPING
TXN_ID = "tx"
NETWORK_EXCEPTION = 13  # org.apache.kafka.common.protocol.Errors
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


@pytest.mark.parametrize("version", [11, 12])
def test_verification_disabled_with_transaction_version_1_asks_nothing(version: int) -> None:
    # Without transaction.version 2 a Produce v12 is only verified (the module's rule), so the config skips it.
    leader = Leader(**{"transaction.partition.verification.enable": False, "transaction.version": 1})
    assert leader.produce(version) is None
    assert leader.asked_nothing()


@pytest.mark.parametrize("version", [12, 13])
def test_verification_disabled_still_adds_for_a_tv2_produce(version: int) -> None:
    # ReplicaManager.maybeSendPartitionsToTransactionCoordinator (Kafka 4.x) skips only when
    # !supportsEpochBump && !transactionPartitionVerificationEnable: the TV2 add is the client's way into the
    # transaction, not a verification.
    leader = Leader(**{"transaction.partition.verification.enable": False, "transaction.version": 2})
    assert leader.produce(version) is None
    assert leader.coordinators.asked == [("add", TXN_ID, PID, EPOCH, [TP], 2)]


def test_verification_disabled_tv2_add_still_skips_an_open_transaction() -> None:
    # The partition-level check (UnifiedLog.maybeStartTransactionVerification: ongoing transaction of the epoch)
    # comes before the question whatever the config.
    leader = Leader(**{"transaction.partition.verification.enable": False, "transaction.version": 2})
    leader.replicas.producer(TP, PID, EPOCH, txn_first_offset=5)
    assert leader.produce(12) is None
    assert leader.asked_nothing()


def test_verification_disabled_tv2_add_answer_reaches_the_producer() -> None:
    leader = Leader(ProducerFencedError.errno,
                    **{"transaction.partition.verification.enable": False, "transaction.version": 2})
    assert isinstance(leader.produce(12), InvalidProducerEpochError)


@pytest.mark.parametrize(("release", "verifies"), [("3.3", False), ("3.5", False), ("3.6", True), ("4.4", True)])
def test_an_emulated_release_before_kip_890_appends_unverified(release: str, verifies: bool) -> None:
    # KIP-890 part 1 shipped in Kafka 3.6; Kafka 3.3.2 appended such a write (tests/external/fidelity saw it).
    leader = Leader(**{"kafka.version.emulate": release})
    leader.produce(11)
    assert leader.asked_nothing() is not verifies


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
    abortable = verifier.verify(TXN_ID, 11, *TP, records)
    assert isinstance(abortable, TransactionAbortableError)
    assert abortable.args == ()  # no message, as Kafka 4.4.0 answers (tests/external/fidelity)
    assert isinstance(verifier.verify(TXN_ID, 10, *TP, records), InvalidTxnStateError)
    assert verifier.verify(TXN_ID, 12, *TP, records) is None
    metadata = fake.metadata(TXN_ID)
    assert metadata is not None and TP in metadata.topic_partitions
    assert verifier.verify(TXN_ID, 11, *TP, records) is None


def test_with_verification_off_a_tv2_produce_still_enters_the_real_transaction() -> None:
    """Verification off, TV2 Produce v12: t-0 is added to the coordinator's transaction, so its commit covers it
    (skipping the add would leave t-0's records outside the transaction: hanging after the commit)."""
    fake = FakeCoordinator()
    fake.config.set("transaction.partition.verification.enable", False)
    _err, pid, epoch = fake.init(TXN_ID)
    replicas = FakeReplicas()
    replicas.host(*TP)
    verifier = ProduceVerifier(fake.config, replicas, fake.coord)
    assert verifier.verify(TXN_ID, 12, *TP, batch(pid=pid, epoch=epoch)) is None
    metadata = fake.metadata(TXN_ID)
    assert metadata is not None and TP in metadata.topic_partitions


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
    (NETWORK_EXCEPTION, 11, NotEnoughReplicasError),
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


def test_concurrent_transactions_passes_through_to_produce_v12_even_when_only_verified() -> None:
    # Kafka keys the pass-through on the request's supportsEpochBump (Produce v12+), not on the question asked:
    # with transaction.version 1 this broker only verifies a v12 request, and its producer still retries the error.
    leader = Leader(ConcurrentTransactionsError.errno, **{"transaction.version": 1})
    assert isinstance(leader.produce(12), ConcurrentTransactionsError)
    assert [q[0] for q in leader.coordinators.asked] == ["verify"]


def test_an_invalid_txn_state_says_the_partition_was_not_added() -> None:
    assert "Partition was not added to the transaction" in str(Leader(InvalidTxnStateError.errno).produce(11))


def test_a_retriable_answer_names_the_coordinators_error() -> None:
    err = Leader(CoordinatorLoadInProgressError.errno).produce(11)
    assert "COORDINATOR_LOAD_IN_PROGRESS" in str(err)


@pytest.mark.parametrize(("answer", "expected"), [
    (ProducerFencedError.errno, InvalidProducerEpochError),
    (TransactionAbortableError.errno, TransactionAbortableError),
    (InvalidTxnStateError.errno, InvalidTxnStateError),
    # ReplicaManager.handleProduceAppend: CONCURRENT_TRANSACTIONS stays as is when supportsEpochBump (TV2 retries
    # it); the other retriable errors still become NOT_ENOUGH_REPLICAS.
    (ConcurrentTransactionsError.errno, ConcurrentTransactionsError),
    (CoordinatorLoadInProgressError.errno, NotEnoughReplicasError),
    (CoordinatorNotAvailableError.errno, NotEnoughReplicasError),
    (NotCoordinatorError.errno, NotEnoughReplicasError),
    (NETWORK_EXCEPTION, NotEnoughReplicasError),
])
@pytest.mark.parametrize("verification", [True, False])
def test_an_add_answer_for_a_tv2_producer(answer: int, expected: type[BrokerResponseError], verification: bool
                                          ) -> None:
    leader = Leader(answer, **{"transaction.version": 2, "transaction.partition.verification.enable": verification})
    err = leader.produce(12)
    assert isinstance(err, expected)
    assert error_code(err) == expected.errno
    assert [q[0] for q in leader.coordinators.asked] == ["add"]


def test_an_accepted_add_lets_the_append_through() -> None:
    leader = Leader(**{"transaction.version": 2})
    assert leader.produce(12) is None
