"""CreateTopics, DeleteTopics and CreatePartitions."""

from __future__ import annotations

from typing import Any

from kafka_txn_broker.apis.context import RequestContext, denied
from kafka_txn_broker.apis.registry import api
from kafka_txn_broker.configs import config_helper, log_config
from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.errors import (
    ApiError,
    InvalidRequestError,
    PolicyViolationError,
    error_code,
    error_message,
)
from kafka_txn_broker.formats.messages import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
)
from kafka_txn_broker.metadata.topics import INTERNAL_TOPICS
from kafka_txn_broker.server.replication_control import MAX_PARTITIONS_PER_REQUEST

CR = CreateTopicsResponse
DR = DeleteTopicsResponse


def _create(ctx: RequestContext, t: Any, validate_only: bool) -> Any:
    controller = ctx.broker.channel.controller
    cfg = ctx.broker.config
    try:
        if not (ctx.authorize("CREATE", "CLUSTER") or ctx.authorize("CREATE", "TOPIC", t.name)):
            raise denied(ctx.principal, "CREATE", "TOPIC", t.name)
        placed = _manual_assignments(ctx, t)
        if placed is not None:
            partitions, rf = len(placed), len(placed[0])
        else:
            partitions = cfg["num.partitions"] if t.num_partitions == -1 else t.num_partitions
            rf = cfg["default.replication.factor"] if t.replication_factor == -1 else t.replication_factor
        configs = {c.name: c.value for c in t.configs}
        log_config.validate(configs, ctx.broker.config)  # INVALID_CONFIG, nothing created
        topic = controller.create_topic(t.name, partitions, rf, configs, validate_only=validate_only,
                                        assignments=placed)
        described = [CR.CreatableTopicResult.CreatableTopicConfigs(
            name=e.name, value=e.value, read_only=e.read_only, config_source=e.source, is_sensitive=e.sensitive)
            for e in config_helper.describe_topic(topic.configs, ctx.broker.config)]
        return CR.CreatableTopicResult(name=t.name, topic_id=topic.topic_id, error_code=0, error_message=None,
                                       num_partitions=partitions, replication_factor=rf, configs=described)
    except Exception as exc:
        return CR.CreatableTopicResult(name=t.name, error_code=error_code(exc), error_message=error_message(exc),
                                       num_partitions=-1, replication_factor=-1, configs=None)


def _manual_assignments(ctx: RequestContext, t: Any) -> list[list[int]] | None:
    """kafka-topics.sh --replica-assignment: the replicas of each partition, checked as Kafka checks them."""
    if not t.assignments:
        return None
    if t.replication_factor != -1:
        raise InvalidRequestError("A manual partition assignment was specified, but replication factor was not "
                                  "set to -1.")
    if t.num_partitions != -1:
        raise InvalidRequestError("A manual partition assignment was specified, but numPartitions was not set to -1.")
    found: dict[int, list[int]] = {}
    for a in t.assignments:
        if a.partition_index in found:
            raise ApiError(f"Found multiple manual partition assignments for partition {a.partition_index}",
                           E.INVALID_REPLICA_ASSIGNMENT)
        found[a.partition_index] = list(a.broker_ids)
    return ctx.broker.channel.controller.topic_assignments(found)


# Kafka's controller refuses more new partitions than MAX_PARTITIONS_PER_REQUEST in one request
# (KAFKA-17870); without the bound a single request (or one flipped bit in num_partitions) would have the
# node build millions.
def _too_many_partitions(ctx: RequestContext, req: Any) -> bool:
    default = ctx.broker.config["num.partitions"]
    total = 0
    for t in req.topics:
        if t.assignments:
            total += len(t.assignments)
        else:
            total += default if t.num_partitions == -1 else max(t.num_partitions, 0)
        if total > MAX_PARTITIONS_PER_REQUEST:
            return True
    return False


def _refused(t: Any) -> Any:
    return CR.CreatableTopicResult(name=t.name, error_code=PolicyViolationError.errno,
                                   error_message="Excessively large number of partitions per request.",
                                   num_partitions=-1, replication_factor=-1, configs=None)


@api(CreateTopicsRequest, CreateTopicsResponse, 2, 7)
async def handle_create(ctx: RequestContext, req: Any) -> Any:
    validate_only = bool(getattr(req, "validate_only", False))
    if _too_many_partitions(ctx, req):
        return CR[ctx.api_version](throttle_time_ms=0, topics=[_refused(t) for t in req.topics])
    return CR[ctx.api_version](throttle_time_ms=0, topics=[_create(ctx, t, validate_only) for t in req.topics])


def _delete(ctx: RequestContext, name: str | None, topic_id: Any) -> Any:
    metadata = ctx.broker.metadata
    try:
        if not name and topic_id is not None:
            t = metadata.topics_by_id.get(topic_id)
            name = t.name if t else None
        if name is not None:
            ctx.require("DELETE", "TOPIC", name)
        if name in INTERNAL_TOPICS:
            raise InvalidRequestError(f"the internal topic {name} cannot be deleted")
        topic = metadata.topics.get(name or "")
        if topic is None:
            from kafka_txn_broker.formats.errors import UnknownTopicOrPartitionError

            raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
        ctx.broker.channel.controller.delete_topic(topic.name)
        return DR.DeletableTopicResult(name=name, topic_id=topic.topic_id, error_code=0, error_message=None)
    except Exception as exc:
        return DR.DeletableTopicResult(name=name, error_code=error_code(exc), error_message=error_message(exc))


@api(DeleteTopicsRequest, DeleteTopicsResponse, 1, 6)
async def handle_delete(ctx: RequestContext, req: Any) -> Any:
    if ctx.api_version >= 6:
        results = [_delete(ctx, t.name, t.topic_id) for t in req.topics]
    else:
        results = [_delete(ctx, n, None) for n in req.topic_names]
    return DR[ctx.api_version](throttle_time_ms=0, responses=results)


# ---- CreatePartitions ----------------------------------------------------------------------------------
PR = CreatePartitionsResponse
PResult = PR.CreatePartitionsTopicResult


def _add_partitions(ctx: RequestContext, t: Any, validate_only: bool) -> Any:
    try:
        assignments = None if t.assignments is None else [list(a.broker_ids) for a in t.assignments]
        ctx.broker.channel.controller.create_partitions(t.name, t.count, assignments, validate_only)
        return PResult(name=t.name, error_code=0, error_message=None)
    except Exception as exc:
        return PResult(name=t.name, error_code=error_code(exc), error_message=error_message(exc))


@api(CreatePartitionsRequest, CreatePartitionsResponse, 0, 3)
async def handle_create_partitions(ctx: RequestContext, req: Any) -> Any:
    """Kafka's order: a topic named twice is INVALID_REQUEST, then ALTER on each topic, then the controller."""
    names = [t.name for t in req.topics]
    twice = {n for n in names if names.count(n) > 1}
    results = [PResult(name=n, error_code=E.INVALID_REQUEST, error_message="Duplicate topic name.")
               for n in sorted(twice)]
    allowed = ctx.authorized("ALTER", "TOPIC", (n for n in names if n not in twice))
    done: set[str] = set()
    for t in req.topics:
        if t.name in twice or t.name in done:
            continue
        done.add(t.name)
        if t.name not in allowed:
            results.append(PResult(name=t.name, error_code=E.TOPIC_AUTHORIZATION_FAILED, error_message=None))
        else:
            results.append(_add_partitions(ctx, t, bool(req.validate_only)))
    return PR[ctx.api_version](throttle_time_ms=0, results=results)
