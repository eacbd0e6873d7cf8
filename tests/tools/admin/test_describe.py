"""describe's flow (admin/describe.py) over an in-memory cluster: --all never hides a coordinator it could not ask."""

from __future__ import annotations

import pytest

from kafka_txn_tools.admin.describe import describe_transactions
from kafka_txn_tools.errors import MissingApi
from tests.tools.admin.fakes import cluster, txn


def test_all_lists_every_coordinator_and_reports_the_one_it_could_not_ask() -> None:
    c = cluster()
    c.transactions = {"a": txn("a", 1, coordinator=0), "b": txn("b", 2, coordinator=2)}
    described = describe_transactions(c, [], describe_all=True)
    assert [d.transactional_id for d in described.descriptions] == ["a", "b"] and described.errors == []
    c.down = {2}
    described = describe_transactions(c, [], describe_all=True)
    assert [d.transactional_id for d in described.descriptions] == ["a"]
    assert [(e.api, e.broker_id) for e in described.errors] == [("ListTransactions", 2)]


def test_unknown_ids_are_errors_naming_them() -> None:
    c = cluster()
    c.transactions = {"a": txn("a", 1)}
    described = describe_transactions(c, ["a", "nope"], describe_all=False)
    assert [e.transactional_id for e in described.errors] == ["nope"]
    assert described.errors[0].error == "TRANSACTIONAL_ID_NOT_FOUND"


def test_a_cluster_without_the_apis() -> None:
    c = cluster()
    c.unsupported = {"ListTransactions"}
    with pytest.raises(MissingApi, match="ListTransactions"):
        describe_transactions(c, [], describe_all=True)
    assert describe_transactions(c, ["a"], describe_all=False).errors[0].transactional_id == "a"


def test_a_prepare_state_shows_the_partitions_waiting_for_their_marker_and_why() -> None:
    from kafka_txn_tools.models import PartitionInfo, PendingReason, TopicPartition
    from tests.tools.admin.fakes import MIN, producer, txn

    c = cluster()
    t0, t1 = TopicPartition("orders", 0), TopicPartition("orders", 1)
    c.partitions = [PartitionInfo(t0, 0, (0,), (0,)), PartitionInfo(t1, -1, (1,), ())]  # broker 1's replica is down
    c.brokers = [0, 2]
    c.open_txn(t0, producer(7, 30, MIN, epoch=2))
    c.transactions["app"] = txn("app", 7, "PrepareCommit", partitions=[t0, t1], epoch=2)
    c.transactions["idle"] = txn("idle", 8, "CompleteCommit")
    out = describe_transactions(c, ["app", "idle"], describe_all=False)
    assert set(out.pending) == {"app"}  # only Prepare states wait for markers
    assert [(p.partition, p.reason) for p in out.pending["app"]] == [
        (t0, PendingReason.OPEN_TRANSACTION), (t1, PendingReason.LEADER_OFFLINE)]
    assert out.pending["app"][1].offline_replicas == (1,)
