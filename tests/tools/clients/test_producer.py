"""TransactionalShareProducer.send_share_acknowledgements_to_transaction against a scripted network and
kafka-python's real TransactionManager. Error codes are Kafka's: NOT_LEADER_OR_FOLLOWER 6,
INVALID_PRODUCER_EPOCH 47, CONCURRENT_TRANSACTIONS 51, PRODUCER_FENCED 90, STALE_MEMBER_EPOCH 113,
UNKNOWN_MEMBER_ID 25, INVALID_RECORD_STATE 121, COORDINATOR_NOT_AVAILABLE 15. The outcomes follow KIP-1289's
Producer javadoc and corner cases: fencing is fatal, a stale member or a refused record aborts the
transaction, the cluster without the API is named before anything is sent."""

from __future__ import annotations

from typing import Any

import kafka.errors as kerrors
import pytest
from kafka.producer.transaction_manager import EndTxnHandler, TransactionState

from kafka_txn_tools.clients import producer as producer_module
from kafka_txn_tools.clients.acks import ACCEPT, REJECT
from kafka_txn_tools.clients.errors import (
    AbortableShareAcknowledgementError,
    FatalShareAcknowledgementError,
    TxnShareAcknowledgeUnsupportedError,
)
from kafka_txn_tools.clients.group_metadata import ShareGroupMetadata
from kafka_txn_tools.clients.producer import TransactionalShareProducer
from tests.tools.clients.fakes import (
    EPOCH,
    PRODUCER_ID,
    TOPIC_IDS,
    FakeNetwork,
    FakeProducer,
    answer,
    staged,
    transaction_manager,
)

META = ShareGroupMetadata("g", "member-1", 3)
IN0, IN1, OTHER0 = ("in", 0), ("in", 1), ("other", 0)


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(producer_module, "BACKOFF_MS", 0.0)


def make(network: FakeNetwork, *, in_transaction: bool = True, **kw: Any) -> TransactionalShareProducer:
    return TransactionalShareProducer(producer=FakeProducer(transaction_manager(in_transaction=in_transaction)),
                                      network=network, **kw)  # type: ignore[arg-type]


def state(p: TransactionalShareProducer) -> TransactionState:
    return p._tm._current_state


def test_one_request_per_leader_carrying_the_producer_and_the_member() -> None:
    net = FakeNetwork({IN0: 1, IN1: 2, OTHER0: 1})
    p = make(net)
    p.send_share_acknowledgements_to_transaction(
        {IN0: [(0, 4, ACCEPT), (5, REJECT)], IN1: [(3, ACCEPT)], OTHER0: [(9, ACCEPT)]}, META)
    assert [node for node, _ in net.sent] == [1, 2]
    one, two = (r for _, r in net.sent)
    assert staged(one) == {(TOPIC_IDS["in"], 0): [(0, 4, [ACCEPT]), (5, 5, [REJECT])],
                           (TOPIC_IDS["other"], 0): [(9, 9, [ACCEPT])]}
    assert staged(two) == {(TOPIC_IDS["in"], 1): [(3, 3, [ACCEPT])]}
    for r in (one, two):
        assert (r.transactional_id, r.producer_id, r.producer_epoch) == ("rpw-1", PRODUCER_ID, EPOCH)
        assert (r.group_id, r.member_id, r.member_epoch) == ("g", "member-1", 3)
    assert state(p) == TransactionState.IN_TRANSACTION


def test_the_epoch_sent_is_the_current_one() -> None:
    from kafka.producer.transaction_manager import ProducerIdAndEpoch

    net = FakeNetwork({IN0: 1})
    p = make(net)
    p._tm.set_producer_id_and_epoch(ProducerIdAndEpoch(PRODUCER_ID, EPOCH + 1))  # e.g. after a KIP-360 bump
    p.send_share_acknowledgements_to_transaction({IN0: [(0, ACCEPT)]}, META)
    assert net.sent[0][1].producer_epoch == EPOCH + 1


