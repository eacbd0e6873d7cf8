"""`kafka-txn dump`: the cluster's transactional state as dump rows (schema: kafka_txn_tools/dumps/schema.py).

Producer rows come from DescribeProducers to every replica of every partition; coordinator rows from
ListTransactions on every broker plus DescribeTransactions for every id. Anything that fails becomes
an error row, never a failed dump. Rows are plain dicts; `write_dump` writes them (dumps/schema.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_txn_tools.admin.scan import ScanClient, Scope, plan_requests
from kafka_txn_tools.connection.capabilities import require
from kafka_txn_tools.errors import error_code
from kafka_txn_tools.models import DEAD_STATE, ClusterInfo, PartitionProducers, ScanError, TransactionListing

Row = dict[str, Any]


@dataclass
class DumpRows:
    producers: list[Row] = field(default_factory=list)
    transactions: list[Row] = field(default_factory=list)
    errors: list[Row] = field(default_factory=list)
    brokers: list[int] = field(default_factory=list)
    cluster_id: str | None = None  # as Metadata reports it: plans made from the dump record it
    connection: dict[str, Any] | None = None  # how it was reached, no secret (dumps/schema.py's Manifest)


def producer_rows(replicas: list[PartitionProducers], cluster: ClusterInfo, capture_ms: int) -> list[Row]:
    leader_of = {info.partition: info.leader for info in cluster.partitions}
    return [
        {
            "broker_id": r.broker_id, "topic": r.partition.topic, "partition": r.partition.partition,
            "is_leader": leader_of.get(r.partition) == r.broker_id,
            "producer_id": p.producer_id, "producer_epoch": p.producer_epoch, "last_sequence": p.last_sequence,
            "last_timestamp_ms": p.last_timestamp_ms, "coordinator_epoch": p.coordinator_epoch,
            "current_txn_start_offset": p.current_txn_start_offset, "snapshot_offset": None,
            "capture_time_ms": capture_ms, "source": "describe-producers",
        }
        for r in replicas for p in r.producers
    ]


def error_row(err: ScanError, capture_ms: int) -> Row:
    code = err.code if err.code != -1 else error_code(err.error)
    return {
        "broker_id": err.broker_id, "api": err.api or "unknown",
        "topic": err.partition.topic if err.partition else None,
        "partition": err.partition.partition if err.partition else None,
        "transactional_id": err.transactional_id, "error_code": code, "error_name": err.error,
        "message": err.message, "capture_time_ms": capture_ms,
    }


def _listing_only_row(listing: TransactionListing, state: str, capture_ms: int) -> Row:
    return {
        "coordinator_id": listing.coordinator_id, "transactional_id": listing.transactional_id,
        "producer_id": listing.producer_id, "producer_epoch": -1, "state": state, "timeout_ms": None,
        "start_time_ms": None, "last_update_ms": None, "partitions": None, "capture_time_ms": capture_ms,
        "source": "describe-transactions",
    }


def collect(
    client: ScanClient, now_ms: Callable[[], int], progress: Callable[[int], None] | None = None,
    on_total: Callable[[int], None] | None = None,
) -> DumpRows:
    require(client, "dump", "DescribeProducers", "ListTransactions", "DescribeTransactions")
    cluster = client.metadata(None)
    out = DumpRows(brokers=cluster.broker_ids(), cluster_id=cluster.cluster_id)
    by_broker, plan_errors = plan_requests(cluster, Scope(all=True))
    if on_total is not None:
        on_total(sum(map(len, by_broker.values())))
    replicas, errors = client.describe_producers(by_broker, progress=progress)
    captured = now_ms()
    out.producers = producer_rows(replicas, cluster, captured)
    out.errors = [error_row(e, captured) for e in [*plan_errors, *errors]]
    _collect_transactions(client, cluster, now_ms, out)
    return out


def _collect_transactions(client: ScanClient, cluster: ClusterInfo, now_ms: Callable[[], int], out: DumpRows) -> None:
    listed = client.list_transactions(cluster.broker_ids())
    described = client.describe_transactions({entry.transactional_id for entry in listed.listings})
    captured = now_ms()
    out.errors.extend(error_row(e, captured) for e in [*listed.errors, *described.errors])
    seen: set[str] = set()
    for listing in listed.listings:
        txn_id = listing.transactional_id
        if txn_id in seen:
            continue
        seen.add(txn_id)
        d = described.descriptions.get(txn_id)
        if d is None:
            # Unknown to its coordinator -> Dead (schema rule); any other failure -> state from the listing.
            state = DEAD_STATE if txn_id in described.not_found else listing.state
            out.transactions.append(_listing_only_row(listing, state, captured))
            continue
        out.transactions.append({
            "coordinator_id": d.coordinator_id, "transactional_id": txn_id, "producer_id": d.producer_id,
            "producer_epoch": d.producer_epoch, "state": d.state, "timeout_ms": d.timeout_ms,
            "start_time_ms": d.start_time_ms, "last_update_ms": None,
            "partitions": [{"topic": tp.topic, "partition": tp.partition} for tp in sorted(d.partitions)],
            "capture_time_ms": captured, "source": "describe-transactions",
        })


def connection_record(client: Any, inv: Any) -> dict[str, Any]:
    """How `client` reached the cluster, as a dump records it: `inv` (admin/advice.py's Invocation) holds the
    options printed commands repeat; the settings give the resolved servers and the non-secret properties."""
    settings = client.settings
    return {"bootstrap_server": inv.bootstrap_server, "profile": inv.profile, "command_config": inv.command_config,
            "bootstrap_servers": settings.bootstrap_servers, "properties": dict(settings.described)}


def write_dump(rows: DumpRows, out: Path, fmt: str, capture_time_ms: int) -> Any:
    """Write the rows as a dump directory (layout: kafka_txn_tools/dumps/schema.py); its manifest."""
    from kafka_txn_tools.dumps.schema import ERRORS, PRODUCERS, TRANSACTIONS, DumpWriter

    writer = DumpWriter(out, fmt, capture_time_ms=capture_time_ms)
    writer.add(PRODUCERS, rows.producers)
    writer.add(TRANSACTIONS, rows.transactions)
    writer.add(ERRORS, rows.errors)
    writer.brokers.update(rows.brokers)
    writer.cluster_id = rows.cluster_id
    writer.connection = rows.connection
    return writer.close()
