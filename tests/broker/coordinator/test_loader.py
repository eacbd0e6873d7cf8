"""CoordinatorLoader on a fake coordinator log: what a load reads, in which chunks, and when it yields.

Expected values follow Kafka's CoordinatorLoaderImpl: a load reads from the log start offset to the log end
offset, re-reading the end before every read, `load.buffer.size` bytes of whole batches at a time (at least
one batch); it fails with NOT_LEADER_OR_FOLLOWER when the partition's log is not on this node; an error while
replaying fails the load.
"""

from __future__ import annotations

import asyncio

import pytest

from kafka_txn_broker.clock import ManualClock
from kafka_txn_broker.coordinator.loader import CoordinatorLoader, LoadSummary, replay_chunk
from kafka_txn_broker.formats.errors import NotLeaderForPartitionError
from kafka_txn_broker.formats.record_batch import BatchHeader, build_control_batch
from tests.broker.coordinator.fakes import FakeCoordinatorLog, Gate, RecordingShard, run, settle

P = 0


def filled(batches: int, records_per_batch: int = 1) -> tuple[FakeCoordinatorLog, int]:
    """A log of equal batches, and the size of one."""
    log = FakeCoordinatorLog()
    log.fill(P, batches, records_per_batch, size=100)
    return log, len(log.of(P).batches[0])


def test_a_load_replays_every_batch_in_chunks_of_the_load_buffer() -> None:
    log, size = filled(10)
    shard = RecordingShard(P, 0)
    summary = CoordinatorLoader(log, 3 * size, ManualClock()).load_now("t", P, shard)
    assert shard.replayed == list(range(10))
    assert [offset for _p, offset in log.reads] == [0, 3, 6, 9]  # three batches fit a buffer
    assert (summary.chunks, summary.batches, summary.records, summary.bytes, summary.next_offset) == (
        4, 10, 10, 10 * size, 10)


def test_a_batch_larger_than_the_load_buffer_is_read_whole() -> None:
    log, _size = filled(4, records_per_batch=3)
    shard = RecordingShard(P, 0)
    summary = CoordinatorLoader(log, 1, ManualClock()).load_now("t", P, shard)
    assert shard.replayed == [0, 3, 6, 9] and summary.chunks == 4 and summary.records == 12


def test_an_empty_partition_loads_without_a_read() -> None:
    log = FakeCoordinatorLog()
    summary = CoordinatorLoader(log, 100, ManualClock()).load_now("t", P, RecordingShard(P, 0))
    assert (summary.chunks, summary.records, log.reads) == (0, 0, [])


def test_a_load_starts_at_the_log_start_offset() -> None:
    log, size = filled(6)
    log.starts[P] = 4  # DeleteRecords moved the log start (the share coordinator prunes this way)
    shard = RecordingShard(P, 0)
    CoordinatorLoader(log, 100 * size, ManualClock()).load_now("t", P, shard)
    assert shard.replayed == [4, 5]


def test_a_load_times_itself_on_the_clock() -> None:
    log, _size = filled(2)
    clock = ManualClock(1_000)

    class SlowShard(RecordingShard):
        def replay_batch(self, batch: bytes, header: BatchHeader) -> None:
            super().replay_batch(batch, header)
            clock.advance(7)

    summary = CoordinatorLoader(log, 1, clock).load_now("t", P, SlowShard(P, 0))
    assert (summary.start_ms, summary.end_ms) == (1_000, 1_014)


def test_the_load_yields_to_the_event_loop_between_chunks() -> None:
    log, size = filled(9)
    shard = RecordingShard(P, 0)
    loader = CoordinatorLoader(log, 3 * size, ManualClock())  # the default pace: one turn of the loop
    seen: list[int] = []

    async def request_handling() -> None:
        # Another task (requests) runs between chunks and sees the shard only at chunk boundaries.
        while len(shard.replayed) < 9:
            seen.append(len(shard.replayed))
            await asyncio.sleep(0)

    async def both() -> LoadSummary:
        load = asyncio.create_task(loader.load("t", P, shard))
        await request_handling()
        return await load

    summary = run(both())
    assert summary.chunks == 3
    assert sorted(set(seen)) == [0, 3, 6]