@pytest.mark.parametrize("acks", [{IN0: [(0, 2)]}, {IN0: [(0, 0)]}, {IN0: [(0, ACCEPT), (1, 4)]},
                                  {IN0: [(0, ACCEPT)], IN1: [(1, 1, 2)]}])
def test_a_type_other_than_accept_or_reject_fails_before_any_request(acks: Any) -> None:
    net = FakeNetwork({IN0: 1, IN1: 1})
    p = make(net)
    with pytest.raises(ValueError):
        p.send_share_acknowledgements_to_transaction(acks, META)
    assert (net.sent, net.metadata_requests) == ([], 0)
    assert state(p) == TransactionState.IN_TRANSACTION  # nothing to abort: the transaction goes on


def test_outside_a_transaction_nothing_is_sent() -> None:
    net = FakeNetwork({IN0: 1})
    p = make(net, in_transaction=False)
    with pytest.raises(kerrors.IllegalStateError, match="begin_transaction"):
        p.send_share_acknowledgements_to_transaction({IN0: [(0, ACCEPT)]}, META)
    assert net.sent == []


def test_metadata_of_the_wrong_type_is_refused() -> None:
    p = make(FakeNetwork({IN0: 1}))
    with pytest.raises(TypeError):
        p.send_share_acknowledgements_to_transaction({IN0: [(0, ACCEPT)]}, ("g", "m", 1))  # type: ignore[arg-type]


@pytest.mark.parametrize("code", [90, 47])  # PRODUCER_FENCED, INVALID_PRODUCER_EPOCH
def test_fencing_is_fatal_and_the_producer_cannot_go_on(code: int) -> None:
    p = make(FakeNetwork({IN0: 1}, [lambda n, r: answer(code)]))
    with pytest.raises(FatalShareAcknowledgementError) as info:
        p.send_share_acknowledgements_to_transaction({IN0: [(0, ACCEPT)]}, META)
    assert info.value.error in ("PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH")
    assert isinstance(info.value, kerrors.KafkaError)
    assert p._tm.has_fatal_error()
    with pytest.raises(kerrors.KafkaError):
        p._tm.begin_commit()  # kafka-python refuses to commit (and to abort) a fatal producer
    with pytest.raises(kerrors.KafkaError):
        p._tm.begin_abort()


@pytest.mark.parametrize("code, name", [(113, "STALE_MEMBER_EPOCH"), (25, "UNKNOWN_MEMBER_ID"),
                                        (30, "GROUP_AUTHORIZATION_FAILED")])
def test_a_member_refused_is_abortable(code: int, name: str) -> None:
    p = make(FakeNetwork({IN0: 1}, [lambda n, r: answer(code)]))
    with pytest.raises(AbortableShareAcknowledgementError) as info:
        p.send_share_acknowledgements_to_transaction({IN0: [(0, ACCEPT)]}, META)
    assert info.value.error == name
    assert p._tm.has_abortable_error()
    with pytest.raises(kerrors.KafkaError):
        p._tm.begin_commit()  # committing the outputs without the acknowledgements is refused
    p._tm.begin_abort()  # aborting is the way on
    assert state(p) == TransactionState.ABORTING_TRANSACTION


def test_a_partition_refused_is_abortable_and_names_it() -> None:
    net = FakeNetwork({IN0: 1, IN1: 1}, [lambda n, r: answer(0, {IN0: 121, IN1: 121})])
    p = make(net)
    with pytest.raises(AbortableShareAcknowledgementError, match="in-0: INVALID_RECORD_STATE") as info:
        p.send_share_acknowledgements_to_transaction({IN0: [(0, ACCEPT)], IN1: [(0, ACCEPT)]}, META)
    assert info.value.error == "INVALID_RECORD_STATE"
    assert p._tm.has_abortable_error()


def test_a_moved_leader_is_looked_up_again_and_only_its_partitions_resent() -> None:
    net = FakeNetwork({IN0: 1, IN1: 2}, [lambda n, r: answer(0, {IN0: 0}), lambda n, r: answer(0, {IN1: 6}, 3),
                                         lambda n, r: answer(0, {IN1: 0})], moves=[{IN1: 3}])
    p = make(net)
    p.send_share_acknowledgements_to_transaction({IN0: [(0, ACCEPT)], IN1: [(5, ACCEPT)]}, META)
    assert [node for node, _ in net.sent] == [1, 2, 3]
    assert staged(net.sent[2][1]) == {(TOPIC_IDS["in"], 1): [(5, 5, [ACCEPT])]}
    assert net.metadata_requests == 2
    assert state(p) == TransactionState.IN_TRANSACTION


