"""ElectLeaders (kafka-leader-election.sh, AdminClient elect_leaders): PREFERRED or UNCLEAN elections, per
partition or for every partition, decided by the controller (server/replication_control.py). Needs ALTER
on the cluster."""

from __future__ import annotations

from typing import Any

from kafka_txn_broker.apis.context import RequestContext
from kafka_txn_broker.apis.registry import api
from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.errors import InvalidRequestError, error_code, error_message
from kafka_txn_broker.formats.messages import ElectLeadersRequest, ElectLeadersResponse
from kafka_txn_broker.server.partition_change import Election

R = ElectLeadersResponse
TR = R.ReplicaElectionResult
PR = TR.PartitionResult
_ELECTIONS = {0: Election.PREFERRED, 1: Election.UNCLEAN}


def _elect(ctx: RequestContext, topic: str, partition: int, election: Election) -> Any:
    try:
        ctx.broker.channel.controller.elect_leader(topic, partition, election)
        return PR(partition_id=partition, error_code=0, error_message=None)
    except Exception as exc:
        return PR(partition_id=partition, error_code=error_code(exc), error_message=error_message(exc))


def _everywhere(ctx: RequestContext, election: Election) -> list[Any]:
    """No partitions named: every partition of every topic; ones that need no election are left out."""
    results = []
    for topic in list(ctx.broker.metadata.topics.values()):
        parts = [_elect(ctx, topic.name, p.partition, election) for p in list(topic.partitions)]
        results.append(TR(topic=topic.name, partition_result=[
            r for r in parts if r.error_code != E.ELECTION_NOT_NEEDED]))
    return results


def _refused(ctx: RequestContext, req: Any, exc: Exception) -> Any:
    """Kafka's error response: the code at the top (v1+) and on every partition named."""
    code, message = error_code(exc), error_message(exc)
    results = [TR(topic=t.topic, partition_result=[PR(partition_id=p, error_code=code, error_message=message)
                                                   for p in t.partitions]) for t in req.topic_partitions or []]
    return R[ctx.api_version](throttle_time_ms=0, error_code=code, replica_election_results=results)


@api(ElectLeadersRequest, ElectLeadersResponse, 0, 2)
async def handle(ctx: RequestContext, req: Any) -> Any:
    try:
        ctx.require("ALTER", "CLUSTER")
        election = _ELECTIONS.get(getattr(req, "election_type", 0))
        if election is None:
            raise InvalidRequestError(f"Unknown election type {req.election_type}")
    except Exception as exc:
        return _refused(ctx, req, exc)
    if req.topic_partitions is None:
        results = _everywhere(ctx, election)
    else:
        results = [TR(topic=t.topic, partition_result=[_elect(ctx, t.topic, p, election) for p in t.partitions])
                   for t in req.topic_partitions]
    return R[ctx.api_version](throttle_time_ms=0, error_code=0, replica_election_results=results)
