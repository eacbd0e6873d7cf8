"""Small stand-ins for the coordinator runtime's collaborators: a coordinator topic's log, a shard, a gate.

FakeCoordinatorLog plays this node's replicas of one coordinator topic (a CoordinatorLog): per partition a
FakeLog (tests/broker/group/fakes.py) that assigns offsets like a leader, read back in whole batches from
the one holding an offset, as a replica's log reads. RecordingShard records what a load replays. Gate is a
loader pace a test opens chunk by chunk, so a load stops at a known chunk boundary without sleeping.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from kafka_txn_broker.formats.record_batch import BatchHeader, build_batch, iter_batches
from tests.broker.group.fakes import FakeLog

T = TypeVar("T")


def read_batches(batches: list[bytes], offset: int, max_bytes: int) -> bytes:
    """Whole batches from the one holding `offset`, up to `max_bytes` but at least one (a log's read)."""
    out: list[bytes] = []
    size = 0
    for batch in batches:
        header = BatchHeader.parse(batch)
        if header.last_offset < offset:
            continue
        if out and size + len(batch) > max_bytes:
            break
        out.append(batch)
        size += len(batch)
    return b"".join(out)


class FakeCoordinatorLog:
    def __init__(self) -> None:
        self.logs: dict[int, FakeLog] = {}
        self.starts: dict[int, int] = {}  # a log start offset moved up (DeleteRecords)
        self.missing: set[int] = set()  # partitions this node has no replica of
        self.reads: list[tuple[int, int]] = []  # (partition, offset) of each read

    def of(self, partition: int) -> FakeLog:
        return self.logs.setdefault(partition, FakeLog())

    def append(self, partition: int, records: bytes) -> int:
        return self.of(partition).append(records)

    def log_start_offset(self, partition: int) -> int | None:
        return None if partition in self.missing else self.starts.get(partition, 0)

    def log_end_offset(self, partition: int) -> int | None:
        return None if partition in self.missing else self.of(partition).end

    def read(self, partition: int, offset: int, max_bytes: int) -> bytes:
        self.reads.append((partition, offset))
        return read_batches(self.of(partition).batches, offset, max_bytes)

    def fill(self, partition: int, batches: int, records_per_batch: int = 1, size: int = 0) -> None:
        """Append `batches` batches of `records_per_batch` records with values of `size` bytes."""
        for i in range(batches):
            self.append(partition, build_batch([(f"k{i}-{j}".encode(), b"v" * size)
                                                for j in range(records_per_batch)], timestamp_ms=0))


class RecordingShard:
    """A shard that records the offsets it was given, whether it finished loading, whether it was unloaded."""

    def __init__(self, partition: int, epoch: int, fail_at: int | None = None) -> None:
        self.partition = partition
        self.epoch = epoch
        self.fail_at = fail_at  # replaying the batch at this base offset raises
        self.replayed: list[int] = []  # base offsets
        self.markers: list[int] = []  # producer ids of the control batches
        self.finished = False
        self.unloaded = False

    def replay_batch(self, batch: bytes, header: BatchHeader) -> None:
        assert [h.base_offset for _p, h in iter_batches(batch)] == [header.base_offset]  # exactly one batch
        if header.base_offset == self.fail_at:
            raise ValueError(f"unreadable record at {header.base_offset}")
        if header.is_control:
            self.markers.append(header.producer_id)
        self.replayed.append(header.base_offset)

    def finish_load(self) -> None:
        self.finished = True

    def unload(self) -> None:
        self.unloaded = True


class Gate:
    """A loader pace that holds the load at each chunk boundary until the test lets it pass.

    `await gate.reached(n)` returns once the load has stopped at its n-th boundary (n chunks replayed);
    `gate.open(k)` lets it pass k more boundaries; `gate.open_all()` lets it run to the end."""

    def __init__(self) -> None:
        self.waits = 0  # boundaries the load reached
        self.passes = 0  # boundaries it may pass
        self._changed = asyncio.Event()

    async def __call__(self) -> None:
        self.waits += 1
        self._signal()
        while self.passes < self.waits:
            await self._wait()

    async def reached(self, n: int) -> None:
        while self.waits < n:
            await self._wait()

    def open(self, k: int = 1) -> None:
        self.passes += k
        self._signal()

    def open_all(self) -> None:
        self.open(10**9)

    async def _wait(self) -> None:
        await self._changed.wait()

    def _signal(self) -> None:
        # Wake every waiter, then arm the event again for the next change.
        self._changed.set()
        self._changed = asyncio.Event()


async def settle(turns: int = 20) -> None:
    """Let the event loop run every ready task a few times (no wall-clock wait)."""
    for _ in range(turns):
        await asyncio.sleep(0)


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)
