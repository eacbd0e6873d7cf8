"""Member session deadlines (Kafka schedules a timer per member on the coordinator's timer wheel; here a
deadline per member, checked by the coordinator's tick against the injectable clock).

    timers.schedule("g", "m1", now + session_timeout_ms)
    for group_id, member_id in timers.expired(now): ...   # fenced: removed from the group

Event-loop owned; pure.
"""

from __future__ import annotations

import heapq


class SessionTimers:
    def __init__(self) -> None:
        self._deadlines: dict[tuple[str, str], int] = {}
        self._heap: list[tuple[int, str, str]] = []

    def schedule(self, group_id: str, member_id: str, deadline_ms: int) -> None:
        """(Re)start the member's session: it expires at `deadline_ms` unless scheduled again."""
        self._deadlines[(group_id, member_id)] = deadline_ms
        heapq.heappush(self._heap, (deadline_ms, group_id, member_id))

    def cancel(self, group_id: str, member_id: str) -> None:
        self._deadlines.pop((group_id, member_id), None)

    def deadline(self, group_id: str, member_id: str) -> int | None:
        return self._deadlines.get((group_id, member_id))

    def expired(self, now_ms: int) -> list[tuple[str, str]]:
        """The sessions whose deadline passed, each once (they are forgotten)."""
        out = []
        while self._heap and self._heap[0][0] <= now_ms:
            deadline, group_id, member_id = heapq.heappop(self._heap)
            if self._deadlines.get((group_id, member_id)) == deadline:  # not rescheduled since
                del self._deadlines[(group_id, member_id)]
                out.append((group_id, member_id))
        if len(self._heap) > 4 * len(self._deadlines) + 64:  # drop superseded entries now and then
            self._heap = [(d, g, m) for (g, m), d in self._deadlines.items()]
            heapq.heapify(self._heap)
        return out
