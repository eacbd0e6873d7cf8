"""FindCoordinator answers kept for a scan loop (find-hanging --watch, the monitor), as Kafka's clients keep
their coordinator: until it answers NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE, or cannot be reached.

A key's coordinator is the leader of the key's partition of `__transaction_state` (a transactional id) or of
`__consumer_offsets` (a group). It moves only when that partition's leadership moves, and then the old
coordinator answers NOT_COORDINATOR (or is unreachable): the key is forgotten and asked again in the same
call, so a moved coordinator costs one more round, never a wrong or missing answer. Any other per-key error
from a remembered coordinator forgets the key too (its next call finds it afresh).

`serving` is off on a loop's first pass and on its full passes: answers are then remembered but none is
used, so a one-off scan sends exactly the FindCoordinator requests it always did.

Threading: one scan at a time uses a cache (the loop's); the admin client's I/O thread calls it only while
the scan thread waits for that call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable

from kafka_txn_tools.connection.fan_out import Lookup

TRANSACTION, GROUP = "transaction", "group"
# Answered by a key's coordinator no longer: Kafka's clients then mark the coordinator unknown.
MOVED = frozenset({"NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE"})


class CoordinatorCache:
    def __init__(self) -> None:
        self._nodes: dict[tuple[str, str], int] = {}
        self.serving = False

    def known(self, kind: str, keys: Iterable[str]) -> dict[str, int]:
        """The remembered coordinators of `keys` (none unless serving)."""
        if not self.serving:
            return {}
        return {k: node for k in keys if (node := self._nodes.get((kind, k))) is not None}

    def remember(self, kind: str, found: dict[str, int]) -> None:
        self._nodes.update(((kind, k), node) for k, node in found.items())

    def forget(self, kind: str, keys: Iterable[str]) -> None:
        for k in keys:
            self._nodes.pop((kind, k), None)

    def clear(self) -> None:
        self._nodes.clear()

    def finder(self, kind: str, find: Callable[[list[str]], Awaitable[Lookup]], served: set[str]
               ) -> Callable[[list[str]], Awaitable[Lookup]]:
        """`find` (FindCoordinator) for the keys without a remembered coordinator; the others answered from
        here and added to `served`. What FindCoordinator answers is remembered; a key it fails is forgotten."""
        async def lookup(keys: list[str]) -> Lookup:
            hit = self.known(kind, keys)
            served.update(hit)
            rest = [k for k in keys if k not in hit]
            found, failed = await find(rest) if rest else ({}, {})
            self.remember(kind, found)
            self.forget(kind, failed)
            return {**hit, **found}, failed

        return lookup

    def after_error(self, kind: str, keys: Iterable[str], served: set[str], last: bool) -> list[str]:
        """A remembered coordinator failed `keys` (an error, or no answer): forget them; the ones it was asked
        about from here (`served`) are asked again (FindCoordinator first) unless this was the last round."""
        keys = list(keys)
        self.forget(kind, keys)
        again = [k for k in keys if k in served]
        served.difference_update(again)
        return [] if last else again


def or_fresh(coordinators: CoordinatorCache | None) -> CoordinatorCache:
    """A one-off call's: remembers for itself alone."""
    return coordinators if coordinators is not None else CoordinatorCache()
