"""The fan-out-and-merge helper (connection/fan_out.py) on small fakes: asyncio's loop stands in for
kafka-python's, a recording sleep for its timer, and a fake cluster of coordinators answers as Kafka's do
(NOT_COORDINATOR while a coordinator moves, COORDINATOR_LOAD_IN_PROGRESS while it loads)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pytest

from kafka_txn_tools.connection.fan_out import RETRIABLE_COORDINATOR, FanOut, Lookup, group_by_node

T = TypeVar("T")


@dataclass
class Loop:
    """A FanOut on asyncio; `slept` records every wait (no real time passes)."""

    slept: list[float] = field(default_factory=list)
    events: list[str] = field(default_factory=list)

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)

    def fan(self) -> FanOut:
        return FanOut(asyncio.ensure_future, self.sleep)


def run(coroutine: Callable[[], Coroutine[Any, Any, T]]) -> T:
    return asyncio.run(coroutine())


async def steps(n: int) -> None:
    """Give the loop back `n` times: lets a fake answer later than others, without time passing."""
    for _ in range(n):
        await asyncio.sleep(0)


# ---- to_nodes ------------------------------------------------------------------------------------------


def test_every_request_is_in_flight_before_any_answer() -> None:
    loop = Loop()

    async def send(node: int, request: str) -> str:
        loop.events.append(f"sent {node}")
        await steps(1)
        loop.events.append(f"answered {node}")
        return f"{request}@{node}"

    answers = run(lambda: loop.fan().to_nodes({1: "a", 2: "b", 3: "c"}, send))
    assert answers == ["a@1", "b@2", "c@3"]
    assert loop.events == ["sent 1", "sent 2", "sent 3", "answered 1", "answered 2", "answered 3"]


def test_answers_come_back_in_the_order_of_the_requests_whatever_order_they_arrive_in() -> None:
    loop = Loop()

    async def send(node: int, delay: int) -> int:
        await steps(delay)
        loop.events.append(f"answered {node}")
        return node

    answers = run(lambda: loop.fan().to_nodes({7: 3, 8: 2, 9: 1}, send))
    assert loop.events == ["answered 9", "answered 8", "answered 7"]
    assert answers == [7, 8, 9]


def test_targets_may_be_any_key_and_no_requests_send_nothing() -> None:
    async def send(target: tuple[int, int], partitions: list[str]) -> tuple[int, int, int]:
        return target[0], target[1], len(partitions)

    fan = Loop().fan()
    assert run(lambda: fan.to_nodes({(1, 0): ["t-0"], (1, 1): ["t-0", "t-1"]}, send)) == [(1, 0, 1), (1, 1, 2)]
    assert run(lambda: fan.to_nodes({}, send)) == []


def test_what_a_send_raises_is_raised_after_every_request_ended_the_first_in_request_order() -> None:
    loop = Loop()

    async def send(node: int, delay: int) -> int:
        await steps(delay)
        loop.events.append(f"ended {node}")
        if node in (2, 3):
            raise ValueError(f"bug on {node}")
        return node

    with pytest.raises(ValueError, match="bug on 2"):
        run(lambda: loop.fan().to_nodes({1: 3, 2: 2, 3: 0, 4: 4}, send))
    assert sorted(loop.events) == ["ended 1", "ended 2", "ended 3", "ended 4"]


def test_group_by_node_keeps_the_order_of_nodes_and_keys() -> None:
    assert group_by_node({"a": 2, "b": 1, "c": 2, "d": 3, "e": 1}) == {2: ["a", "c"], 1: ["b", "e"], 3: ["d"]}
    assert list(group_by_node({"a": 2, "b": 1})) == [2, 1]
    assert group_by_node({}) == {}


# ---- to_coordinators -----------------------------------------------------------------------------------


@dataclass
class Coordinators:
    """Each key's coordinator, and the answers FindCoordinator and the coordinators give, round by round:
    `lookup_errors[key]` and `answer_errors[key]` are consumed one per request naming the key."""

    nodes: dict[str, int]
    lookup_errors: dict[str, list[str]] = field(default_factory=dict)
    answer_errors: dict[str, list[str]] = field(default_factory=dict)
    finds: list[list[str]] = field(default_factory=list)
    sent: list[tuple[int, list[str]]] = field(default_factory=list)

    async def find(self, keys: list[str]) -> Lookup:
        self.finds.append(list(keys))
        found: dict[str, int] = {}
        failed: dict[str, str] = {}
        for key in keys:
            errors = self.lookup_errors.get(key)
            if errors:
                failed[key] = errors.pop(0)
            else:
                found[key] = self.nodes[key]
        return found, failed

    async def send(self, node: int, keys: list[str]) -> tuple[int, dict[str, str]]:
        self.sent.append((node, list(keys)))
        await steps(len(keys))
        answers = {}
        for key in keys:
            errors = self.answer_errors.get(key)
            answers[key] = errors.pop(0) if errors else "NONE"
        return node, answers


@dataclass
class Merged:
    """What a caller keeps: answers by key, errors in the order they came, and the `last` flags seen."""

    ok: dict[str, int] = field(default_factory=dict)
    errors: list[tuple[str, str, str]] = field(default_factory=list)
    lasts: list[bool] = field(default_factory=list)

    def merge(self, answer: tuple[int, dict[str, str]], last: bool) -> list[str]:
        self.lasts.append(last)
        node, by_key = answer
        retry = []
        for key, error in by_key.items():
            if error == "NONE":
                self.ok[key] = node
            elif error in RETRIABLE_COORDINATOR and not last:
                retry.append(key)
            else:
                self.errors.append(("answer", key, error))
        return retry

    def lookup_failed(self, key: str, error: str) -> None:
        self.errors.append(("lookup", key, error))


def ask(loop: Loop, cluster: Coordinators, keys: list[str], merged: Merged, attempts: int = 1,
        backoff_s: float = 0.1) -> None:
    async def go() -> None:
        await loop.fan().to_coordinators(keys, cluster.find, cluster.send, merged.merge, merged.lookup_failed,
                                         attempts, backoff_s)
    run(go)


def test_keys_are_grouped_by_coordinator_one_request_each_all_in_flight_together() -> None:
    loop, merged = Loop(), Merged()
    cluster = Coordinators({"t1": 2, "t2": 1, "t3": 2, "t4": 3})
    ask(loop, cluster, ["t1", "t2", "t3", "t4"], merged)
    assert cluster.finds == [["t1", "t2", "t3", "t4"]]
    assert cluster.sent == [(2, ["t1", "t3"]), (1, ["t2"]), (3, ["t4"])]
    assert merged.ok == {"t1": 2, "t2": 1, "t3": 2, "t4": 3}
    assert merged.errors == [] and merged.lasts == [True, True, True]
    assert loop.slept == []


def test_a_final_lookup_error_is_reported_and_the_key_is_not_sent() -> None:
    loop, merged = Loop(), Merged()
    cluster = Coordinators({"t1": 1, "t2": 1}, lookup_errors={"t2": ["TRANSACTIONAL_ID_AUTHORIZATION_FAILED"]})
    ask(loop, cluster, ["t1", "t2"], merged, attempts=3)
    assert merged.errors == [("lookup", "t2", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED")]
    assert cluster.sent == [(1, ["t1"])]
    assert cluster.finds == [["t1", "t2"]] and loop.slept == []


def test_keys_whose_coordinator_moved_or_was_loading_are_asked_again_alone_after_a_growing_wait() -> None:
    loop, merged = Loop(), Merged()
    cluster = Coordinators({"a": 1, "b": 2, "c": 1, "d": 2},
                           lookup_errors={"d": ["COORDINATOR_NOT_AVAILABLE"]},
                           answer_errors={"c": ["NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS"]})
    ask(loop, cluster, ["a", "b", "c", "d"], merged, attempts=3, backoff_s=0.1)
    assert cluster.finds == [["a", "b", "c", "d"], ["c", "d"], ["c"]]
    assert cluster.sent == [(1, ["a", "c"]), (2, ["b"]), (1, ["c"]), (2, ["d"]), (1, ["c"])]
    assert merged.ok == {"a": 1, "b": 2, "c": 1, "d": 2} and merged.errors == []
    assert loop.slept == pytest.approx([0.1, 0.2])


def test_keys_asked_again_are_sorted_and_asked_once() -> None:
    loop, merged = Loop(), Merged()
    cluster = Coordinators({"z": 1, "m": 2, "a": 1},
                           lookup_errors={"z": ["NOT_COORDINATOR"]},
                           answer_errors={"m": ["CONCURRENT_TRANSACTIONS"], "a": ["NOT_COORDINATOR"]})
    ask(loop, cluster, ["z", "m", "a"], merged, attempts=2)
    assert cluster.finds == [["z", "m", "a"], ["a", "m", "z"]]


def test_in_the_last_round_a_retriable_error_is_kept_and_nothing_more_is_sent() -> None:
    loop, merged = Loop(), Merged()
    cluster = Coordinators({"a": 1, "b": 2},
                           lookup_errors={"b": ["COORDINATOR_LOAD_IN_PROGRESS"] * 5},
                           answer_errors={"a": ["COORDINATOR_LOAD_IN_PROGRESS"] * 5})
    ask(loop, cluster, ["a", "b"], merged, attempts=2, backoff_s=0.2)
    assert merged.errors == [("lookup", "b", "COORDINATOR_LOAD_IN_PROGRESS"),
                             ("answer", "a", "COORDINATOR_LOAD_IN_PROGRESS")]
    assert merged.lasts == [False, True]
    assert len(cluster.finds) == 2 and loop.slept == pytest.approx([0.2])


def test_no_round_and_no_wait_follow_the_last_whatever_merge_asks() -> None:
    loop = Loop()
    cluster = Coordinators({"a": 1})

    def always_again(answer: tuple[int, dict[str, str]], last: bool) -> list[str]:
        return ["a"]

    async def go() -> None:
        await loop.fan().to_coordinators(["a"], cluster.find, cluster.send, always_again, Merged().lookup_failed,
                                         attempts=3)
    run(go)
    assert len(cluster.finds) == 3 and len(cluster.sent) == 3
    assert loop.slept == pytest.approx([0.1, 0.2])


def test_asked_once_a_retriable_lookup_error_is_reported_at_once() -> None:
    loop, merged = Loop(), Merged()
    cluster = Coordinators({"g1": 1, "g2": 1}, lookup_errors={"g1": ["COORDINATOR_NOT_AVAILABLE"]})
    ask(loop, cluster, ["g1", "g2"], merged)
    assert merged.errors == [("lookup", "g1", "COORDINATOR_NOT_AVAILABLE")]
    assert merged.ok == {"g2": 1} and cluster.finds == [["g1", "g2"]] and loop.slept == []


def test_what_find_merge_or_lookup_failed_raise_ends_the_call() -> None:
    loop = Loop()
    cluster = Coordinators({"t": 1}, lookup_errors={"t": ["TRANSACTIONAL_ID_AUTHORIZATION_FAILED"]})

    def refuse(key: str, error: str) -> None:
        raise RuntimeError(f"{key}: {error}")

    async def go(merge: Callable[[tuple[int, dict[str, str]], bool], list[str]],
                 lookup_failed: Callable[[str, str], None]) -> None:
        await loop.fan().to_coordinators(["t"], cluster.find, cluster.send, merge, lookup_failed, attempts=3)

    with pytest.raises(RuntimeError, match="t: TRANSACTIONAL_ID_AUTHORIZATION_FAILED"):
        run(lambda: go(Merged().merge, refuse))
    assert cluster.sent == []

    def stop(answer: tuple[int, dict[str, str]], last: bool) -> list[str]:
        raise RuntimeError("stop")

    with pytest.raises(RuntimeError, match="stop"):
        run(lambda: go(stop, Merged().lookup_failed))
    assert cluster.sent == [(1, ["t"])] and len(cluster.finds) == 2


def test_the_spawn_and_sleep_given_are_the_ones_used() -> None:
    """The client gives kafka-python's call_soon and its loop's sleep: nothing else may run the coroutines."""
    spawned: list[str] = []
    slept: list[float] = []

    def spawn(coroutine: Coroutine[Any, Any, T]) -> Awaitable[T]:
        spawned.append(getattr(coroutine, "__qualname__", "?"))
        return asyncio.ensure_future(coroutine)

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    cluster = Coordinators({"a": 1}, answer_errors={"a": ["NOT_COORDINATOR"]})
    merged = Merged()

    async def go() -> None:
        await FanOut(spawn, sleep).to_coordinators(["a"], cluster.find, cluster.send, merged.merge,
                                                   merged.lookup_failed, attempts=2, backoff_s=0.5)
    run(go)
    assert spawned == ["Coordinators.send", "Coordinators.send"] and slept == [0.5]
    assert merged.ok == {"a": 1}
