"""How many of our requests may be in flight to one broker at once; the rest wait their turn.

kafka-python fails a request sent on a connection that already has `max_in_flight_requests_per_connection`
requests in flight (5 by default) at once, with NodeNotReadyError ("Node paused: {'max_in_flight'}"), the error
it gives for a broker it cannot reach. A fan-out of one request per partition (a read of `__transaction_state`'s
50 partitions, all led by one broker of a small cluster) then saw most of its partitions "unreachable" and lost
the answers they held. Every request of ours to a named broker takes a slot here first
(connection/transport.py).

A broker that does not answer (down, or cut off by the network) must not make a burst wait one timeout per four
requests: when a request to it fails that way, the requests waiting for its slots fail at once with the same
error, as they would have without the limit. The next requests try it again.

Threading: used only on kafka-python's I/O thread (the coroutines of a Transport run there), so it needs no
lock; a waiter is a kafka-python Future, which that loop's coroutines can await.
"""

from __future__ import annotations

from collections import deque


class InFlightLimit:
    """At most `limit` requests in flight per broker: `await acquire(node)` before sending, `release(node)` once
    answered (or failed)."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"an in-flight limit must be at least 1, not {limit}")
        self.limit = limit
        self._used: dict[int, int] = {}
        self._waiting: dict[int, deque[object]] = {}

    def in_flight(self, node: int) -> int:
        return self._used.get(node, 0)

    async def acquire(self, node: int) -> None:
        from kafka.future import Future

        while self._used.get(node, 0) >= self.limit:
            turn = Future()
            self._waiting.setdefault(node, deque()).append(turn)
            await turn
        self._used[node] = self._used.get(node, 0) + 1

    def fail_waiting(self, node: int, error: BaseException) -> None:
        """Every request waiting for a slot of `node` fails with `error` (a request to it just did)."""
        for turn in self._waiting.pop(node, ()):
            turn.failure(error)  # type: ignore[attr-defined]

    def release(self, node: int) -> None:
        self._used[node] -= 1
        waiting = self._waiting.get(node)
        if waiting:
            waiting.popleft().success(None)  # type: ignore[attr-defined]
        elif not self._used[node]:
            del self._used[node]
            self._waiting.pop(node, None)
