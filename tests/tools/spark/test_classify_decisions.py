"""The sweep's rule for a hanging transaction its coordinator already decided on, on plain data (no Spark): the
PrepareCommit / PrepareAbort records the inputs hold decide how it ends, by find-hanging's own rule
(admin/decisions.py). The case is Apache Kafka 4.x's: the coordinator completes a commit without the marker of a
partition whose leader was offline (tests/external/real_kafka/test_coordinator_side_real.py stages it), so the
coordinator holds CompleteCommit at the bumped epoch (transaction version 2) and the partition the transaction."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kafka_txn_tools.admin.advice import Invocation
from kafka_txn_tools.models import CoordinatorDecision, TopicPartition
from kafka_txn_tools.spark import classify as C
from kafka_txn_tools.spark import job

NOW = 1_700_000_000_000
TIMEOUT = 900_000
LAST_WRITE = NOW - TIMEOUT - 60_000
PARAMS = C.SweepParams(NOW, TIMEOUT, invocation=Invocation(bootstrap_server="k1:9092"))
COMMIT = "kafka-txn commit --topic t --partition 0 --start-offset 10 --bootstrap-server k1:9092"
ABORT = "kafka-txn abort --topic t --partition 0 --start-offset 10 --bootstrap-server k1:9092"


def open_row(**fields: Any) -> C.OpenRow:
    row = C.OpenRow(topic="t", partition=0, broker_id=1, is_leader=True, producer_id=7, producer_epoch=3,
                    coordinator_epoch=0, start_offset=10, last_timestamp_ms=LAST_WRITE, snapshot_offset=None,
                    capture_time_ms=NOW, source="transaction-log")
    return replace(row, **fields)


# The coordinator completed it: CompleteCommit at epoch 4 (it bumped the epoch when it prepared, version 2).
DONE = C.Coordinator(7, "app", 1, "CompleteCommit", 4, (), last_update_ms=LAST_WRITE + 1_050)


def decision(commit: bool = True, **fields: Any) -> CoordinatorDecision:
    d = CoordinatorDecision("app", commit, 7, 4, frozenset({TopicPartition("t", 0), TopicPartition("t", 1)}),
                            LAST_WRITE + 1_000, 12, 345, client_transaction_version=2)
    return replace(d, **fields)


def sweep_row(*decisions: CoordinatorDecision, coordinator: C.Coordinator = DONE,
              row: C.OpenRow | None = None) -> dict[str, Any]:
    row = row or open_row()
    replica = C.Replica("t", row.partition, 1, True, NOW, C.MAX_LONG)
    [verdict] = C.analyze([row], [replica], [coordinator], PARAMS, decisions=decisions).verdicts
    return verdict


def test_a_hang_its_coordinator_committed_is_ended_by_a_commit_and_carries_the_decision() -> None:
    row = sweep_row(decision())
    assert (row["verdict"], row["reason"], row["transactional_id"]) == ("hanging", "transaction-not-ongoing", "app")
    assert row["commands"] == [COMMIT]
    assert row["action"].startswith("commit it") and "discard" in row["action"]
    assert row["coordinator_decision"] == {
        "outcome": "commit", "transactional_id": "app", "producer_id": 7, "producer_epoch": 4,
        "decided_ms": LAST_WRITE + 1_000, "transaction_state_partition": 12, "offset": 345}
    assert list(row) == C.OUTPUT_COLUMNS
    assert C.committed(row)


def test_an_abort_decision_or_none_keeps_the_abort() -> None:
    aborted = sweep_row(decision(commit=False))
    assert aborted["commands"] == [ABORT] and aborted["coordinator_decision"]["outcome"] == "abort"
    assert not C.committed(aborted)
    for other in (decision(transactional_id="other"),  # another id's record
                  decision(partitions=frozenset({TopicPartition("t", 1)})),  # not listing this partition
                  decision(producer_epoch=5),  # another transaction of the producer
                  decision(time_ms=LAST_WRITE - 61_000)):  # before its last write (beyond the clocks' slack)
        row = sweep_row(other)
        assert (row["commands"], row["coordinator_decision"]) == ([ABORT], None), other
    # Transaction version 0/1: no bump when preparing, so only the transaction's own epoch names it.
    assert sweep_row(decision(client_transaction_version=0))["commands"] == [ABORT]
    assert sweep_row(decision(client_transaction_version=0, producer_epoch=3))["commands"] == [COMMIT]


def test_a_live_transaction_is_never_given_a_decision() -> None:
    ongoing = C.Coordinator(7, "app", 1, "Ongoing", 3, (("t", 0),))
    row = sweep_row(decision(producer_epoch=3), coordinator=ongoing)
    assert (row["verdict"], row["coordinator_decision"]) == ("late", None)
    assert row["commands"][0].startswith("kafka-txn find-hanging")


def test_the_abort_plan_leaves_it_out_and_says_why_with_its_commit_command() -> None:
    committed = sweep_row(decision())
    other = sweep_row(row=open_row(partition=1))  # no decision on this one: aborted
    plan = job._plan([committed, other], NOW, TIMEOUT)
    assert [(e.topic, e.partition) for e in plan.entries] == [("t", 1)]
    [left] = job.left_out_of_plan([committed, other])
    assert (left["topic"], left["partition"], left["start_offset"], left["commands"]) == ("t", 0, 10, [COMMIT])
    assert "__transaction_state-12 offset 345" in left["why"] and "kafka-txn commit" in left["why"]
