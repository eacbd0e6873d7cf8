"""KIP-664 server APIs: DescribeProducers, ListTransactions (v0-v2), DescribeTransactions, WriteTxnMarkers.

DescribeProducers answers from this node's own replica (leader or follower), as Kafka does, so a
tool can compare replicas. ListTransactions and DescribeTransactions answer from this node's
coordinator cache. WriteTxnMarkers is what coordinators send to partition leaders and what admin
tools send to abort a hanging transaction.

KIP-664's TxnStartOffset on WriteTxnMarkers: Apache Kafka never shipped it, so kafka-python's
WriteTxnMarkersRequest JSON lacks it. We use the layout of kafka_txn_tools.connection.wire (the admin
client): a tagged field, tag 0, int64, on each `Topics[]` entry of a marker (v1+), default -1. The
stock decoder keeps unknown tags as raw bytes in `topic.unknown_tags["_0"]`; we read those 8 bytes
here (no schema change, and any Kafka broker ignores the tag). When present, the leader writes the
ABORT only if the producer's open transaction starts exactly at that offset, else INVALID_TXN_STATE.
KIP-664 marks such admin markers with CoordinatorEpoch -1; the leader then writes the marker with
the producer's current coordinator epoch, so that epoch never regresses (the KAFKA-9144 failure mode)
and later coordinator markers are not fenced by it.
"""

from __future__ import annotations

import struct
from collections import OrderedDict
from typing import Any

