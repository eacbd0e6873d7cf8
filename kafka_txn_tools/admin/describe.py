"""describe: the coordinators' state of some transactional ids, or of every one (--all).

--all lists every coordinator's ids first (ListTransactions on every broker); a broker that cannot
be asked is an error of the result, never silently fewer rows. An id its coordinator does not know
(TRANSACTIONAL_ID_NOT_FOUND) is an error too, naming the id.

A transaction in a Prepare state also gets the partitions still waiting for their marker (in that state
DescribeTransactions lists only those), each with its leader and why, when that can be told
(admin/stuck.py `pending_of`: the leaders' DescribeProducers).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from kafka_txn_tools.admin import coordinator_rules
from kafka_txn_tools.admin.advice import Invocation
from kafka_txn_tools.admin.api import ClusterApi
from kafka_txn_tools.connection.capabilities import require
from kafka_txn_tools.models import (
    EXHAUSTED_EPOCH,
    PREPARE_STATES,
    PendingPartition,
    ScanError,
    StuckReason,
    StuckTransaction,
    TransactionDescription,
)

TRANSACTIONAL_ID_NOT_FOUND = 105


@dataclass
class Described:
    descriptions: list[TransactionDescription] = field(default_factory=list)
    errors: list[ScanError] = field(default_factory=list)
    asked: int = 0
    # Prepare states: transactional id -> the partitions still waiting for their marker, and why.
    pending: dict[str, list[PendingPartition]] = field(default_factory=dict)
    # The ones stuck at their coordinator (as find-hanging's coordinator rows): id -> the verdict, whose
    # `action` and `commands` say what ends it (`advise`).
    stuck: dict[str, StuckTransaction] = field(default_factory=dict)


def describe_transactions(client: ClusterApi, ids: Sequence[str], describe_all: bool) -> Described:
    require(client, "describe", "DescribeTransactions", *(["ListTransactions"] if describe_all else []))
    out = Described()
    if describe_all:
        listed = client.list_transactions(client.metadata([]).broker_ids())
        out.errors.extend(listed.errors)
        ids = sorted({t.transactional_id for t in listed.listings})
    out.asked = len(ids)
    result = client.describe_transactions(ids)
    out.descriptions = [result.descriptions[i] for i in sorted(result.descriptions)]
    out.errors.extend(result.errors)
    out.errors.extend(
        ScanError("TRANSACTIONAL_ID_NOT_FOUND", f"transactional id {i!r} is not known to its coordinator",
                  transactional_id=i, api="DescribeTransactions", code=TRANSACTIONAL_ID_NOT_FOUND)
        for i in sorted(result.not_found))
    out.pending = _pending(client, out.descriptions)
    return out


def _pending(client: ClusterApi, descriptions: list[TransactionDescription]) -> dict[str, list[PendingPartition]]:
    from kafka_txn_tools.admin import stuck

    prepared = [d for d in descriptions if d.state in PREPARE_STATES]
    if not prepared or not client.supports("DescribeProducers"):
        return {}
    views = stuck.leader_views(client, {tp: d.producer_id for d in prepared for tp in d.partitions})
    return {d.transactional_id: stuck.pending_of(d, views) or [] for d in prepared}


def advise(client: ClusterApi, out: Described, now_ms: int, invocation: Invocation) -> None:
    """Judge the described transactions as find-hanging's coordinator side does, whatever their time in the
    state (describe answers about the ids asked for): a Prepare state with partitions still waiting for their
    marker, or Ongoing at an exhausted epoch past its timeout, gets its verdict, action and commands."""
    from kafka_txn_tools.admin import stuck

    candidates = [d for d in out.descriptions if (d.state in PREPARE_STATES and out.pending.get(d.transactional_id))
                  or (d.state == stuck.ONGOING and d.producer_epoch >= EXHAUSTED_EPOCH)]
    if not candidates or not client.supports("DescribeProducers"):
        return
    txn_meta = client.metadata([stuck.TXN_TOPIC])
    views = stuck.leader_views(client, {tp: d.producer_id for d in candidates for tp in d.partitions})
    for d in candidates:
        row = coordinator_rules.judge_coordinator(stuck.as_coordinator_txn(d, None, txn_meta), views, now_ms, -1,
                                        invocation=invocation)
        if row is not None and row.reason is not StuckReason.COMPLETION_PENDING:
            out.stuck[d.transactional_id] = row
