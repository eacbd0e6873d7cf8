"""Group administration APIs: DeleteGroups and OffsetDelete (`kafka-consumer-groups --delete[-offsets]`).

Registered by importing this module from apis/groups.py.
"""

from __future__ import annotations

from typing import Any

from kafka_txn_broker.apis.context import RequestContext
from kafka_txn_broker.apis.registry import api
from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.errors import TOPIC_AUTHORIZATION_FAILED, BrokerResponseError, error_code
from kafka_txn_broker.formats.messages import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
)
from kafka_txn_broker.group.deletion import delete_consumer_group, delete_group, delete_offsets
from kafka_txn_broker.group.group_type import CONSUMER, SHARE
from kafka_txn_broker.group.offset_store import TopicPartition
from kafka_txn_broker.group.shard import GroupShard
from kafka_txn_broker.group.share_group import ShareGroup


def _delete_one(ctx: RequestContext, group_id: str) -> int:
    try:
        ctx.require("DELETE", "GROUP", group_id)
        coordinator = ctx.broker.group_coordinator
        shard = coordinator.shard(group_id)
        kind = coordinator.group_type(group_id)
        if kind == SHARE:
            return _delete_share_group(ctx, shard, coordinator.share_group(group_id))
    except BrokerResponseError as exc:
        return error_code(exc)
    if kind == CONSUMER:
        return delete_consumer_group(shard, group_id)
    return delete_group(shard, group_id)


def _delete_share_group(ctx: RequestContext, shard: GroupShard, group: ShareGroup) -> int:
    """An Empty share group goes with its state in `__share_group_state`, then its own record."""
    group_id = group.group_id
    if not group.is_empty:
        return E.NON_EMPTY_GROUP
    code = ctx.broker.share_group_offsets.delete_group_state(group_id)
    if code:
        return code
    try:
        shard.delete_share_group(group_id)
    except BrokerResponseError as exc:
        return error_code(exc)
    return 0


@api(DeleteGroupsRequest, DeleteGroupsResponse, 0, 2)
async def delete_groups(ctx: RequestContext, req: Any) -> Any:
    R = DeleteGroupsResponse
    results = [R.DeletableGroupResult(group_id=g, error_code=_delete_one(ctx, g)) for g in req.groups_names]
    return R[ctx.api_version](throttle_time_ms=0, results=results)


def _exists(ctx: RequestContext, tp: TopicPartition) -> bool:
    t = ctx.broker.metadata.topics.get(tp[0])
    return t is not None and 0 <= tp[1] < len(t.partitions)


@api(OffsetDeleteRequest, OffsetDeleteResponse, 0, 0)
async def offset_delete(ctx: RequestContext, req: Any) -> Any:
    R = OffsetDeleteResponse
    T = R.OffsetDeleteResponseTopic
    P = T.OffsetDeleteResponsePartition
    wanted = [(t.name, p.partition_index) for t in req.topics for p in t.partitions]
    readable = ctx.authorized("READ", "TOPIC", (t for t, _ in wanted))
    known = [tp for tp in wanted if tp[0] in readable and _exists(ctx, tp)]
    try:
        ctx.require("DELETE", "GROUP", req.group_id)
        top, codes = delete_offsets(ctx.broker.group_coordinator.shard(req.group_id), req.group_id, known)
    except BrokerResponseError as exc:
        top, codes = error_code(exc), {}
    if top:
        return R[0](error_code=top, throttle_time_ms=0, topics=[])
    missing = E.UNKNOWN_TOPIC_OR_PARTITION
    topics = [T(name=t.name, partitions=[P(partition_index=p.partition_index,
                                           error_code=codes.get((t.name, p.partition_index),
                                                                missing if t.name in readable
                                                                else TOPIC_AUTHORIZATION_FAILED))
                                         for p in t.partitions]) for t in req.topics]
    return R[0](error_code=0, throttle_time_ms=0, topics=topics)
