"""abort validation and execution (admin/abort.py) over an in-memory cluster: every identifier is checked,
and every refusal writes nothing (the fake records each marker it is sent)."""

from __future__ import annotations

import pytest

from kafka_txn_tools.admin.abort import AbortTarget, execute, validate
from kafka_txn_tools.errors import BrokerError, MissingApi, NothingToDo, Refused, UsageError
from kafka_txn_tools.models import HangingReason, TopicPartition
from tests.tools.admin.fakes import MIN, cluster, producer, txn

TP = TopicPartition("orders", 1)  # leader: broker 1


def hanging_cluster(coordinator_epoch: int = -1):
    """orders-1: 100 plain records, then producer 10's open transaction from offset 100 to the end (180)."""
    c = cluster()
    c.open_txn(TP, producer(10, 100, 30 * MIN, epoch=4, coordinator_epoch=coordinator_epoch))
    c.append(TP, records=100)
    c.append(TP, 10, 4, records=80, transactional=True)
    c.offsets = {TP: (100, 180)}
    return c


def by_offset(offset: int = 100, **ids: int) -> AbortTarget:
    return AbortTarget(TP, start_offset=offset, **ids)


def legacy(pid: int = 10, epoch: int = 4, coordinator_epoch: int = -1) -> AbortTarget:
    return AbortTarget(TP, producer_id=pid, producer_epoch=epoch, coordinator_epoch=coordinator_epoch)


def test_validates_and_writes_the_exact_marker() -> None:
    c = hanging_cluster()
    check = validate(c, by_offset())
    assert check.refusal is None and not check.unverifiable
    assert check.verdict.reason is HangingReason.NO_TRANSACTIONAL_ID
    outcome = execute(c, check, sleep=lambda s: None)
    # Leader 1; epoch as the partition holds it; coordinator epoch -1 clamped to 0; TxnStartOffset 100.
    assert c.markers == [(1, TP, 10, 4, 0, 100)]
    # The marker takes offset 180, so the LSO moves past it, to the new log end.
    assert (check.before.last_stable_offset, outcome.after.last_stable_offset) == (100, 181)
    assert not outcome.still_open


@pytest.mark.parametrize("ids, wrong", [
    ({"producer_id": 11}, "producer id 11 (the partition has 10)"),
    ({"producer_id": 10, "producer_epoch": 3}, "producer epoch 3 (the partition has 4)"),
    ({"producer_epoch": 5}, "producer epoch 5 (the partition has 4)"),
    ({"coordinator_epoch": 2}, "coordinator epoch 2 (the partition has -1)"),
])
def test_every_identifier_given_with_the_start_offset_must_match(ids: dict[str, int], wrong: str) -> None:
    c = hanging_cluster()
    with pytest.raises(Refused, match="is not the one named") as exc:
        validate(c, by_offset(**ids))
    assert wrong in str(exc.value)
    assert c.markers == []


def test_no_coordinator_epoch_yet_may_be_named_minus_one_or_zero() -> None:
    for given in (-1, 0):
        assert validate(hanging_cluster(), by_offset(producer_id=10, producer_epoch=4,
                                                    coordinator_epoch=given)).refusal is None
    with pytest.raises(Refused):
        validate(hanging_cluster(coordinator_epoch=3), by_offset(coordinator_epoch=0))


def test_the_legacy_form_checks_the_epoch_and_carries_the_live_start_offset() -> None:
    c = hanging_cluster()
    with pytest.raises(Refused, match="producer epoch 3"):
        validate(c, legacy(epoch=3))
    with pytest.raises(Refused, match="no state for producer id 99"):
        validate(c, legacy(pid=99))
    check = validate(c, legacy())
    assert check.spec.start_offset == 100 and check.spec.coordinator_epoch == 0  # the tag, from live state
    execute(c, check, sleep=lambda s: None)
    assert c.markers == [(1, TP, 10, 4, 0, 100)]
    with pytest.raises(NothingToDo):
        validate(c, legacy())


