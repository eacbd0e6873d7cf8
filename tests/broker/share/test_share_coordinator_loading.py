"""The share coordinator on the coordinator runtime, on fakes: a `__share_group_state` partition that loads.

Expected values follow Kafka's ShareCoordinatorService: while a partition loads, the state of its share-partitions
is answered COORDINATOR_LOAD_IN_PROGRESS (the persister of the share-partition leader retries it); once the log is
replayed the state is served as written, staged acknowledgements whose COMMIT marker landed during the load
applied.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from kafka_txn_broker.clock import ManualClock
from kafka_txn_broker.coordinator.loader import CoordinatorLoader
from kafka_txn_broker.coordinator.partition_writer import PartitionWriter
from kafka_txn_broker.formats.errors import CoordinatorLoadInProgressError
from kafka_txn_broker.formats.share_coordinator_records import StateBatch
from kafka_txn_broker.share.record_state import RecordState
from kafka_txn_broker.share.share_coordinator import SHARE_STATE_TOPIC, ShareCoordinator
from kafka_txn_broker.share.share_coordinator_shard import ShareCoordinatorShard
from tests.broker.coordinator.fakes import FakeCoordinatorLog, Gate, run, settle
from tests.broker.share.share_fakes import KEY
from tests.broker.txn.fakes import FakeMetadata

NODE = 1
PID = 1000
ACKED = int(RecordState.ACKNOWLEDGED)


@dataclass
class Leadership:
    topic: str
    partition: int
    leader: int
    leader_epoch: int


class NoPruning:
    def prune(self, partition: int, offset: int) -> int | None:
        return None


def make() -> tuple[ShareCoordinator, FakeCoordinatorLog, Gate]:
    clock = ManualClock()
    log = FakeCoordinatorLog()
    previous = ShareCoordinatorShard(0, PartitionWriter(log, 0), clock)  # what a previous leader wrote
    previous.finish_load()
    previous.initialize_state(KEY, 0, 0)
    previous.write_state(KEY, 0, 1, 0, [StateBatch(0, 4, ACKED, 1)])
    previous.stage_state(KEY, 1, PID, 0, [StateBatch(5, 6, ACKED, 1)])  # its transaction is still open
    metadata = FakeMetadata({SHARE_STATE_TOPIC: 1})
    metadata.leaders[(SHARE_STATE_TOPIC, 0)] = NODE
    gate = Gate()
    coordinator = ShareCoordinator(NODE, log, metadata, clock, 500, NoPruning(), 10**9, 10**9,
                                   CoordinatorLoader(log, 1, clock, gate))  # one batch per chunk
    return coordinator, log, gate


def test_the_state_of_a_loading_partition_waits_then_is_served_from_the_log() -> None:
    coordinator, log, gate = make()

    async def scenario() -> None:
        coordinator.on_leadership_change([Leadership(SHARE_STATE_TOPIC, 0, NODE, 2)])  # type: ignore[list-item]
        await gate.reached(1)
        with pytest.raises(CoordinatorLoadInProgressError):
            coordinator.shard(0)
        assert coordinator.loaded_shards() == []
        log.of(0).marker(producer_id=PID, commit=True)  # the staging transaction commits meanwhile
        coordinator.on_transaction_marker(0, PID, True)
        gate.open_all()
        await settle()

    run(scenario())
    state = coordinator.shard(0).read_state(KEY, -1)
    assert state is not None and state.batches == [StateBatch(0, 6, ACKED, 1)]
    assert coordinator.shard(0).staged_of(KEY) == []


def test_the_share_coordinator_loads_the_partitions_it_is_elected_for_and_drops_the_others() -> None:
    coordinator, _log, gate = make()

    async def scenario() -> None:
        gate.open_all()
        coordinator.on_leadership_change([Leadership(SHARE_STATE_TOPIC, 0, NODE, 2)])  # type: ignore[list-item]
        await settle()
        assert len(coordinator.loaded_shards()) == 1
        coordinator.on_leadership_change([Leadership(SHARE_STATE_TOPIC, 0, 2, 3)])  # type: ignore[list-item]

    run(scenario())
    assert coordinator.loaded_shards() == [] and coordinator.runtime.state(0) is None
