"""DescribeConfigs (v1-4), AlterConfigs (v0-2) and IncrementalAlterConfigs (v0-1) for TOPIC, BROKER and
GROUP resources, and DescribeConfigs / IncrementalAlterConfigs for BROKER_LOGGER (the broker's loggers and
their levels, KIP-412) (kafka_txn_broker.configs has the rules).

Each resource gets its own error code and message, in Kafka's order: a resource named twice, a key twice
or a null value to set is INVALID_REQUEST; then DESCRIBE_CONFIGS / ALTER_CONFIGS on the topic, the
cluster (BROKER resources) or the group, else TOPIC_/CLUSTER_/GROUP_AUTHORIZATION_FAILED; then the
values. A BROKER resource names the receiving broker or "" (the cluster default), as admin clients send it;
a BROKER_LOGGER resource names the receiving broker, needs the CLUSTER permissions, and is not stored (logger
levels change at once, in this process). Legacy AlterConfigs refuses BROKER_LOGGER, as Kafka does.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from kafka_txn_broker.apis.context import CLUSTER_NAME, RequestContext, Resource
from kafka_txn_broker.apis.registry import api
from kafka_txn_broker.configs import broker_loggers, config_helper
from kafka_txn_broker.configs.config_def import ConfigSource, OpType, ResourceType
from kafka_txn_broker.configs.config_helper import ConfigEntry
from kafka_txn_broker.configs.configuration_control import (
    apply_ops,
    check_broker_name,
    check_request_configs,
)
from kafka_txn_broker.formats.errors import InvalidRequestError, UnknownTopicOrPartitionError, error_code, error_message
from kafka_txn_broker.formats.messages import (
    AlterConfigsRequest,
    AlterConfigsResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)
from kafka_txn_broker.metadata.topics import validate_topic_name

DR = DescribeConfigsResponse.DescribeConfigsResult
_ACL_RESOURCE: dict[int, Resource] = {ResourceType.TOPIC: "TOPIC", ResourceType.BROKER: "CLUSTER",
                                      ResourceType.BROKER_LOGGER: "CLUSTER", ResourceType.GROUP: "GROUP"}


def _unsupported(resource_type: int) -> InvalidRequestError:
    return InvalidRequestError(f"Unsupported resource type {resource_type}: the embedded broker has TOPIC (2), "
                               "BROKER (4), BROKER_LOGGER (8) and GROUP (32) configs")


def _authorize(ctx: RequestContext, operation: Any, resource_type: int, name: str) -> None:
    acl_resource = _ACL_RESOURCE.get(resource_type)
    if acl_resource is None:
        raise _unsupported(resource_type)
    ctx.require(operation, acl_resource, CLUSTER_NAME if acl_resource == "CLUSTER" else name)


# ---- DescribeConfigs ---------------------------------------------------------------------------------
def _entries(ctx: RequestContext, resource_type: int, name: str) -> list[ConfigEntry]:
    broker = ctx.broker
    if resource_type == ResourceType.TOPIC:
        validate_topic_name(name)
        topic = broker.metadata.topics.get(name)
        if topic is None:
            raise UnknownTopicOrPartitionError(f"The topic '{name}' does not exist.")
        return config_helper.describe_topic(topic.configs, broker.config)
    if resource_type == ResourceType.BROKER:
        if not name:
            return config_helper.describe_broker(broker.config, per_broker=False)
        try:
            broker_id = int(name)
        except ValueError:
            raise InvalidRequestError(f"Broker id must be an integer, but it is: {name}") from None
        if broker_id != broker.node_id:
            raise InvalidRequestError(f"Unexpected broker id, expected {broker.node_id} or empty string, "
                                      f"but received {name}")
        return config_helper.describe_broker(broker.config, per_broker=True)
    if resource_type == ResourceType.BROKER_LOGGER:
        _check_logger_broker(name, broker.node_id)
        return config_helper.describe_loggers(broker_loggers.loggers())
    if not name:  # GROUP: _authorize let no other type through
        raise InvalidRequestError("Group name must not be empty")
    return config_helper.describe_group(broker.metadata.resource_configs(ResourceType.GROUP, name),
                                        broker.config)


def _check_logger_broker(name: str, node_id: int) -> None:
    """DescribeConfigs' check of a BROKER_LOGGER name (Kafka's ConfigHelper): this broker's id, nothing else."""
    if not name:
        raise InvalidRequestError("Broker id must not be empty")
    try:
        broker_id = int(name)
    except ValueError:
        raise InvalidRequestError(f"Broker id must be an integer, but it is: {name}") from None
    if broker_id != node_id:
        raise InvalidRequestError(f"Unexpected broker id, expected {node_id} but received {name}")