def test_a_gate_holds_the_load_at_a_chunk_boundary() -> None:
    log, size = filled(6)
    shard = RecordingShard(P, 0)
    gate = Gate()
    loader = CoordinatorLoader(log, 2 * size, ManualClock(), gate)

    async def scenario() -> list[list[int]]:
        load = asyncio.create_task(loader.load("t", P, shard))
        steps = []
        await gate.reached(1)
        steps.append(list(shard.replayed))
        await settle()
        steps.append(list(shard.replayed))  # nothing more while the gate is shut
        gate.open()
        await gate.reached(2)
        steps.append(list(shard.replayed))
        gate.open_all()
        await load
        steps.append(list(shard.replayed))
        return steps

    assert run(scenario()) == [[0, 1], [0, 1], [0, 1, 2, 3], [0, 1, 2, 3, 4, 5]]


def test_a_chunk_of_many_records_is_replayed_in_steps_with_yields_between_them() -> None:
    # One 5 MiB read can hold some 80,000 records: the loop gets a turn every `step_records` records.
    log, _size = filled(10, records_per_batch=100)  # batches at 0, 100, ..., 900
    shard = RecordingShard(P, 0)
    gate = Gate()
    loader = CoordinatorLoader(log, 1 << 30, ManualClock(), gate, step_records=250)

    async def scenario() -> list[int]:
        load = asyncio.create_task(loader.load("t", P, shard))
        seen = []
        for boundary in range(1, 5):
            await gate.reached(boundary)
            seen.append(len(shard.replayed))
            gate.open()
        summary = await load
        assert (summary.chunks, summary.records) == (1, 1000)
        return seen

    assert run(scenario()) == [3, 6, 9, 10]  # whole batches: 300, 600, 900 records, then the end of the chunk
    assert len(log.reads) == 1


def test_records_appended_while_the_partition_loads_are_replayed() -> None:
    # The log end is read again before every chunk: a marker written meanwhile (a transaction ending on
    # __consumer_offsets) is replayed by the load itself.
    log, size = filled(2)
    shard = RecordingShard(P, 0)
    gate = Gate()
    loader = CoordinatorLoader(log, size, ManualClock(), gate)

    async def scenario() -> LoadSummary:
        load = asyncio.create_task(loader.load("t", P, shard))
        await gate.reached(1)
        log.of(P).marker(producer_id=77, commit=True)
        gate.open_all()
        return await load

    summary = run(scenario())
    assert shard.replayed == [0, 1, 2] and shard.markers == [77] and summary.next_offset == 3


def test_a_partition_without_a_replica_here_is_not_loaded() -> None:
    log = FakeCoordinatorLog()
    log.missing.add(P)
    with pytest.raises(NotLeaderForPartitionError):
        CoordinatorLoader(log, 100, ManualClock()).load_now("t", P, RecordingShard(P, 0))


def test_a_replica_gone_in_the_middle_of_a_load_fails_it() -> None:
    log, size = filled(4)
    gate = Gate()
    loader = CoordinatorLoader(log, size, ManualClock(), gate)

    async def scenario() -> None:
        load = asyncio.create_task(loader.load("t", P, RecordingShard(P, 0)))
        await gate.reached(1)
        log.missing.add(P)  # the replica was deleted (reassigned away)
        gate.open_all()
        await load

    with pytest.raises(NotLeaderForPartitionError):
        run(scenario())


def test_an_error_while_replaying_fails_the_load() -> None:
    log, size = filled(4)
    shard = RecordingShard(P, 0, fail_at=2)
    with pytest.raises(ValueError, match="unreadable record at 2"):
        CoordinatorLoader(log, size, ManualClock()).load_now("t", P, shard)
    assert shard.replayed == [0, 1]


def test_replay_chunk_skips_the_batches_below_the_offset_and_returns_the_next_one() -> None:
    log, _size = filled(4, records_per_batch=2)  # batches at 0, 2, 4, 6
    log.of(P).batches.append(build_control_batch(9, 0, True, 0, 0, base_offset=8))
    shard = RecordingShard(P, 0)
    assert replay_chunk(shard, log.of(P).data(), 3) == 9
    assert shard.replayed == [2, 4, 6, 8] and shard.markers == [9]  # the batch holding offset 3 included
    assert replay_chunk(RecordingShard(P, 0), b"", 5) == 5


def test_a_load_buffer_must_hold_a_byte_and_a_step_a_record() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        CoordinatorLoader(FakeCoordinatorLog(), 0, ManualClock())
    with pytest.raises(ValueError, match="at least 1"):
        CoordinatorLoader(FakeCoordinatorLog(), 1, ManualClock(), step_records=0)
