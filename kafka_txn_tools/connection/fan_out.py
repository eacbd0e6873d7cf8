"""Fan-out-and-merge: one request per node, all in flight together, the answers merged. Written once.

Every cluster-wide call of the admin client has one of two shapes:
- to targets known in advance (`to_nodes`): DescribeProducers on each replica's broker, ListTransactions
  and ListGroups on every broker, ListOffsets on each leader, Fetch per partition;
- to the coordinators of keys (`to_coordinators`): find the coordinator of each key (FindCoordinator),
  group the keys by node, send each coordinator one request for its keys, merge the answers, and ask
  again for the keys whose coordinator moved, is loading or is completing a transaction
  (DescribeTransactions, InitProducerId; OffsetFetch and DescribeShareGroupOffsets ask once).

A node that fails answers with its error (the caller's `send` turns a failure into an answer), so one dead
broker never stops a scan. Anything `send` raises instead is a bug, or a failure the caller means to let
through: it is raised once every request has ended.

Threading: the coroutines run on the loop behind `spawn` and `sleep` (kafka-python's I/O thread in the
admin client, asyncio's loop in the unit tests). A FanOut keeps no state between calls.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Hashable, Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

T = TypeVar("T")
N = TypeVar("N", bound=Hashable)  # where a request goes: a node id, (node, isolation level), a partition
K = TypeVar("K", bound=Hashable)  # what a node serves: a transactional id, a group id, a partition
R = TypeVar("R")  # what is sent there
A = TypeVar("A")  # what comes back

# FindCoordinator's answer: the coordinator of each key found, and the error of each key not found.
Lookup = tuple[dict[str, int], dict[str, str]]

# Answered while a coordinator moves, loads its partition or completes the key's transaction: ask again.
RETRIABLE_COORDINATOR = frozenset({"COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR",
                                   "CONCURRENT_TRANSACTIONS"})


class Spawn(Protocol):
    """Schedules a coroutine on the loop at once; awaiting what it returns gives the coroutine's result."""

    def __call__(self, coroutine: Coroutine[Any, Any, T], /) -> Awaitable[T]: ...


Sleep = Callable[[float], Awaitable[None]]


def group_by_node(nodes: Mapping[K, int]) -> dict[int, list[K]]:
    """The keys each node serves, nodes and keys in the order given."""
    by_node: dict[int, list[K]] = {}
    for key, node in nodes.items():
        by_node.setdefault(node, []).append(key)
    return by_node


class FanOut:
    """Runs the two shapes on one loop: `spawn` starts a coroutine on it, `sleep` waits between rounds."""

    def __init__(self, spawn: Spawn, sleep: Sleep) -> None:
        self._spawn = spawn
        self._sleep = sleep

    def start(self, coro: Coroutine[Any, Any, A]) -> Awaitable[A]:
        """Start one coroutine on the loop now; await what this returns for its answer."""
        return self._spawn(coro)

    async def to_nodes(self, requests: Mapping[N, R], send: Callable[[N, R], Coroutine[Any, Any, A]]) -> list[A]:
        """`send(target, request)` for every request at once; the answers in the order of `requests`."""
        started = [self._spawn(send(target, request)) for target, request in requests.items()]
        answers: list[A] = []
        failure: Exception | None = None
        for answer in started:
            try:
                answers.append(await answer)
            except Exception as exc:  # noqa: BLE001 - raised below, once every request has ended
                failure = failure or exc
        if failure is not None:
            raise failure
        return answers

    async def to_coordinators(
        self,
        keys: Sequence[str],
        find: Callable[[list[str]], Awaitable[Lookup]],
        send: Callable[[int, list[str]], Coroutine[Any, Any, A]],
        merge: Callable[[A, bool], Iterable[str]],
        lookup_failed: Callable[[str, str], None],
        attempts: int = 1,
        backoff_s: float = 0.1,
    ) -> None:
        """Ask each key's coordinator about it, in up to `attempts` rounds.

        A round: `find(keys)`; then `send(node, its keys)` to every coordinator found, all at once; then
        `merge(answer, last)` of each answer, in the order FindCoordinator named the nodes. A key is asked
        again in the next round when its FindCoordinator error is retriable (RETRIABLE_COORDINATOR) or when
        `merge` returns it (an answer's retriable error: `last` tells `merge` that no round follows, so it
        keeps the error instead). `lookup_failed(key, error)` gets each FindCoordinator error that is
        final: not retriable, or met in the last round. Round n+1 starts `backoff_s` × n seconds after
        round n; keys asked again are sorted.
        """
        pending = list(keys)
        for attempt in range(attempts):
            last = attempt == attempts - 1
            coordinators, failed = await find(pending)
            retry: list[str] = []
            for key, error in failed.items():
                if error in RETRIABLE_COORDINATOR and not last:
                    retry.append(key)
                else:
                    lookup_failed(key, error)
            for answer in await self.to_nodes(group_by_node(coordinators), send):
                retry.extend(merge(answer, last))
            if not retry or last:
                return
            pending = sorted(set(retry))
            await self._sleep(backoff_s * (attempt + 1))