def test_a_leader_that_keeps_moving_ends_abortable_after_the_bounded_retries() -> None:
    net = FakeNetwork({IN0: 1}, [lambda n, r: answer(0, {IN0: 6})] * 10)
    p = make(net, leader_retries=2)
    with pytest.raises(AbortableShareAcknowledgementError, match="kept moving"):
        p.send_share_acknowledgements_to_transaction({IN0: [(0, ACCEPT)]}, META)
    assert len(net.sent) == 3


def test_a_partition_without_a_leader_waits_for_one() -> None:
    net = FakeNetwork({IN0: -1}, moves=[{IN0: 2}])
    make(net).send_share_acknowledgements_to_transaction({IN0: [(0, ACCEPT)]}, META)
    assert [node for node, _ in net.sent] == [2]


@pytest.mark.parametrize("code", [51, 15, 14, 16])  # CONCURRENT_TRANSACTIONS, coordinator not there or loading
def test_a_busy_coordinator_is_retried_and_then_the_staging_succeeds(code: int) -> None:
    busy, done = (lambda n, r: answer(code)), (lambda n, r: answer(0, {IN0: 0}))
    net = FakeNetwork({IN0: 1}, [busy, busy, done])
    p = make(net)
    p.send_share_acknowledgements_to_transaction({IN0: [(0, ACCEPT)]}, META)
    assert len(net.sent) == 3
    assert p._tm._transaction_started


def test_a_coordinator_that_stays_busy_ends_abortable() -> None:
    net = FakeNetwork({IN0: 1}, [lambda n, r: answer(51)] * 10)
    p = make(net, coordinator_retries=4)
    with pytest.raises(AbortableShareAcknowledgementError) as info:
        p.send_share_acknowledgements_to_transaction({IN0: [(0, ACCEPT)]}, META)
    assert (info.value.error, len(net.sent)) == ("CONCURRENT_TRANSACTIONS", 5)


def test_an_unknown_topic_is_abortable_before_staging() -> None:
    net = FakeNetwork({IN0: 1})
    p = make(net)
    with pytest.raises(AbortableShareAcknowledgementError, match="nope"):
        p.send_share_acknowledgements_to_transaction({("nope", 0): [(0, ACCEPT)]}, META)
    with pytest.raises(AbortableShareAcknowledgementError):
        make(net).send_share_acknowledgements_to_transaction({("in", 7): [(0, ACCEPT)]}, META)
    assert net.sent == []


def test_without_the_api_the_error_names_the_broker_property_and_nothing_is_sent() -> None:
    net = FakeNetwork({IN0: 1}, advertised=False)
    p = make(net)
    with pytest.raises(TxnShareAcknowledgeUnsupportedError, match="share.transactional.acknowledgement.enable"):
        p.send_share_acknowledgements_to_transaction({IN0: [(0, ACCEPT)]}, META)
    assert net.sent == []


def test_a_leader_that_cannot_encode_the_request_is_named_as_unsupported() -> None:
    def refuse(n: int | None, r: Any) -> Any:
        raise kerrors.IncompatibleBrokerVersion("Kafka broker does not support the 'TxnShareAcknowledge' protocol")

    with pytest.raises(TxnShareAcknowledgeUnsupportedError, match="broker 1"):
        make(FakeNetwork({IN0: 1}, [refuse])).send_share_acknowledgements_to_transaction({IN0: [(0, ACCEPT)]}, META)


