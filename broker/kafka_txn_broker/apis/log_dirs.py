"""DescribeLogDirs (kafka-log-dirs.sh, AdminClient describe_log_dirs): each node has one log dir; per
partition its size in bytes and Kafka's offset lag (high watermark - log end offset, never below 0).
Needs DESCRIBE on the cluster."""

from __future__ import annotations

import shutil
from typing import Any

from kafka_txn_broker.apis.context import RequestContext
from kafka_txn_broker.apis.registry import api
from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.messages import DescribeLogDirsRequest, DescribeLogDirsResponse

R = DescribeLogDirsResponse
DR = R.DescribeLogDirsResult
TR = DR.DescribeLogDirsTopic
PR = TR.DescribeLogDirsPartition


def _result(ctx: RequestContext, wanted: set[tuple[str, int]] | None) -> Any:
    broker = ctx.broker
    by_topic: dict[str, list[Any]] = {}
    for (topic, index), part in sorted(broker.replica_manager.partitions.items()):
        if wanted is not None and (topic, index) not in wanted:
            continue
        log = part.log
        if log.offline:
            continue
        by_topic.setdefault(topic, []).append(PR(
            partition_index=index, partition_size=log.size_in_bytes,
            offset_lag=max(log.high_watermark - log.log_end_offset, 0), is_future_key=False))
    path = broker.log_dir.resolve()
    try:
        usage = shutil.disk_usage(path)
        total, usable = usage.total, usage.free
    except OSError:
        return DR(error_code=E.KAFKA_STORAGE_ERROR, log_dir=str(path), topics=[], total_bytes=-1, usable_bytes=-1,
                  is_cordoned=False)
    return DR(error_code=0, log_dir=str(path), topics=[TR(name=n, partitions=p) for n, p in by_topic.items()],
              total_bytes=total, usable_bytes=usable, is_cordoned=False)


@api(DescribeLogDirsRequest, DescribeLogDirsResponse, 1, 5)
async def handle(ctx: RequestContext, req: Any) -> Any:
    if not ctx.authorize("DESCRIBE", "CLUSTER"):
        return R[ctx.api_version](throttle_time_ms=0, error_code=E.CLUSTER_AUTHORIZATION_FAILED, results=[])
    wanted = None if req.topics is None else {(t.topic, p) for t in req.topics for p in t.partitions}
    return R[ctx.api_version](throttle_time_ms=0, error_code=0, results=[_result(ctx, wanted)])
