"""describe's flow (admin/describe.py) over an in-memory cluster: --all never hides a coordinator it could not ask."""

from __future__ import annotations

import pytest

from kafka_txn_tools.admin.describe import describe_transactions
from kafka_txn_tools.admin.errors import MissingApi
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
