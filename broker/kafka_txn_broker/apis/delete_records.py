"""DeleteRecords: move partitions' log start offsets forward (kafka-delete-records.sh, AdminClient
delete_records). Records below it are gone for consumers at once; whole segments below it are deleted by
the replica manager's retention check."""

from __future__ import annotations

from typing import Any

from kafka_txn_broker.apis.context import RequestContext
from kafka_txn_broker.apis.registry import api
from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.errors import InvalidTopicError, UnknownTopicOrPartitionError, error_code
from kafka_txn_broker.formats.messages import DeleteRecordsRequest, DeleteRecordsResponse
from kafka_txn_broker.metadata.topics import INTERNAL_TOPICS

R = DeleteRecordsResponse
TR = R.DeleteRecordsTopicResult
PR = TR.DeleteRecordsPartitionResult
INVALID_LOW_WATERMARK = -1


def _delete(ctx: RequestContext, topic: str, p: Any) -> Any:
    try:
        meta = ctx.broker.metadata.topics.get(topic)
        if meta is None or not 0 <= p.partition_index < len(meta.partitions):
            raise UnknownTopicOrPartitionError(f"{topic}-{p.partition_index} does not exist")
        if topic in INTERNAL_TOPICS:
            raise InvalidTopicError(f"Cannot delete records of internal topic {topic}")
        _offset, low = ctx.broker.replica_manager.delete_records(topic, p.partition_index, p.offset)
        return PR(partition_index=p.partition_index, low_watermark=low, error_code=0)
    except Exception as exc:
        return PR(partition_index=p.partition_index, low_watermark=INVALID_LOW_WATERMARK, error_code=error_code(exc))


@api(DeleteRecordsRequest, DeleteRecordsResponse, 0, 2)
async def handle(ctx: RequestContext, req: Any) -> Any:
    allowed = ctx.authorized("DELETE", "TOPIC", (t.name for t in req.topics))
    topics = []
    for t in req.topics:
        if t.name in allowed:
            parts = [_delete(ctx, t.name, p) for p in t.partitions]
        else:
            parts = [PR(partition_index=p.partition_index, low_watermark=INVALID_LOW_WATERMARK,
                        error_code=E.TOPIC_AUTHORIZATION_FAILED) for p in t.partitions]
        topics.append(TR(name=t.name, partitions=parts))
    return R[ctx.api_version](throttle_time_ms=0, topics=topics)
