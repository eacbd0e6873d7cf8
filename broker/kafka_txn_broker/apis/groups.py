"""Group membership APIs: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, DescribeGroups, ListGroups.

Handlers only translate between wire versions and the coordinator (the broker's `group` package).
JoinGroup and SyncGroup may have to wait for other members: they park on a future that the
group state machine completes, holding only this client's connection.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

from kafka_txn_broker.apis import group_admin, offset_commit  # noqa: F401  (register their APIs)
from kafka_txn_broker.apis.context import Operation, RequestContext
from kafka_txn_broker.apis.registry import api
from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.errors import (
    BrokerResponseError,
    CoordinatorLoadInProgressError,
    GroupIdNotFoundError,
    error_code,
    error_message,
)
from kafka_txn_broker.formats.messages import (
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListGroupsRequest,
    ListGroupsResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kafka_txn_broker.group.classic_group import ClassicGroup, GroupState, JoinResult, SyncResult
from kafka_txn_broker.group.coordinator import GroupCoordinator
from kafka_txn_broker.group.membership import JoinRequest, SyncRequest
from kafka_txn_broker.group.shard import GroupShard

T = TypeVar("T")


def coordinator(ctx: RequestContext) -> GroupCoordinator:
    return ctx.broker.group_coordinator


def group_shard(ctx: RequestContext, group_id: str, operation: Operation = "READ") -> GroupShard:
    """The group's shard, once Kafka's ACL check passed (else GROUP_AUTHORIZATION_FAILED is raised)."""
    ctx.require(operation, "GROUP", group_id)
    return coordinator(ctx).shard(group_id)


def client_host(ctx: RequestContext) -> str:
    # Kafka reports the peer address as Java's InetAddress.toString(): "/127.0.0.1".
    return "/" + ctx.peer.rsplit(":", 1)[0]


async def wait_for(start: Callable[[Callable[[T], None]], None]) -> T:
    """Run an operation that answers through a callback, possibly later, and await its answer."""
    fut: asyncio.Future[T] = asyncio.get_running_loop().create_future()

    def answer(result: T) -> None:
        if not fut.done():  # the client may have gone away (its connection task was cancelled)
            fut.set_result(result)

    start(answer)
    return await fut


# ---- JoinGroup ------------------------------------------------------------------------------------
def _join_response(v: int, r: JoinResult) -> Any:
    R = JoinGroupResponse
    members = [R.JoinGroupResponseMember(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                         metadata=m.metadata) for m in r.members]
    # ProtocolName became nullable in v7; older versions send "" when there is none.
    name = r.protocol_name if r.protocol_name is not None or v >= 7 else ""
    return R[v](throttle_time_ms=0, error_code=r.error, generation_id=r.generation, protocol_type=r.protocol_type,
                protocol_name=name, leader=r.leader, skip_assignment=False, member_id=r.member_id, members=members)


def _join_request(ctx: RequestContext, req: Any) -> JoinRequest:
    v = ctx.api_version
    rebalance_timeout = req.rebalance_timeout_ms if v >= 1 else req.session_timeout_ms
    return JoinRequest(req.group_id, req.member_id, getattr(req, "group_instance_id", None), ctx.client_id or "",
                       client_host(ctx), req.session_timeout_ms, rebalance_timeout, req.protocol_type,
                       [(p.name, bytes(p.metadata)) for p in req.protocols], require_known_member_id=v >= 4)


@api(JoinGroupRequest, JoinGroupResponse, 0, 9)
async def join_group(ctx: RequestContext, req: Any) -> Any:
    try:
        shard = group_shard(ctx, req.group_id)
    except BrokerResponseError as exc:
        return _join_response(ctx.api_version, JoinResult(error_code(exc), req.member_id))
    join = _join_request(ctx, req)
    result: JoinResult = await wait_for(lambda answer: shard.membership.join(join, answer))
    return _join_response(ctx.api_version, result)


# ---- SyncGroup ------------------------------------------------------------------------------------
def _sync_response(v: int, r: SyncResult) -> Any:
    return SyncGroupResponse[v](throttle_time_ms=0, error_code=r.error, protocol_type=r.protocol_type,
                                protocol_name=r.protocol_name, assignment=r.assignment)


@api(SyncGroupRequest, SyncGroupResponse, 0, 5)
async def sync_group(ctx: RequestContext, req: Any) -> Any:
    try:
        shard = group_shard(ctx, req.group_id)
    except BrokerResponseError as exc:
        return _sync_response(ctx.api_version, SyncResult(error_code(exc)))
    sync = SyncRequest(req.group_id, req.member_id, getattr(req, "group_instance_id", None), req.generation_id,
                       getattr(req, "protocol_type", None), getattr(req, "protocol_name", None),
                       {a.member_id: bytes(a.assignment) for a in req.assignments})
    result: SyncResult = await wait_for(lambda answer: shard.membership.sync(sync, answer))
    return _sync_response(ctx.api_version, result)


# ---- Heartbeat ------------------------------------------------------------------------------------
@api(HeartbeatRequest, HeartbeatResponse, 0, 4)
async def heartbeat(ctx: RequestContext, req: Any) -> Any:
    try:
        shard = group_shard(ctx, req.group_id)
        code = shard.membership.heartbeat(req.group_id, req.member_id, getattr(req, "group_instance_id", None),
                                          req.generation_id)
    except CoordinatorLoadInProgressError:
        code = 0  # as Kafka: the group is still loading, so the member is told to carry on
    except BrokerResponseError as exc:
        code = error_code(exc)
    return HeartbeatResponse[ctx.api_version](throttle_time_ms=0, error_code=code)


# ---- LeaveGroup -----------------------------------------------------------------------------------
@api(LeaveGroupRequest, LeaveGroupResponse, 0, 5)
async def leave_group(ctx: RequestContext, req: Any) -> Any:
    v = ctx.api_version
    leaving: list[tuple[str, str | None]] = (
        [(req.member_id, None)] if v < 3 else [(m.member_id, m.group_instance_id) for m in req.members])
    try:
        top, codes = group_shard(ctx, req.group_id).membership.leave(req.group_id, leaving)
    except BrokerResponseError as exc:
        top, codes = error_code(exc), []
    R = LeaveGroupResponse
    if v < 3:
        # One member per request: its own error is the response's error.
        return R[v](throttle_time_ms=0, error_code=top or (codes[0] if codes else 0), members=[])
    members = [R.MemberResponse(member_id=mid, group_instance_id=iid, error_code=code)
               for (mid, iid), code in zip(leaving, codes, strict=False)]
    return R[v](throttle_time_ms=0, error_code=top, members=members)


# ---- DescribeGroups -------------------------------------------------------------------------------
def _described(group_id: str, code: int, message: str | None, state: str = "", group: ClassicGroup | None = None,
               ) -> Any:
    G = DescribeGroupsResponse.DescribedGroup
    stable = group is not None and group.is_in(GroupState.STABLE)
    protocol = (group.protocol_name or "") if group is not None and stable else ""
    members = []
    for m in group.members.values() if group is not None else ():
        # Subscription and assignment are only meaningful once the generation is complete.
        meta = m.metadata_for(protocol) if protocol else b""
        members.append(G.DescribedGroupMember(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                              client_id=m.client_id, client_host=m.client_host,
                                              member_metadata=meta, member_assignment=m.assignment if stable else b""))
    protocol_type = (group.protocol_type or "") if group is not None else ""
    return G(error_code=code, error_message=message, group_id=group_id, group_state=state,
             protocol_type=protocol_type, protocol_data=protocol, members=members,
             authorized_operations=None)  # None: not requested


def _describe_one(ctx: RequestContext, group_id: str) -> Any:
    if not ctx.authorize("DESCRIBE", "GROUP", group_id):
        # Kafka answers a group the caller may not DESCRIBE with the bare error code: no message.
        return _described(group_id, E.GROUP_AUTHORIZATION_FAILED, None)
    try:
        group = coordinator(ctx).classic_group(group_id)
    except GroupIdNotFoundError as exc:
        # No group, or another type's (as Kafka 4.x: v6 names the problem, older versions see a Dead group).
        if ctx.api_version >= 6:
            return _described(group_id, E.GROUP_ID_NOT_FOUND, error_message(exc), "Dead")
        return _described(group_id, 0, None, "Dead")
    except BrokerResponseError as exc:
        return _described(group_id, error_code(exc), error_message(exc))
    return _described(group_id, 0, None, group.state.value, group)


@api(DescribeGroupsRequest, DescribeGroupsResponse, 0, 6)
async def describe_groups(ctx: RequestContext, req: Any) -> Any:
    groups = [_describe_one(ctx, gid) for gid in req.groups]
    return DescribeGroupsResponse[ctx.api_version](throttle_time_ms=0, groups=groups)


# ---- ListGroups -----------------------------------------------------------------------------------
@api(ListGroupsRequest, ListGroupsResponse, 0, 5)
async def list_groups(ctx: RequestContext, req: Any) -> Any:
    states = {s.lower() for s in (getattr(req, "states_filter", None) or [])}
    types = {t.lower() for t in (getattr(req, "types_filter", None) or [])}
    coord = coordinator(ctx)
    L = ListGroupsResponse.ListedGroup
    # DESCRIBE on the cluster shows every group; otherwise only the groups the principal may DESCRIBE.
    everything = ctx.authorize("DESCRIBE", "CLUSTER")
    # A share group's protocol type is "share", a KIP-848 consumer group's "consumer" (what v0-v4 report).
    listed = [L(group_id=g.group_id, protocol_type=g.protocol_type, group_state=g.state, group_type=g.group_type)
              for g in coord.listed_groups()
              if (not states or g.state.lower() in states) and (not types or g.group_type in types)
              and (everything or ctx.authorize("DESCRIBE", "GROUP", g.group_id))]
    # Kafka still answers while some partitions load, but says the list may be incomplete.
    code = int(CoordinatorLoadInProgressError.errno) if coord.loading else 0
    return ListGroupsResponse[ctx.api_version](throttle_time_ms=0, error_code=code, groups=listed)
