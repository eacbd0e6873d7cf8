"""ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69): KIP-848 consumer groups on the group coordinator.

Handlers translate between the wire and the consumer membership of the group's shard
(kafka_txn_broker/group/consumer_membership.py). ACLs as Kafka: READ on the group to heartbeat (and DESCRIBE on the
subscribed topics), DESCRIBE on the group to describe it.
"""

from __future__ import annotations

import uuid
from typing import Any

from kafka_txn_broker.apis.context import RequestContext
from kafka_txn_broker.apis.groups import client_host, group_shard
from kafka_txn_broker.apis.registry import api
from kafka_txn_broker.formats.errors import BrokerResponseError, CoordinatorNotAvailableError, error_code, error_message
from kafka_txn_broker.formats.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from kafka_txn_broker.group.consumer_group import ConsumerGroup
from kafka_txn_broker.group.consumer_membership import DEFAULT_ASSIGNOR, ConsumerHeartbeat, ConsumerHeartbeatResult
from kafka_txn_broker.group.modern.assignor import Assignment

AUTHORIZED_OPERATIONS_OMITTED = -(2**31)
CONSUMER_MEMBER_TYPE = 1  # MemberType in ConsumerGroupDescribe v1: 0 classic, 1 consumer


def _assignment(assignment: Assignment | None) -> Any:
    if assignment is None:
        return None
    A = ConsumerGroupHeartbeatResponse.Assignment
    return A(topic_partitions=[A.TopicPartitions(topic_id=t, partitions=sorted(p))
                               for t, p in sorted(assignment.items())])


def _owned(req: Any) -> Assignment | None:
    if req.topic_partitions is None:
        return None
    return {tp.topic_id: frozenset(tp.partitions) for tp in req.topic_partitions if tp.partitions}


def _heartbeat(ctx: RequestContext, req: Any) -> ConsumerHeartbeat:
    member_id = req.member_id or ""
    if ctx.api_version == 0 and not member_id and req.member_epoch == 0:
        member_id = str(uuid.uuid4())  # v0: the coordinator names a joining member; v1+: the client does
    return ConsumerHeartbeat(
        req.group_id or "", member_id, req.member_epoch, req.instance_id, req.rack_id, req.rebalance_timeout_ms,
        list(req.subscribed_topic_names) if req.subscribed_topic_names is not None else None,
        getattr(req, "subscribed_topic_regex", None), req.server_assignor, _owned(req), ctx.client_id or "",
        client_host(ctx), ctx.principal)


@api(ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, 0, 1)
async def consumer_group_heartbeat(ctx: RequestContext, req: Any) -> Any:
    try:
        shard = group_shard(ctx, req.group_id or "")
        if shard.consumer_membership is None:
            raise CoordinatorNotAvailableError("consumer groups are not served by this coordinator")
        for name in req.subscribed_topic_names or ():
            ctx.require("DESCRIBE", "TOPIC", name)
        result = shard.consumer_membership.heartbeat(_heartbeat(ctx, req))
    except BrokerResponseError as exc:
        result = ConsumerHeartbeatResult(error_code(exc), error_message(exc))
    ok = result.error == 0
    return ConsumerGroupHeartbeatResponse[ctx.api_version](
        throttle_time_ms=0, error_code=result.error, error_message=result.message,
        member_id=result.member_id if ok else None, member_epoch=result.member_epoch if ok else -1,
        heartbeat_interval_ms=result.heartbeat_interval_ms, assignment=_assignment(result.assignment) if ok else None)


def _described_assignment(cls: Any, assignment: Assignment, topic_names: dict[Any, str]) -> Any:
    tps = [cls.TopicPartitions(topic_id=t, topic_name=topic_names.get(t, ""), partitions=sorted(p))
           for t, p in sorted(assignment.items())]
    return cls(topic_partitions=tps)


def _described(group: ConsumerGroup, topic_names: dict[Any, str]) -> Any:
    G = ConsumerGroupDescribeResponse.DescribedGroup
    M = G.Member
    members = [M(member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id, member_epoch=m.member_epoch,
                 client_id=m.client_id, client_host=m.client_host,
                 subscribed_topic_names=sorted(m.subscribed_topic_names),
                 subscribed_topic_regex=m.subscribed_topic_regex,
                 assignment=_described_assignment(M.Assignment, m.assigned, topic_names),
                 target_assignment=_described_assignment(M.TargetAssignment, group.target.get(m.member_id, {}),
                                                         topic_names),
                 member_type=CONSUMER_MEMBER_TYPE)
               for m in group.members.values()]
    return G(error_code=0, error_message=None, group_id=group.group_id, group_state=group.state,
             group_epoch=group.group_epoch, assignment_epoch=group.assignment_epoch,
             assignor_name=group.preferred_assignor(DEFAULT_ASSIGNOR), members=members,
             authorized_operations=AUTHORIZED_OPERATIONS_OMITTED)


def _describe_error(group_id: str, code: int, message: str | None) -> Any:
    return ConsumerGroupDescribeResponse.DescribedGroup(
        error_code=code, error_message=message, group_id=group_id, group_state="Dead", group_epoch=-1,
        assignment_epoch=-1, assignor_name="", members=[], authorized_operations=AUTHORIZED_OPERATIONS_OMITTED)


@api(ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, 0, 1)
async def consumer_group_describe(ctx: RequestContext, req: Any) -> Any:
    topics = {t.topic_id: name for name, t in ctx.broker.metadata.topics.items()}
    out = []
    for group_id in req.group_ids:
        try:
            ctx.require("DESCRIBE", "GROUP", group_id)
            out.append(_described(ctx.broker.group_coordinator.consumer_group(group_id), topics))
        except BrokerResponseError as exc:
            out.append(_describe_error(group_id, error_code(exc), error_message(exc)))
    return ConsumerGroupDescribeResponse[ctx.api_version](throttle_time_ms=0, groups=out)
