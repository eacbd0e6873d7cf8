"""Write `kafka-dump-log.sh`-style text (for the generator and tests): every style the parser reads.

Snapshot styles: "2.x", "3.1" (3.1-3.4) and "3.5" (3.5+). Transaction-log styles: "3.x" (text
payload, up to 3.9) and "4.0" (JSON key and value).
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from kafka_txn_broker.formats.producer_snapshot import SnapshotEntry
from kafka_txn_broker.formats.transactions import STATE_NAMES
from kafka_txn_tools.dumps import transaction_log as txlog

SNAPSHOT_STYLES = ("2.x", "3.1", "3.5")
TXN_LOG_STYLES = ("3.x", "4.0")


def _txn_first(value: int, style: str) -> str:
    if style == "3.5":
        return f"OptionalLong[{value}]" if value >= 0 else "OptionalLong.empty"
    return f"Some({value})" if value >= 0 else "None"


def snapshot_line(e: SnapshotEntry, style: str) -> str:
    line = (
        f"producerId: {e.producer_id} producerEpoch: {e.producer_epoch} "
        f"coordinatorEpoch: {e.coordinator_epoch} "
        f"currentTxnFirstOffset: {_txn_first(e.current_txn_first_offset, style)} "
    )
    if style != "2.x":
        line += f"lastTimestamp: {e.timestamp} "
    if e.last_offset >= 0:
        first_seq = e.last_sequence - e.offset_delta if e.last_sequence >= 0 else -1
        line += (
            f"firstSequence: {first_seq} lastSequence: {e.last_sequence} lastOffset: {e.last_offset} "
            f"offsetDelta: {e.offset_delta} timestamp: {e.timestamp}"
        )
    elif style == "3.5":
        line = line.rstrip()  # newer builds print no trailing space when there is no batch part
    return line


def render_snapshot(dumped_path: str, entries: Iterable[SnapshotEntry], style: str) -> str:
    if style not in SNAPSHOT_STYLES:
        raise ValueError(f"unknown snapshot dump style {style!r}: use one of {SNAPSHOT_STYLES}")
    return "".join([f"Dumping {dumped_path}\n", *(snapshot_line(e, style) + "\n" for e in entries)])


def _payload(meta: txlog.TxnMetadata | None, style: str) -> str:
    if meta is None:
        return "<DELETE>"
    if style == "3.x":
        parts = ",".join(f"{t}-{p}" for t, p in meta.partitions)
        return (
            f"producerId:{meta.producer_id},producerEpoch:{meta.producer_epoch},state={meta.state},"
            f"partitions=[{parts}],txnLastUpdateTimestamp={meta.last_update_ms},txnTimeoutMs={meta.timeout_ms}"
        )
    grouped: dict[str, list[int]] = {}
    for topic, index in meta.partitions:
        grouped.setdefault(topic, []).append(index)
    data = {
        "producerId": meta.producer_id,
        "previousProducerId": -1,
        "nextProducerId": -1,
        "producerEpoch": meta.producer_epoch,
        "transactionTimeoutMs": meta.timeout_ms,
        "transactionStatus": STATE_NAMES.index(meta.state),
        "transactionPartitions": [{"topic": t, "partitionIds": ids} for t, ids in grouped.items()],
        "transactionLastUpdateTimestampMs": meta.last_update_ms,
        "transactionStartTimestampMs": -1 if meta.start_time_ms is None else meta.start_time_ms,
        "clientTransactionVersion": 0,
    }
    return json.dumps({"version": "1", "data": data}, separators=(",", ":"))


def _key(tid: str, style: str) -> str:
    if style == "3.x":
        return f"transaction_metadata::transactionalId={tid}"
    return json.dumps({"type": "0", "data": {"transactionalId": tid}}, separators=(",", ":"))


def render_transaction_log(dumped_path: str, records: Iterable[txlog.TxnLogRecord], style: str) -> str:
    """A `--transaction-log-decoder` dump: one batch line and one record line per record."""
    if style not in TXN_LOG_STYLES:
        raise ValueError(f"unknown transaction log dump style {style!r}: use one of {TXN_LOG_STYLES}")
    base = dumped_path.rsplit("/", 1)[-1].split(".")[0]
    lines = [f"Dumping {dumped_path}", f"Log starting offset: {int(base) if base.isdigit() else 0}"]
    position = 0
    for rec in records:
        key, payload = _key(rec.transactional_id, style), _payload(rec.meta, style)
        lines.append(
            f"baseOffset: {rec.offset} lastOffset: {rec.offset} count: 1 baseSequence: -1 lastSequence: -1 "
            f"producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false "
            f"isControl: false "
            f"deleteHorizonMs: OptionalLong.empty position: {position} CreateTime: {rec.timestamp} size: 120 "
            f"magic: 2 compresscodec: none crc: 0 isvalid: true"
        )
        value_size = -1 if rec.meta is None else 48
        lines.append(
            f"| offset: {rec.offset} CreateTime: {rec.timestamp} keySize: {len(rec.transactional_id) + 4} "
            f"valueSize: {value_size} sequence: -1 headerKeys: [] key: {key} payload: {payload}"
        )
        position += 120
    return "\n".join(lines) + "\n"
