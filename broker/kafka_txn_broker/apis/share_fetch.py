"""ShareFetch (78) and ShareAcknowledge (79) v1-v2: served by the share-partition leaders through the
node's SharePartitionManager (kafka_txn_broker/share/share_partition_manager.py).

ACLs as Kafka: READ on the group (else GROUP_AUTHORIZATION_FAILED for the whole request), READ on each
topic (else TOPIC_AUTHORIZATION_FAILED for its partitions, which are neither fetched nor acknowledged).
A partition this node does not lead answers NOT_LEADER_OR_FOLLOWER with its current leader, and the
leader's endpoint is in NodeEndpoints, as librdkafka expects.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from kafka_txn_broker.apis.context import RequestContext
from kafka_txn_broker.apis.registry import api
from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.errors import GROUP_AUTHORIZATION_FAILED, TOPIC_AUTHORIZATION_FAILED
from kafka_txn_broker.formats.messages import (
    ShareAcknowledgeRequest,
    ShareAcknowledgeResponse,
    ShareFetchRequest,
    ShareFetchResponse,
)
from kafka_txn_broker.share.share_partition import AckBatch
from kafka_txn_broker.share.share_partition_manager import (
    RECORD_LIMIT_MODE,
    PartitionResult,
    ShareFetchCall,
    ShareFetchResult,
)

TopicIdPartition = tuple[uuid.UUID, int]


def _readable(ctx: RequestContext, topic_ids: Iterable[uuid.UUID]) -> set[uuid.UUID]:
    """Topic ids the principal may READ (unknown ids pass: the manager answers UNKNOWN_TOPIC_ID)."""
    by_id = ctx.broker.metadata.topics_by_id
    out = set()
    for tid in set(topic_ids):
        t = by_id.get(tid)
        if t is None or ctx.authorize("READ", "TOPIC", t.name):
            out.add(tid)
    return out


def _parse(topics: Iterable[Any], allowed: set[uuid.UUID]) -> tuple[list[TopicIdPartition],
                                                                     dict[TopicIdPartition, list[AckBatch]],
                                                                     list[TopicIdPartition]]:
    """(partitions, acknowledgements per partition, refused partitions); a topic listed twice is merged."""
    fetch: list[TopicIdPartition] = []
    acks: dict[TopicIdPartition, list[AckBatch]] = {}
    refused: list[TopicIdPartition] = []
    for t in topics:
        for p in t.partitions:
            tp = (t.topic_id, p.partition_index)
            if t.topic_id not in allowed:
                refused.append(tp)
                continue
            fetch.append(tp)
            for b in p.acknowledgement_batches:
                acks.setdefault(tp, []).append(AckBatch(b.first_offset, b.last_offset, list(b.acknowledge_types)))
    return fetch, acks, refused


def _endpoints(ctx: RequestContext, R: Any, results: dict[TopicIdPartition, PartitionResult]) -> list[Any]:
    leaders = {r.leader_id for r in results.values()
               if E.NOT_LEADER_OR_FOLLOWER in (r.error, r.ack_error) and r.leader_id >= 0}
    found = [ctx.broker.channel.endpoint(n) for n in sorted(leaders)]
    return [R.NodeEndpoint(node_id=b.node_id, host=b.host, port=b.port, rack=None) for b in found if b is not None]


def _by_topic(results: dict[TopicIdPartition, PartitionResult]) -> dict[uuid.UUID, list[tuple[int, PartitionResult]]]:
    grouped: dict[uuid.UUID, list[tuple[int, PartitionResult]]] = {}
    for (tid, index), r in results.items():
        grouped.setdefault(tid, []).append((index, r))
    return grouped


# ---- ShareFetch -----------------------------------------------------------------------------------
def _fetch_response(ctx: RequestContext, result: ShareFetchResult) -> Any:
    R = ShareFetchResponse
    T = R.ShareFetchableTopicResponse
    P = T.PartitionData
    responses = [T(topic_id=tid, partitions=[
        P(partition_index=i, error_code=r.error, error_message=r.message, acknowledge_error_code=r.ack_error,
          acknowledge_error_message=r.ack_message,
          current_leader=P.LeaderIdAndEpoch(leader_id=r.leader_id, leader_epoch=r.leader_epoch),
          records=r.records,
          acquired_records=[P.AcquiredRecords(first_offset=a.first_offset, last_offset=a.last_offset,
                                              delivery_count=a.delivery_count) for a in r.acquired])
        for i, r in sorted(parts, key=lambda x: x[0])]) for tid, parts in _by_topic(result.partitions).items()]
    return R[ctx.api_version](throttle_time_ms=0, error_code=result.error, error_message=result.message,
                              acquisition_lock_timeout_ms=result.lock_timeout_ms, responses=responses,
                              node_endpoints=_endpoints(ctx, R, result.partitions))


@api(ShareFetchRequest, ShareFetchResponse, 1, 2)
async def share_fetch(ctx: RequestContext, req: Any) -> Any:
    group_id = req.group_id or ""
    if not ctx.authorize("READ", "GROUP", group_id):
        return _fetch_response(ctx, ShareFetchResult(GROUP_AUTHORIZATION_FAILED, f"not authorized to READ group "
                                                                                 f"{group_id!r}"))
    allowed = _readable(ctx, (t.topic_id for t in req.topics))
    fetch, acks, refused = _parse(req.topics, allowed)
    forget = [(t.topic_id, p) for t in req.forgotten_topics_data for p in t.partitions]
    record_limit = ctx.api_version >= 2 and req.share_acquire_mode == RECORD_LIMIT_MODE
    call = ShareFetchCall(group_id, req.member_id or "", req.share_session_epoch, req.max_wait_ms, req.max_bytes,
                          req.max_records if req.max_records > 0 else 500, fetch, acks, forget, ctx.session,
                          record_limit)
    result = await ctx.broker.share_partition_manager.fetch(call)
    for tp in refused:
        result.partitions[tp] = PartitionResult(error=TOPIC_AUTHORIZATION_FAILED,
                                                message="not authorized to READ the topic")
    return _fetch_response(ctx, result)


# ---- ShareAcknowledge -----------------------------------------------------------------------------
def _ack_response(ctx: RequestContext, result: ShareFetchResult) -> Any:
    R = ShareAcknowledgeResponse
    T = R.ShareAcknowledgeTopicResponse
    P = T.PartitionData
    responses = [T(topic_id=tid, partitions=[
        P(partition_index=i, error_code=r.error, error_message=r.message,
          current_leader=P.LeaderIdAndEpoch(leader_id=r.leader_id, leader_epoch=r.leader_epoch))
        for i, r in sorted(parts, key=lambda x: x[0])]) for tid, parts in _by_topic(result.partitions).items()]
    return R[ctx.api_version](throttle_time_ms=0, error_code=result.error, error_message=result.message,
                              acquisition_lock_timeout_ms=result.lock_timeout_ms, responses=responses,
                              node_endpoints=_endpoints(ctx, R, result.partitions))


@api(ShareAcknowledgeRequest, ShareAcknowledgeResponse, 1, 2)
async def share_acknowledge(ctx: RequestContext, req: Any) -> Any:
    group_id = req.group_id or ""
    if not ctx.authorize("READ", "GROUP", group_id):
        return _ack_response(ctx, ShareFetchResult(GROUP_AUTHORIZATION_FAILED, f"not authorized to READ group "
                                                                               f"{group_id!r}"))
    allowed = _readable(ctx, (t.topic_id for t in req.topics))
    _fetch, acks, refused = _parse(req.topics, allowed)
    result = ctx.broker.share_partition_manager.acknowledge(group_id, req.member_id or "", req.share_session_epoch,
                                                          acks)
    for tp in refused:
        result.partitions[tp] = PartitionResult(error=TOPIC_AUTHORIZATION_FAILED,
                                                message="not authorized to READ the topic")
    return _ack_response(ctx, result)
