"""Injectable time source: every timeout in the broker reads this, so tests never sleep."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def millis(self) -> int:
        """Wall-clock milliseconds since the epoch (Kafka's `time.milliseconds()`)."""
        ...

    def monotonic(self) -> float:
        """Seconds from an arbitrary origin that never goes backwards (for waits and latency)."""
        ...


class SystemClock:
    def millis(self) -> int:
        return time.time_ns() // 1_000_000

    def monotonic(self) -> float:
        return time.monotonic()


class ManualClock:
    """A clock tests move by hand; `advance` jumps both wall and monotonic time."""

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self._ms = start_ms
        self._mono = 0.0

    def millis(self) -> int:
        return self._ms

    def monotonic(self) -> float:
        return self._mono

    def advance(self, ms: int) -> None:
        self._ms += ms
        self._mono += ms / 1000.0

    def set_wall(self, ms: int) -> None:
        """Jump the wall clock only (NTP step); monotonic time is untouched."""
        self._ms = ms


SYSTEM_CLOCK = SystemClock()
