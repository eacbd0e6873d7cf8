"""ListOffsets: earliest, latest (high watermark, or LSO for read_committed), max timestamp, by time."""

from __future__ import annotations

from typing import Any

from kafka.protocol.consumer import ListOffsetsRequest, ListOffsetsResponse

from kafka_txn_broker.apis.context import RequestContext
from kafka_txn_broker.apis.partitions import authorized_topic, leader
from kafka_txn_broker.apis.registry import api
from kafka_txn_broker.formats.errors import error_code

R = ListOffsetsResponse
TR = R.ListOffsetsTopicResponse
PR = TR.ListOffsetsPartitionResponse

LATEST, EARLIEST = -1, -2
READ_COMMITTED = 1


def _lookup(ctx: RequestContext, req: Any, topic_name: str, p: Any) -> Any:
    try:
        part = leader(ctx, authorized_topic(ctx, "DESCRIBE", topic_name, None), p.partition_index)
        log = part.log
        ts, offset = -1, -1
        if p.timestamp == LATEST:
            offset = log.last_stable_offset if req.isolation_level == READ_COMMITTED else log.high_watermark
        elif p.timestamp == EARLIEST:
            offset = log.log_start_offset
        else:
            found = log.offset_for_timestamp(p.timestamp)
            if found is not None:
                offset, ts = found
        return PR(partition_index=p.partition_index, error_code=0, timestamp=ts, offset=offset,
                  leader_epoch=part.state.leader_epoch, old_style_offsets=[offset] if offset >= 0 else [])
    except Exception as exc:
        return PR(partition_index=p.partition_index, error_code=error_code(exc), timestamp=-1, offset=-1,
                  leader_epoch=-1, old_style_offsets=[])


# v7 adds MAX_TIMESTAMP (-3) lookups, which the log does not index; v1-v6 cover every client here.
@api(ListOffsetsRequest, ListOffsetsResponse, 1, 6)
async def handle(ctx: RequestContext, req: Any) -> Any:
    topics = [TR(name=t.name, partitions=[_lookup(ctx, req, t.name, p) for p in t.partitions])
              for t in req.topics]
    return R[ctx.api_version](throttle_time_ms=0, topics=topics)
