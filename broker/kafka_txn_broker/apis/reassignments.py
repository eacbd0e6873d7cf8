"""AlterPartitionReassignments and ListPartitionReassignments (kafka-reassign-partitions.sh, AdminClient
alter/list_partition_reassignments): the controller (server/replication_control.py) adds the target
replicas, they catch up from the leader and join the ISR, then the removed replicas leave. ALTER on the
cluster to change, DESCRIBE to list."""

from __future__ import annotations

from typing import Any

from kafka_txn_broker.apis.context import RequestContext
from kafka_txn_broker.apis.registry import api
from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.errors import ApiError, error_code, error_message
from kafka_txn_broker.formats.messages import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
)

AR = AlterPartitionReassignmentsResponse
ATR = AR.ReassignableTopicResponse
APR = ATR.ReassignablePartitionResponse
LR = ListPartitionReassignmentsResponse
LTR = LR.OngoingTopicReassignment
LPR = LTR.OngoingPartitionReassignment


def _check_factor(ctx: RequestContext, topic: str, index: int, replicas: list[int] | None, allowed: bool) -> None:
    """v1 (KIP-860): AllowReplicationFactorChange=false refuses a target of another size."""
    t = ctx.broker.metadata.topics.get(topic)
    if allowed or replicas is None or t is None or not 0 <= index < len(t.partitions):
        return
    p = t.partitions[index]
    current = len(p.replicas) - len(p.adding_replicas)
    if len(replicas) != current:
        raise ApiError(f"The replication factor is changed from {current} to {len(replicas)} but "
                       "allowReplicationFactorChange is false", E.INVALID_REPLICATION_FACTOR)


def _alter_one(ctx: RequestContext, topic: str, p: Any, allow_factor_change: bool) -> Any:
    try:
        replicas = None if p.replicas is None else list(p.replicas)
        _check_factor(ctx, topic, p.partition_index, replicas, allow_factor_change)
        ctx.broker.channel.controller.alter_reassignment(topic, p.partition_index, replicas)
        return APR(partition_index=p.partition_index, error_code=0, error_message=None)
    except Exception as exc:
        return APR(partition_index=p.partition_index, error_code=error_code(exc), error_message=error_message(exc))


@api(AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse, 0, 1)
async def handle_alter(ctx: RequestContext, req: Any) -> Any:
    allow = bool(getattr(req, "allow_replication_factor_change", True))
    code, message = E.NONE, None
    if not ctx.authorize("ALTER", "CLUSTER"):
        code, message = E.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."
    responses = []
    for t in req.topics:
        if code:
            parts = [APR(partition_index=p.partition_index, error_code=code, error_message=message)
                     for p in t.partitions]
        else:
            parts = [_alter_one(ctx, t.name, p, allow) for p in t.partitions]
        responses.append(ATR(name=t.name, partitions=parts))
    return AR[ctx.api_version](throttle_time_ms=0, allow_replication_factor_change=allow, error_code=code,
                               error_message=message, responses=responses)


@api(ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse, 0, 0)
async def handle_list(ctx: RequestContext, req: Any) -> Any:
    if not ctx.authorize("DESCRIBE", "CLUSTER"):
        return LR[ctx.api_version](throttle_time_ms=0, error_code=E.CLUSTER_AUTHORIZATION_FAILED,
                                   error_message="Cluster authorization failed.", topics=[])
    wanted = None if req.topics is None else {t.name: list(t.partition_indexes) for t in req.topics}
    by_topic: dict[str, list[Any]] = {}
    for p in ctx.broker.channel.controller.reassignments(wanted):
        by_topic.setdefault(p.topic, []).append(LPR(
            partition_index=p.partition, replicas=list(p.replicas), adding_replicas=list(p.adding_replicas),
            removing_replicas=list(p.removing_replicas)))
    topics = [LTR(name=name, partitions=parts) for name, parts in by_topic.items()]
    return LR[ctx.api_version](throttle_time_ms=0, error_code=0, error_message=None, topics=topics)
