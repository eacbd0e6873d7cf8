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

from kafka_txn_tools.admin.api import ClusterApi
from kafka_txn_tools.admin.capabilities import require
from kafka_txn_tools.models import PREPARE_STATES, PendingPartition, ScanError, TransactionDescription

TRANSACTIONAL_ID_NOT_FOUND = 105


@dataclass
class Described:
    descriptions: list[TransactionDescription] = field(default_factory=list)
    errors: list[ScanError] = field(default_factory=list)
    asked: int = 0
    # Prepare states: transactional id -> the partitions still waiting for their marker, and why.
    pending: dict[str, list[PendingPartition]] = field(default_factory=dict)


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
