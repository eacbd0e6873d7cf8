"""CoordinatorLoader: replays a coordinator partition's log into a shard, in chunks (Kafka's
CoordinatorLoaderImpl), and `replay_chunk`, the one loop that hands a chunk's batches to a shard.

A load reads the partition from its log start offset to its log end offset, `chunk_bytes` of whole
batches at a time (Kafka's offsets.load.buffer.size, transaction.state.log.load.buffer.size,
share.coordinator.load.buffer.size), and hands each batch to the shard. After each chunk, and within a
chunk after every `step_records` records, it awaits `pace` (by default one turn of the event loop): Kafka
loads on a thread of its own, here the load shares the event loop with request handling, so it gives the
loop back after a bounded amount of replay work (a 5 MiB chunk holds some 80,000 records, far too many to
replay in one step). Requests for the partition meanwhile get COORDINATOR_LOAD_IN_PROGRESS from the
runtime.

The log end is read again before every chunk, and the load ends in the same event-loop step as the check
that found nothing more to read. So a record appended to the partition while it loads (a transaction
marker written to `__consumer_offsets`, say) is either replayed by the load or written after it ended,
when the shard is active and told about it directly.

`load_now` is the same replay without the pauses, for a node driven by hand outside an event loop (unit
tests).

Threading: one asyncio event loop owns broker state; a load runs as a task on it and touches the shard
only between its awaits, never concurrently with a request.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from kafka_txn_broker.formats.errors import NotLeaderForPartitionError
from kafka_txn_broker.formats.record_batch import BatchHeader, iter_batches

if TYPE_CHECKING:
    from kafka_txn_broker.clock import Clock
    from kafka_txn_broker.coordinator.coordinator_log import CoordinatorLog

# Kafka's default of the three *.load.buffer.size configs.
DEFAULT_LOAD_BUFFER_BYTES = 5 * 1024 * 1024
# Records replayed between two yields to the event loop (a few milliseconds of work).
DEFAULT_STEP_RECORDS = 1000

Pace = Callable[[], Awaitable[None]]


class CoordinatorPlayback(Protocol):
    """What a load replays records into (Kafka's CoordinatorPlayback)."""

    def replay_batch(self, batch: bytes, header: BatchHeader) -> None:
        """Apply one batch of the partition's log (control batches included: transaction markers)."""
        ...


@dataclass
class LoadSummary:
    """What a load read (Kafka's LoadSummary)."""

    start_ms: int
    end_ms: int = 0
    chunks: int = 0
    batches: int = 0
    records: int = 0
    bytes: int = 0
    next_offset: int = 0


async def yield_to_loop() -> None:
    """The default pace: let every other ready task (requests) run before the next chunk."""
    await asyncio.sleep(0)


def replay_chunk(playback: CoordinatorPlayback, chunk: bytes, from_offset: int) -> int:
    """Apply the whole batches of a log chunk that reach `from_offset` or beyond (a chunk starts with the
    batch holding the offset it was read from); return the offset after the last batch."""
    stats = LoadSummary(0, next_offset=from_offset)
    for _step in _replay_steps(playback, chunk, from_offset, None, stats):
        pass
    return stats.next_offset


def _replay_steps(playback: CoordinatorPlayback, chunk: bytes, from_offset: int, step_records: int | None,
                  stats: LoadSummary) -> Iterator[None]:
    """The one replay loop: batch after batch into `playback`, counted in `stats` (its next_offset at least
    from_offset); yields after every `step_records` records replayed, unless the chunk ends there."""
    batches = list(iter_batches(chunk))
    since_yield = 0
    for i, (pos, header) in enumerate(batches):
        if header.last_offset >= from_offset:
            playback.replay_batch(chunk[pos:pos + header.size], header)
            stats.batches += 1
            stats.records += header.record_count
            since_yield += header.record_count
        stats.next_offset = max(stats.next_offset, header.next_offset)
        if step_records is not None and since_yield >= step_records and i + 1 < len(batches):
            since_yield = 0
            yield None


class CoordinatorLoader:
    """Collaborators come through the constructor: the coordinator topic's log on this node, the chunk
    size, the clock (load times), the pace awaited between steps (tests pass a gate to hold a load at a
    step) and the records replayed in one step."""

    def __init__(self, log: CoordinatorLog, chunk_bytes: int, clock: Clock, pace: Pace = yield_to_loop,
                 step_records: int = DEFAULT_STEP_RECORDS) -> None:
        if chunk_bytes < 1:
            raise ValueError(f"a load buffer of {chunk_bytes} bytes: it must be at least 1")
        if step_records < 1:
            raise ValueError(f"{step_records} records per load step: it must be at least 1")
        self.log = log
        self.chunk_bytes = chunk_bytes
        self.clock = clock
        self.pace = pace
        self.step_records = step_records

    async def load(self, topic: str, partition: int, playback: CoordinatorPlayback) -> LoadSummary:
        """Replay the partition into `playback`, awaiting the pace between steps. Raises the Kafka error
        when this node has no replica of it (NOT_LEADER_OR_FOLLOWER), or what replaying raised."""
        summary = LoadSummary(self.clock.millis())
        for _step in self._steps(topic, partition, playback, summary):
            await self.pace()
        # No await since the last look at the log end: see the module docstring.
        summary.end_ms = self.clock.millis()
        return summary

    def load_now(self, topic: str, partition: int, playback: CoordinatorPlayback) -> LoadSummary:
        """The same replay in one go (no event loop to yield to)."""
        summary = LoadSummary(self.clock.millis())
        for _step in self._steps(topic, partition, playback, summary):
            pass
        summary.end_ms = self.clock.millis()
        return summary

    def _steps(self, topic: str, partition: int, playback: CoordinatorPlayback,
               summary: LoadSummary) -> Iterator[None]:
        """Replay chunk after chunk, yielding after each one and every `step_records` records within one;
        stops at the log end."""
        offset = self.log.log_start_offset(partition)
        if offset is None:
            raise NotLeaderForPartitionError(f"cannot load {topic}-{partition}: this node has no replica of it")
        summary.next_offset = offset
        while True:
            end = self.log.log_end_offset(partition)
            if end is None:
                raise NotLeaderForPartitionError(f"stopped loading {topic}-{partition}: its replica is gone")
            if offset >= end:
                return
            chunk = self.log.read(partition, offset, self.chunk_bytes)
            if not chunk:
                return  # Kafka's loader stops the same way when a read returns nothing before the end it saw
            summary.chunks += 1
            summary.bytes += len(chunk)
            yield from _replay_steps(playback, chunk, offset, self.step_records, summary)
            if summary.next_offset <= offset:
                raise RuntimeError(f"no progress loading {topic}-{partition} at offset {offset}")
            offset = summary.next_offset
            yield None
