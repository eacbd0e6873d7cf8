"""Small stand-ins for the transaction coordinator's collaborators: no sockets, no cluster.

FakePartitionLog plays this node's replicas of `__transaction_state` (a CoordinatorLog): it assigns
offsets like a leader, keeps the batches for a later load, and fails an append when told to.
FakeMetadata answers the metadata view; FakeMarkers plays the leaders that receive markers.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator

from kafka.errors import NotLeaderForPartitionError

from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.partitioning import TXN_TOPIC
from kafka_txn_broker.formats.record_batch import BatchHeader, iter_batches, iter_records, with_base_offset
from kafka_txn_broker.formats.transaction_log import TransactionLogValue, decode_key, decode_value

TopicPartition = tuple[str, int]


class FakePartitionLog:
    def __init__(self) -> None:
        self.batches: dict[int, list[bytes]] = {}
        self.led: set[int] = set()  # partitions this node leads; appends elsewhere fail
        self.fail_with: Exception | None = None
        self.on_append: list[Callable[[], None]] = []  # run inside the next append, once it is written

    def lead(self, *partitions: int) -> None:
        self.led.update(partitions)

    def append(self, partition: int, records: bytes) -> int:
        if partition not in self.led:
            raise NotLeaderForPartitionError(f"not the leader of {TXN_TOPIC}-{partition}")
        if self.fail_with is not None:
            raise self.fail_with
        log = self.batches.setdefault(partition, [])
        first = sum(BatchHeader.parse(b).record_count for b in log)
        buf = bytearray(records)
        with_base_offset(buf, first, 0)
        log.append(bytes(buf))
        while self.on_append:
            self.on_append.pop(0)()
        return first

    def read(self, partition: int) -> Iterator[bytes]:
        yield from list(self.batches.get(partition, []))  # one chunk per batch: loads must cope

    def records(self, partition: int) -> list[tuple[str, TransactionLogValue | None]]:
        """Every record of a partition, decoded: (transactional id, value or None for a tombstone)."""
        out = []
        for batch in self.batches.get(partition, []):
            for _pos, header in iter_batches(batch):
                for rec in iter_records(batch):
                    assert rec.key is not None and not header.is_control
                    out.append((decode_key(rec.key), None if rec.value is None else decode_value(rec.value)))
        return out


class FakeMetadata:
    def __init__(self, partitions: dict[str, int] | None = None) -> None:
        self.partitions = dict(partitions or {})
        self.leaders: dict[TopicPartition, int] = {}

    def partition_count(self, topic: str) -> int | None:
        return self.partitions.get(topic)

    def leader(self, topic: str, partition: int) -> int | None:
        if not 0 <= partition < self.partitions.get(topic, 0):
            return None
        return self.leaders.get((topic, partition), -1)


class FakeMarkers:
    """The leaders' answers to markers: a queue of codes per partition, NONE once it runs out."""

    def __init__(self) -> None:
        self.answers: dict[TopicPartition, deque[int]] = {}
        self.sent: list[tuple[int, TopicPartition, int, int, bool, int, int]] = []

    def answer(self, tp: TopicPartition, *codes: int) -> None:
        self.answers.setdefault(tp, deque()).extend(codes)

    def write_marker(self, leader: int, tp: TopicPartition, producer_id: int, producer_epoch: int, commit: bool,
                     coordinator_epoch: int, transaction_version: int) -> int:
        self.sent.append((leader, tp, producer_id, producer_epoch, commit, coordinator_epoch, transaction_version))
        queue = self.answers.get(tp)
        return queue.popleft() if queue else E.NONE
