"""InitProducerId: a fresh producer id for idempotent producers; transactional ids go to the coordinator.

v6 (KIP-939) adds Enable2Pc and KeepPreparedTxn, and answers OngoingTxnProducerId/Epoch: the kept
transaction's producer id and epoch when KeepPreparedTxn kept one, else -1 (see txn/coordinator.py).
"""

from __future__ import annotations

from typing import Any

from kafka_txn_broker.apis.context import RequestContext
from kafka_txn_broker.apis.registry import api
from kafka_txn_broker.formats.errors import (
    CLUSTER_AUTHORIZATION_FAILED,
    INVALID_PRODUCER_EPOCH,
    PRODUCER_FENCED,
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
)
from kafka_txn_broker.formats.messages import InitProducerIdRequest, InitProducerIdResponse

R = InitProducerIdResponse


def _refused(ctx: RequestContext, transactional_id: str | None) -> int:
    """Kafka's checks: WRITE on the transactional id; for an idempotent producer (Kafka 2.8+, KIP-679)
    IDEMPOTENT_WRITE on the cluster or WRITE on some topic."""
    if transactional_id is not None:
        allowed = ctx.authorize("WRITE", "TRANSACTIONAL_ID", transactional_id)
        return 0 if allowed else TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    if ctx.authorize("IDEMPOTENT_WRITE", "CLUSTER") or ctx.authorize_any("WRITE", "TOPIC"):
        return 0
    return CLUSTER_AUTHORIZATION_FAILED


@api(InitProducerIdRequest, InitProducerIdResponse, 0, 6)
async def handle(ctx: RequestContext, req: Any) -> Any:
    refused = _refused(ctx, req.transactional_id) if ctx.authorizer is not None else 0
    if refused:
        return R[ctx.api_version](throttle_time_ms=0, error_code=refused, producer_id=-1, producer_epoch=-1)
    if req.transactional_id is None:
        # Idempotent producer: any node hands out an id from its block; epoch starts at 0.
        pid = ctx.broker.producer_ids.generate()
        return R[ctx.api_version](throttle_time_ms=0, error_code=0, producer_id=pid, producer_epoch=0)
    enable_2pc = bool(getattr(req, "enable2_pc", False)) if ctx.api_version >= 6 else False
    keep = bool(getattr(req, "keep_prepared_txn", False)) if ctx.api_version >= 6 else False
    code, pid, epoch = await ctx.broker.txn_coordinator.handle_init_producer_id(
        req.transactional_id, req.transaction_timeout_ms, getattr(req, "producer_id", -1),
        getattr(req, "producer_epoch", -1), enable_2pc, keep)
    if ctx.api_version < 4 and code == PRODUCER_FENCED:
        code = INVALID_PRODUCER_EPOCH  # clients before v4 do not know PRODUCER_FENCED (as Kafka maps it)
    kept = keep and code == 0
    return R[ctx.api_version](throttle_time_ms=0, error_code=code, producer_id=pid, producer_epoch=epoch,
                              ongoing_txn_producer_id=pid if kept else -1,
                              ongoing_txn_producer_epoch=epoch if kept else -1)
