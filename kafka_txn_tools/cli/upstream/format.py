"""Upstream kafka-transactions.sh's columns and value spellings, for `--output kafka` and `kafka-transactions`.

Facts (tools/.../TransactionsCommand.java): a missing start time or start offset prints `None` in
describe and describe-producers but `-1` in find-hanging; partitions print as `topic-N` joined by `,`;
describe's duration is the tool's clock minus the start time; find-hanging's Duration(min) is whole
minutes, truncated.
"""

from __future__ import annotations

from collections.abc import Iterable

from kafka_txn_tools.models import (
    HangingTransaction,
    ProducerState,
    TransactionDescription,
    TransactionListing,
)

LIST_HEADERS = ("TransactionalId", "Coordinator", "ProducerId", "TransactionState")
DESCRIBE_HEADERS = (
    "CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
    "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs", "TopicPartitions",
)
PRODUCERS_HEADERS = (
    "ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp",
    "CurrentTransactionStartOffset",
)
HANGING_HEADERS = (
    "Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset", "LastTimestamp",
    "Duration(min)",
)


def list_rows(listings: Iterable[TransactionListing]) -> list[list[str]]:
    return [[t.transactional_id, str(t.coordinator_id), str(t.producer_id), t.state] for t in listings]


def describe_row(d: TransactionDescription, now_ms: int) -> list[str]:
    started = d.start_time_ms >= 0
    return [
        str(d.coordinator_id), d.transactional_id, str(d.producer_id), str(d.producer_epoch), d.state,
        str(d.timeout_ms),
        str(d.start_time_ms) if started else "None",
        str(now_ms - d.start_time_ms) if started else "None",
        ",".join(str(tp) for tp in sorted(d.partitions)),
    ]


def producer_row(p: ProducerState) -> list[str]:
    return [
        str(p.producer_id), str(p.producer_epoch), str(p.coordinator_epoch if p.coordinator_epoch >= 0 else -1),
        str(p.last_sequence), str(p.last_timestamp_ms),
        str(p.current_txn_start_offset) if p.has_open_transaction else "None",
    ]


def hanging_row(h: HangingTransaction, now_ms: int) -> list[str]:
    p = h.producer
    minutes = int((now_ms - p.last_timestamp_ms) / 60_000)  # Java's toMinutes truncates toward zero
    return [
        h.partition.topic, str(h.partition.partition), str(p.producer_id), str(p.producer_epoch),
        str(p.coordinator_epoch if p.coordinator_epoch >= 0 else -1),
        str(p.current_txn_start_offset if p.current_txn_start_offset >= 0 else -1),
        str(p.last_timestamp_ms), str(minutes),
    ]
