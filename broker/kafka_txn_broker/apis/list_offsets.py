"""ListOffsets v1-v11 as Kafka 4.x answers it, on the partition leader.

- LATEST (-1): the high watermark, or the last stable offset for read_committed, with the current leader epoch.
- EARLIEST (-2) and EARLIEST_LOCAL (-4, v8): the log start offset (moved by DeleteRecords); without tiered
  storage the local log starts there too.
- MAX_TIMESTAMP (-3, v7, KIP-734): the first record carrying the log's largest timestamp.
- LATEST_TIERED (-5, v9) and EARLIEST_PENDING_UPLOAD (-6, v11): offset -1, as Kafka answers without
  tiered storage.
- A timestamp: the first record at or after it, from the log start offset on.
The answer lists partitions in the order Kafka's HashMap of them iterates (in_kafka_order), not the request's
(emulating a release before 4.0: the request's, as Kafka 3.3.2 answered).
A lookup that finds nothing below the last fetchable offset (high watermark, or LSO for read_committed)
answers offset -1 and timestamp -1 without an error. CurrentLeaderEpoch (v4+) fences stale clients.
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any

from kafka_txn_broker.apis.context import RequestContext
from kafka_txn_broker.apis.offset_for_leader_epoch import NO_EPOCH_CHECK, check_current_leader_epoch
from kafka_txn_broker.apis.partitions import authorized_topic, leader
from kafka_txn_broker.apis.registry import api
from kafka_txn_broker.formats.errors import InvalidRequestError, error_code
from kafka_txn_broker.formats.messages import ListOffsetsRequest, ListOffsetsResponse
from kafka_txn_broker.formats.messages.plain import ListOffsetsAnswer, PartitionOffset
from kafka_txn_broker.formats.partitioning import hash_map_mask, java_string_hash
from kafka_txn_broker.gc_pause import bulk
from kafka_txn_broker.log.unified_log import UnifiedLog
from kafka_txn_broker.metadata.topics import TopicState
from kafka_txn_broker.replica.partition import Partition

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED, EARLIEST_PENDING_UPLOAD = -1, -2, -3, -4, -5, -6
READ_COMMITTED = 1
NOT_FOUND = (-1, -1, -1)  # (timestamp, offset, leader epoch)


def _found(log: UnifiedLog, hit: tuple[int, int] | None, fetchable: int) -> tuple[int, int, int]:
    """A timestamp lookup's (timestamp, offset, epoch); not found unless below the last fetchable offset."""
    if hit is None or hit[0] >= fetchable:
        return NOT_FOUND
    offset, ts = hit
    return ts, offset, log.epoch_for_offset(offset)


def _answer(part: Partition, timestamp: int, read_committed: bool) -> tuple[int, int, int]:
    log = part.log
    fetchable = log.last_stable_offset if read_committed else log.high_watermark
    if timestamp == LATEST:
        return -1, fetchable, part.state.leader_epoch
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        start = log.log_start_offset
        return -1, start, log.epoch_for_offset(start)
    if timestamp in (LATEST_TIERED, EARLIEST_PENDING_UPLOAD):
        return NOT_FOUND
    if timestamp == MAX_TIMESTAMP:
        return _found(log, log.max_timestamp_offset(), fetchable)
    return _found(log, log.offset_for_timestamp(timestamp), fetchable)


def _lookup(ctx: RequestContext, topic: TopicState | None, topic_error: Exception | None, topic_name: str, p: Any,
            read_committed: bool, twice: bool) -> PartitionOffset:
    try:
        if twice:
            raise InvalidRequestError(f"partition {topic_name}-{p.partition_index} is named more than once")
        if topic is None:
            assert topic_error is not None
            raise topic_error
        part = leader(ctx, topic, p.partition_index)
        check_current_leader_epoch(getattr(p, "current_leader_epoch", NO_EPOCH_CHECK), part.state.leader_epoch)
        ts, offset, epoch = _answer(part, p.timestamp, read_committed)
        return p.partition_index, 0, ts, offset, epoch
    except Exception as exc:
        return p.partition_index, error_code(exc), -1, -1, -1


