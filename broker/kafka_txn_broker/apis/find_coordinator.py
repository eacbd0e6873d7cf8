"""FindCoordinator for groups (key type 0), transactional ids (key type 1) and share-partitions (key type 2,
"group:topicId:partition": the share coordinator), single and batched (v4+)."""

from __future__ import annotations

from typing import Any

from kafka_txn_broker.apis.context import RequestContext
from kafka_txn_broker.apis.registry import api
from kafka_txn_broker.formats.errors import CoordinatorNotAvailableError, InvalidRequestError, error_code, error_message
from kafka_txn_broker.formats.messages import FindCoordinatorRequest, FindCoordinatorResponse
from kafka_txn_broker.formats.partitioning import GROUP_TOPIC, SHARE_STATE_TOPIC, TXN_TOPIC, partition_for

R = FindCoordinatorResponse
GROUP, TRANSACTION, SHARE = 0, 1, 2
TOPICS = {GROUP: GROUP_TOPIC, TRANSACTION: TXN_TOPIC, SHARE: SHARE_STATE_TOPIC}
# What Kafka puts in ErrorMessage when it found the coordinator: the error's name at v1-v3, an empty string per
# key in the batched form (v4+), as real brokers answer (tests/external/fidelity).
FOUND_MESSAGE, FOUND_MESSAGE_BATCHED = "NONE", ""


def coordinator_node(ctx: RequestContext, key: str, key_type: int) -> tuple[int, str, int]:
    """The live leader of the key's internal-topic partition, creating the topic on first use."""
    if key_type not in TOPICS:
        raise InvalidRequestError(f"unknown coordinator key type {key_type}")
    if key_type == SHARE:
        # Kafka: CLUSTER_ACTION on the cluster (brokers ask this, to reach the share coordinator).
        ctx.require("CLUSTER_ACTION", "CLUSTER")
    else:
        # Kafka: DESCRIBE on the group / transactional id, else GROUP_ / TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
        ctx.require("DESCRIBE", "GROUP" if key_type == GROUP else "TRANSACTIONAL_ID", key)
    topic = ctx.broker.internal_topic(TOPICS[key_type])
    if not key:
        raise InvalidRequestError("coordinator key must not be empty")
    state = topic.partitions[partition_for(key, len(topic.partitions))]
    found = ctx.broker.channel.endpoint(state.leader)
    if found is None:
        raise CoordinatorNotAvailableError(f"no live leader for {state.topic}-{state.partition}")
    return found.node_id, found.host, found.port


@api(FindCoordinatorRequest, FindCoordinatorResponse, 0, 6)
async def handle(ctx: RequestContext, req: Any) -> Any:
    key_type = getattr(req, "key_type", GROUP)
    if ctx.api_version >= 4:
        out = []
        for key in req.coordinator_keys:
            try:
                nid, host, port = coordinator_node(ctx, key, key_type)
                out.append(R.Coordinator(key=key, node_id=nid, host=host, port=port, error_code=0,
                                         error_message=FOUND_MESSAGE_BATCHED))
            except Exception as exc:
                out.append(R.Coordinator(key=key, node_id=-1, host="", port=-1, error_code=error_code(exc),
                                         error_message=error_message(exc)))
        return R[ctx.api_version](throttle_time_ms=0, coordinators=out)
    try:
        nid, host, port = coordinator_node(ctx, req.key, key_type)
        return R[ctx.api_version](throttle_time_ms=0, error_code=0, error_message=FOUND_MESSAGE, node_id=nid,
                                  host=host, port=port)
    except Exception as exc:
        return R[ctx.api_version](throttle_time_ms=0, error_code=error_code(exc), error_message=error_message(exc),
                                  node_id=-1, host="", port=-1)
