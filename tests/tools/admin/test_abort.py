"""abort validation and execution (admin/abort.py) over an in-memory cluster."""

from __future__ import annotations

import pytest

from kafka_txn_tools.admin.abort import check_by_start_offset, check_legacy, execute
from kafka_txn_tools.admin.errors import BrokerError, NothingToDo, UsageError
from kafka_txn_tools.models import HangingReason, TopicPartition
from tests.tools.admin.fakes import MIN, cluster, producer, txn

TP = TopicPartition("orders", 1)  # leader: broker 1


def hanging_cluster():
    c = cluster()
    c.open_txn(TP, producer(10, 100, 30 * MIN, epoch=4, coordinator_epoch=-1))
    c.offsets = {TP: (100, 180)}
    return c


def test_validates_and_writes_the_exact_marker() -> None:
    c = hanging_cluster()
    check = check_by_start_offset(c, TP, 100)
    assert check.refusal is None and check.verdict.reason is HangingReason.NO_TRANSACTIONAL_ID
    outcome = execute(c, check, sleep=lambda s: None)
    # Leader 1; epoch as the partition holds it; coordinator epoch -1 clamped to 0; TxnStartOffset 100.
    assert c.markers == [(1, TP, 10, 4, 0, 100)]
    assert (check.before.last_stable_offset, outcome.after.last_stable_offset) == (100, 180)
    assert not outcome.still_open


def test_refuses_a_transaction_its_coordinator_holds_as_ongoing() -> None:
    c = hanging_cluster()
    c.transactions["app"] = txn("app", 10, partitions=[TP], epoch=4, coordinator=2)
    check = check_by_start_offset(c, TP, 100)
    assert check.verdict.reason is HangingReason.LATE
    assert "still holds 'app' as ongoing" in check.refusal and "force-terminate" in check.refusal


def test_refuses_when_the_coordinator_cannot_be_read() -> None:
    c = hanging_cluster()
    c.down = {2}
    check = check_by_start_offset(c, TP, 100)
    assert check.verdict is None and "could not be read" in check.refusal


def test_already_aborted_is_its_own_outcome() -> None:
    c = hanging_cluster()
    execute(c, check_by_start_offset(c, TP, 100), sleep=lambda s: None)
    with pytest.raises(NothingToDo, match="last stable offset is now 180"):
        check_by_start_offset(c, TP, 100)


def test_wrong_offset_names_the_open_ones() -> None:
    c = hanging_cluster()
    with pytest.raises(UsageError, match="Could not find any open transactions starting at offset 120") as exc:
        check_by_start_offset(c, TP, 120)
    assert "start at 100" in str(exc.value)
    with pytest.raises(UsageError, match="beyond the end"):
        check_by_start_offset(c, TP, 500)


def test_unknown_partition() -> None:
    with pytest.raises(UsageError, match="does not exist"):
        check_by_start_offset(hanging_cluster(), TopicPartition("orders", 9), 1)


def test_marker_race_reported_as_already_done() -> None:
    c = hanging_cluster()
    check = check_by_start_offset(c, TP, 100)
    c.complete(TP, 10)
    c.marker_error = "INVALID_TXN_STATE"
    with pytest.raises(NothingToDo, match="completed before the abort marker"):
        execute(c, check, sleep=lambda s: None)


def test_marker_error_is_a_broker_error_with_a_fix() -> None:
    c = hanging_cluster()
    c.marker_error = "CLUSTER_AUTHORIZATION_FAILED"
    with pytest.raises(BrokerError, match="CLUSTER_ACTION"):
        execute(c, check_by_start_offset(c, TP, 100), sleep=lambda s: None)


def test_legacy_form() -> None:
    c = hanging_cluster()
    check = check_legacy(c, TP, 10, 4, -1)
    assert check.spec.start_offset is None and check.spec.coordinator_epoch == 0 and check.refusal is None
    assert "no state for producer id 99" in check_legacy(c, TP, 99, 0, 0).refusal
    execute(c, check, sleep=lambda s: None)
    with pytest.raises(NothingToDo):
        check_legacy(c, TP, 10, 4, 0)
