"""Reading `__transaction_state` live, bounded and once per run: when a transaction entered its state, and
which transactional id last owned a producer id.

find-hanging reads it only when it has a question for it, and only the partitions that can answer:
- a coordinator-side candidate: its id's own partition (partitionFor(id)), for the record of its state
  (TransactionLastUpdateTimestampMs is when it entered the state; the batch's leader epoch is the
  coordinator epoch it was written at);
- a no-transactional-id verdict: the id is what we look for, so every partition - the records that named
  the producer id before the id expired or was forgotten, until compaction removes them;
- a hanging partition-side verdict with a transactional id: its id's partition, for the coordinator's
  decision (PrepareCommit / PrepareAbort) on that transaction (admin/decisions.py).

Each partition is read from the first record stamped at or after `since_ms` (ListOffsets by time: the
coordinator stamps its records when it writes them) to the high watermark, at most `max_bytes` in all
(split evenly, at least MIN_PARTITION_BYTES each); a partition cut short is named in `truncated`. What is
kept of it is what the questions need, not the log: states and decisions only of the transactional ids
asked about (`ids`), and ownership only when asked for (`owners`), one entry per (id, producer id). A
hanging transaction is old, so its read starts far back; an id sharing its partition with busy producers
would otherwise leave every one of their records in memory (a monitor re-reads it every scan). Records
are decoded with Kafka's format (kafka_txn_broker.formats.transaction_log, through dumps/), as the sweep
decodes them from copied segments. A principal without READ on the internal topic gets notes, not errors:
the verdicts then use what DescribeTransactions gives (admin/hanging.py explains the lower bound).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field

from kafka_txn_broker.formats.partitioning import TXN_TOPIC, partition_for
from kafka_txn_broker.formats.record_batch import BatchHeader
from kafka_txn_tools.admin.api import ClusterApi
from kafka_txn_tools.admin.decisions import DECIDING_STATES, PREPARE_COMMIT, Decision, decision_for
from kafka_txn_tools.admin.hanging import Ownership
from kafka_txn_tools.dumps.transaction_log import TxnMetadata
from kafka_txn_tools.models import ClusterInfo, ProducerState, ScanError, TopicPartition

MAX_BYTES = 64 << 20
MIN_PARTITION_BYTES = 1 << 20
CHUNK_BYTES = 4 << 20  # read and absorbed at a time, per partition
# What one round of chunks may hold, all partitions together: a read of every partition (50 by default) would
# otherwise hold up to 50 chunks at once. Each partition's chunk is this divided among the partitions still
# being read (at least MIN_CHUNK_BYTES), so the many small partitions end in the first round and the few big
# ones go on with bigger chunks.
HELD_BYTES = 16 << 20
MIN_CHUNK_BYTES = 256 << 10
# The producer's clock stamps its batches, the coordinator's its records: look a little before the last write.
CLOCK_SLACK_MS = 60_000


@dataclass(frozen=True, slots=True)
class StateRecord:
    """The newest record of one transactional id in what was read (a tombstone: `state` None)."""

    transactional_id: str
    state: str | None
    producer_id: int
    producer_epoch: int
    last_update_ms: int
    coordinator_epoch: int
    offset: int


@dataclass
class TxnStateRead:
    latest: dict[str, StateRecord] = field(default_factory=dict)
    owned: dict[tuple[str, int], int] = field(default_factory=dict)  # (id, producer id) -> newest time named
    decisions: list[Decision] = field(default_factory=list)  # every Prepare record read, in log order
    partitions: int = 0  # partitions read
    bytes: int = 0
    truncated: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def owners(self) -> list[Ownership]:
        """The newest record naming each producer id under each transactional id (what last_known_owner needs)."""
        return [Ownership(txn_id, pid, time_ms) for (txn_id, pid), time_ms in self.owned.items()]

    def entered(self, transactional_id: str, state: str, producer_id: int, producer_epoch: int
                ) -> tuple[int | None, int | None]:
        """(when it entered `state`, at which coordinator epoch) if the newest record read is that state's."""
        r = self.latest.get(transactional_id)
        if r is None or (r.state, r.producer_id, r.producer_epoch) != (state, producer_id, producer_epoch):
            return None, None
        return r.last_update_ms, r.coordinator_epoch


def partitions_of(transactional_ids: Iterable[str], count: int) -> set[int]:
    return {partition_for(txn_id, count) for txn_id in transactional_ids}


