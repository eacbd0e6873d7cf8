"""Broker metrics for transactions, readable from Python and served as Prometheus text over HTTP.

- PartitionsWithLateTransactionsCount (kafka.server:type=ReplicaManager), per node: the partitions
  this node LEADS whose oldest open transaction is late, Kafka's rule: the producer owning the open
  transaction with the lowest first offset last appended more than transaction.max.timeout.ms + 5 min
  ago (ProducerStateManager.hasLateTransaction, LATE_TRANSACTION_BUFFER_MS).
- LastStableOffsetLag (kafka.cluster:type=Partition), per partition on its leader: high watermark
  minus last stable offset, i.e. how far read_committed consumers are held back.
- KIP-1289 (kafka.server:type=share-partition-manager), per node: TxnPendingRecordsCount (records held
  TX_PENDING by open transactions; the KIP's alert: > 0 for over 60 s), TxnPendingLockExpiredCount
  (records whose acquisition lock ran out while TX_PENDING: abandoned transactions or lost markers) and
  TxnShareAcknowledgeRequestLatencyMs (a histogram of TxnShareAcknowledge handling time). Beyond the KIP,
  for operators (no Kafka API lists pending records), per share-partition and holding transaction:
  TxnPendingRecords and TxnPendingOldestAgeMs, labelled with group, topic, partition, producer id and the
  transactional id its coordinator knows for that producer id.

Names follow the Prometheus JMX exporter's usual mapping of those MBeans.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kafka_txn_broker.replica.partition import Partition
    from kafka_txn_broker.server.cluster import Cluster
    from kafka_txn_broker.server.node import BrokerNode

LATE_TXNS = "kafka_server_replicamanager_partitionswithlatetransactionscount"
LSO_LAG = "kafka_cluster_partition_laststableoffsetlag"
TXN_PENDING = "kafka_server_sharepartitionmanager_txnpendingrecordscount"
TXN_PENDING_LOCK_EXPIRED = "kafka_server_sharepartitionmanager_txnpendinglockexpiredcount"
TXN_ACK_LATENCY = "kafka_server_sharepartitionmanager_txnshareacknowledgerequestlatencyms"
TXN_PENDING_BY_TXN = "kafka_server_sharepartition_txnpendingrecords"
TXN_PENDING_AGE = "kafka_server_sharepartition_txnpendingoldestagems"


@dataclass(frozen=True)
class Sample:
    name: str
    labels: tuple[tuple[str, str], ...]
    value: float

    def render(self) -> str:
        labels = ",".join(f'{k}="{_escape(v)}"' for k, v in self.labels)
        return f"{self.name}{{{labels}}} {self.value}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def partitions_with_late_transactions_count(node: BrokerNode, now_ms: int | None = None) -> int:
    """The rule itself is the producer state's (ProducerStateManager.hasLateTransaction)."""
    now = node.clock.millis() if now_ms is None else now_ms
    return sum(1 for p in node.replica_manager.leader_partitions() if p.log.has_late_transaction(now))


def last_stable_offset_lag(part: Partition) -> int:
    return max(part.log.high_watermark - part.log.last_stable_offset, 0)


def collect(cluster: Cluster, now_ms: int | None = None) -> list[Sample]:
    """Every sample of every online node, in a stable order."""
    samples: list[Sample] = []
    for node in cluster.nodes.values():
        if not node.online:
            continue
        node_label = ("node", str(node.node_id))
        samples.append(Sample(LATE_TXNS, (node_label,), partitions_with_late_transactions_count(node, now_ms)))
        for part in sorted(node.replica_manager.leader_partitions(), key=lambda p: (p.topic, p.index)):
            labels = (node_label, ("topic", part.topic), ("partition", str(part.index)))
            samples.append(Sample(LSO_LAG, labels, last_stable_offset_lag(part)))
        samples += _share_txn_samples(node, node_label)
        samples += _share_pending_samples(cluster, node, node_label)
    return samples


