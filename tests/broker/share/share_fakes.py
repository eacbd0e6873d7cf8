"""Small stand-ins for SharePartition's collaborators: log batches, group limits, a persister."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import NamedTuple

from kafka_txn_broker.formats.errors import CoordinatorNotAvailableError
from kafka_txn_broker.formats.share_coordinator_records import StateBatch
from kafka_txn_broker.share.share_partition import PersistedState, SharePartitionKey

KEY = SharePartitionKey("g", uuid.UUID(int=7), 0)


class Batch(NamedTuple):
    base_offset: int
    last_offset: int
    producer_id: int = -1
    is_transactional: bool = False
    is_control: bool = False


def batches(*spans: tuple[int, int]) -> list[Batch]:
    return [Batch(a, b) for a, b in spans]


@dataclass
class Limits:
    lock_ms: int = 30_000
    delivery_limit: int = 5
    max_in_flight: int = 2000

    def record_lock_duration_ms(self) -> int:
        return self.lock_ms

    def delivery_count_limit(self) -> int:
        return self.delivery_limit

    def max_in_flight_records(self) -> int:
        return self.max_in_flight


@dataclass
class FakePersister:
    """Keeps what a share coordinator would: the start offset and each persisted offset's state."""

    start: int = -1
    state_epoch: int = 0
    offsets: dict[int, tuple[int, int]] = field(default_factory=dict)
    writes: list[tuple[int, list[StateBatch]]] = field(default_factory=list)
    fail: Exception | None = None
    # Who asked, as the share coordinator sees it: (key, leader epoch) per read; (key, state epoch,
    # leader epoch) per write. The coordinator fences writes by these epochs.
    reads: list[tuple[SharePartitionKey, int]] = field(default_factory=list)
    writers: list[tuple[SharePartitionKey, int, int]] = field(default_factory=list)

    def read_state(self, key: SharePartitionKey, leader_epoch: int) -> PersistedState:
        self.reads.append((key, leader_epoch))
        out: list[StateBatch] = []
        for off in sorted(self.offsets):
            st, cnt = self.offsets[off]
            if out and out[-1].last_offset + 1 == off and out[-1][2:] == (st, cnt):
                out[-1] = out[-1]._replace(last_offset=off)
            else:
                out.append(StateBatch(off, off, st, cnt))
        return PersistedState(self.state_epoch, self.start, out)

    def write_state(self, key: SharePartitionKey, state_epoch: int, leader_epoch: int, start_offset: int,
                    batches: list[StateBatch]) -> None:
        if self.fail is not None:
            raise self.fail
        self.writers.append((key, state_epoch, leader_epoch))
        self.writes.append((start_offset, list(batches)))
        self.start = start_offset
        for b in batches:
            for off in range(b.first_offset, b.last_offset + 1):
                self.offsets[off] = (b.delivery_state, b.delivery_count)
        self.offsets = {o: v for o, v in self.offsets.items() if o >= start_offset}

    def unavailable(self) -> None:
        self.fail = CoordinatorNotAvailableError("share coordinator is down")
