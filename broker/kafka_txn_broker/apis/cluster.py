"""DescribeCluster."""

from __future__ import annotations

from typing import Any

from kafka_txn_broker.apis.context import RequestContext
from kafka_txn_broker.apis.registry import api
from kafka_txn_broker.formats.messages import DescribeClusterRequest, DescribeClusterResponse

R = DescribeClusterResponse


@api(DescribeClusterRequest, DescribeClusterResponse, 0, 2)
async def handle(ctx: RequestContext, req: Any) -> Any:
    channel = ctx.broker.channel
    brokers = [R.DescribeClusterBroker(broker_id=b.node_id, host=b.host, port=b.port, rack=None, is_fenced=False)
               for b in channel.live_brokers()]
    return R[ctx.api_version](throttle_time_ms=0, error_code=0, error_message=None, endpoint_type=1,
                              cluster_id=ctx.broker.config["cluster.id"],
                              controller_id=channel.controller_id(), brokers=brokers)
