"""TxnShareAcknowledge (KIP-1289, key TXN_SHARE_ACKNOWLEDGE_KEY): a transactional producer stages a share
consumer's ACCEPT / REJECT acknowledgements in its transaction. Served by the share-partitions' leader
(this node's SharePartitionManager); advertised and accepted only while share.version >= 2 is enabled
(`share.transactional.acknowledgement.enable` with transaction.version 2).

Checks in the KIP's order, each refusal staging nothing:
1. the request itself (a transactional id, group and member are required: INVALID_REQUEST), then ACLs as
   TxnOffsetCommit: WRITE on the transactional id, READ on the group, READ on each topic;
2. the member and its epoch, at the group's coordinator: UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH;
3. producer fencing and transaction state: the `__share_group_state` partitions of the share-partitions
   are added to the transaction by its coordinator (as AddOffsetsToTxn adds `__consumer_offsets`), whose
   answer (PRODUCER_FENCED, INVALID_PRODUCER_ID_MAPPING, INVALID_TXN_STATE, CONCURRENT_TRANSACTIONS, ...)
   is the top-level error;
4. only then the staging, per partition (INVALID_RECORD_STATE for a type other than ACCEPT / REJECT or a
   record the member does not hold, NOT_LEADER_OR_FOLLOWER with the leader), all or nothing.
The transaction's marker on that `__share_group_state` partition resolves what was staged (server/node.py, and the
inter-broker channel's broadcast to the share-partition leaders).
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any

from kafka_txn_broker.apis.api_versions import TXN_SHARE_ACK_SHARE_VERSION, share_version
from kafka_txn_broker.apis.context import RequestContext
from kafka_txn_broker.apis.registry import api
from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.messages import TxnShareAcknowledgeRequest, TxnShareAcknowledgeResponse
from kafka_txn_broker.formats.partitioning import SHARE_STATE_TOPIC
from kafka_txn_broker.share.share_partition import AckBatch, SharePartitionKey
from kafka_txn_broker.share.share_partition_manager import PartitionResult

if TYPE_CHECKING:
    from kafka_txn_broker.server.broker_services import BrokerServices

TopicIdPartition = tuple[uuid.UUID, int]


def enabled(config: Any) -> bool:
    return share_version(config) >= TXN_SHARE_ACK_SHARE_VERSION


def _acks(req: Any) -> dict[TopicIdPartition, list[AckBatch]]:
    acks: dict[TopicIdPartition, list[AckBatch]] = {}
    for t in req.topics:
        for p in t.partitions:
            acks.setdefault((t.topic_id, p.partition_index), []).extend(
                AckBatch(b.first_offset, b.last_offset, list(b.acknowledge_types)) for b in p.acknowledgement_batches)
    return acks


def _register(broker: BrokerServices, req: Any, acks: dict[TopicIdPartition, list[AckBatch]]) -> int:
    """Add the share-partitions' `__share_group_state` partitions to the producer's transaction, at the id's
    transaction coordinator (another node of this process, maybe)."""
    state_partitions = {(SHARE_STATE_TOPIC, broker.share_router.partition_of(
        SharePartitionKey(req.group_id, tid, p).coordinator_key())) for tid, p in acks}
    txn = broker.channel.txn_coordinator_of(req.transactional_id)
    if txn is None:
        return E.COORDINATOR_NOT_AVAILABLE
    return txn.add_partitions_to_transaction(req.transactional_id, req.producer_id, req.producer_epoch,
                                             state_partitions, client_tv=2)


def _refused(ctx: RequestContext, req: Any) -> int:
    """The first refusal of the request as a whole (validation, ACLs, member, transaction), or NONE."""
    if not req.transactional_id or not req.group_id or not req.member_id:
        return E.INVALID_REQUEST
    if not ctx.authorize("WRITE", "TRANSACTIONAL_ID", req.transactional_id):
        return E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    if not ctx.authorize("READ", "GROUP", req.group_id):
        return E.GROUP_AUTHORIZATION_FAILED
    # The member and its epoch, at its group's coordinator (another node of this process, maybe).
    return ctx.broker.channel.share_member_error(req.group_id, req.member_id, req.member_epoch)


def _unreadable(ctx: RequestContext, acks: dict[TopicIdPartition, list[AckBatch]]) -> TopicIdPartition | None:
    by_id = ctx.broker.metadata.topics_by_id
    for tid, p in acks:
        t = by_id.get(tid)
        if t is not None and not ctx.authorize("READ", "TOPIC", t.name):
            return tid, p
    return None


def _stage(ctx: RequestContext, req: Any) -> tuple[int, dict[TopicIdPartition, PartitionResult]]:
    acks = _acks(req)
    code = _refused(ctx, req)
    if code != E.NONE:
        return code, {}
    denied = _unreadable(ctx, acks)
    if denied is not None:  # all or nothing: a topic it may not read stages nothing anywhere
        return E.NONE, {tp: PartitionResult(error=E.TOPIC_AUTHORIZATION_FAILED,
                                            message=None if tp == denied else "not staged: a topic is not readable")
                        for tp in acks}
    if acks:
        code = _register(ctx.broker, req, acks)
        if code != E.NONE:
            return code, {}
    return E.NONE, ctx.broker.share_partition_manager.stage(req.group_id, req.member_id, req.producer_id,
                                                              req.producer_epoch, acks)


def _response(ctx: RequestContext, code: int, results: dict[TopicIdPartition, PartitionResult]) -> Any:
    R = TxnShareAcknowledgeResponse
    T = R.TxnShareAcknowledgeTopicResponse
    P = T.TxnShareAcknowledgePartitionResponse
    by_topic: dict[uuid.UUID, list[Any]] = {}
    for (tid, index), r in sorted(results.items(), key=lambda x: (str(x[0][0]), x[0][1])):
        by_topic.setdefault(tid, []).append(P(
            partition_index=index, error_code=r.error, error_message=r.message,
            current_leader=P.LeaderIdAndEpoch(leader_id=r.leader_id, leader_epoch=r.leader_epoch)))
    leaders = sorted({r.leader_id for r in results.values()
                      if r.error == E.NOT_LEADER_OR_FOLLOWER and r.leader_id >= 0})
    nodes = [b for b in (ctx.broker.channel.endpoint(i) for i in leaders) if b is not None]
    return R[ctx.api_version](
        throttle_time_ms=0, error_code=code,
        responses=[T(topic_id=tid, partitions=parts) for tid, parts in by_topic.items()],
        node_endpoints=[R.NodeEndpoint(node_id=n.node_id, host=n.host, port=n.port, rack=None) for n in nodes])


@api(TxnShareAcknowledgeRequest, TxnShareAcknowledgeResponse, 0, 0, enabled_by=enabled)
async def txn_share_acknowledge(ctx: RequestContext, req: Any) -> Any:
    started = time.perf_counter()
    code, results = _stage(ctx, req)
    ctx.broker.share_partition_manager.txn_ack_latency.observe((time.perf_counter() - started) * 1000)
    return _response(ctx, code, results)
