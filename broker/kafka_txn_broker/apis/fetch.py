"""Fetch: read from partition leaders up to the high watermark (or the LSO for read_committed),
long-polling up to MaxWaitMs until MinBytes are available. No fetch sessions: SessionId 0 tells the
client to send full requests (KIP-227 allows a broker to decline sessions)."""

from __future__ import annotations

import asyncio
from typing import Any

from kafka_txn_broker.apis.context import RequestContext
from kafka_txn_broker.apis.partitions import NEW_LEADER_ERRORS, authorized_topic, current_leader, leader, node_endpoints
from kafka_txn_broker.apis.registry import api
from kafka_txn_broker.formats.errors import FencedLeaderEpochError, UnknownLeaderEpochError, error_code
from kafka_txn_broker.formats.messages import FetchRequest, FetchResponse

R = FetchResponse
TR = R.FetchableTopicResponse
PD = TR.PartitionData
READ_COMMITTED = 1


class _Budget:
    """Response-wide MaxBytes: the first non-empty partition may exceed it (KIP-74), later ones stop."""

    def __init__(self, max_bytes: int) -> None:
        self.left = max_bytes
        self.used = 0


def _check_epoch(requested: int, current: int) -> None:
    if requested < 0 or requested == current:
        return
    if requested < current:
        raise FencedLeaderEpochError(f"leader epoch {requested} is older than {current}")
    raise UnknownLeaderEpochError(f"leader epoch {requested} is newer than {current}")


def _read_one(ctx: RequestContext, req: Any, topic: Any, p: Any, budget: _Budget) -> Any:
    name, topic_id = getattr(topic, "topic", None), getattr(topic, "topic_id", None)
    try:
        t = authorized_topic(ctx, "READ", name, topic_id)
        part = leader(ctx, t, p.partition)
        _check_epoch(getattr(p, "current_leader_epoch", -1), part.state.leader_epoch)
        log = part.log
        committed = req.isolation_level == READ_COMMITTED
        limit = min(p.partition_max_bytes, budget.left) if budget.used else p.partition_max_bytes
        records: Any = b""
        aborted = None
        if limit > 0:
            data = log.read(p.fetch_offset, limit, committed, min_one_batch=budget.used == 0)
            records, aborted = data.records, data.aborted_transactions
        size = len(records)
        budget.used += size
        budget.left -= size
        aborted_out = None
        if committed:
            aborted_out = [PD.AbortedTransaction(producer_id=a.producer_id, first_offset=a.first_offset)
                           for a in (aborted or [])]
        return PD(partition_index=p.partition, error_code=0, high_watermark=log.high_watermark,
                  last_stable_offset=log.last_stable_offset, log_start_offset=log.log_start_offset,
                  aborted_transactions=aborted_out, preferred_read_replica=-1, records=bytes(records))
    except Exception as exc:
        code = error_code(exc)
        hint = None
        if code in NEW_LEADER_ERRORS and ctx.api_version >= 12:
            leader_id, epoch = current_leader(ctx, name, topic_id, p.partition)
            hint = PD.LeaderIdAndEpoch(leader_id=leader_id, leader_epoch=epoch)
        return PD(partition_index=p.partition, error_code=code, high_watermark=-1,
                  last_stable_offset=-1, log_start_offset=-1, aborted_transactions=None,
                  preferred_read_replica=-1, records=b"", current_leader=hint)


def _read_all(ctx: RequestContext, req: Any) -> tuple[list[Any], int, bool]:
    budget = _Budget(req.max_bytes if ctx.api_version >= 3 else 2**31 - 1)
    out, errors = [], False
    for topic in req.topics:
        parts = [_read_one(ctx, req, topic, p, budget) for p in topic.partitions]
        errors = errors or any(p.error_code for p in parts)
        out.append(TR(topic=getattr(topic, "topic", None), topic_id=getattr(topic, "topic_id", None),
                      partitions=parts))
    return out, budget.used, errors


def _leader_endpoints(ctx: RequestContext, responses: list[Any]) -> list[Any]:
    leaders = {p.current_leader.leader_id for t in responses for p in t.partitions
               if getattr(p, "current_leader", None) is not None and p.current_leader.leader_id >= 0}
    return node_endpoints(ctx, leaders, R.NodeEndpoint) if leaders else []


# v13+ name topics by id (KIP-516); v16+ answer a stale leader with the new one and its endpoint (KIP-951);
# v15's ReplicaState, v17's directory id and v18's high watermark concern follower replicas only.
@api(FetchRequest, FetchResponse, 4, 18)
async def handle(ctx: RequestContext, req: Any) -> Any:
    # Long polling is network time, not broker time: a test's manual clock must not stall a Fetch.
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(req.max_wait_ms, 0) / 1000.0
    while True:
        responses, size, errors = _read_all(ctx, req)
        remaining = deadline - loop.time()
        if size >= max(req.min_bytes, 1) or errors or remaining <= 0 or not ctx.broker.is_online():
            break
        await ctx.broker.replica_manager.wait_for_data(remaining)
    endpoints = _leader_endpoints(ctx, responses) if ctx.api_version >= 16 else []
    return R[ctx.api_version](throttle_time_ms=0, error_code=0, session_id=0, responses=responses,
                              node_endpoints=endpoints)
