"""A cumulative latency histogram in Prometheus' shape (fixed upper bounds, a count and a sum), for
metrics such as KIP-1289's TxnShareAcknowledgeRequestLatencyMs. Pure; event-loop owned like its owner."""

from __future__ import annotations

import bisect

# Milliseconds: from a local staging (well under 1 ms here) to a slow coordinator.
DEFAULT_BOUNDS_MS = (0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 1000.0)


class Histogram:
    def __init__(self, bounds: tuple[float, ...] = DEFAULT_BOUNDS_MS) -> None:
        self.bounds = bounds
        self._counts = [0] * (len(bounds) + 1)  # the last one: above every bound
        self.count = 0
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self._counts[bisect.bisect_left(self.bounds, value)] += 1
        self.count += 1
        self.sum += value

    def cumulative(self) -> list[tuple[float, int]]:
        """(upper bound, observations at or below it), ending with (inf, count)."""
        out, seen = [], 0
        for bound, n in zip((*self.bounds, float("inf")), self._counts, strict=True):
            seen += n
            out.append((bound, seen))
        return out