def read(client: ClusterApi, partitions: set[int] | None, since_ms: int, max_bytes: int = MAX_BYTES,
         txn_meta: ClusterInfo | None = None, ids: Collection[str] | None = None, owners: bool = False
         ) -> TxnStateRead:
    """Read the given partitions of `__transaction_state` (None: all of them) from `since_ms` on, keeping the
    states and decisions of `ids` (None: of every id) and, with `owners`, who owned each producer id.
    `txn_meta`: metadata holding the topic's partitions, when the caller has it."""
    out = TxnStateRead()
    cluster = txn_meta if txn_meta is not None else client.metadata([TXN_TOPIC])
    leaders = {i.partition: i.leader for i in cluster.partitions if i.partition.topic == TXN_TOPIC}
    if not leaders:
        error = dict(cluster.topic_errors).get(TXN_TOPIC, "UNKNOWN_TOPIC_OR_PARTITION")
        out.notes.append(f"{TXN_TOPIC} cannot be read ({error}): times in state are lower bounds and "
                         "last known transactional ids are unknown")
        return out
    wanted = {tp: leader for tp, leader in leaders.items() if partitions is None or tp.partition in partitions}
    starts = client.offsets_for_time({tp: leader for tp, leader in wanted.items() if leader >= 0}, since_ms)
    reads = {tp: (wanted[tp], offset) for tp, offset in starts.items() if offset >= 0}
    unread = sorted(tp.partition for tp in wanted if tp not in starts)
    if unread:
        out.notes.append(f"{TXN_TOPIC} partitions {_ranges(unread)} could not be read (no leader, or no answer)")
    if not reads:
        return out
    per_partition = max(MIN_PARTITION_BYTES, max_bytes // len(reads))
    _read_in_chunks(client, reads, per_partition, out, None if ids is None else frozenset(ids), owners)
    if out.truncated:
        out.notes.append(f"{TXN_TOPIC} partitions {_ranges(out.truncated)} were read only up to "
                         f"{per_partition >> 20} MiB each from the time looked for")
    return out


def _read_in_chunks(client: ClusterApi, reads: dict[TopicPartition, tuple[int, int]], per_partition: int,
                    out: TxnStateRead, ids: frozenset[str] | None, owners: bool) -> None:
    """Read each partition up to `per_partition` bytes, a chunk at a time, each chunk absorbed before the next is
    fetched: what is held at once is one round of chunks (about HELD_BYTES), not everything since the time looked
    for (a hanging transaction is old, so that can be the whole budget). A chunk shorter than asked for ends its
    partition (read_log stops at the high watermark, or at an error it reports)."""
    pending, done = dict(reads), dict.fromkeys(reads, 0)
    answered: set[TopicPartition] = set()
    while pending:
        chunk = min(CHUNK_BYTES, per_partition, max(MIN_CHUNK_BYTES, HELD_BYTES // len(pending)))
        data, errors = client.read_log(pending, chunk)
        out.notes += [_note(e) for e in errors]
        failed = {e.partition for e in errors}
        following = {}
        answered.update(data)
        for tp, raw in sorted(data.items()):
            done[tp] += len(raw)
            out.bytes += len(raw)
            after = _absorb(out, tp, raw, ids, owners)
            if after is None or len(raw) < chunk or tp in failed:
                continue
            if done[tp] >= per_partition:
                out.truncated.append(tp.partition)
                continue
            following[tp] = (pending[tp][0], after)
        pending = following
    out.partitions = len(answered)


@dataclass(frozen=True)
class DecisionRead:
    """The coordinator's decision on one open transaction (None: none in what was read), and where it was looked
    for: `home` the id's partition (None: `__transaction_state` has no partitions to read), `notes` why a read
    fell short."""

    decision: Decision | None
    home: int | None
    notes: tuple[str, ...] = ()


def decision_on(client: ClusterApi, transactional_id: str, tp: TopicPartition, producer: ProducerState
                ) -> DecisionRead:
    """Read the id's own `__transaction_state` partition from the open transaction's last write on, for the
    decision on it (admin/decisions.py): what abort and commit check before writing a marker."""
    meta = client.metadata([TXN_TOPIC])
    count = sum(1 for i in meta.partitions if i.partition.topic == TXN_TOPIC)
    if not count:
        error = dict(meta.topic_errors).get(TXN_TOPIC, "no partitions")
        return DecisionRead(None, None, (f"{TXN_TOPIC} cannot be read ({error})",))
    home = partition_for(transactional_id, count)
    log = read(client, {home}, producer.last_timestamp_ms - CLOCK_SLACK_MS, txn_meta=meta, ids={transactional_id})
    own = log.decisions
    found = decision_for(tp, producer.producer_id, producer.producer_epoch, producer.last_timestamp_ms, own,
                         CLOCK_SLACK_MS)
    return DecisionRead(found, home, tuple(log.notes))


def _note(error: ScanError) -> str:
    return f"{TXN_TOPIC}: {error.message}"


def _absorb(out: TxnStateRead, tp: TopicPartition, raw: bytes, ids: frozenset[str] | None, owners: bool
            ) -> int | None:
    """Keep what the questions need of one chunk; returns the offset after its last whole batch, or None when
    the partition can be read no further (a corrupt batch, noted: what follows it cannot be trusted, and a
    decision missed must show as a read cut short, not as no decision)."""
    from kafka_txn_tools.batches import SegmentError, iter_batches

    try:
        batches = list(iter_batches(raw, str(tp)))
    except SegmentError as exc:
        out.notes.append(f"{exc}; {TXN_TOPIC} partition {tp.partition} was read no further")
        return None
    only = None if owners or ids is None else ids.__contains__  # other ids' values need no decoding
    for offset, coordinator_epoch, txn_id, meta, timestamp in decode(tp, batches, only, out.notes):
        if owners and meta is not None:
            for pid in {meta.producer_id, meta.prev_producer_id, meta.next_producer_id}:
                if pid >= 0 and out.owned.get((txn_id, pid), -1) < meta.last_update_ms:
                    out.owned[txn_id, pid] = meta.last_update_ms
        if ids is not None and txn_id not in ids:
            continue
        if meta is None:
            held = out.latest.get(txn_id)
            pid, epoch = (held.producer_id, held.producer_epoch) if held is not None else (-1, -1)
            out.latest[txn_id] = StateRecord(txn_id, None, pid, epoch, timestamp, coordinator_epoch, offset)
            continue
        out.latest[txn_id] = StateRecord(txn_id, meta.state, meta.producer_id, meta.producer_epoch,
                                         meta.last_update_ms, coordinator_epoch, offset)
        if meta.state in DECIDING_STATES:
            out.decisions.append(decision(txn_id, meta, tp.partition, offset))
    return batches[-1][0].next_offset if batches else None


def decision(txn_id: str, meta: TxnMetadata, txn_partition: int, offset: int) -> Decision:
    """A Prepare record as the coordinator's decision on its transaction."""
    return Decision(txn_id, meta.state == PREPARE_COMMIT, meta.producer_id, meta.producer_epoch,
                    frozenset(TopicPartition(t, p) for t, p in meta.partitions), meta.last_update_ms, txn_partition,
                    offset, meta.prev_producer_id, meta.client_transaction_version)


def decode(tp: TopicPartition, batches: Iterable[tuple[BatchHeader, memoryview]],
           only: Callable[[str], bool] | None = None, notes: list[str] | None = None
           ) -> Iterator[tuple[int, int, str, TxnMetadata | None, int]]:
    """(offset, coordinator epoch, transactional id, TxnMetadata or None for a tombstone, timestamp) of
    every transaction-metadata record in `batches` (with `only`, of the ids it accepts). Markers, group
    records (no key) and keys or values of a version this tool does not know (a newer broker's) are
    skipped; a batch whose records cannot be decoded is skipped and named in `notes`."""
    from kafka_txn_broker.formats.transaction_log import TransactionLogError, decode_key
    from kafka_txn_tools.batches import SegmentError
    from kafka_txn_tools.dumps.segments import decode_records
    from kafka_txn_tools.dumps.transaction_log import decode_value

    for header, batch in batches:
        if header.is_control:
            continue
        try:
            records = decode_records(batch, str(tp))
        except SegmentError as exc:
            if notes is not None:
                notes.append(f"{exc}; that batch was skipped")
            continue
        for record in records:
            if record.key is None:
                continue
            try:
                txn_id = decode_key(record.key)
                if only is not None and not only(txn_id):
                    continue
                meta = None if record.value is None else decode_value(txn_id, record.value)
            except TransactionLogError:
                continue
            yield record.offset, header.partition_leader_epoch, txn_id, meta, record.timestamp


def _ranges(numbers: list[int]) -> str:
    return ",".join(map(str, numbers)) if len(numbers) <= 8 else f"{numbers[0]}..{numbers[-1]} ({len(numbers)})"