def _described(entry: ConfigEntry, synonyms: bool, documentation: bool) -> Any:
    E = DR.DescribeConfigsResourceResult
    return E(name=entry.name, value=entry.value, read_only=entry.read_only, config_source=entry.source,
             is_default=entry.source == ConfigSource.DEFAULT_CONFIG, is_sensitive=entry.sensitive,
             synonyms=[E.DescribeConfigsSynonym(name=n, value=v, source=s) for n, v, s in entry.synonyms]
             if synonyms else [],
             config_type=entry.type, documentation=entry.doc if documentation else None)


def _describe(ctx: RequestContext, res: Any, synonyms: bool, documentation: bool) -> Any:
    try:
        _authorize(ctx, "DESCRIBE_CONFIGS", res.resource_type, res.resource_name)
        entries = _entries(ctx, res.resource_type, res.resource_name)
        keys = set(res.configuration_keys or ())  # null or empty: every config, as Kafka answers
        configs = [_described(e, synonyms, documentation) for e in entries if not keys or e.name in keys]
        return DR(error_code=0, error_message=None, resource_type=res.resource_type,
                  resource_name=res.resource_name, configs=configs)
    except Exception as exc:
        return DR(error_code=error_code(exc), error_message=error_message(exc), resource_type=res.resource_type,
                  resource_name=res.resource_name, configs=[])


@api(DescribeConfigsRequest, DescribeConfigsResponse, 1, 4)
async def handle_describe(ctx: RequestContext, req: Any) -> Any:
    synonyms = bool(getattr(req, "include_synonyms", False))
    documentation = bool(getattr(req, "include_documentation", False))
    return DescribeConfigsResponse[ctx.api_version](
        throttle_time_ms=0, results=[_describe(ctx, r, synonyms, documentation) for r in req.resources])


# ---- IncrementalAlterConfigs and AlterConfigs --------------------------------------------------------
def _alter(ctx: RequestContext, res: Any, twice: bool, incremental: bool, validate_only: bool) -> None:
    if twice:
        raise InvalidRequestError("Each resource must appear at most once.")
    resource_type, name = res.resource_type, res.resource_name
    if incremental:
        ops = [(c.name, c.config_operation, c.value) for c in res.configs]
        check_request_configs([n for n, _op, _v in ops], [(n, v) for n, op, v in ops if op != OpType.DELETE])
    else:
        check_request_configs([c.name for c in res.configs], [(c.name, c.value) for c in res.configs])
    if resource_type == ResourceType.BROKER_LOGGER:
        if not incremental:  # Kafka's legacy AlterConfigs knows no BROKER_LOGGER resource
            raise InvalidRequestError(f"Unknown resource type {resource_type}")
        _alter_loggers(ctx, name, ops, validate_only)
        return
    if resource_type == ResourceType.BROKER:
        check_broker_name(name, ctx.broker.node_id)
    _authorize(ctx, "ALTER_CONFIGS", resource_type, name)
    control = ctx.broker.channel.controller.configuration(ctx.broker.config, ctx.broker.node_id)
    new = (apply_ops(resource_type, control.current(resource_type, name), ops) if incremental
           else {c.name: c.value for c in res.configs})
    control.alter(resource_type, name, new, validate_only)


def _alter_loggers(ctx: RequestContext, name: str, ops: list[tuple[str, int, str | None]],
                   validate_only: bool) -> None:
    """Kafka's RuntimeLoggerManager order: permission, then the broker id, then every change, then apply."""
    _authorize(ctx, "ALTER_CONFIGS", ResourceType.BROKER_LOGGER, name)
    try:
        broker_id = int(name)
    except ValueError:
        raise InvalidRequestError(f"Node id must be an integer, but it is: {name}") from None
    if broker_id != ctx.broker.node_id:
        raise InvalidRequestError(f"Unexpected node id. Expected {ctx.broker.node_id}, but received {name}")
    broker_loggers.validate(ops)
    if not validate_only:
        broker_loggers.apply(ops)


def _alter_all(ctx: RequestContext, req: Any, response_cls: Any, incremental: bool) -> Any:
    counts = Counter((r.resource_type, r.resource_name) for r in req.resources)
    results = []
    for res in req.resources:
        try:
            _alter(ctx, res, counts[res.resource_type, res.resource_name] > 1, incremental, req.validate_only)
            code, message = 0, None
        except Exception as exc:
            code, message = error_code(exc), error_message(exc)
        results.append(response_cls.AlterConfigsResourceResponse(
            error_code=code, error_message=message, resource_type=res.resource_type, resource_name=res.resource_name))
    return response_cls[ctx.api_version](throttle_time_ms=0, responses=results)


@api(IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse, 0, 1)
async def handle_incremental_alter(ctx: RequestContext, req: Any) -> Any:
    return _alter_all(ctx, req, IncrementalAlterConfigsResponse, incremental=True)


@api(AlterConfigsRequest, AlterConfigsResponse, 0, 2)
async def handle_alter(ctx: RequestContext, req: Any) -> Any:
    return _alter_all(ctx, req, AlterConfigsResponse, incremental=False)
