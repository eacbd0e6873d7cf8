"""The group coordinator on the coordinator runtime, on fakes: a `__consumer_offsets` partition that loads.

Expected values follow Kafka's group coordinator: while the partition of a group loads, a request for the group
gets COORDINATOR_LOAD_IN_PROGRESS; once the log is replayed it is served with what the log holds, including
transactional offsets whose marker was written while the partition loaded.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from kafka_txn_broker.clock import ManualClock
from kafka_txn_broker.configs.broker_config import BrokerConfig
from kafka_txn_broker.coordinator.loader import CoordinatorLoader
from kafka_txn_broker.coordinator.partition_writer import PartitionWriter
from kafka_txn_broker.formats.errors import CoordinatorLoadInProgressError, NotCoordinatorError
from kafka_txn_broker.formats.group_records import OffsetValue
from kafka_txn_broker.formats.partitioning import GROUP_TOPIC
from kafka_txn_broker.group.coordinator import GroupCoordinator
from kafka_txn_broker.group.shard import GroupShard
from tests.broker.coordinator.fakes import FakeCoordinatorLog, Gate, run, settle
from tests.broker.txn.fakes import FakeMetadata

NODE = 1
TP = ("t", 0)


@dataclass
class Leadership:
    topic: str
    partition: int
    leader: int
    leader_epoch: int


def offsets_written_before(log: FakeCoordinatorLog, clock: ManualClock) -> None:
    """What a previous leader wrote: g's offset 42, and h's transactional offset 7 of producer 5 (open)."""
    previous = GroupShard(0, BrokerConfig(), clock, PartitionWriter(log, 0))
    previous.finish_load()
    previous.store_offsets("g", {TP: OffsetValue(42)})
    previous.store_txn_offsets("h", 5, 0, {TP: OffsetValue(7)})


def make() -> tuple[GroupCoordinator, FakeCoordinatorLog, Gate, FakeMetadata]:
    clock = ManualClock()
    log = FakeCoordinatorLog()
    offsets_written_before(log, clock)
    metadata = FakeMetadata({GROUP_TOPIC: 1})
    metadata.leaders[(GROUP_TOPIC, 0)] = NODE
    gate = Gate()
    coordinator = GroupCoordinator(NODE, BrokerConfig(), clock, log, metadata,
                                   loader=CoordinatorLoader(log, 1, clock, gate))  # one batch per chunk
    return coordinator, log, gate, metadata


def test_a_group_of_a_loading_partition_waits_then_is_served_from_the_log() -> None:
    coordinator, log, gate, _metadata = make()

    async def scenario() -> None:
        coordinator.on_leadership_change([Leadership(GROUP_TOPIC, 0, NODE, 3)])  # type: ignore[list-item]
        await gate.reached(1)
        for group in ("g", "h", "never-seen"):
            with pytest.raises(CoordinatorLoadInProgressError):
                coordinator.shard(group)
        assert coordinator.loading and coordinator.loaded_shards() == []
        # The transaction of h commits while the partition loads: its marker lands in the log, and the
        # coordinator is told too (nothing to tell a shard that is not active yet).
        log.of(0).marker(producer_id=5, commit=True)
        coordinator.on_transaction_marker(0, 5, True)
        gate.open_all()
        await settle()

    run(scenario())
    offsets = coordinator.shard("g").offsets
    committed = {group: offsets.of_group(group)[TP].offset for group in ("g", "h")}
    assert committed == {"g": 42, "h": 7}  # h's by the marker written during the load
    assert not offsets.has_pending("h", TP) and not coordinator.loading


def test_a_partition_moved_away_while_it_loads_is_not_coordinated_here() -> None:
    coordinator, _log, gate, metadata = make()

    async def scenario() -> None:
        coordinator.on_leadership_change([Leadership(GROUP_TOPIC, 0, NODE, 3)])  # type: ignore[list-item]
        await gate.reached(1)
        metadata.leaders[(GROUP_TOPIC, 0)] = 2
        coordinator.on_leadership_change([Leadership(GROUP_TOPIC, 0, 2, 4)])  # type: ignore[list-item]
        gate.open_all()
        await settle()

    run(scenario())
    assert coordinator.runtime.state(0) is None and coordinator.loaded_shards() == []
    with pytest.raises(NotCoordinatorError, match="led by node 2"):
        coordinator.shard("g")
