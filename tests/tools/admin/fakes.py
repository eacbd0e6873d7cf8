"""An in-memory stand-in for admin/api.ClusterApi, for testing the flows (scan, abort, listing, dump).

It is plain data with Kafka's rules where the flows depend on them (ListTransactions filters by
producer id and state, DescribeTransactions answers TRANSACTIONAL_ID_NOT_FOUND, DescribeProducers
errors per partition). It is not a Kafka broker: end-to-end tests use the embedded cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from kafka_txn_tools.connection.config import ClientSettings
from kafka_txn_tools.connection.coordinators import CoordinatorCache
from kafka_txn_tools.dumps.transaction_log import TxnLogRecord
from kafka_txn_tools.models import (
    BrokerInfo,
    ClusterInfo,
    DescribeResult,
    ListResult,
    OffsetRead,
    PartitionInfo,
    PartitionOffsets,
    PartitionProducers,
    ProducerState,
    ScanError,
    TopicPartition,
    TransactionDescription,
    TransactionListing,
)

NOW = 1_700_000_000_000
MIN = 60_000


def producer(pid: int, start: int = -1, age_ms: int = 0, epoch: int = 0, coordinator_epoch: int = 0) -> ProducerState:
    return ProducerState(pid, epoch, 5, NOW - age_ms, coordinator_epoch, start)


def txn(txn_id: str, pid: int, state: str = "Ongoing", partitions: Iterable[TopicPartition] = (), epoch: int = 0,
        coordinator: int = 0, start_ms: int = NOW - 20 * MIN) -> TransactionDescription:
    return TransactionDescription(txn_id, coordinator, state, pid, epoch, 60_000,
                                  start_ms if state in ("Ongoing", "PrepareCommit", "PrepareAbort") else -1,
                                  frozenset(partitions))


class LeaderAnswer(NamedTuple):
    """A leader's two ListOffsets answers for one partition: under read_uncommitted, under read_committed."""

    hw: OffsetRead
    lso: OffsetRead


