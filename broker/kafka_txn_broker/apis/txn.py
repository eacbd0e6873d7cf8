"""Transactional producer APIs: AddPartitionsToTxn (v0-v5, incl. the v4+ broker verification form),
AddOffsetsToTxn and EndTxn; the work is done by the node's TransactionCoordinator.

Versions and TV: AddPartitionsToTxn v5 and EndTxn v5 come from KIP-890 (TV2) clients and brokers;
they use TV2 only when the cluster's transaction.version is 2. Old versions get INVALID_PRODUCER_EPOCH
instead of PRODUCER_FENCED (they predate it), as Kafka's KafkaApis does.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from kafka_txn_broker.apis.context import RequestContext
from kafka_txn_broker.apis.registry import api
from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.errors import GROUP_AUTHORIZATION_FAILED, TRANSACTIONAL_ID_AUTHORIZATION_FAILED
from kafka_txn_broker.formats.messages import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    EndTxnResponse,
    new_message,
    new_struct,
)
from kafka_txn_broker.formats.partitioning import GROUP_TOPIC, partition_for
from kafka_txn_broker.txn.transaction_metadata import TopicPartition

APR = AddPartitionsToTxnResponse
TopicResult = APR.AddPartitionsToTxnTopicResult
PartitionResult = TopicResult.AddPartitionsToTxnPartitionResult


def _client_tv(ctx: RequestContext, first_tv2_version: int) -> int:
    level = int(ctx.broker.config["transaction.version"])
    return 2 if ctx.api_version >= first_tv2_version and level >= 2 else 0


def _old_fenced(code: int, version: int) -> int:
    # Clients before v2 of these APIs only know INVALID_PRODUCER_EPOCH.
    return E.INVALID_PRODUCER_EPOCH if version < 2 and code == E.PRODUCER_FENCED else code


def _topic_results(errors: dict[TopicPartition, int]) -> list[Any]:
    by_topic: dict[str, list[Any]] = defaultdict(list)
    for (topic, partition), code in errors.items():
        by_topic[topic].append(new_struct(PartitionResult, partition_index=partition, partition_error_code=code))
    return [new_struct(TopicResult, name=t, results_by_partition=ps) for t, ps in by_topic.items()]


def _check_partitions(ctx: RequestContext, partitions: list[TopicPartition], from_client: bool
                      ) -> dict[TopicPartition, int] | None:
    """Per-partition errors if any partition is unknown (or internal, for clients): then nothing is added
    and the valid partitions get OPERATION_NOT_ATTEMPTED."""
    meta = ctx.broker.metadata
    errors: dict[TopicPartition, int] = {}
    for topic, partition in partitions:
        t = meta.topics.get(topic)
        if from_client and t is not None and t.internal:
            # Kafka never authorizes clients to add internal topics (AddOffsetsToTxn is the way).
            errors[(topic, partition)] = E.TOPIC_AUTHORIZATION_FAILED
        elif t is None or not 0 <= partition < len(t.partitions):
            errors[(topic, partition)] = E.UNKNOWN_TOPIC_OR_PARTITION
    if not errors:
        return None
    return {tp: errors.get(tp, E.OPERATION_NOT_ATTEMPTED) for tp in partitions}


def _authorization_errors(ctx: RequestContext, txn_id: str, partitions: list[TopicPartition]
                          ) -> dict[TopicPartition, int] | None:
    """Kafka's ACL checks: WRITE on the transactional id (else all partitions fail), then WRITE on each
    topic (refused topics TOPIC_AUTHORIZATION_FAILED, the rest unknown or OPERATION_NOT_ATTEMPTED)."""
    if ctx.authorizer is None:
        return None
    if not ctx.authorize("WRITE", "TRANSACTIONAL_ID", txn_id):
        return dict.fromkeys(partitions, TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    writable = ctx.authorized("WRITE", "TOPIC", (t for t, _ in partitions))
    if all(t in writable for t, _ in partitions):
        return None
    others = _check_partitions(ctx, [tp for tp in partitions if tp[0] in writable], ctx.api_version < 4) or {}
    return {tp: others.get(tp, E.OPERATION_NOT_ATTEMPTED) if tp[0] in writable else E.TOPIC_AUTHORIZATION_FAILED
            for tp in partitions}


def _one_transaction(ctx: RequestContext, txn_id: str, producer_id: int, epoch: int, verify_only: bool,
                     topics: list[Any]) -> dict[TopicPartition, int]:
    partitions = list(dict.fromkeys((t.name, p) for t in topics for p in t.partitions))
    refused = _authorization_errors(ctx, txn_id, partitions)
    if refused is not None:
        return refused
    invalid = _check_partitions(ctx, partitions, from_client=ctx.api_version < 4)
    if invalid is not None:
        return invalid
    coordinator = ctx.broker.txn_coordinator
    if verify_only:
        return coordinator.verify_partitions_in_transaction(txn_id, producer_id, epoch, partitions)
    code = coordinator.add_partitions_to_transaction(txn_id, producer_id, epoch, partitions,
                                                     client_tv=_client_tv(ctx, 5))
    return dict.fromkeys(partitions, _old_fenced(code, ctx.api_version))


@api(AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, 0, 5)
async def handle_add_partitions(ctx: RequestContext, req: Any) -> Any:
    if ctx.api_version < 4:
        errors = _one_transaction(ctx, req.v3_and_below_transactional_id, req.v3_and_below_producer_id,
                                  req.v3_and_below_producer_epoch, False, req.v3_and_below_topics)
        return new_message(APR, ctx.api_version, throttle_time_ms=0,
                           results_by_topic_v3_and_below=_topic_results(errors))
    if not ctx.authorize("CLUSTER_ACTION", "CLUSTER"):  # v4+ is the brokers' batched form
        return APR[ctx.api_version](throttle_time_ms=0, error_code=E.CLUSTER_AUTHORIZATION_FAILED,
                                    results_by_transaction=[])
    results = []
    for txn in req.transactions:
        errors = _one_transaction(ctx, txn.transactional_id, txn.producer_id, txn.producer_epoch, txn.verify_only,
                                  txn.topics)
        results.append(APR.AddPartitionsToTxnResult(transactional_id=txn.transactional_id,
                                                    topic_results=_topic_results(errors)))
    return APR[ctx.api_version](throttle_time_ms=0, error_code=E.NONE, results_by_transaction=results)


@api(AddOffsetsToTxnRequest, AddOffsetsToTxnResponse, 0, 4)
async def handle_add_offsets(ctx: RequestContext, req: Any) -> Any:
    if not ctx.authorize("WRITE", "TRANSACTIONAL_ID", req.transactional_id):
        code = TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif not ctx.authorize("READ", "GROUP", req.group_id):
        code = GROUP_AUTHORIZATION_FAILED
    else:
        # Kafka's handler adds the group's __consumer_offsets partition to the transaction.
        offsets = ctx.broker.internal_topic(GROUP_TOPIC)
        tp = (GROUP_TOPIC, partition_for(req.group_id, len(offsets.partitions)))
        # Kafka passes TV_0 here: a TV2 client never sends AddOffsetsToTxn (TxnOffsetCommit adds the partition).
        code = ctx.broker.txn_coordinator.add_partitions_to_transaction(req.transactional_id, req.producer_id,
                                                                      req.producer_epoch, [tp], client_tv=0)
    return AddOffsetsToTxnResponse[ctx.api_version](throttle_time_ms=0, error_code=_old_fenced(code, ctx.api_version))


@api(EndTxnRequest, EndTxnResponse, 0, 5)
async def handle_end_txn(ctx: RequestContext, req: Any) -> Any:
    if not ctx.authorize("WRITE", "TRANSACTIONAL_ID", req.transactional_id):
        code, pid, epoch = TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1, -1
    else:
        code, pid, epoch = ctx.broker.txn_coordinator.end_transaction(
            req.transactional_id, req.producer_id, req.producer_epoch, bool(req.committed), from_client=True,
            client_tv=_client_tv(ctx, 5))
    kwargs: dict[str, Any] = {"throttle_time_ms": 0, "error_code": _old_fenced(code, ctx.api_version)}
    if ctx.api_version >= 5:
        kwargs.update(producer_id=pid, producer_epoch=epoch)
    return new_message(EndTxnResponse, ctx.api_version, **kwargs)
