"""ShareGroupHeartbeat (76) and ShareGroupDescribe (77): share group membership on the group coordinator.

Handlers translate between the wire and the share membership of the group's shard
(kafka_txn_broker/group/share_membership.py). ACLs as Kafka: READ on the group to heartbeat (and DESCRIBE on the
subscribed topics), DESCRIBE on the group to describe it.
"""

from __future__ import annotations

from typing import Any

from kafka_txn_broker.apis.context import RequestContext
from kafka_txn_broker.apis.groups import client_host, group_shard
from kafka_txn_broker.apis.registry import api
from kafka_txn_broker.formats.errors import BrokerResponseError, CoordinatorNotAvailableError, error_code, error_message
from kafka_txn_broker.formats.messages import (
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)
from kafka_txn_broker.group.modern.assignor import Assignment
from kafka_txn_broker.group.share_group import ShareGroup
from kafka_txn_broker.group.share_membership import ShareHeartbeat, ShareHeartbeatResult

AUTHORIZED_OPERATIONS_OMITTED = -(2**31)


def _assignment(assignment: Assignment | None) -> Any:
    if assignment is None:
        return None
    A = ShareGroupHeartbeatResponse.Assignment
    return A(topic_partitions=[A.TopicPartitions(topic_id=t, partitions=sorted(p))
                               for t, p in sorted(assignment.items())])


@api(ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse, 1, 1)
async def share_group_heartbeat(ctx: RequestContext, req: Any) -> Any:
    try:
        shard = group_shard(ctx, req.group_id or "")
        if shard.share_membership is None:
            raise CoordinatorNotAvailableError("share groups are not served by this coordinator")
        for name in req.subscribed_topic_names or ():
            ctx.require("DESCRIBE", "TOPIC", name)
        result = shard.share_membership.heartbeat(ShareHeartbeat(
            req.group_id or "", req.member_id or "", req.member_epoch, req.rack_id,
            list(req.subscribed_topic_names) if req.subscribed_topic_names is not None else None,
            ctx.client_id or "", client_host(ctx)))
    except BrokerResponseError as exc:
        result = ShareHeartbeatResult(error_code(exc), error_message(exc))
    ok = result.error == 0
    return ShareGroupHeartbeatResponse[ctx.api_version](
        throttle_time_ms=0, error_code=result.error, error_message=result.message,
        member_id=result.member_id if ok else None, member_epoch=result.member_epoch if ok else -1,
        heartbeat_interval_ms=result.heartbeat_interval_ms, assignment=_assignment(result.assignment) if ok else None)


def _described(group: ShareGroup, topic_names: dict[Any, str]) -> Any:
    G = ShareGroupDescribeResponse.DescribedGroup
    M = G.Member
    members = [M(member_id=m.member_id, rack_id=m.rack_id, member_epoch=m.member_epoch, client_id=m.client_id,
                 client_host=m.client_host, subscribed_topic_names=sorted(m.subscribed_topic_names),
                 assignment=M.Assignment(topic_partitions=[
                     M.Assignment.TopicPartitions(topic_id=t, topic_name=topic_names.get(t, ""), partitions=sorted(p))
                     for t, p in sorted(m.assigned.items())]))
               for m in group.members.values()]
    return G(error_code=0, error_message=None, group_id=group.group_id, group_state=group.state,
             group_epoch=group.group_epoch, assignment_epoch=group.assignment_epoch, assignor_name="simple",
             members=members, authorized_operations=AUTHORIZED_OPERATIONS_OMITTED)


def _describe_error(group_id: str, code: int, message: str | None) -> Any:
    return ShareGroupDescribeResponse.DescribedGroup(
        error_code=code, error_message=message, group_id=group_id, group_state="Dead", group_epoch=-1,
        assignment_epoch=-1, assignor_name="", members=[], authorized_operations=AUTHORIZED_OPERATIONS_OMITTED)


@api(ShareGroupDescribeRequest, ShareGroupDescribeResponse, 1, 1)
async def share_group_describe(ctx: RequestContext, req: Any) -> Any:
    topics = {t.topic_id: name for name, t in ctx.broker.metadata.topics.items()}
    out = []
    for group_id in req.group_ids:
        try:
            ctx.require("DESCRIBE", "GROUP", group_id)
            out.append(_described(ctx.broker.group_coordinator.share_group(group_id), topics))
        except BrokerResponseError as exc:
            out.append(_describe_error(group_id, error_code(exc), error_message(exc)))
    return ShareGroupDescribeResponse[ctx.api_version](throttle_time_ms=0, groups=out)

