"""CoordinatorLoader: replays a coordinator partition's log into a shard, in chunks (Kafka's
CoordinatorLoaderImpl), and `replay_chunk`, the one loop that hands a chunk's batches to a shard.

A load reads the partition from its log start offset to its log end offset, `chunk_bytes` of whole
batches at a time (Kafka's offsets.load.buffer.size, transaction.state.log.load.buffer.size,
share.coordinator.load.buffer.size), and hands each batch to the shard. Between two chunks it awaits
`pace` (by default one turn of the event loop), so replaying a large partition never holds up request
handling: requests for the partition meanwhile get COORDINATOR_LOAD_IN_PROGRESS from the runtime.

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

from kafka.errors import NotLeaderForPartitionError

from kafka_txn_broker.formats.record_batch import BatchHeader, iter_batches

if TYPE_CHECKING:
    from kafka_txn_broker.clock import Clock
    from kafka_txn_broker.coordinator.coordinator_log import CoordinatorLog

# Kafka's default of the three *.load.buffer.size configs.
DEFAULT_LOAD_BUFFER_BYTES = 5 * 1024 * 1024

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
    next_offset, _batches, _records = _replay(playback, chunk, from_offset)
    return next_offset


def _replay(playback: CoordinatorPlayback, chunk: bytes, from_offset: int) -> tuple[int, int, int]:
    next_offset, batches, records = from_offset, 0, 0
    for pos, header in iter_batches(chunk):
        if header.last_offset >= from_offset:
            playback.replay_batch(chunk[pos:pos + header.size], header)
            batches += 1
            records += header.record_count
        next_offset = max(next_offset, header.next_offset)
    return next_offset, batches, records


class CoordinatorLoader:
    """Collaborators come through the constructor: the coordinator topic's log on this node, the chunk
    size, the clock (load times) and the pace awaited between chunks (tests pass a gate to hold a load
    at a chunk boundary)."""

    def __init__(self, log: CoordinatorLog, chunk_bytes: int, clock: Clock, pace: Pace = yield_to_loop) -> None:
        if chunk_bytes < 1:
            raise ValueError(f"a load buffer of {chunk_bytes} bytes: it must be at least 1")
        self.log = log
        self.chunk_bytes = chunk_bytes
        self.clock = clock
        self.pace = pace

    async def load(self, topic: str, partition: int, playback: CoordinatorPlayback) -> LoadSummary:
        """Replay the partition into `playback`, awaiting the pace between chunks. Raises the Kafka error
        when this node has no replica of it (NOT_LEADER_OR_FOLLOWER), or what replaying raised."""
        summary = LoadSummary(self.clock.millis())
        for _chunk in self._chunks(topic, partition, playback, summary):
            await self.pace()
        # No await since the last look at the log end: see the module docstring.
        summary.end_ms = self.clock.millis()
        return summary

    def load_now(self, topic: str, partition: int, playback: CoordinatorPlayback) -> LoadSummary:
        """The same replay in one go (no event loop to yield to)."""
        summary = LoadSummary(self.clock.millis())
        for _chunk in self._chunks(topic, partition, playback, summary):
            pass
        summary.end_ms = self.clock.millis()
        return summary

    def _chunks(self, topic: str, partition: int, playback: CoordinatorPlayback,
                summary: LoadSummary) -> Iterator[None]:
        """Replay chunk after chunk, yielding after each one; stops at the log end."""
        offset = self.log.log_start_offset(partition)
        if offset is None:
            raise NotLeaderForPartitionError(f"cannot load {topic}-{partition}: this node has no replica of it")
        while True:
            end = self.log.log_end_offset(partition)
            if end is None:
                raise NotLeaderForPartitionError(f"stopped loading {topic}-{partition}: its replica is gone")
            if offset >= end:
                summary.next_offset = offset
                return
            chunk = self.log.read(partition, offset, self.chunk_bytes)
            if not chunk:
                # Kafka's loader stops the same way when a read returns nothing before the end it saw.
                summary.next_offset = offset
                return
            next_offset, batches, records = _replay(playback, chunk, offset)
            if next_offset <= offset:
                raise RuntimeError(f"no progress loading {topic}-{partition} at offset {offset}")
            offset = next_offset
            summary.chunks += 1
            summary.batches += batches
            summary.records += records
            summary.bytes += len(chunk)
            yield None
