"""DescribeCluster."""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin import DescribeClusterRequest, DescribeClusterResponse

from kafka_txn_broker.apis.context import RequestContext
from kafka_txn_broker.apis.registry import api

R = DescribeClusterResponse


@api(DescribeClusterRequest, DescribeClusterResponse, 0, 2)
async def handle(ctx: RequestContext, req: Any) -> Any:
    nodes = ctx.node.cluster.nodes
    brokers = [R.DescribeClusterBroker(broker_id=n.node_id, host=n.host, port=n.port, rack=None, is_fenced=False)
               for n in nodes.values() if n.online]
    return R[ctx.api_version](throttle_time_ms=0, error_code=0, error_message=None, endpoint_type=1,
                              cluster_id=ctx.node.config["cluster.id"],
                              controller_id=ctx.node.cluster.controller_id(), brokers=brokers)
