"""Resolving a (topic name or id, partition) in a request to this node's leader replica."""

from __future__ import annotations

import uuid
from typing import Any

from kafka_txn_broker.apis.context import Operation, RequestContext
from kafka_txn_broker.formats.errors import (
    FencedLeaderEpochError,
    InvalidTopicError,
    NotLeaderForPartitionError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
)
from kafka_txn_broker.metadata.topics import TopicState
from kafka_txn_broker.replica.partition import Partition

ZERO_UUID = uuid.UUID(int=0)


def resolve_topic(ctx: RequestContext, name: str | None, topic_id: uuid.UUID | None) -> TopicState:
    meta = ctx.broker.metadata
    if topic_id is not None and topic_id != ZERO_UUID and not name:
        t = meta.topics_by_id.get(topic_id)
        if t is None:
            raise UnknownTopicIdError(f"no topic has id {topic_id}")
        return t
    t = meta.topics.get(name or "")
    if t is None:
        raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
    return t


def authorized_topic(ctx: RequestContext, operation: Operation, name: str | None,
                     topic_id: uuid.UUID | None) -> TopicState:
    """resolve_topic, authorized as Kafka orders it: a topic named in the request is checked before it is
    looked up (so a principal cannot probe which topics exist), a topic given by id after."""
    if topic_id is not None and topic_id != ZERO_UUID and not name:
        topic = resolve_topic(ctx, name, topic_id)
        ctx.require(operation, "TOPIC", topic.name)
        return topic
    ctx.require(operation, "TOPIC", name or "")
    return resolve_topic(ctx, name, topic_id)


def replica(ctx: RequestContext, topic: TopicState, index: int) -> Partition:
    """This node's replica of the partition, or the Kafka error a client expects."""
    if not 0 <= index < len(topic.partitions):
        raise UnknownTopicOrPartitionError(f"{topic.name}-{index} does not exist")
    part = ctx.broker.replica_manager.get(topic.name, index)
    if part is None:
        raise NotLeaderForPartitionError(f"node {ctx.broker.node_id} hosts no replica of {topic.name}-{index}")
    return part


def leader(ctx: RequestContext, topic: TopicState, index: int) -> Partition:
    part = replica(ctx, topic, index)
    part.check_leader()
    return part


def writable_leader(ctx: RequestContext, topic: TopicState, index: int) -> Partition:
    if topic.internal:
        raise InvalidTopicError(f"clients cannot write to the internal topic {topic.name}")
    return leader(ctx, topic, index)


# KIP-951: Produce v10+ and Fetch v16+ tell a client that hit a stale leader who leads now, and where.
NEW_LEADER_ERRORS = frozenset({NotLeaderForPartitionError.errno, FencedLeaderEpochError.errno})


def current_leader(ctx: RequestContext, name: str | None, topic_id: uuid.UUID | None, index: int) -> tuple[int, int]:
    """(leader id, leader epoch) of a partition for a KIP-951 hint; (-1, -1) when unknown."""
    meta = ctx.broker.metadata
    topic = meta.topics.get(name) if name else meta.topics_by_id.get(topic_id) if topic_id else None
    if topic is None or not 0 <= index < len(topic.partitions):
        return -1, -1
    p = topic.partitions[index]
    return p.leader, p.leader_epoch


def node_endpoints(ctx: RequestContext, node_ids: set[int], endpoint: Any) -> list[Any]:
    """NodeEndpoints (KIP-951) of the live nodes among `node_ids`, built with the response's class."""
    found = [ctx.broker.channel.endpoint(node_id) for node_id in sorted(node_ids)]
    return [endpoint(node_id=b.node_id, host=b.host, port=b.port, rack=None) for b in found if b is not None]