def test_a_lost_answer_is_abortable_and_the_transaction_still_ends_with_end_txn() -> None:
    def lost(n: int | None, r: Any) -> Any:
        raise kerrors.KafkaConnectionError("connection reset")

    p = make(FakeNetwork({IN0: 1}, [lost]))
    with pytest.raises(AbortableShareAcknowledgementError):
        p.send_share_acknowledgements_to_transaction({IN0: [(0, ACCEPT)]}, META)
    # The staging may have happened: the abort must reach the coordinator, not be skipped as empty.
    assert p._tm._transaction_started
    p._tm.begin_abort()
    assert isinstance(p._tm.next_request_handler(False), EndTxnHandler)


def test_a_transaction_with_only_share_acknowledgements_still_sends_end_txn() -> None:
    # kafka-python skips EndTxn when no partition or offsets were added: pinned both ways.
    bare = make(FakeNetwork({IN0: 1}))
    bare._tm.begin_commit()
    assert bare._tm.next_request_handler(False) is None  # skipped: kafka-python completes it locally
    assert bare._tm._current_state == TransactionState.READY

    p = make(FakeNetwork({IN0: 1}))
    p.send_share_acknowledgements_to_transaction({IN0: [(0, ACCEPT)]}, META)
    p._tm.begin_commit()
    handler = p._tm.next_request_handler(False)
    assert isinstance(handler, EndTxnHandler) and handler.request.committed is True


def test_nothing_to_acknowledge_sends_nothing_and_starts_nothing() -> None:
    net = FakeNetwork({IN0: 1})
    p = make(net)
    p.send_share_acknowledgements_to_transaction({IN0: []}, META)
    assert (net.sent, p._tm._transaction_started) == ([], False)


def test_a_refused_request_does_not_mark_the_transaction_started() -> None:
    p = make(FakeNetwork({IN0: 1}, [lambda n, r: answer(113)]))
    with pytest.raises(AbortableShareAcknowledgementError):
        p.send_share_acknowledgements_to_transaction({IN0: [(0, ACCEPT)]}, META)
    assert p._tm._transaction_started is False


def test_a_non_transactional_producer_is_refused() -> None:
    with pytest.raises(ValueError, match="transactional_id"):
        TransactionalShareProducer(producer=FakeProducer(None), network=FakeNetwork({}))  # type: ignore[arg-type]


def test_the_producer_api_is_delegated_and_close_closes_both() -> None:
    net = FakeNetwork({IN0: 1})
    p = make(net)
    p.init_transactions()
    p.begin_transaction()
    p.send("out", b"v")
    p.flush()
    p.commit_transaction()
    p.abort_transaction()
    p.close()
    assert p.producer.calls == ["init_transactions", "begin_transaction", "send", "flush", "commit_transaction",
                                "abort_transaction", "close"]
    assert net.closed


def test_topic_ids_and_leaders_are_remembered_between_calls() -> None:
    net = FakeNetwork({IN0: 1, OTHER0: 1})
    p = make(net)
    p.send_share_acknowledgements_to_transaction({IN0: [(0, ACCEPT)]}, META)
    p.send_share_acknowledgements_to_transaction({IN0: [(1, ACCEPT)]}, META)
    assert net.metadata_requests == 1
    p.send_share_acknowledgements_to_transaction({IN0: [(2, ACCEPT)], OTHER0: [(0, ACCEPT)]}, META)
    assert net.metadata_requests == 2  # a topic not seen before


def test_after_a_failure_the_topics_are_asked_again() -> None:
    # e.g. the topic was deleted and created again: the remembered id is unknown to the broker now.
    net = FakeNetwork({IN0: 1}, [lambda n, r: answer(0, {IN0: 0}), lambda n, r: answer(0, {IN0: 100})])
    p = make(net)
    p.send_share_acknowledgements_to_transaction({IN0: [(0, ACCEPT)]}, META)
    with pytest.raises(AbortableShareAcknowledgementError, match="UNKNOWN_TOPIC_ID"):
        p.send_share_acknowledgements_to_transaction({IN0: [(1, ACCEPT)]}, META)
    p._tm.begin_abort()
    p._tm._complete_transaction()  # as the EndTxn answer would
    p._tm.begin_transaction()
    p.send_share_acknowledgements_to_transaction({IN0: [(2, ACCEPT)]}, META)
    assert net.metadata_requests == 2
