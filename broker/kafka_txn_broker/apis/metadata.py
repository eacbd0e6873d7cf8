"""Metadata: brokers, topics, partitions, leaders; auto-creates requested topics when enabled."""

from __future__ import annotations

import uuid
from typing import Any

from kafka_txn_broker.apis.context import RequestContext
from kafka_txn_broker.apis.registry import api
from kafka_txn_broker.formats.errors import (
    LEADER_NOT_AVAILABLE,
    TOPIC_AUTHORIZATION_FAILED,
    UNKNOWN_TOPIC_ID,
    UNKNOWN_TOPIC_OR_PARTITION,
    InvalidTopicError,
)
from kafka_txn_broker.formats.messages import MetadataRequest, MetadataResponse, new_struct
from kafka_txn_broker.gc_pause import bulk
from kafka_txn_broker.metadata.topics import INTERNAL_TOPICS, TopicState

R = MetadataResponse
T = R.MetadataResponseTopic
P = T.MetadataResponsePartition
ZERO_UUID = uuid.UUID(int=0)


def brokers(ctx: RequestContext) -> list[Any]:
    return [R.MetadataResponseBroker(node_id=b.node_id, host=b.host, port=b.port, rack=None)
            for b in ctx.broker.channel.live_brokers()]


def topic_entry(ctx: RequestContext, topic: TopicState) -> Any:
    live = {b.node_id for b in ctx.broker.channel.live_brokers()}
    # new_struct: kafka-python's constructor walks the schema per partition (an all-topics answer has thousands).
    parts = [new_struct(P, error_code=0 if p.leader != -1 else LEADER_NOT_AVAILABLE, partition_index=p.partition,
                        leader_id=p.leader, leader_epoch=p.leader_epoch, replica_nodes=list(p.replicas),
                        isr_nodes=list(p.isr), offline_replicas=[r for r in p.replicas if r not in live])
             for p in topic.partitions]
    return T(error_code=0, name=topic.name, topic_id=topic.topic_id, is_internal=topic.internal,
             partitions=parts)


def _missing(name: str | None, topic_id: uuid.UUID | None, code: int) -> Any:
    return T(error_code=code, name=name, topic_id=topic_id or ZERO_UUID, is_internal=False, partitions=[])


def _auto_create(ctx: RequestContext, name: str) -> TopicState | None:
    cfg = ctx.broker.config
    if name in INTERNAL_TOPICS:
        return None
    try:
        return ctx.broker.channel.controller.create_topic(name, cfg["num.partitions"],
                                                          cfg["default.replication.factor"], cap_replication=True)
    except InvalidTopicError:
        return None


@api(MetadataRequest, MetadataResponse, 0, 13)  # v13 (KIP-1102): a top-level ErrorCode, 0 here
async def handle(ctx: RequestContext, req: Any) -> Any:
    meta = ctx.broker.metadata
    allow_auto = getattr(req, "allow_auto_topic_creation", True) and ctx.broker.config["auto.create.topics.enable"]
    if req.topics is None or (ctx.api_version == 0 and not req.topics):
        # Topics the principal may not DESCRIBE are left out silently, as Kafka does.
        with bulk():
            topics = [topic_entry(ctx, t) for t in meta.topics.values()
                      if ctx.authorize("DESCRIBE", "TOPIC", t.name)]
    else:
        topics = [_lookup(ctx, getattr(t, "name", None), getattr(t, "topic_id", None), allow_auto)
                  for t in req.topics]
    return R[ctx.api_version](throttle_time_ms=0, brokers=brokers(ctx), cluster_id=ctx.broker.config["cluster.id"],
                              controller_id=ctx.broker.channel.controller_id(),
                              topics=topics)


def _lookup(ctx: RequestContext, name: str | None, topic_id: uuid.UUID | None, allow_auto: bool) -> Any:
    meta = ctx.broker.metadata
    if not name and topic_id and topic_id != ZERO_UUID:
        t = meta.topics_by_id.get(topic_id)
        if t is not None and not ctx.authorize("DESCRIBE", "TOPIC", t.name):
            return _missing(None, topic_id, TOPIC_AUTHORIZATION_FAILED)
        return topic_entry(ctx, t) if t else _missing(None, topic_id, UNKNOWN_TOPIC_ID)
    if name is None:
        # v12 may name a topic by id only; with neither a name nor an id there is nothing to find.
        return _missing(None, topic_id, UNKNOWN_TOPIC_ID)
    if not ctx.authorize("DESCRIBE", "TOPIC", name):
        return _missing(name, None, TOPIC_AUTHORIZATION_FAILED)  # before the lookup: existence stays hidden
    t = meta.topics.get(name)
    if t is None and allow_auto:
        if not (ctx.authorize("CREATE", "CLUSTER") or ctx.authorize("CREATE", "TOPIC", name)):
            return _missing(name, None, TOPIC_AUTHORIZATION_FAILED)
        t = _auto_create(ctx, name)
        if t is not None:
            # Like Kafka, the first answer for a just-created topic says LEADER_NOT_AVAILABLE... but
            # our leaders exist at once, so answer with the real metadata and save the client a retry.
            return topic_entry(ctx, t)
    return topic_entry(ctx, t) if t else _missing(name, None, UNKNOWN_TOPIC_OR_PARTITION)
