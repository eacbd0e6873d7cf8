"""Produce: validate and append record batches on the partition leader, replicate, acknowledge."""

from __future__ import annotations

from typing import Any

from kafka_txn_broker.apis.context import RequestContext
from kafka_txn_broker.apis.partitions import (
    NEW_LEADER_ERRORS,
    authorized_topic,
    current_leader,
    node_endpoints,
    writable_leader,
)
from kafka_txn_broker.apis.registry import api
from kafka_txn_broker.formats.errors import (
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    CorruptRecordError,
    InvalidRecordError,
    InvalidRequiredAcksError,
    error_code,
    error_message,
)
from kafka_txn_broker.formats.messages import ProduceRequest, ProduceResponse, new_message, new_struct
from kafka_txn_broker.formats.record_batch import HEADER_SIZE, UnsupportedCompressionError, iter_batches, iter_records

R = ProduceResponse
TR = R.TopicProduceResponse
PR = TR.PartitionProduceResponse


def _append_one(ctx: RequestContext, req: Any, topic_data: Any, pdata: Any) -> Any:
    name, topic_id = getattr(topic_data, "name", None), getattr(topic_data, "topic_id", None)
    try:
        topic = authorized_topic(ctx, "WRITE", name, topic_id)
        part = writable_leader(ctx, topic, pdata.index)
        if pdata.records is None:
            raise CorruptRecordError("produce request without records")
        if "compact" in topic.configs.get("cleanup.policy", ""):  # cheap: every produce request passes here
            _check_keys(pdata.records, topic.name, pdata.index)
        before = ctx.broker.produce_verifier.verify(getattr(req, "transactional_id", None), ctx.api_version,
                                                  topic.name, pdata.index, pdata.records)
        if before is not None:
            raise before
        info = part.append_as_leader(pdata.records, req.acks)
        return new_struct(PR, index=pdata.index, error_code=0, base_offset=info.first_offset,
                          log_append_time_ms=info.log_append_time, log_start_offset=info.log_start_offset,
                          record_errors=[], error_message=None)
    except Exception as exc:  # every per-partition failure becomes that partition's error code
        code = error_code(exc)
        hint = None
        if code in NEW_LEADER_ERRORS and ctx.api_version >= 10:
            leader_id, epoch = current_leader(ctx, name, topic_id, pdata.index)
            hint = PR.LeaderIdAndEpoch(leader_id=leader_id, leader_epoch=epoch)
        return PR(index=pdata.index, error_code=code, base_offset=-1, log_append_time_ms=-1,
                  log_start_offset=-1, record_errors=[], error_message=error_message(exc), current_leader=hint)


def _check_keys(records: bytes, topic: str, partition: int) -> None:
    """Kafka refuses records without a key on a compacted topic (compaction keeps the latest value per
    key, so a keyless record has no meaning there). A batch whose codec we cannot decode is let through:
    the cleaner keeps keyless records anyway."""
    for pos, header in iter_batches(records):
        if header.is_control:
            continue
        try:
            keys = [r.key for r in iter_records(memoryview(records)[pos:pos + header.size])]
        except (UnsupportedCompressionError, CorruptRecordError, ValueError):
            continue  # framing and CRC errors are reported by the append's own validation
        if any(k is None for k in keys):
            raise InvalidRecordError(f"compacted topic {topic} (partition {partition}) cannot accept a record "
                                     "without a key: give every record a key, or use cleanup.policy=delete")


def _has_transactional_batch(req: Any) -> bool:
    for t in req.topic_data:
        for p in t.partition_data:
            records = p.records
            if isinstance(records, bytes | bytearray | memoryview) and len(records) >= HEADER_SIZE and any(
                    h.is_transactional for _, h in iter_batches(records)):
                return True
    return False


def _transactional_write_refused(ctx: RequestContext, req: Any) -> bool:
    """Kafka: transactional records need WRITE on their transactional id, else the whole request fails.
    (Idempotent records need nothing here since Kafka 2.8: InitProducerId checks them.)"""
    if ctx.authorizer is None or not _has_transactional_batch(req):
        return False
    txn_id = getattr(req, "transactional_id", None)
    return txn_id is None or not ctx.authorize("WRITE", "TRANSACTIONAL_ID", txn_id)


def _leader_endpoints(ctx: RequestContext, responses: list[Any]) -> list[Any]:
    leaders = {p.current_leader.leader_id for t in responses for p in t.partition_responses
               if getattr(p, "current_leader", None) is not None and p.current_leader.leader_id >= 0}
    return node_endpoints(ctx, leaders, R.NodeEndpoint) if leaders else []


# v13 names topics by id (KIP-516); v10+ answers NOT_LEADER_OR_FOLLOWER with the new leader (KIP-951).
@api(ProduceRequest, ProduceResponse, 3, 13)
async def handle(ctx: RequestContext, req: Any) -> Any:
    refused = _transactional_write_refused(ctx, req)
    if req.acks not in (-1, 0, 1) or refused:
        err = TRANSACTIONAL_ID_AUTHORIZATION_FAILED if refused else InvalidRequiredAcksError.errno
        responses = [TR(name=t.name, partition_responses=[PR(index=p.index, error_code=err, base_offset=-1)
                                                         for p in t.partition_data]) for t in req.topic_data]
        return R[ctx.api_version](responses=responses, throttle_time_ms=0)
    responses = []
    for t in req.topic_data:
        parts = [_append_one(ctx, req, t, p) for p in t.partition_data]
        responses.append(new_struct(TR, name=getattr(t, "name", None), topic_id=getattr(t, "topic_id", None),
                                    partition_responses=parts))
    if req.acks == 0:
        return None  # acks=0: the client expects no response at all
    endpoints = _leader_endpoints(ctx, responses) if ctx.api_version >= 10 else []
    return new_message(R, ctx.api_version, responses=responses, throttle_time_ms=0, node_endpoints=endpoints)
