"""DescribeShareGroupOffsets (90, v0-1), AlterShareGroupOffsets (91) and DeleteShareGroupOffsets (92):
what `kafka-share-groups.sh --describe --offsets`, `--reset-offsets` and `--delete-offsets` send to the
group coordinator (flows in kafka_txn_broker/share/share_group_offsets.py).

ACLs as Kafka: DESCRIBE on the group and on each topic to describe, READ on the group and the topics to
alter, DELETE on the group and READ on the topics to delete.
"""

from __future__ import annotations

import uuid
from typing import Any

from kafka_txn_broker.apis.context import Operation, RequestContext
from kafka_txn_broker.apis.registry import api
from kafka_txn_broker.formats.errors import TOPIC_AUTHORIZATION_FAILED, BrokerResponseError, error_code, error_message
from kafka_txn_broker.formats.messages import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsResponse,
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsResponse,
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse,
)
from kafka_txn_broker.group.share_group import ShareGroup
from kafka_txn_broker.share.share_group_offsets import PartitionOffset, TopicOffsets

ZERO = uuid.UUID(int=0)


def share_group(ctx: RequestContext, group_id: str, operation: Operation) -> ShareGroup:
    """The share group, once the ACL check passed (GROUP_ID_NOT_FOUND when there is none, or the id is
    another type's)."""
    ctx.require(operation, "GROUP", group_id)
    return ctx.broker.group_coordinator.share_group(group_id)


def _topic_id(ctx: RequestContext, name: str) -> Any:
    t = ctx.broker.metadata.topics.get(name)
    return t.topic_id if t is not None else ZERO


# ---- DescribeShareGroupOffsets --------------------------------------------------------------------
@api(DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse, 0, 1)
async def describe_share_group_offsets(ctx: RequestContext, req: Any) -> Any:
    R = DescribeShareGroupOffsetsResponse
    G = R.DescribeShareGroupOffsetsResponseGroup
    out = []
    for g in req.groups:
        try:
            share_group(ctx, g.group_id, "DESCRIBE")
            wanted = None if g.topics is None else {t.topic_name: list(t.partitions) for t in g.topics}
            denied = {n for n in (wanted or {}) if not ctx.authorize("DESCRIBE", "TOPIC", n)}
            described = ctx.broker.share_group_offsets.describe(
                g.group_id, None if wanted is None else {n: ps for n, ps in wanted.items() if n not in denied})
            if wanted is None:
                described = [t for t in described if ctx.authorize("DESCRIBE", "TOPIC", t.name)]
            for name in sorted(denied):
                described.append(TopicOffsets(name, _topic_id(ctx, name), [
                    PartitionOffset(p, error=TOPIC_AUTHORIZATION_FAILED) for p in (wanted or {})[name]]))
            out.append(G(group_id=g.group_id, topics=[_described_topic(t) for t in described], error_code=0,
                         error_message=None))
        except BrokerResponseError as exc:
            out.append(G(group_id=g.group_id, topics=[], error_code=error_code(exc), error_message=error_message(exc)))
    return R[ctx.api_version](throttle_time_ms=0, groups=out)


def _described_topic(t: TopicOffsets) -> Any:
    T = DescribeShareGroupOffsetsResponse.DescribeShareGroupOffsetsResponseGroup.DescribeShareGroupOffsetsResponseTopic
    P = T.DescribeShareGroupOffsetsResponsePartition
    return T(topic_name=t.name, topic_id=t.topic_id, partitions=[
        P(partition_index=p.partition, start_offset=p.start_offset, leader_epoch=p.leader_epoch, lag=p.lag,
          error_code=p.error, error_message=p.message) for p in t.partitions])


# ---- AlterShareGroupOffsets -----------------------------------------------------------------------
@api(AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse, 0, 0)
async def alter_share_group_offsets(ctx: RequestContext, req: Any) -> Any:
    R = AlterShareGroupOffsetsResponse
    T = R.AlterShareGroupOffsetsResponseTopic
    P = T.AlterShareGroupOffsetsResponsePartition
    wanted = {t.topic_name: {p.partition_index: p.start_offset for p in t.partitions} for t in req.topics}
    try:
        group = share_group(ctx, req.group_id, "READ")
        allowed = {n: ps for n, ps in wanted.items() if ctx.authorize("READ", "TOPIC", n)}
        codes = ctx.broker.share_group_offsets.alter(group, allowed)
    except BrokerResponseError as exc:
        return R[0](throttle_time_ms=0, error_code=error_code(exc), error_message=error_message(exc), responses=[])
    responses = [T(topic_name=n, topic_id=_topic_id(ctx, n), partitions=[
        P(partition_index=p, error_code=codes.get(n, {}).get(p, TOPIC_AUTHORIZATION_FAILED), error_message=None)
        for p in ps]) for n, ps in wanted.items()]
    return R[0](throttle_time_ms=0, error_code=0, error_message=None, responses=responses)


# ---- DeleteShareGroupOffsets ----------------------------------------------------------------------
@api(DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsResponse, 0, 0)
async def delete_share_group_offsets(ctx: RequestContext, req: Any) -> Any:
    R = DeleteShareGroupOffsetsResponse
    T = R.DeleteShareGroupOffsetsResponseTopic
    names = [t.topic_name for t in req.topics]
    try:
        group = share_group(ctx, req.group_id, "DELETE")
        codes = ctx.broker.share_group_offsets.delete(group, [n for n in names if ctx.authorize("READ", "TOPIC", n)])
    except BrokerResponseError as exc:
        return R[0](throttle_time_ms=0, error_code=error_code(exc), error_message=error_message(exc), responses=[])
    responses = [T(topic_name=n, topic_id=_topic_id(ctx, n), error_code=codes.get(n, TOPIC_AUTHORIZATION_FAILED),
                   error_message=None) for n in names]
    return R[0](throttle_time_ms=0, error_code=0, error_message=None, responses=responses)
