"""Offset APIs of the group coordinator: OffsetCommit, OffsetFetch (single and multi-group), TxnOffsetCommit.

Registered by importing this module from apis/groups.py.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kafka_txn_broker.apis.context import RequestContext
from kafka_txn_broker.apis.registry import api
from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.errors import TOPIC_AUTHORIZATION_FAILED, BrokerResponseError, error_code
from kafka_txn_broker.formats.group_records import OffsetValue
from kafka_txn_broker.formats.messages import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from kafka_txn_broker.group.offset_commit import CommitRequest, FetchedOffset, commit, fetch, validate_fetch
from kafka_txn_broker.group.offset_store import TopicPartition


def _partition_exists(ctx: RequestContext, topic: str, partition: int) -> bool:
    t = ctx.broker.metadata.topics.get(topic)
    return t is not None and 0 <= partition < len(t.partitions)


def _requested(ctx: RequestContext, topics: Iterable[Any], offset_field: str
               ) -> tuple[list[tuple[str, list[int]]], dict[TopicPartition, OffsetValue], dict[TopicPartition, int]]:
    """Request order, the offsets to commit, and the partitions refused up front (topics without READ,
    then unknown topics, as Kafka orders it)."""
    order: list[tuple[str, list[int]]] = []
    offsets: dict[TopicPartition, OffsetValue] = {}
    refused: dict[TopicPartition, int] = {}
    for t in topics:
        order.append((t.name, [p.partition_index for p in t.partitions]))
        for p in t.partitions:
            tp = (t.name, p.partition_index)
            if not ctx.authorize("READ", "TOPIC", t.name):
                refused[tp] = TOPIC_AUTHORIZATION_FAILED
                continue
            if not _partition_exists(ctx, *tp):
                refused[tp] = E.UNKNOWN_TOPIC_OR_PARTITION
                continue
            epoch = getattr(p, "committed_leader_epoch", -1)
            offsets[tp] = OffsetValue(getattr(p, offset_field), -1 if epoch is None else epoch,
                                      p.committed_metadata or "")
    return order, offsets, refused


def _commit_all(ctx: RequestContext, req: CommitRequest, order: list[tuple[str, list[int]]],
                refused: dict[TopicPartition, int], transactional_id: str | None = None) -> dict[TopicPartition, int]:
    everywhere: int | None = None
    try:
        # Kafka: WRITE on the transactional id, then READ on the group, or every partition fails.
        if transactional_id is not None:
            ctx.require("WRITE", "TRANSACTIONAL_ID", transactional_id)
        ctx.require("READ", "GROUP", req.group_id)
        shard = ctx.broker.group_coordinator.shard(req.group_id)
    except BrokerResponseError as exc:
        everywhere = error_code(exc)
    else:
        if transactional_id is not None and req.producer is not None and req.offsets:
            everywhere = ctx.broker.txn_offset_commit_verifier.verify(ctx.api_version, transactional_id,
                                                                    *req.producer, shard.partition) or None
    if everywhere is not None:
        return {(t, p): everywhere for t, parts in order for p in parts}
    codes = commit(shard, req) if req.offsets else {}
    return {**codes, **refused}


# ---- OffsetCommit ---------------------------------------------------------------------------------
@api(OffsetCommitRequest, OffsetCommitResponse, 2, 9)
async def offset_commit(ctx: RequestContext, req: Any) -> Any:
    order, offsets, refused = _requested(ctx, req.topics, "committed_offset")
    creq = CommitRequest(req.group_id, req.generation_id_or_member_epoch, req.member_id,
                         getattr(req, "group_instance_id", None), offsets, ctx.api_version)
    codes = _commit_all(ctx, creq, order, refused)
    R = OffsetCommitResponse
    T, P = R.OffsetCommitResponseTopic, R.OffsetCommitResponseTopic.OffsetCommitResponsePartition
    topics = [T(name=name, partitions=[P(partition_index=p, error_code=codes[(name, p)]) for p in parts])
              for name, parts in order]
    return R[ctx.api_version](throttle_time_ms=0, topics=topics)


# ---- TxnOffsetCommit ------------------------------------------------------------------------------
@api(TxnOffsetCommitRequest, TxnOffsetCommitResponse, 0, 5)
async def txn_offset_commit(ctx: RequestContext, req: Any) -> Any:
    order, offsets, refused = _requested(ctx, req.topics, "committed_offset")
    creq = CommitRequest(req.group_id, getattr(req, "generation_id", -1), getattr(req, "member_id", "") or "",
                         getattr(req, "group_instance_id", None), offsets, ctx.api_version,
                         producer=(req.producer_id, req.producer_epoch))
    codes = _commit_all(ctx, creq, order, refused, req.transactional_id)
    R = TxnOffsetCommitResponse
    T = R.TxnOffsetCommitResponseTopic
    P = T.TxnOffsetCommitResponsePartition
    topics = [T(name=name, partitions=[P(partition_index=p, error_code=codes[(name, p)]) for p in parts])
              for name, parts in order]
    return R[ctx.api_version](throttle_time_ms=0, topics=topics)


# ---- OffsetFetch ----------------------------------------------------------------------------------
GroupFetch = tuple[int, dict[TopicPartition, FetchedOffset]]


def _fetch_group(ctx: RequestContext, group_id: str, topics: list[Any] | None, require_stable: bool,
                 member: tuple[str | None, int] = (None, -1)) -> GroupFetch:
    wanted = None if topics is None else [(t.name, p) for t in topics for p in t.partition_indexes]
    try:
        ctx.require("DESCRIBE", "GROUP", group_id)
        shard = ctx.broker.group_coordinator.shard(group_id)
        validate_fetch(shard, group_id, *member)
    except BrokerResponseError as exc:
        code = error_code(exc)
        return code, {tp: FetchedOffset(error=code) for tp in wanted or []}
    if wanted is None:  # all of the group's offsets: topics without DESCRIBE are left out silently
        found = fetch(shard, group_id, None, require_stable)
        return 0, {tp: o for tp, o in found.items() if ctx.authorize("DESCRIBE", "TOPIC", tp[0])}
    allowed = ctx.authorized("DESCRIBE", "TOPIC", (t for t, _ in wanted))
    found = fetch(shard, group_id, [tp for tp in wanted if tp[0] in allowed], require_stable)
    return 0, {tp: found.get(tp) or FetchedOffset(error=TOPIC_AUTHORIZATION_FAILED) for tp in wanted}


def _by_topic(offsets: dict[TopicPartition, FetchedOffset]) -> dict[str, list[tuple[int, FetchedOffset]]]:
    out: dict[str, list[tuple[int, FetchedOffset]]] = {}
    for (topic, partition), value in offsets.items():
        out.setdefault(topic, []).append((partition, value))
    return out


def _single_group_response(v: int, result: GroupFetch) -> Any:
    R = OffsetFetchResponse
    T = R.OffsetFetchResponseTopic
    P = T.OffsetFetchResponsePartition
    code, offsets = result
    topics = [T(name=name, partitions=[P(partition_index=p, committed_offset=o.offset,
                                         committed_leader_epoch=o.leader_epoch, metadata=o.metadata,
                                         error_code=o.error) for p, o in parts])
              for name, parts in _by_topic(offsets).items()]
    return R[v](throttle_time_ms=0, topics=topics, error_code=code)


def _multi_group_response(v: int, results: list[tuple[str, GroupFetch]]) -> Any:
    R = OffsetFetchResponse
    G = R.OffsetFetchResponseGroup
    T = G.OffsetFetchResponseTopics
    P = T.OffsetFetchResponsePartitions
    groups = []
    for group_id, (code, offsets) in results:
        topics = [T(name=name, partitions=[P(partition_index=p, committed_offset=o.offset,
                                             committed_leader_epoch=o.leader_epoch, metadata=o.metadata,
                                             error_code=o.error) for p, o in parts])
                  for name, parts in _by_topic(offsets).items()]
        groups.append(G(group_id=group_id, topics=topics, error_code=code))
    return R[v](throttle_time_ms=0, groups=groups)


def _member(group: Any) -> tuple[str | None, int]:
    """(member id, member epoch) of an OffsetFetch v9+ group entry (consumer group members send them)."""
    epoch = getattr(group, "member_epoch", -1)
    return getattr(group, "member_id", None), -1 if epoch is None else epoch


@api(OffsetFetchRequest, OffsetFetchResponse, 1, 9)
async def offset_fetch(ctx: RequestContext, req: Any) -> Any:
    v = ctx.api_version
    require_stable = bool(getattr(req, "require_stable", False))
    if v >= 8:
        results = [(g.group_id, _fetch_group(ctx, g.group_id, g.topics, require_stable, _member(g)))
                   for g in req.groups]
        return _multi_group_response(v, results)
    return _single_group_response(v, _fetch_group(ctx, req.group_id, req.topics, require_stable))
