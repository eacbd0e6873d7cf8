"""A scan loop's FindCoordinator answers (connection/coordinators.py), driven as the admin client drives them:
FanOut.to_coordinators with the cache's finder and AdminClient's DescribeTransactions merge, over a fake
cluster whose coordinators answer as Kafka's do (NOT_COORDINATOR once a key's coordinator moved away; no
answer from a broker that is down)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest

from kafka_txn_tools.connection.client import AdminClient
from kafka_txn_tools.connection.coordinators import TRANSACTION, CoordinatorCache
from kafka_txn_tools.connection.fan_out import FanOut, Lookup
from kafka_txn_tools.models import DescribeResult, ScanError


@dataclass
class Coordinators:
    """Which node coordinates each id now; `down` nodes do not answer. Records every FindCoordinator."""

    home: dict[str, int]
    down: set[int] = field(default_factory=set)
    finds: list[list[str]] = field(default_factory=list)
    asked: list[tuple[int, list[str]]] = field(default_factory=list)

    async def find(self, keys: list[str]) -> Lookup:
        self.finds.append(sorted(keys))
        return {k: self.home[k] for k in keys}, {}

    async def describe_on(self, node: int, keys: list[str]) -> Any:
        self.asked.append((node, sorted(keys)))
        if node in self.down:
            return node, keys, {}, {}, ScanError("BROKER_UNREACHABLE", f"broker {node} is unreachable",
                                                 broker_id=node, api="DescribeTransactions")
        found = {k: f"described by {node}" for k in keys if self.home[k] == node}
        failed = {k: "NOT_COORDINATOR" for k in keys if self.home[k] != node}
        return node, keys, found, failed, None


async def _nothing(_seconds: float) -> None:
    return None


def describe(cluster: Coordinators, cache: CoordinatorCache, keys: list[str]) -> DescribeResult:
    """As AdminClient.describe_transactions: up to 3 rounds, the cache's finder, the client's merge."""
    result = DescribeResult()
    served: set[str] = set()

    async def go() -> None:
        fan = FanOut(asyncio.ensure_future, _nothing)
        await fan.to_coordinators(keys, cache.finder(TRANSACTION, cluster.find, served), cluster.describe_on,
                                  lambda outcome, last: AdminClient._merge_describe(outcome, result, last, cache,
                                                                                    served),
                                  lambda key, error: None, attempts=3)

    asyncio.run(go())
    return result


def test_a_remembered_coordinator_is_asked_without_findcoordinator_only_while_serving() -> None:
    cluster = Coordinators({"a": 1, "b": 2})
    cache = CoordinatorCache()
    assert describe(cluster, cache, ["a", "b"]).descriptions == {"a": "described by 1", "b": "described by 2"}
    assert describe(cluster, cache, ["a", "b"]).descriptions  # not serving (a first or full pass): found again
    assert cluster.finds == [["a", "b"], ["a", "b"]]
    cache.serving = True
    assert describe(cluster, cache, ["a", "b"]).descriptions == {"a": "described by 1", "b": "described by 2"}
    assert cluster.finds == [["a", "b"], ["a", "b"]]  # no FindCoordinator


def test_a_coordinator_that_moved_answers_not_coordinator_and_the_id_is_found_again_in_the_same_call() -> None:
    cluster = Coordinators({"a": 1, "b": 2})
    cache = CoordinatorCache()
    describe(cluster, cache, ["a", "b"])
    cache.serving = True
    cluster.home["a"] = 3  # __transaction_state's partition of "a" has a new leader
    got = describe(cluster, cache, ["a", "b"])
    assert (got.descriptions, got.errors) == ({"a": "described by 3", "b": "described by 2"}, [])
    assert cluster.finds[1:] == [["a"]]
    assert describe(cluster, cache, ["a"]).descriptions == {"a": "described by 3"}
    assert cluster.finds[2:] == []  # the new coordinator is remembered


def test_a_remembered_coordinator_that_does_not_answer_is_found_again_and_a_new_one_asked() -> None:
    cluster = Coordinators({"a": 1, "b": 2})
    cache = CoordinatorCache()
    describe(cluster, cache, ["a", "b"])
    cache.serving = True
    cluster.down, cluster.home["a"] = {1}, 3  # broker 1 is down; its partitions' leadership moved to 3
    got = describe(cluster, cache, ["a", "b"])
    assert (got.descriptions, got.errors) == ({"a": "described by 3", "b": "described by 2"}, [])
    assert cluster.finds[1:] == [["a"]]


def test_a_coordinator_found_this_call_that_does_not_answer_is_an_error_as_without_the_cache() -> None:
    cluster = Coordinators({"a": 1}, down={1})
    got = describe(cluster, CoordinatorCache(), ["a"])
    assert [(e.error, e.broker_id) for e in got.errors] == [("BROKER_UNREACHABLE", 1)]
    assert cluster.finds == [["a"]]


@pytest.mark.parametrize("error", ["NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE"])
def test_a_failed_findcoordinator_forgets_the_key(error: str) -> None:
    cache = CoordinatorCache()
    cache.remember(TRANSACTION, {"a": 1, "b": 2})
    cache.serving = True

    async def find(keys: list[str]) -> Lookup:
        return {}, {k: error for k in keys}

    served: set[str] = set()
    cache.forget(TRANSACTION, ["a"])
    assert asyncio.run(cache.finder(TRANSACTION, find, served)(["a", "b"])) == ({"b": 2}, {"a": error})
    assert cache.known(TRANSACTION, ["a", "b"]) == {"b": 2} and served == {"b"}


def test_after_an_error_only_the_remembered_keys_are_asked_again_and_never_in_the_last_round() -> None:
    cache = CoordinatorCache()
    cache.remember(TRANSACTION, {"a": 1, "b": 1})
    served = {"a"}
    assert cache.after_error(TRANSACTION, ["a", "b"], served, last=True) == []
    cache.remember(TRANSACTION, {"a": 1, "b": 1})
    served = {"a"}
    assert cache.after_error(TRANSACTION, ["a", "b"], served, last=False) == ["a"]
    assert served == set()
    cache.serving = True
    assert cache.known(TRANSACTION, ["a", "b"]) == {}  # both forgotten
