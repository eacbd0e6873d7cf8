"""OffsetForLeaderEpoch (KIP-101, KIP-320): where did a leader epoch end on this partition's leader?

A consumer asks after a leader change (and when it restores a committed offset) with the epoch of the
last record it consumed; if the answer's end offset lies below its position, the log was truncated
under it and it must not carry on from a position that no longer exists.

Kafka's rules, in Kafka's order: CLUSTER_ACTION on the cluster (brokers) or else DESCRIBE on the topic
(consumers) per topic; then the hosting check (UNKNOWN_TOPIC_OR_PARTITION, or NOT_LEADER_OR_FOLLOWER
when this node has no replica); then CurrentLeaderEpoch fencing (-1 skips it); then only the leader
answers, whatever the ReplicaId (Kafka's ReplicaManager always asks for the leader); an offline log is
KAFKA_STORAGE_ERROR. The answer is the largest epoch <= the requested one with the offset where it ended
(the log end for the latest epoch); an epoch the log cannot place, newer than the latest included, is
(-1, -1) without an error, as in Kafka's LeaderEpochFileCache.
"""

from __future__ import annotations

from typing import Any

from kafka_txn_broker.apis.context import RequestContext
from kafka_txn_broker.apis.partitions import replica, resolve_topic
from kafka_txn_broker.apis.registry import api
from kafka_txn_broker.formats.errors import (
    TOPIC_AUTHORIZATION_FAILED,
    FencedLeaderEpochError,
    UnknownLeaderEpochError,
    error_code,
)
from kafka_txn_broker.formats.messages import OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse
from kafka_txn_broker.replica.partition import Partition

R = OffsetForLeaderEpochResponse
TR = R.OffsetForLeaderTopicResult
PR = TR.EpochEndOffset

# CurrentLeaderEpoch -1 (NO_PARTITION_LEADER_EPOCH) skips fencing. Only -1: unlike Fetch, which Kafka lets
# skip the check for any negative epoch, here another negative value is simply an older epoch.
NO_EPOCH_CHECK = -1


def check_current_leader_epoch(requested: int, current: int) -> None:
    """Fence a client whose metadata is older (FENCED_LEADER_EPOCH) or newer (UNKNOWN_LEADER_EPOCH) than
    this node's: it must refresh metadata before it can trust an answer about the partition."""
    if requested in (NO_EPOCH_CHECK, current):
        return
    if requested < current:
        raise FencedLeaderEpochError(f"leader epoch {requested} is older than the current {current}")
    raise UnknownLeaderEpochError(f"leader epoch {requested} is newer than the current {current}")


def _ensure_current_epoch_known(part: Partition) -> None:
    """A leader that kept its epoch across a restart was not elected in this process, so nothing recorded
    its epoch; until it writes in it, its epoch cache stops at an older one. As in Kafka, where every
    leader records its epoch on becoming leader, that epoch starts at the log end."""
    epoch = part.state.leader_epoch
    if part.log.latest_epoch < epoch:
        part.log.assign_epoch_start(epoch)


def _end_offset(ctx: RequestContext, topic_name: str, p: Any) -> Any:
    try:
        part = replica(ctx, resolve_topic(ctx, topic_name, None), p.partition)
        check_current_leader_epoch(getattr(p, "current_leader_epoch", NO_EPOCH_CHECK), part.state.leader_epoch)
        part.check_leader()
        part.log.log.check_online()  # Kafka answers an offline log dir's partitions KAFKA_STORAGE_ERROR
        _ensure_current_epoch_known(part)
        epoch, end_offset = part.log.end_offset_for_epoch(p.leader_epoch)
        return PR(partition=p.partition, error_code=0, leader_epoch=epoch, end_offset=end_offset)
    except Exception as exc:
        return PR(partition=p.partition, error_code=error_code(exc), leader_epoch=-1, end_offset=-1)


def _denied(p: Any) -> Any:
    return PR(partition=p.partition, error_code=TOPIC_AUTHORIZATION_FAILED, leader_epoch=-1, end_offset=-1)


def _topic_result(ctx: RequestContext, topic: Any, cluster_action: bool) -> Any:
    # The topic is authorized before it is looked up, so a refused principal cannot probe which topics exist.
    if cluster_action or ctx.authorize("DESCRIBE", "TOPIC", topic.topic):
        partitions = [_end_offset(ctx, topic.topic, p) for p in topic.partitions]
    else:
        partitions = [_denied(p) for p in topic.partitions]
    return TR(topic=topic.topic, partitions=partitions)


# v0-v1 were removed in Kafka 4.0 and kafka-python's schema starts at v2, the first with CurrentLeaderEpoch
# (librdkafka sends v2, kafka-python and Java clients up to v4).
@api(OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse, 2, 4)
async def handle(ctx: RequestContext, req: Any) -> Any:
    # Brokers replicating hold CLUSTER_ACTION, which covers every topic (checked once, as Kafka does).
    cluster_action = ctx.authorize("CLUSTER_ACTION", "CLUSTER")
    topics = [_topic_result(ctx, t, cluster_action) for t in req.topics]
    return R[ctx.api_version](throttle_time_ms=0, topics=topics)
