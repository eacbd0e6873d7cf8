"""CoordinatorRuntime on fakes: each partition's state through loads, unloads, failures and newer epochs, and what a
request for it gets meanwhile.

Expected values follow Kafka's CoordinatorRuntime: a partition is LOADING from its election until its log is
replayed, then ACTIVE; a request gets COORDINATOR_LOAD_IN_PROGRESS while it loads and NOT_COORDINATOR when it
is not loaded here (never, failed, unloaded); a load at an epoch no newer than the partition's is ignored, a
newer one while LOADING or ACTIVE only takes the epoch; an unload older than the partition's epoch is ignored;
a load that ends after its partition was unloaded (or unloaded and loaded again) changes nothing.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest

from kafka_txn_broker.clock import ManualClock
from kafka_txn_broker.coordinator.loader import CoordinatorLoader
from kafka_txn_broker.coordinator.runtime import CoordinatorRuntime, CoordinatorState
from kafka_txn_broker.formats.errors import CoordinatorLoadInProgressError, NotCoordinatorError
from tests.broker.coordinator.fakes import FakeCoordinatorLog, Gate, RecordingShard, run, settle

TOPIC = "__coordinator_topic"
NODE = 1
L = CoordinatorState.LOADING
A = CoordinatorState.ACTIVE
F = CoordinatorState.FAILED


@dataclass
class Change:
    topic: str
    partition: int
    leader: int
    leader_epoch: int


class Setup:
    """A runtime over a fake log of three partitions (4, 2 and 0 batches), one batch per chunk, with a gate."""

    def __init__(self, gated: bool = True) -> None:
        self.log = FakeCoordinatorLog()
        self.log.fill(0, 4)
        self.log.fill(1, 2)
        self.gate = Gate()
        self.clock = ManualClock()
        loader = CoordinatorLoader(self.log, 1, self.clock, self.gate) if gated else \
            CoordinatorLoader(self.log, 1, self.clock)
        self.built: list[RecordingShard] = []
        self.loaded: list[tuple[int, RecordingShard]] = []
        self.fail_at: dict[tuple[int, int], int] = {}  # (partition, epoch) -> offset whose replay fails
        self.runtime = CoordinatorRuntime(TOPIC, NODE, loader, self.build, lambda p, s: self.loaded.append((p, s)))

    def build(self, partition: int, epoch: int) -> RecordingShard:
        shard = RecordingShard(partition, epoch, self.fail_at.get((partition, epoch)))
        self.built.append(shard)
        return shard

    def answer(self, partition: int) -> str:
        """What a request for the partition gets."""
        try:
            self.runtime.active(partition)
        except CoordinatorLoadInProgressError:
            return "COORDINATOR_LOAD_IN_PROGRESS"
        except NotCoordinatorError:
            return "NOT_COORDINATOR"
        return "served"


def test_a_partition_loads_then_is_active_and_requests_wait_until_then() -> None:
    s = Setup()

    async def scenario() -> None:
        s.runtime.schedule_load(0, 5)
        assert s.runtime.state(0) is L and s.answer(0) == "COORDINATOR_LOAD_IN_PROGRESS"
        await s.gate.reached(1)
        s.gate.open()
        await s.gate.reached(2)  # two of four batches replayed
        assert s.runtime.state(0) is L and s.answer(0) == "COORDINATOR_LOAD_IN_PROGRESS"
        assert s.runtime.loading and s.runtime.loading_partitions() == [0]
        s.gate.open_all()
        await settle()

    run(scenario())
    [shard] = s.built
    assert s.runtime.state(0) is A and s.runtime.active(0) is shard and s.runtime.epoch(0) == 5
    assert shard.replayed == [0, 1, 2, 3] and shard.finished and not shard.unloaded
    assert s.loaded == [(0, shard)] and not s.runtime.loading
    assert s.runtime.load_in_progress_answers == 2


def test_other_partitions_are_served_while_one_loads() -> None:
    s = Setup()

    async def scenario() -> list[str]:
        s.runtime.schedule_load(2, 1)  # empty: active at the first turn of the loop
        await settle()
        s.runtime.schedule_load(0, 1)
        await s.gate.reached(1)
        return [s.answer(2), s.answer(0), s.answer(1)]

    assert run(scenario()) == ["served", "COORDINATOR_LOAD_IN_PROGRESS", "NOT_COORDINATOR"]
    assert [p for p, _shard in s.loaded] == [2]


def test_a_partition_never_loaded_here_is_not_coordinator() -> None:
    s = Setup()
    assert s.answer(0) == "NOT_COORDINATOR" and s.runtime.state(0) is None
    with pytest.raises(NotCoordinatorError, match=f"{TOPIC}-0"):
        s.runtime.active(0)


def test_unloading_a_partition_while_it_loads_stops_the_load_and_discards_it() -> None:
    s = Setup()

    async def scenario() -> None:
        s.runtime.schedule_load(0, 1)
        await s.gate.reached(1)
        reads = len(s.log.reads)
        s.runtime.schedule_unload(0)
        assert s.runtime.state(0) is None and s.answer(0) == "NOT_COORDINATOR"
        s.gate.open_all()
        await settle()
        assert len(s.log.reads) == reads  # the load task was cancelled: nothing more read

    run(scenario())
    [shard] = s.built
    assert shard.unloaded and not shard.finished and s.loaded == []


def test_a_load_replaced_by_a_reload_at_a_newer_epoch_is_discarded() -> None:
    # The transaction coordinator unloads and loads again on an election at a newer epoch (Kafka's
    # onElection): the first load's end must not install its shard.
    s = Setup()

    async def scenario() -> None:
        s.runtime.schedule_load(0, 1)
        await s.gate.reached(1)
        s.runtime.schedule_unload(0)
        s.runtime.schedule_load(0, 2)
        assert s.runtime.state(0) is L and s.runtime.epoch(0) == 2
        s.gate.open_all()
        await settle()

    run(scenario())
    first, second = s.built
    assert (first.epoch, second.epoch) == (1, 2)
    assert first.unloaded and not first.finished
    assert second.finished and s.runtime.active(0) is second and s.loaded == [(0, second)]


def test_a_newer_epoch_while_loading_keeps_the_load_and_takes_the_epoch() -> None:
    s = Setup()

    async def scenario() -> None:
        s.runtime.schedule_load(0, 1)
        await s.gate.reached(1)
        s.runtime.schedule_load(0, 3)  # Kafka: "already loading"
        s.gate.open_all()
        await settle()

    run(scenario())
    [shard] = s.built
    assert s.runtime.active(0) is shard and s.runtime.epoch(0) == 3 and shard.epoch == 1


def test_loads_and_unloads_older_than_the_partition_epoch_are_ignored() -> None:
    s = Setup(gated=False)
    s.runtime.schedule_load(1, 5)  # outside an event loop: loaded at once
    [shard] = s.built
    for epoch in (4, 5):
        s.runtime.schedule_load(1, epoch)
        s.runtime.schedule_unload(1, epoch)
    assert s.built == [shard] and s.runtime.active(1) is shard and not shard.unloaded
    s.runtime.schedule_unload(1, 6)
    assert shard.unloaded and s.runtime.state(1) is None


def test_a_failed_load_answers_not_coordinator_until_a_newer_epoch_loads_it() -> None:
    s = Setup(gated=False)
    s.fail_at[(0, 1)] = 2

    async def scenario() -> list[str]:
        s.runtime.schedule_load(0, 1)
        await settle()
        seen = [s.answer(0)]
        s.runtime.schedule_load(0, 1)  # the same epoch: ignored
        await settle()
        seen.append(s.answer(0))
        s.runtime.schedule_load(0, 2)
        await settle()
        seen.append(s.answer(0))
        return seen

    assert run(scenario()) == ["NOT_COORDINATOR", "NOT_COORDINATOR", "served"]
    failed, loaded = s.built
    assert failed.replayed == [0, 1] and failed.unloaded and not failed.finished
    assert s.loaded == [(0, loaded)] and s.runtime.epoch(0) == 2


def test_ensure_loading_starts_a_load_that_is_missing_or_failed_and_leaves_the_others() -> None:
    s = Setup(gated=False)
    s.fail_at[(0, 0)] = 0
    s.runtime.ensure_loading(0)  # no election seen yet (a node starting): load at epoch 0
    assert s.runtime.state(0) is F
    del s.fail_at[(0, 0)]
    s.runtime.ensure_loading(0)  # the failed load is tried again
    assert s.runtime.state(0) is A
    shard = s.runtime.active(0)
    s.runtime.ensure_loading(0)  # active: nothing to do
    assert s.runtime.active(0) is shard and len(s.built) == 2


def test_leadership_changes_load_and_unload_this_topic_only() -> None:
    s = Setup(gated=False)
    s.runtime.on_leadership_change([Change(TOPIC, 0, NODE, 3), Change(TOPIC, 1, 2, 3), Change("other", 2, NODE, 1)])
    assert (s.runtime.state(0), s.runtime.state(1), s.runtime.state(2)) == (A, None, None)
    shard = s.runtime.active(0)
    s.runtime.on_leadership_change([Change(TOPIC, 0, NODE, 3)])  # announced again (an ISR change)
    assert s.runtime.active(0) is shard
    s.runtime.on_leadership_change([Change(TOPIC, 0, 2, 4)])  # moved to node 2
    assert s.runtime.state(0) is None and shard.unloaded


def test_close_unloads_every_partition_and_stops_the_loads() -> None:
    s = Setup()

    async def scenario() -> None:
        s.runtime.schedule_load(2, 1)
        await settle()
        s.runtime.schedule_load(0, 1)
        await s.gate.reached(1)
        s.runtime.close()
        s.gate.open_all()
        await settle()

    run(scenario())
    assert [sh.unloaded for sh in s.built] == [True, True]
    assert s.runtime.active_shards() == [] and [p for p, _shard in s.loaded] == [2]


def test_a_shard_that_fails_to_finish_its_load_fails_the_partition() -> None:
    s = Setup(gated=False)

    class Unfinishable(RecordingShard):
        def finish_load(self) -> None:
            raise RuntimeError("bad state")

    s.runtime.build_shard = lambda p, e: Unfinishable(p, e)
    s.runtime.schedule_load(1, 1)
    assert s.runtime.state(1) is F and s.answer(1) == "NOT_COORDINATOR" and s.loaded == []


def test_the_load_task_is_named_after_its_partition() -> None:
    s = Setup()

    async def scenario() -> list[str]:
        s.runtime.schedule_load(0, 1)
        names = [t.get_name() for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        s.runtime.close()
        await settle()
        return names

    assert run(scenario()) == [f"load-{TOPIC}-0"]
