"""DescribeAcls, CreateAcls and DeleteAcls (v1-3) over the cluster's AclAuthorizer.

As in Kafka: without an authorizer every answer is SECURITY_DISABLED; DescribeAcls needs DESCRIBE on
the cluster, CreateAcls and DeleteAcls need ALTER on it (else CLUSTER_AUTHORIZATION_FAILED); a bad
binding or filter is INVALID_REQUEST with the reason. ACLs from the broker config cannot be deleted
here (each such match carries INVALID_REQUEST saying so): the config is their source.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import Any

from kafka_txn_broker.apis.context import Operation, RequestContext
from kafka_txn_broker.apis.registry import api
from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.messages import (
    CreateAclsRequest,
    CreateAclsResponse,
    DeleteAclsRequest,
    DeleteAclsResponse,
    DescribeAclsRequest,
    DescribeAclsResponse,
)
from kafka_txn_broker.security.acls import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclError,
    Op,
    PatternType,
    Permission,
    ResourcePattern,
    ResourceType,
)

log = logging.getLogger(__name__)

NO_AUTHORIZER = "no authorizer is configured on the broker (authorizer.class.name)"
FROM_CONFIG = "the ACL comes from the broker config (authorizer.acls); remove it there"


def _refusal(ctx: RequestContext, operation: Operation) -> tuple[int, str] | None:
    if ctx.authorizer is None:
        return E.SECURITY_DISABLED, NO_AUTHORIZER
    if not ctx.authorize(operation, "CLUSTER"):
        return E.CLUSTER_AUTHORIZATION_FAILED, f"{ctx.principal} needs {operation} on the cluster"
    return None


def _filter(f: Any) -> AclBindingFilter:
    try:
        flt = AclBindingFilter(ResourceType(f.resource_type_filter), f.resource_name_filter,
                               PatternType(f.pattern_type_filter),
                               f.principal_filter, f.host_filter, Op(f.operation), Permission(f.permission_type))
    except ValueError as exc:
        raise AclError(f"unknown code in ACL filter: {exc}") from None
    flt.validate()
    return flt


# ---- DescribeAcls ------------------------------------------------------------------------------------
def _described(bindings: list[AclBinding]) -> list[Any]:
    R = DescribeAclsResponse.DescribeAclsResource
    by_pattern: dict[ResourcePattern, list[AccessControlEntry]] = defaultdict(list)
    for b in bindings:
        by_pattern[b.pattern].append(b.entry)
    return [R(resource_type=p.resource_type, resource_name=p.name, pattern_type=p.pattern_type,
              acls=[R.AclDescription(principal=e.principal, host=e.host, operation=e.operation,
                                     permission_type=e.permission) for e in entries])
            for p, entries in by_pattern.items()]


@api(DescribeAclsRequest, DescribeAclsResponse, 1, 3)
async def describe_acls(ctx: RequestContext, req: Any) -> Any:
    R = DescribeAclsResponse[ctx.api_version]
    refused = _refusal(ctx, "DESCRIBE")
    if refused is not None:
        return R(throttle_time_ms=0, error_code=refused[0], error_message=refused[1], resources=[])
    try:
        flt = _filter(req)
    except AclError as exc:
        return R(throttle_time_ms=0, error_code=E.INVALID_REQUEST, error_message=str(exc), resources=[])
    assert ctx.authorizer is not None
    return R(throttle_time_ms=0, error_code=E.NONE, error_message=None, resources=_described(ctx.authorizer.acls(flt)))


# ---- CreateAcls --------------------------------------------------------------------------------------
def _create_one(ctx: RequestContext, c: Any) -> tuple[int, str | None]:
    assert ctx.authorizer is not None
    try:
        binding = AclBinding(ResourcePattern(ResourceType(c.resource_type), c.resource_name,
                                             PatternType(c.resource_pattern_type)),
                             AccessControlEntry(c.principal, c.host, Op(c.operation), Permission(c.permission_type)))
        ctx.authorizer.create(binding)
    except (AclError, ValueError) as exc:
        return E.INVALID_REQUEST, f"invalid ACL: {exc}"
    except OSError as exc:
        log.error("cannot store ACLs: %s", exc)
        return E.UNKNOWN_SERVER_ERROR, f"the broker could not store the ACL: {exc.strerror}"
    return E.NONE, None


@api(CreateAclsRequest, CreateAclsResponse, 1, 3)
async def create_acls(ctx: RequestContext, req: Any) -> Any:
    R = CreateAclsResponse
    refused = _refusal(ctx, "ALTER")
    results = []
    for c in req.creations:
        code, message = refused if refused is not None else _create_one(ctx, c)
        results.append(R.AclCreationResult(error_code=code, error_message=message))
    return R[ctx.api_version](throttle_time_ms=0, results=results)


# ---- DeleteAcls --------------------------------------------------------------------------------------
def _matching(b: AclBinding, code: int, message: str | None) -> Any:
    M = DeleteAclsResponse.DeleteAclsFilterResult.DeleteAclsMatchingAcl
    p, e = b.pattern, b.entry
    return M(error_code=code, error_message=message, resource_type=p.resource_type, resource_name=p.name,
             pattern_type=p.pattern_type, principal=e.principal, host=e.host, operation=e.operation,
             permission_type=e.permission)


def _delete_one(ctx: RequestContext, f: Any) -> Any:
    F = DeleteAclsResponse.DeleteAclsFilterResult
    assert ctx.authorizer is not None
    try:
        deleted, from_config = ctx.authorizer.delete(_filter(f))
    except AclError as exc:
        return F(error_code=E.INVALID_REQUEST, error_message=str(exc), matching_acls=[])
    except OSError as exc:
        log.error("cannot store ACLs: %s", exc)
        return F(error_code=E.UNKNOWN_SERVER_ERROR, error_message=f"the broker could not store ACLs: {exc.strerror}",
                 matching_acls=[])
    matching = [_matching(b, E.NONE, None) for b in deleted] + [_matching(b, E.INVALID_REQUEST, FROM_CONFIG)
                                                               for b in from_config]
    return F(error_code=E.NONE, error_message=None, matching_acls=matching)


@api(DeleteAclsRequest, DeleteAclsResponse, 1, 3)
async def delete_acls(ctx: RequestContext, req: Any) -> Any:
    F = DeleteAclsResponse.DeleteAclsFilterResult
    refused = _refusal(ctx, "ALTER")
    if refused is not None:
        results = [F(error_code=refused[0], error_message=refused[1], matching_acls=[]) for _ in req.filters]
    else:
        results = [_delete_one(ctx, f) for f in req.filters]
    return DeleteAclsResponse[ctx.api_version](throttle_time_ms=0, filter_results=results)