def _topic(ctx: RequestContext, name: str) -> tuple[TopicState | None, Exception | None]:
    """The topic, authorized once for all its partitions (DESCRIBE), or why not."""
    try:
        return authorized_topic(ctx, "DESCRIBE", name, None), None
    except Exception as exc:
        return None, exc


def _latest_on_leader(ctx: RequestContext, topic: TopicState, p: Any, read_committed: bool) -> PartitionOffset | None:
    """The common case's answer, found without the general path's exceptions (a find-hanging first pass asks
    every leader for the latest offset of all its partitions): LATEST on a partition this node leads, at the
    epoch the request names, if any. None for anything else; `_lookup` then answers it (errors included) the
    general way, which gives the same answer here."""
    index = p.partition_index
    if p.timestamp != LATEST or not 0 <= index < len(topic.partitions):
        return None
    part = ctx.broker.replica_manager.get(topic.name, index)
    if part is None:
        return None
    epoch = part.state.leader_epoch
    if not part.is_leader or getattr(p, "current_leader_epoch", NO_EPOCH_CHECK) not in (NO_EPOCH_CHECK, epoch):
        return None
    log = part.log
    offset = log.last_stable_offset if read_committed else log.high_watermark
    return index, 0, -1, offset, epoch


@api(ListOffsetsRequest, ListOffsetsResponse, 1, 11)
async def handle(ctx: RequestContext, req: Any) -> ListOffsetsAnswer:
    """Answered from plain values (formats.messages.plain): no object per partition."""
    read_committed = getattr(req, "isolation_level", 0) == READ_COMMITTED
    answer = ListOffsetsAnswer()
    with bulk():  # a find-hanging first pass asks a leader for all its partitions at once
        named = [(t.name, p.partition_index) for t in req.topics for p in t.partitions]
        twice = {tp for tp in named if named.count(tp) > 1} if len(named) != len(set(named)) else set()
        for t in req.topics:
            topic, error = _topic(ctx, t.name)
            answer.topics.append((t.name, [_partition(ctx, topic, error, t.name, p, read_committed, twice)
                                           for p in t.partitions]))
        if not twice and _hash_ordered(ctx.broker.config["kafka.version.emulate"]):
            answer.topics = in_kafka_order(answer.topics)
    return answer


# Kafka 4.4.0 answers in a HashMap's order, run after run; 3.3.2 answered in the request's; 3.9.2 in either,
# from one run to the next (releases between are untested: the request's order up to 3.9).
HASH_ORDER_SINCE = (4, 0)


def _hash_ordered(release: str) -> bool:
    return not release or tuple(int(p) for p in release.split(".")) >= HASH_ORDER_SINCE


def in_kafka_order(topics: list[tuple[str, list[PartitionOffset]]]) -> list[tuple[str, list[PartitionOffset]]]:
    """Kafka collects the answers in a HashMap by TopicPartition and answers in its iteration order: the
    partitions in that order, each topic where its first partition comes (formats.partitioning)."""
    count = sum(len(parts) for _, parts in topics)
    if count < 2:
        return topics
    mask = hash_map_mask(count)
    keyed = []  # (bucket, topic, answer); hashed inline: a leader may be asked for thousands of partitions
    for name, parts in topics:
        base = java_string_hash(name)
        for p in parts:
            h = (31 * (31 + p[0]) + base) & 0xFFFFFFFF
            keyed.append(((h ^ (h >> 16)) & mask, name, p))
    keyed.sort(key=itemgetter(0))  # stable: ties keep the request's order, as a HashMap's bucket lists do
    grouped: dict[str, list[PartitionOffset]] = {}
    for _bucket, name, p in keyed:
        grouped.setdefault(name, []).append(p)
    return list(grouped.items())


def _partition(ctx: RequestContext, topic: TopicState | None, topic_error: Exception | None, topic_name: str, p: Any,
               read_committed: bool, twice: set[tuple[str, int]]) -> PartitionOffset:
    named_twice = bool(twice) and (topic_name, p.partition_index) in twice
    quick = None if topic is None or named_twice else _latest_on_leader(ctx, topic, p, read_committed)
    return quick if quick is not None else _lookup(ctx, topic, topic_error, topic_name, p, read_committed, named_twice)
