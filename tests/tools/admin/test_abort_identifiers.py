"""The identifiers of one abort, word for word: the ranges Kafka's wire types allow, the usage errors an
operator reads, how a target and its marker are named in prompts, refusals and the audit log, and the
re-check before the write that must tell one transaction of a producer from its next one.

The ranges are those of WriteTxnMarkers / DescribeProducers: partition INT32, producer id INT64,
producer epoch INT16, coordinator epoch INT32, offsets INT64.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from kafka_txn_tools.admin.abort import AbortTarget, execute, validate
from kafka_txn_tools.errors import MissingApi, NothingToDo, UsageError
from kafka_txn_tools.models import ScanError, TopicPartition
from tests.tools.admin.fakes import MIN, cluster, producer, txn

TP = TopicPartition("orders", 1)  # leader: broker 1
I16, I32, I64 = 2**15, 2**31, 2**63


@pytest.mark.parametrize("field, name, low, high", [
    ("producer_id", "producer id", -I64, I64 - 1),
    ("producer_epoch", "producer epoch", -I16, I16 - 1),
    ("coordinator_epoch", "coordinator epoch", -I32, I32 - 1),
])
def test_each_identifier_takes_its_whole_wire_range_and_nothing_beyond(
        field: str, name: str, low: int, high: int) -> None:
    for inside in (low, high):
        AbortTarget(TP, **{"producer_id": 1, field: inside})
    for outside in (low - 1, high + 1):
        with pytest.raises(UsageError) as exc:
            AbortTarget(TP, **{"producer_id": 1, field: outside})
        assert str(exc.value) == f"{name} {outside} is out of range ({low}..{high})"


def test_the_partition_is_an_int32_and_not_negative() -> None:
    AbortTarget(TopicPartition("orders", I32 - 1), producer_id=1)
    with pytest.raises(UsageError) as exc:
        AbortTarget(TopicPartition("orders", I32), producer_id=1)
    assert str(exc.value) == f"partition {I32} is out of range ({-I32}..{I32 - 1})"
    with pytest.raises(UsageError) as exc:
        AbortTarget(TopicPartition("orders", -I32 - 1), producer_id=1)
    assert str(exc.value) == f"partition {-I32 - 1} is out of range ({-I32}..{I32 - 1})"
    with pytest.raises(UsageError) as exc:
        AbortTarget(TopicPartition("orders", -1), producer_id=1)
    assert str(exc.value) == "partition -1 is not a partition number (0 or more)"


def test_a_start_offset_is_any_offset_from_zero() -> None:
    assert AbortTarget(TP, start_offset=0).start_offset == 0  # a transaction can start the log
    AbortTarget(TP, start_offset=I64 - 1)
    with pytest.raises(UsageError) as exc:
        AbortTarget(TP, start_offset=-1)
    assert exc.value.message == "start offset -1 is not where a transaction can start"
    assert exc.value.fix == "take --start-offset from `kafka-txn find-hanging` or `describe-producers`"


def test_a_target_needs_a_start_offset_or_a_producer_id() -> None:
    with pytest.raises(UsageError) as exc:
        AbortTarget(TP, producer_epoch=1, coordinator_epoch=0)
    assert str(exc.value) == "name the transaction with a start offset or a producer id"


def test_the_legacy_form_is_the_one_without_a_start_offset() -> None:
    assert AbortTarget(TP, producer_id=10, producer_epoch=4, coordinator_epoch=0).legacy
    assert not AbortTarget(TP, start_offset=100).legacy
    assert not AbortTarget(TP, start_offset=100, producer_id=10).legacy


def test_a_target_is_named_by_every_identifier_given_in_kafkas_partition_spelling() -> None:
    assert AbortTarget(TP, 100, 10, 4, 2).describe() == (
        "orders-1 start offset 100, producer 10, epoch 4, coordinator epoch 2")
    assert AbortTarget(TP, start_offset=100).describe() == "orders-1 start offset 100"
    assert AbortTarget(TP, producer_id=10, coordinator_epoch=0).describe() == (
        "orders-1 producer 10, coordinator epoch 0")


def open_cluster():
    c = cluster()
    c.open_txn(TP, producer(10, 100, 30 * MIN, epoch=4, coordinator_epoch=2))
    c.offsets = {TP: (100, 180)}
    return c


def test_the_marker_shown_before_writing_names_leader_ids_and_the_start_offset_tag() -> None:
    check = validate(open_cluster(), AbortTarget(TP, start_offset=100))
    assert check.marker_text() == ("ABORT marker for orders-1 to broker 1 (its leader): producer 10, epoch 4, "
                                   "coordinator epoch 2, start offset 100")
    # A broker without DescribeProducers (before 2.8): the legacy form, no start offset to tag.
    old = open_cluster()
    old.unsupported = {"DescribeProducers"}
    check = validate(old, AbortTarget(TP, producer_id=10, producer_epoch=4, coordinator_epoch=2))
    assert check.marker_text() == ("ABORT marker for orders-1 to broker 1 (its leader): producer 10, epoch 4, "
                                   "coordinator epoch 2")
    assert check.leader == 1
    assert check.unverifiable[0] == (
        "the cluster does not support DescribeProducers (Apache Kafka 2.8+), so producer 10 epoch 4 cannot be "
        "checked against the producer state of orders-1")


def test_the_producers_next_transaction_is_not_the_one_validated() -> None:
    # Between the check and the write, the transaction ends and the same producer (same id and epoch:
    # no bump without TV2) opens its next one at a later offset. The marker would abort the new,
    # healthy transaction, so the re-check must compare the start offset too; nothing is written.
    c = open_cluster()
    check = validate(c, AbortTarget(TP, start_offset=100))
    states = c.producers
    for key, held in states.items():
        states[key] = [replace(s, current_txn_start_offset=150) if s.producer_id == 10 else s for s in held]
    with pytest.raises(NothingToDo, match="completed after it was validated"):
        execute(c, check, sleep=lambda s: None)
    assert c.markers == []


def test_the_legacy_form_rechecks_by_producer_and_epoch_only() -> None:
    # The legacy form names the producer, not an offset: its open transaction is the one to abort,
    # wherever it started, as long as id and epoch are unchanged.
    c = open_cluster()
    check = validate(c, AbortTarget(TP, producer_id=10, producer_epoch=4, coordinator_epoch=2))
    check.spec = replace(check.spec, start_offset=None)
    execute(c, check, sleep=lambda s: None)
    assert c.markers == [(1, TP, 10, 4, 2, None)]


def test_a_cluster_without_write_txn_markers_names_the_command_that_needs_it() -> None:
    c = open_cluster()
    c.unsupported = {"WriteTxnMarkers"}
    with pytest.raises(MissingApi) as exc:
        validate(c, AbortTarget(TP, start_offset=100))
    assert exc.value.message.startswith("the cluster does not support WriteTxnMarkers (since ")
    assert "which `kafka-txn abort` needs" in exc.value.message


def test_a_cluster_before_2_8_carries_a_given_start_offset_and_says_what_it_cannot_check() -> None:
    c = open_cluster()
    c.unsupported = {"DescribeProducers", "ListTransactions", "DescribeTransactions"}
    check = validate(c, AbortTarget(TP, 100, 10, 4, 2))
    assert check.spec.start_offset == 100
    assert check.marker_text().endswith("coordinator epoch 2, start offset 100")
    assert check.unverifiable[1] == (
        "the coordinator's view cannot be read: the cluster does not support ListTransactions and "
        "DescribeTransactions (Apache Kafka 3.0+), so it cannot be checked that no coordinator still holds this "
        "transaction as live")
    # After the write, a cluster without DescribeProducers is never asked for producer state.
    c.describe_producers = lambda *a, **k: pytest.fail("DescribeProducers sent to a cluster without it")
    outcome = execute(c, check, sleep=lambda s: None)
    assert c.markers == [(1, TP, 10, 4, 2, 100)] and not outcome.still_open


def test_the_coordinators_unread_view_names_the_first_three_failures() -> None:
    c = open_cluster()
    real = c.list_transactions

    def failing(*args: Any, **kwargs: Any) -> Any:
        result = real(*args, **kwargs)
        result.errors.extend(ScanError("BROKER_UNREACHABLE", f"broker {b} is unreachable", broker_id=b,
                                       api="ListTransactions") for b in (5, 6, 7, 8))
        return result

    c.list_transactions = failing  # type: ignore[method-assign]
    check = validate(c, AbortTarget(TP, start_offset=100))
    assert check.verdict is None and not check.live
    assert check.refusal == ("the coordinator's view could not be read, so the transaction may be live (broker 5 is "
                             "unreachable; broker 6 is unreachable; broker 7 is unreachable)")


def test_a_prepared_two_phase_commit_transaction_is_refused_naming_its_manager() -> None:
    c = open_cluster()
    c.transactions["xa-1"] = replace(txn("xa-1", 10, state="PrepareCommit", partitions=[TP], epoch=4, coordinator=2),
                                     timeout_ms=2**31 - 1)
    check = validate(c, AbortTarget(TP, start_offset=100))
    assert check.live
    assert check.refusal == (
        "'xa-1' is a prepared two-phase-commit transaction (KIP-939) with orders-1: an external transaction manager "
        "owns it and may already have decided to commit it; let that manager commit or abort it")