def _share_pending_samples(cluster: Cluster, node: BrokerNode, node_label: tuple[str, str]) -> list[Sample]:
    pending = node.share_partition_manager.pending_transactions()
    if not pending:
        return []
    txn_ids = _transactional_ids(cluster, {t.producer_id for ts in pending.values() for t in ts})
    now = int(node.clock.monotonic() * 1000)
    out: list[Sample] = []
    for key, txns in sorted(pending.items(), key=lambda kv: (kv[0].group_id, str(kv[0].topic_id), kv[0].partition)):
        topic = cluster.metadata.topics_by_id.get(key.topic_id)
        for t in txns:
            labels = (node_label, ("group", key.group_id), ("topic", topic.name if topic else str(key.topic_id)),
                      ("partition", str(key.partition)), ("producer_id", str(t.producer_id)),
                      ("transactional_id", txn_ids.get(t.producer_id, "")))
            out += [Sample(TXN_PENDING_BY_TXN, labels, t.records),
                    Sample(TXN_PENDING_AGE, labels, max(now - t.oldest_staged_ms, 0))]
    return out


def _transactional_ids(cluster: Cluster, producer_ids: set[int]) -> dict[int, str]:
    """producer id -> transactional id, as the transaction coordinators of the live nodes know them."""
    found: dict[int, str] = {}
    for node in cluster.nodes.values():
        if node.online:
            code, _unknown, listings = node.txn_coordinator.list_transactions(producer_ids, set(), -1, None)
            found.update({t.producer_id: t.transactional_id for t in listings if code == 0})
    return found


def _share_txn_samples(node: BrokerNode, node_label: tuple[str, str]) -> list[Sample]:
    manager = node.share_partition_manager
    latency = manager.txn_ack_latency
    out = [Sample(TXN_PENDING, (node_label,), manager.txn_pending_records_count()),
           Sample(TXN_PENDING_LOCK_EXPIRED, (node_label,), manager.txn_pending_lock_expired_count())]
    out += [Sample(f"{TXN_ACK_LATENCY}_bucket", (node_label, ("le", "+Inf" if b == float("inf") else f"{b:g}")), n)
            for b, n in latency.cumulative()]
    out += [Sample(f"{TXN_ACK_LATENCY}_sum", (node_label,), latency.sum),
            Sample(f"{TXN_ACK_LATENCY}_count", (node_label,), latency.count)]
    return out


_HELP = {
    LATE_TXNS: "Partitions led by the node whose oldest open transaction is older than "
               "transaction.max.timeout.ms + 5 minutes.",
    LSO_LAG: "High watermark minus last stable offset of a partition, on its leader.",
    TXN_PENDING: "Share records held TX_PENDING by open transactions (KIP-1289), on the share-partition leader.",
    TXN_PENDING_LOCK_EXPIRED: "Share records whose acquisition lock ran out while TX_PENDING (KIP-1289).",
    TXN_ACK_LATENCY: "Time to handle a TxnShareAcknowledge request, in milliseconds (KIP-1289).",
    TXN_PENDING_BY_TXN: "Share records a transaction holds TX_PENDING on a share-partition (KIP-1289).",
    TXN_PENDING_AGE: "Age of the oldest record a transaction holds TX_PENDING on a share-partition, in ms.",
}
_TYPES = {TXN_PENDING_LOCK_EXPIRED: "counter", TXN_ACK_LATENCY: "histogram"}


def render(cluster: Cluster, now_ms: int | None = None) -> str:
    """Prometheus text format: each family's HELP and TYPE, then its samples, as one group."""
    samples = collect(cluster, now_ms)
    lines = []
    for name, help_text in _HELP.items():
        kind = _TYPES.get(name, "gauge")
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]
        lines += [s.render() for s in samples
                  if s.name == name or (kind == "histogram" and s.name.startswith(name + "_"))]
    return "\n".join(lines) + "\n"


async def _serve_http(cluster: Cluster, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        request_line = await asyncio.wait_for(reader.readline(), 10)
        while (await asyncio.wait_for(reader.readline(), 10)) not in (b"\r\n", b"\n", b""):
            pass  # headers: nothing in them matters here
        parts = request_line.decode("latin-1").split()
        if len(parts) < 2 or parts[0] not in ("GET", "HEAD"):
            status, body = "405 Method Not Allowed", b"use GET /metrics\n"
        elif parts[1].split("?")[0] not in ("/metrics", "/"):
            status, body = "404 Not Found", b"metrics are at /metrics\n"
        else:
            status, body = "200 OK", render(cluster).encode()
        head = (f"HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
        writer.write(head + (body if parts[:1] != ["HEAD"] else b""))
        await writer.drain()
    except (TimeoutError, ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()


async def serve_metrics(cluster: Cluster, host: str, port: int) -> asyncio.Server:
    """Serve GET /metrics (Prometheus text format 0.0.4) on host:port; close the returned server to stop."""
    return await asyncio.start_server(lambda r, w: _serve_http(cluster, r, w), host, port, reuse_address=True)