@pytest.mark.parametrize("fields, message", [
    ({"start_offset": -1}, "start offset -1 is not where a transaction can start"),
    ({"producer_id": 1, "producer_epoch": 2**15, "coordinator_epoch": 0}, "producer epoch 32768 is out of range"),
    ({"producer_id": 1, "producer_epoch": 0, "coordinator_epoch": 2**31}, "coordinator epoch 2147483648 is out"),
    ({"start_offset": 2**63}, "start offset 9223372036854775808 is out of range"),
])
def test_out_of_range_identifiers_are_usage_errors(fields: dict[str, int], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        AbortTarget(TP, **fields)


def test_refuses_a_transaction_its_coordinator_holds_as_ongoing() -> None:
    c = hanging_cluster()
    c.transactions["app"] = txn("app", 10, partitions=[TP], epoch=4, coordinator=2)
    check = validate(c, by_offset())
    assert check.verdict.reason is HangingReason.LATE and check.live
    assert "still holds 'app' as ongoing" in check.refusal and "force-terminate" in check.refusal


def test_refuses_when_the_coordinator_cannot_be_read() -> None:
    c = hanging_cluster()
    c.down = {2}
    check = validate(c, by_offset())
    assert check.verdict is None and "could not be read" in check.refusal and not check.live


def test_a_cluster_without_the_apis() -> None:
    c = hanging_cluster()
    c.unsupported = {"WriteTxnMarkers"}
    with pytest.raises(MissingApi, match="does not support WriteTxnMarkers"):
        validate(c, by_offset())
    c.unsupported = {"ListTransactions", "DescribeTransactions"}  # Kafka 2.8
    check = validate(c, by_offset())
    assert check.refusal is None and len(check.unverifiable) == 1
    assert "does not support ListTransactions and DescribeTransactions (Apache Kafka 3.0+)" in check.unverifiable[0]
    c.unsupported = {"DescribeProducers", "ListTransactions", "DescribeTransactions"}  # Kafka 2.7
    with pytest.raises(MissingApi, match="DescribeProducers") as exc:
        validate(c, by_offset())
    assert "--producer-id, --producer-epoch and --coordinator-epoch" in str(exc.value)
    check = validate(c, legacy(epoch=9))  # cannot be checked, so not refused: a person must confirm
    assert check.producer is None and len(check.unverifiable) == 2 and check.spec.producer_epoch == 9
    assert c.markers == []


def test_already_aborted_is_its_own_outcome_with_the_marker_as_evidence() -> None:
    c = hanging_cluster()
    execute(c, validate(c, by_offset()), sleep=lambda s: None)
    with pytest.raises(NothingToDo, match="was already aborted: its ABORT marker is at offset 180"):
        validate(c, by_offset())


def test_completed_after_validation_writes_nothing() -> None:
    c = hanging_cluster()
    check = validate(c, by_offset())
    c.complete(TP, 10)  # the transaction completed while the operator read the prompt
    with pytest.raises(NothingToDo, match="completed after it was validated"):
        execute(c, check, sleep=lambda s: None)
    assert c.markers == []


def test_a_wrong_offset_is_a_refusal_naming_where_the_open_transaction_starts() -> None:
    c = hanging_cluster()
    with pytest.raises(Refused, match="Could not find any open transactions starting at offset 120") as exc:
        validate(c, by_offset(120))
    assert "inside the open transaction of producer 10, which starts at offset 100" in str(exc.value)
    with pytest.raises(Refused, match="ends before it"):
        validate(c, by_offset(500))
    assert c.markers == []


def test_unknown_partition_is_a_refusal_from_live_state() -> None:
    with pytest.raises(Refused, match="does not exist"):
        validate(hanging_cluster(), AbortTarget(TopicPartition("orders", 9), start_offset=1))


def test_marker_race_reported_as_already_done() -> None:
    c = hanging_cluster()
    check = validate(c, by_offset())
    c.marker_error = "INVALID_TXN_STATE"
    real = c.write_abort_marker

    def completing(*args):  # type: ignore[no-untyped-def]
        c.complete(TP, 10)
        return real(*args)

    c.write_abort_marker = completing  # type: ignore[method-assign]
    with pytest.raises(NothingToDo, match="completed before the abort marker"):
        execute(c, check, sleep=lambda s: None)


def test_marker_error_is_a_broker_error_with_a_fix() -> None:
    c = hanging_cluster()
    c.marker_error = "CLUSTER_AUTHORIZATION_FAILED"
    with pytest.raises(BrokerError, match="CLUSTER_ACTION"):
        execute(c, validate(c, by_offset()), sleep=lambda s: None)


def test_a_prepared_two_phase_commit_transaction_is_refused_naming_its_external_manager() -> None:
    from dataclasses import replace

    c = hanging_cluster()
    c.transactions["xa-1"] = replace(txn("xa-1", 10, partitions=[TP], epoch=4), timeout_ms=2**31 - 1)
    check = validate(c, by_offset())
    assert check.verdict.reason is HangingReason.PREPARED_2PC and check.live
    assert "external transaction manager" in check.refusal and "KIP-939" in check.refusal
    assert c.markers == []
