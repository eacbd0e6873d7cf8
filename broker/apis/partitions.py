"""Resolving a (topic name or id, partition) in a request to this node's leader replica."""

from __future__ import annotations

import uuid

from kafka.errors import (
    InvalidTopicError,
    NotLeaderForPartitionError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
)

from kafka_txn_broker.apis.context import Operation, RequestContext
from kafka_txn_broker.replica.partition import Partition
from kafka_txn_broker.server.metadata import TopicState

ZERO_UUID = uuid.UUID(int=0)


def resolve_topic(ctx: RequestContext, name: str | None, topic_id: uuid.UUID | None) -> TopicState:
    meta = ctx.node.metadata
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
    part = ctx.node.replica_manager.get(topic.name, index)
    if part is None:
        raise NotLeaderForPartitionError(f"node {ctx.node.node_id} hosts no replica of {topic.name}-{index}")
    return part


def leader(ctx: RequestContext, topic: TopicState, index: int) -> Partition:
    part = replica(ctx, topic, index)
    part.check_leader()
    return part


def writable_leader(ctx: RequestContext, topic: TopicState, index: int) -> Partition:
    if topic.internal:
        raise InvalidTopicError(f"clients cannot write to the internal topic {topic.name}")
    return leader(ctx, topic, index)