@dataclass
class FakeCluster:
    partitions: list[PartitionInfo]
    brokers: list[int] = field(default_factory=lambda: [0, 1, 2])
    producers: dict[tuple[int, TopicPartition], list[ProducerState]] = field(default_factory=dict)
    transactions: dict[str, TransactionDescription] = field(default_factory=dict)
    offsets: dict[TopicPartition, tuple[int, int]] = field(default_factory=dict)
    down: set[int] = field(default_factory=set)
    partition_errors: dict[tuple[int, TopicPartition], str] = field(default_factory=dict)
    list_versions: dict[int, int] = field(default_factory=dict)  # broker -> max ListTransactions version
    # Called before each describe_producers with the call number (1, 2, ...): lets a test change state.
    before_describe: Callable[[int], None] | None = None
    describe_calls: int = 0
    leader_offset_calls: int = 0
    both_reads: int = 0  # first passes' reads of both levels at once
    lso_reads: list[set[TopicPartition]] = field(default_factory=list)  # the partitions of each LSO read
    # A leader's ListOffsets answers where a test sets them whole (epochs, errors); else see `latest_offsets`.
    leader_reads: dict[TopicPartition, LeaderAnswer] = field(default_factory=dict)
    # Replicas asked for their producer state, (broker, partition), per call.
    described: list[list[tuple[int, TopicPartition]]] = field(default_factory=list)
    markers: list[tuple[int, TopicPartition, int, int, int, int | None]] = field(default_factory=list)
    marker_error: str | None = None
    unsupported: set[str] = field(default_factory=set)  # admin APIs the "brokers" do not offer
    fenced: list[str] = field(default_factory=list)
    fence_timeouts: list[int] = field(default_factory=list)  # the transaction timeout each fence asked for
    # __transaction_state: partition -> its records (offsets in order), written at `txn_log_epoch`.
    txn_log: dict[int, list[TxnLogRecord]] = field(default_factory=dict)
    txn_log_epoch: int = 3
    log_reads: list[dict[TopicPartition, tuple[int, int]]] = field(default_factory=list)
    # Data partitions' logs as whole record batches in offset order (see `append`); a marker the fake
    # writes lands here too. A partition without one reads as empty.
    logs: dict[TopicPartition, list[bytes]] = field(default_factory=dict)
    log_start: dict[TopicPartition, int] = field(default_factory=dict)  # below it: OFFSET_OUT_OF_RANGE
    groups: dict[str, tuple[str, dict[TopicPartition, int]]] = field(default_factory=dict)  # id -> (type, offsets)
    cluster_id: str | None = "fake-cluster-id"  # what Metadata reports
    # The FindCoordinator memory each coordinator read was given (the fake has no FindCoordinator to skip).
    coordinator_caches: list[CoordinatorCache | None] = field(default_factory=list)

    # -- state helpers ----------------------------------------------------------------------
    def open_txn(self, tp: TopicPartition, state: ProducerState, replicas: Iterable[int] | None = None) -> None:
        info = self.info(tp)
        for broker in replicas if replicas is not None else info.replicas:
            self.producers.setdefault((broker, tp), []).append(state)

    def append(self, tp: TopicPartition, producer_id: int = -1, epoch: int = -1, records: int = 1,
               transactional: bool = False, marker: bool | None = None, coordinator_epoch: int = 0) -> int:
        """Append a batch (a marker: `marker` = commit) at the log end; its base offset."""
        from kafka_txn_broker.formats.record_batch import BatchHeader, build_batch, build_control_batch

        batches = self.logs.setdefault(tp, [])
        base = BatchHeader.parse(batches[-1]).next_offset if batches else self.log_start.get(tp, 0)
        if marker is not None:
            batches.append(build_control_batch(producer_id, epoch, marker, coordinator_epoch, NOW, base_offset=base))
        else:
            batches.append(build_batch([(None, b"v")] * records, timestamp_ms=NOW, base_offset=base,
                                       producer_id=producer_id, producer_epoch=epoch, transactional=transactional))
        return base

    def info(self, tp: TopicPartition) -> PartitionInfo:
        return next(i for i in self.partitions if i.partition == tp)

    def complete(self, tp: TopicPartition, pid: int, coordinator_epoch: int = 0) -> None:
        """The marker arrives everywhere: the producer's open transaction on tp closes, and the producer's
        coordinator epoch there becomes the marker's (as Kafka's producer state records it)."""
        for (broker, p), states in self.producers.items():
            if p == tp:
                self.producers[(broker, p)] = [
                    replace(s, current_txn_start_offset=-1,
                            coordinator_epoch=max(s.coordinator_epoch, coordinator_epoch))
                    if s.producer_id == pid else s for s in states]

    # -- what a command does with its client -----------------------------------------------
    cluster_name = "fake"
    principal: str | None = None  # no SASL
    settings = ClientSettings(bootstrap_servers="fake:9092")

    def __enter__(self) -> FakeCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    # -- ClusterApi -------------------------------------------------------------------------
    def supports(self, api: str) -> bool:
        return api not in self.unsupported

    def fence_transactional_id(self, transactional_id: str, transaction_timeout_ms: int) -> tuple[int, int]:
        self.fenced.append(transactional_id)
        self.fence_timeouts.append(transaction_timeout_ms)
        d = self.transactions[transactional_id]
        self.transactions[transactional_id] = replace(d, state="CompleteAbort", producer_epoch=d.producer_epoch + 1,
                                                      start_time_ms=-1, partitions=frozenset())
        return d.producer_id, d.producer_epoch + 1

    def metadata(self, topics: Sequence[str] | None = None) -> ClusterInfo:
        parts = [p for p in self.partitions if topics is None or p.partition.topic in topics]
        missing = tuple((t, "UNKNOWN_TOPIC_OR_PARTITION") for t in topics or ()
                        if not any(p.partition.topic == t for p in self.partitions))
        return ClusterInfo(tuple(BrokerInfo(b, "localhost", 9092 + b) for b in self.brokers), tuple(parts),
                           0, missing, self.cluster_id)

    def describe_producers(self, by_broker: dict[int, list[TopicPartition]], batch_size: int = 2000,
                           in_flight: int = 3, progress: Callable[[int], None] | None = None,
                           open_only: bool = False) -> tuple[list[PartitionProducers], list[ScanError]]:
        self.describe_calls += 1
        if self.before_describe is not None:
            self.before_describe(self.describe_calls)
        out: list[PartitionProducers] = []
        errors: list[ScanError] = []
        self.described.append([(broker, tp) for broker, tps in by_broker.items() for tp in tps])
        for broker, tps in by_broker.items():
            if broker in self.down:
                errors.append(ScanError("BROKER_UNREACHABLE", f"broker {broker} is unreachable", broker_id=broker,
                                        api="DescribeProducers", partitions=len(tps)))
                continue
            for tp in tps:
                if (broker, tp) in self.partition_errors or not any(i.partition == tp for i in self.partitions):
                    name = self.partition_errors.get((broker, tp), "UNKNOWN_TOPIC_OR_PARTITION")
                    errors.append(ScanError(name, f"{tp}: {name}", broker_id=broker, partition=tp,
                                            api="DescribeProducers", code=29, partitions=1))
                elif broker not in self.info(tp).replicas:
                    errors.append(ScanError("NOT_LEADER_OR_FOLLOWER", f"{tp} not on {broker}", broker_id=broker,
                                            partition=tp, api="DescribeProducers", code=6, partitions=1))
                else:
                    states = tuple(s for s in self.producers.get((broker, tp), [])
                                   if s.has_open_transaction or not open_only)
                    if states or not open_only:
                        out.append(PartitionProducers(tp, broker, states))
            if progress is not None:
                progress(len(tps))
        return out, errors

    def list_transactions(self, broker_ids: Iterable[int], states: Sequence[str] = (),
                          producer_ids: Sequence[int] = (), duration_ms: int | None = None,
                          pattern: str | None = None) -> ListResult:
        import re

        result = ListResult()
        for broker in broker_ids:
            if broker in self.down:
                result.errors.append(ScanError("BROKER_UNREACHABLE", f"broker {broker} is unreachable",
                                               broker_id=broker, api="ListTransactions"))
                continue
            version = self.list_versions.get(broker, 2)
            dropped = {f for f, v, given in (("duration", 1, duration_ms), ("pattern", 2, pattern))
                       if given is not None and version < v}
            if dropped:
                result.unfiltered[broker] = dropped
            for d in self.transactions.values():
                if d.coordinator_id != broker or d.state == "Dead":
                    continue
                if states and d.state not in states or producer_ids and d.producer_id not in producer_ids:
                    continue
                if duration_ms is not None and "duration" not in dropped and (
                        d.start_time_ms < 0 or NOW - d.start_time_ms <= duration_ms):
                    continue
                if pattern is not None and "pattern" not in dropped and not re.fullmatch(pattern, d.transactional_id):
                    continue
                result.listings.append(TransactionListing(d.transactional_id, d.producer_id, d.state, broker))
        return result

    def describe_transactions(self, transactional_ids: Iterable[str], coordinators: CoordinatorCache | None = None
                              ) -> DescribeResult:
        self.coordinator_caches.append(coordinators)
        result = DescribeResult()
        for txn_id in transactional_ids:
            d = self.transactions.get(txn_id)
            if d is None or d.state == "Dead":
                result.not_found.add(txn_id)
            elif d.coordinator_id in self.down:
                result.errors.append(ScanError("BROKER_UNREACHABLE", "coordinator down", broker_id=d.coordinator_id,
                                               transactional_id=txn_id, api="DescribeTransactions"))
            else:
                result.descriptions[txn_id] = d
        return result

    def partition_offsets(self, leaders: dict[TopicPartition, int]) -> dict[TopicPartition, PartitionOffsets]:
        out = {}
        for tp in leaders:
            set_whole = self.leader_reads.get(tp)
            if tp not in self.offsets and set_whole is not None and set_whole.hw.error is None \
                    and set_whole.lso.error is None:
                out[tp] = PartitionOffsets(tp, set_whole.lso.offset, set_whole.hw.offset)
            else:
                out[tp] = PartitionOffsets(tp, *self.offsets.get(tp, (None, None)))
        return out

    def latest_offsets(self, leaders: dict[TopicPartition, tuple[int, int]], read_committed: bool
                       ) -> dict[TopicPartition, OffsetRead]:
        """As a leader answers ListOffsets: `leader_reads` where a test set them whole, else `offsets` where a
        test set them, else from producer state as Kafka derives it (the HW past every replica's open
        transaction: all replicated; the LSO at the leader's oldest one, else the HW). A down leader, or a
        DescribeProducers error set for the leader, fails the read. `lso_reads` records the LSO reads."""
        self.leader_offset_calls += 1
        if read_committed:
            self.lso_reads.append(set(leaders))
        out = {}
        for tp, (leader, epoch) in leaders.items():
            answer = self.leader_reads.get(tp) or self._leader_read(tp, leader, epoch)
            out[tp] = answer.lso if read_committed else answer.hw
        return out

    def latest_offsets_both(self, leaders: dict[TopicPartition, tuple[int, int]]
                            ) -> tuple[dict[TopicPartition, OffsetRead], dict[TopicPartition, OffsetRead]]:
        """Both reads at once; `both_reads` counts them, `lso_reads` records the LSO read's partitions."""
        self.both_reads += 1
        return self.latest_offsets(leaders, read_committed=False), self.latest_offsets(leaders, read_committed=True)

    def _leader_read(self, tp: TopicPartition, leader: int, epoch: int = -1) -> LeaderAnswer:
        error = "BROKER_UNREACHABLE" if leader in self.down else self.partition_errors.get((leader, tp))
        now = next((i for i in self.partitions if i.partition == tp), None)
        if error is None and now is None:
            error = "UNKNOWN_TOPIC_OR_PARTITION"  # deleted since the caller's Metadata was read
        elif error is None and now is not None and now.leader != leader:
            error = "NOT_LEADER_OR_FOLLOWER"  # the caller's Metadata is older than a leader move
        elif error is None and now is not None and min(epoch, now.leader_epoch) >= 0 and epoch != now.leader_epoch:
            error = "FENCED_LEADER_EPOCH" if epoch < now.leader_epoch else "UNKNOWN_LEADER_EPOCH"
        if error is not None:
            return LeaderAnswer(OffsetRead(None, -1, error), OffsetRead(None, -1, error))
        if tp in self.offsets:
            lso, hw = self.offsets[tp]
        else:
            starts = [s.current_txn_start_offset for (b, p), states in self.producers.items() if p == tp
                      for s in states if s.has_open_transaction]
            hw = max(starts) + 1 if starts else 0
            mine = [s.current_txn_start_offset for s in self.producers.get((leader, tp), []) if s.has_open_transaction]
            lso = min([*mine, hw])
        said = now.leader_epoch if now is not None and now.leader_epoch >= 0 else 0
        return LeaderAnswer(OffsetRead(hw, said), OffsetRead(lso, said))

    def offsets_for_time(self, leaders: dict[TopicPartition, int], timestamp_ms: int) -> dict[TopicPartition, int]:
        out = {}
        for tp, leader in leaders.items():
            if leader in self.down:
                continue
            records = self.txn_log.get(tp.partition, [])
            out[tp] = next((r.offset for r in records if r.timestamp >= timestamp_ms), -1)
        return out

    def read_log(self, reads: dict[TopicPartition, tuple[int, int]], max_bytes: int
                 ) -> tuple[dict[TopicPartition, bytes], list[ScanError]]:
        from kafka_txn_broker.formats.record_batch import BatchHeader, build_batch
        from kafka_txn_broker.formats.transaction_log import encode_key
        from kafka_txn_tools.dumps.transaction_log import encode_value

        self.log_reads.append(dict(reads))
        out: dict[TopicPartition, bytes] = {}
        errors: list[ScanError] = []
        for tp, (leader, start) in reads.items():
            if tp.topic != "__transaction_state":
                if leader is None or leader in self.down:  # a Fetch must reach the partition's leader
                    errors.append(ScanError("BROKER_UNREACHABLE", f"{tp}: broker {leader}", broker_id=leader,
                                            partition=tp, api="Fetch"))
                    continue
                if start < self.log_start.get(tp, 0):
                    errors.append(ScanError("OFFSET_OUT_OF_RANGE", f"{tp}: offset {start}", broker_id=leader,
                                            partition=tp, api="Fetch", code=1))
                    continue
                # As a leader answers a Fetch: from the batch holding `start`, whole batches, up to max_bytes.
                kept = [b for b in self.logs.get(tp, []) if BatchHeader.parse(b).last_offset >= start]
                data = b""
                for batch in kept:
                    if data and len(data) + len(batch) > max_bytes:
                        break
                    data += batch
                out[tp] = data
                continue
            raw = bytearray()
            for r in self.txn_log.get(tp.partition, []):
                if r.offset >= start and len(raw) < max_bytes:
                    value = None if r.meta is None else encode_value(r.meta, 1)
                    raw += build_batch([(encode_key(r.transactional_id), value)], timestamp_ms=r.timestamp,
                                       base_offset=r.offset, partition_leader_epoch=self.txn_log_epoch)
            out[tp] = bytes(raw)
        return out, errors

    def list_groups(self, broker_ids: Iterable[int]) -> tuple[list[tuple[str, str]], list[ScanError]]:
        return sorted((g, kind) for g, (kind, _) in self.groups.items()), []

    def committed_offsets(self, group_ids: Sequence[str], partitions: Sequence[TopicPartition],
                          coordinators: CoordinatorCache | None = None,
                          ) -> tuple[dict[str, dict[TopicPartition, int]], list[ScanError]]:
        self.coordinator_caches.append(coordinators)
        return {g: {tp: o for tp, o in self.groups[g][1].items() if tp in partitions} for g in group_ids}, []

    def share_group_offsets(self, group_ids: Sequence[str], partitions: Sequence[TopicPartition],
                            coordinators: CoordinatorCache | None = None,
                            ends: Mapping[TopicPartition, int | None] | None = None,
                            ) -> tuple[dict[str, dict[TopicPartition, int]], list[ScanError]]:
        return self.committed_offsets(group_ids, partitions, coordinators)

    def write_abort_marker(self, leader: int, partition: TopicPartition, producer_id: int, producer_epoch: int,
                           coordinator_epoch: int, start_offset: int | None) -> str | None:
        self.markers.append((leader, partition, producer_id, producer_epoch, coordinator_epoch, start_offset))
        if self.marker_error is not None:
            return self.marker_error
        self.complete(partition, producer_id, coordinator_epoch)
        lso, hw = self.offsets.get(partition, (0, 0))
        if partition in self.logs:
            hw = self.append(partition, producer_id, producer_epoch, marker=False,
                             coordinator_epoch=coordinator_epoch) + 1
        self.offsets[partition] = (hw, hw)
        return None


def cluster(topic: str = "orders", partitions: int = 3, rf: int = 3, brokers: int = 3,
            internal: Sequence[str] = ()) -> FakeCluster:
    infos = []
    for t in (topic, *internal):
        for p in range(partitions):
            replicas = tuple((p + i) % brokers for i in range(rf))
            infos.append(PartitionInfo(TopicPartition(t, p), replicas[0], replicas, replicas, t in internal))
    return FakeCluster(infos, brokers=list(range(brokers)))
