"""Small stand-ins for the transaction coordinator's collaborators: no sockets, no cluster.

FakePartitionLog plays this node's replicas of `__transaction_state` (a CoordinatorLog): it assigns
offsets like a leader, keeps the batches for a later load (read back in whole batches), and fails an append
when told to.
FakeMetadata answers the metadata view; FakeMarkers plays the leaders that receive markers;
FakeCoordinator wires a TransactionCoordinator on them. FakeReplicas (this node's replicas, only their
producer state) and AskedCoordinator (a transaction coordinator that records its questions) are the
collaborators of the transaction verifiers (txn/verification.py, txn/offset_commit_verification.py).
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Iterable
from typing import TypeVar

from kafka_txn_broker.clock import ManualClock
from kafka_txn_broker.configs.broker_config import BrokerConfig
from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.errors import NotLeaderForPartitionError
from kafka_txn_broker.formats.partitioning import TXN_TOPIC
from kafka_txn_broker.formats.record_batch import BatchHeader, iter_batches, iter_records, with_base_offset
from kafka_txn_broker.formats.transaction_log import TransactionLogValue, decode_key, decode_value
from kafka_txn_broker.log.producer_state import ProducerStateEntry
from kafka_txn_broker.txn.coordinator import TransactionCoordinator
from kafka_txn_broker.txn.faults import FaultyMarkerWriter, UpstreamBugs
from kafka_txn_broker.txn.marker_channel import TransactionMarkerChannelManager
from kafka_txn_broker.txn.state_manager import TransactionStateManager
from kafka_txn_broker.txn.transaction_metadata import TransactionMetadata
from tests.broker.coordinator.fakes import read_batches

TopicPartition = tuple[str, int]
T = TypeVar("T")


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

    def log_start_offset(self, partition: int) -> int | None:
        return 0

    def log_end_offset(self, partition: int) -> int | None:
        return sum(BatchHeader.parse(b).record_count for b in self.batches.get(partition, []))

    def read(self, partition: int, offset: int, max_bytes: int) -> bytes:
        return read_batches(self.batches.get(partition, []), offset, max_bytes)

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
        # The leaders' producer state: (partition, producer id) -> (epoch, open transaction?).
        self.producers: dict[tuple[TopicPartition, int], tuple[int, bool]] = {}

    def answer(self, tp: TopicPartition, *codes: int) -> None:
        self.answers.setdefault(tp, deque()).extend(codes)

    def write_marker(self, leader: int, tp: TopicPartition, producer_id: int, producer_epoch: int, commit: bool,
                     coordinator_epoch: int, transaction_version: int, transactional_id: str = "") -> int:
        self.sent.append((leader, tp, producer_id, producer_epoch, commit, coordinator_epoch, transaction_version))
        queue = self.answers.get(tp)
        code = queue.popleft() if queue else E.NONE
        if code == E.NONE:
            self.producers[(tp, producer_id)] = (producer_epoch, False)  # the marker closed the transaction
        return code

    def producer_epoch_on(self, leader: int, tp: TopicPartition, producer_id: int) -> tuple[int, bool] | None:
        return self.producers.get((tp, producer_id))


class FakeCoordinator:
    """A TransactionCoordinator on the fakes above: this node leads the one __transaction_state partition,
    topic `t` has 3 partitions led by node 1, and every marker lands. The methods mirror the cluster
    harness (tests/broker/harness.py), so a test can run on either."""

    def __init__(self, config: dict[str, object] | None = None) -> None:
        self.clock = ManualClock()
        self.log = FakePartitionLog()
        self.log.lead(0)
        self.topics = FakeMetadata({TXN_TOPIC: 1, "t": 3})
        self.topics.leaders.update({("t", p): 1 for p in range(3)})
        self.markers = FakeMarkers()
        cfg = BrokerConfig(config or {})
        self.state = TransactionStateManager(0, cfg, self.clock, self.log, self.topics)
        self.config = cfg
        self.bugs = UpstreamBugs(cfg)
        channel = TransactionMarkerChannelManager(self.state, self.topics, FaultyMarkerWriter(self.markers, self.bugs),
                                                  lambda: True)
        self._ids = itertools.count(1000)
        self.coordinator = TransactionCoordinator(0, cfg, self.clock, self.state, channel, self, lambda: True,
                                                  self.bugs)
        self.state.load_partition(0, 1)

    def generate(self) -> int:  # the ProducerIdGenerator
        return next(self._ids)

    def run(self, fn: Callable[[], T]) -> T:
        return fn()

    def coord(self, txn_id: str) -> TransactionCoordinator:
        return self.coordinator

    def metadata(self, txn_id: str) -> TransactionMetadata | None:
        return self.state.get(txn_id)[1]

    def init(self, txn_id: str, timeout_ms: int = 60000, pid: int = -1, epoch: int = -1, enable_2pc: bool = False,
             keep_prepared: bool = False) -> tuple[int, int, int]:
        return self.coordinator.init_producer_id(txn_id, timeout_ms, pid, epoch, enable_2pc, keep_prepared)

    def add(self, txn_id: str, pid: int, epoch: int, *parts: TopicPartition, tv: int = 0) -> int:
        return self.coordinator.add_partitions_to_transaction(txn_id, pid, epoch, parts, tv)

    def end(self, txn_id: str, pid: int, epoch: int, commit: bool, tv: int = 0) -> tuple[int, int, int]:
        return self.coordinator.end_transaction(txn_id, pid, epoch, commit, client_tv=tv)

    def records_written(self) -> int:
        return len(self.log.records(0))


class FakeReplica:
    """One replica as the verifiers read it: `replica.log.producer_state.last_entry(pid)`."""

    def __init__(self) -> None:
        self.entries: dict[int, ProducerStateEntry] = {}

    @property
    def log(self) -> FakeReplica:  # only the log's producer state is read, so the replica plays its log too
        return self

    @property
    def producer_state(self) -> FakeReplica:
        return self

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self.entries.get(producer_id)


class FakeReplicas:
    """This node's replicas (LocalReplicas); a partition never touched here is not a replica of this node."""

    def __init__(self) -> None:
        self.replicas: dict[TopicPartition, FakeReplica] = {}

    def host(self, topic: str, partition: int) -> FakeReplica:
        return self.replicas.setdefault((topic, partition), FakeReplica())

    def producer(self, tp: TopicPartition, producer_id: int, epoch: int, txn_first_offset: int | None) -> None:
        """The producer's last state on the replica: an open transaction from `txn_first_offset`, or none."""
        self.host(*tp).entries[producer_id] = ProducerStateEntry(producer_id, epoch,
                                                                 current_txn_first_offset=txn_first_offset)

    def get(self, topic: str, partition: int) -> FakeReplica | None:
        return self.replicas.get((topic, partition))


class AskedCoordinator:
    """The transaction coordinators as a verifier reaches them (CoordinatorLookup and PartitionsInTransaction):
    records every lookup and question, answers `answer`; `available = False` plays no coordinator."""

    def __init__(self, answer: int = E.NONE) -> None:
        self.answer = answer
        self.available = True
        self.lookups: list[str] = []
        # ("add" | "verify", transactional id, producer id, epoch, partitions, client_tv or None)
        self.asked: list[tuple[str, str, int, int, list[TopicPartition], int | None]] = []

    def coordinator_of(self, transactional_id: str) -> AskedCoordinator | None:
        self.lookups.append(transactional_id)
        return self if self.available else None

    def add_partitions_to_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int,
                                      partitions: Iterable[TopicPartition], client_tv: int) -> int:
        self.asked.append(("add", transactional_id, producer_id, producer_epoch, list(partitions), client_tv))
        return self.answer

    def verify_partitions_in_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int,
                                         partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        parts = list(partitions)
        self.asked.append(("verify", transactional_id, producer_id, producer_epoch, parts, None))
        return dict.fromkeys(parts, self.answer)