from kafka_txn_broker.apis.context import RequestContext, denied
from kafka_txn_broker.apis.registry import api
from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.errors import (
    TOPIC_AUTHORIZATION_FAILED,
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    InvalidTopicError,
)
from kafka_txn_broker.formats.messages import (
    DescribeProducersRequest,
    DescribeProducersResponse,
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    ListTransactionsRequest,
    ListTransactionsResponse,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from kafka_txn_broker.gc_pause import bulk
from kafka_txn_broker.metadata.topics import validate_topic_name
from kafka_txn_broker.replica.partition import Partition
from kafka_txn_broker.txn.java_regex import JavaRegexError, compile_java_regex

TXN_START_OFFSET_TAG = "_0"
ADMIN_COORDINATOR_EPOCH = -1

DPR = DescribeProducersResponse
DTR = DescribeTransactionsResponse
W = WriteTxnMarkersResponse


UNKNOWN_TOPIC_MESSAGE = "This server does not host this topic-partition."


# ---- DescribeProducers -------------------------------------------------------------------------
def _producers_of(part: Partition) -> list[Any]:
    return [DPR.TopicResponse.PartitionResponse.ProducerState(
        producer_id=p.producer_id, producer_epoch=p.producer_epoch, last_sequence=p.last_sequence,
        last_timestamp=p.last_timestamp, coordinator_epoch=p.coordinator_epoch,
        current_txn_start_offset=p.current_txn_start_offset) for p in part.log.producer_state.active_producers()]


def _describe_partition(ctx: RequestContext, topic: str, index: int, topic_error: tuple[int, str | None] | None
                        ) -> Any:
    PR = DPR.TopicResponse.PartitionResponse
    if topic_error is not None:
        return PR(partition_index=index, error_code=topic_error[0], error_message=topic_error[1], active_producers=[])
    part = ctx.broker.replica_manager.get(topic, index)
    if part is None:
        t = ctx.broker.metadata.topics[topic]
        code = E.NOT_LEADER_OR_FOLLOWER if 0 <= index < len(t.partitions) else E.UNKNOWN_TOPIC_OR_PARTITION
        return PR(partition_index=index, error_code=code, error_message=None, active_producers=[])
    return PR(partition_index=index, error_code=E.NONE, error_message=None, active_producers=_producers_of(part))


def _topic_error(ctx: RequestContext, name: str) -> tuple[int, str | None] | None:
    if not ctx.authorize("READ", "TOPIC", name):  # checked first, as Kafka: a refused principal learns nothing
        return TOPIC_AUTHORIZATION_FAILED, str(denied(ctx.principal, "READ", "TOPIC", name))
    try:
        validate_topic_name(name)
    except InvalidTopicError as exc:
        return E.INVALID_TOPIC_EXCEPTION, str(exc)
    if name not in ctx.broker.metadata.topics:
        # Kafka answers an unknown topic with its error's default text (an unknown partition of a known topic
        # with none): as real brokers do (tests/external/fidelity).
        return E.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_MESSAGE
    return None


@api(DescribeProducersRequest, DescribeProducersResponse, 0, 0)
async def handle_describe_producers(ctx: RequestContext, req: Any) -> Any:
    topics = []
    with bulk():  # an admin's scan asks for thousands of partitions at once
        for t in req.topics:
            error = _topic_error(ctx, t.name)
            parts = [_describe_partition(ctx, t.name, i, error) for i in t.partition_indexes]
            topics.append(DPR.TopicResponse(name=t.name, partitions=parts))
    return DPR[ctx.api_version](throttle_time_ms=0, topics=topics)


# ---- ListTransactions / DescribeTransactions ---------------------------------------------------
@api(ListTransactionsRequest, ListTransactionsResponse, 0, 2)
async def handle_list_transactions(ctx: RequestContext, req: Any) -> Any:
    R = ListTransactionsResponse[ctx.api_version]
    raw_pattern = getattr(req, "transactional_id_pattern", None)
    pattern = None
    if raw_pattern:  # null or empty: no filter (KIP-1152)
        try:
            pattern = compile_java_regex(raw_pattern)
        except JavaRegexError:
            return R(throttle_time_ms=0, error_code=E.INVALID_REGULAR_EXPRESSION, unknown_state_filters=[],
                     transaction_states=[])
    duration = getattr(req, "duration_filter", -1)
    code, unknown, listings = ctx.broker.txn_coordinator.list_transactions(
        set(req.producer_id_filters), set(req.state_filters), duration if duration is not None else -1, pattern)
    # Ids the principal may not DESCRIBE are dropped silently (KIP-664).
    states = [ListTransactionsResponse.TransactionState(transactional_id=x.transactional_id,
                                                        producer_id=x.producer_id, transaction_state=x.state)
              for x in listings if ctx.authorize("DESCRIBE", "TRANSACTIONAL_ID", x.transactional_id)]
    return R(throttle_time_ms=0, error_code=code, unknown_state_filters=unknown, transaction_states=states)


def _describe_one(ctx: RequestContext, transactional_id: str) -> Any:
    if not ctx.authorize("DESCRIBE", "TRANSACTIONAL_ID", transactional_id):
        code, md = TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None
    else:
        code, md = ctx.broker.txn_coordinator.describe_transaction(transactional_id)
    if md is None:
        return DTR.TransactionState(error_code=code, transactional_id=transactional_id, transaction_state="",
                                    transaction_timeout_ms=0, transaction_start_time_ms=0, producer_id=0,
                                    producer_epoch=0, topics=[])
    by_topic: OrderedDict[str, list[int]] = OrderedDict()
    for topic, partition in sorted(md.topic_partitions):
        if ctx.authorize("DESCRIBE", "TOPIC", topic):  # others are dropped silently (KIP-664)
            by_topic.setdefault(topic, []).append(partition)
    topics = [DTR.TransactionState.TopicData(topic=t, partitions=ps) for t, ps in by_topic.items()]
    return DTR.TransactionState(error_code=E.NONE, transactional_id=transactional_id,
                                transaction_state=md.state.state_name, transaction_timeout_ms=md.txn_timeout_ms,
                                transaction_start_time_ms=md.txn_start_timestamp, producer_id=md.producer_id,
                                producer_epoch=md.producer_epoch, topics=topics)


@api(DescribeTransactionsRequest, DescribeTransactionsResponse, 0, 0)
async def handle_describe_transactions(ctx: RequestContext, req: Any) -> Any:
    states = [_describe_one(ctx, txn_id) for txn_id in req.transactional_ids]
    return DTR[ctx.api_version](throttle_time_ms=0, transaction_states=states)


# ---- WriteTxnMarkers ---------------------------------------------------------------------------
def txn_start_offset(topic_entry: Any) -> int | None:
    """KIP-664's TxnStartOffset (tag 0 of a Topics[] entry), None when absent or -1."""
    raw = (getattr(topic_entry, "unknown_tags", None) or {}).get(TXN_START_OFFSET_TAG)
    if raw is None or len(raw) != 8:
        return None
    value = struct.unpack(">q", raw)[0]
    return value if value >= 0 else None


def _marker_on_partition(ctx: RequestContext, marker: Any, topic: str, index: int, start: int | None,
                         transaction_version: int) -> int:
    meta = ctx.broker.metadata.topics.get(topic)
    part = ctx.broker.replica_manager.get(topic, index)
    if meta is None or part is None:
        # Kafka's getMagic: a partition this broker does not host is unknown to it.
        return E.UNKNOWN_TOPIC_OR_PARTITION
    coordinator_epoch = marker.coordinator_epoch
    if start is not None and coordinator_epoch == ADMIN_COORDINATOR_EPOCH:
        entry = part.log.producer_state.last_entry(marker.producer_id)
        coordinator_epoch = entry.coordinator_epoch if entry is not None else ADMIN_COORDINATOR_EPOCH
    return part.write_marker(marker.producer_id, marker.producer_epoch, bool(marker.transaction_result),
                             coordinator_epoch, transaction_version, start)


# v0 (removed in Kafka 4.0, KIP-896) only when emulating an older release: same fields, no tags.
@api(WriteTxnMarkersRequest, WriteTxnMarkersResponse, 1, 2, emulated_min_version=0)
async def handle_write_txn_markers(ctx: RequestContext, req: Any) -> Any:
    # Errors are reported per producer id, as Kafka's response map is keyed by it.
    by_producer: OrderedDict[int, OrderedDict[str, list[Any]]] = OrderedDict()
    # Kafka: ALTER on the cluster (admin tools) or CLUSTER_ACTION (brokers), else every partition fails.
    allowed = ctx.authorize("ALTER", "CLUSTER") or ctx.authorize("CLUSTER_ACTION", "CLUSTER")
    for marker in req.markers:
        tv = getattr(marker, "transaction_version", 0) or 0
        topics = by_producer.setdefault(marker.producer_id, OrderedDict())
        for t in marker.topics:
            start = txn_start_offset(t)
            for index in t.partition_indexes:
                code = _marker_on_partition(ctx, marker, t.name, index, start, tv) if allowed \
                    else E.CLUSTER_AUTHORIZATION_FAILED
                topics.setdefault(t.name, []).append(
                    W.WritableTxnMarkerResult.WritableTxnMarkerTopicResult.WritableTxnMarkerPartitionResult(
                        partition_index=index, error_code=code))
    results = [W.WritableTxnMarkerResult(producer_id=pid, topics=[
        W.WritableTxnMarkerResult.WritableTxnMarkerTopicResult(name=name, partitions=parts)
        for name, parts in topics.items()]) for pid, topics in by_producer.items()]
    return W[ctx.api_version](markers=results)
