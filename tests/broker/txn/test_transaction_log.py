"""__transaction_state key/value codec: Kafka's v0 and v1 layouts, tombstones, unknown tags."""

from __future__ import annotations

import struct

import pytest

from kafka_txn_broker.txn.transaction_log import (
    TransactionLogError,
    key_to_bytes,
    read_key,
    read_value,
    value_to_bytes,
)
from kafka_txn_broker.txn.transaction_metadata import TransactionState, TxnTransitMetadata
from kafka_txn_tools.dumps import transaction_log as dumps

S = TransactionState


def transit(state: TransactionState = S.ONGOING, parts: frozenset[tuple[str, int]] | None = None,
            **kw: object) -> TxnTransitMetadata:
    values: dict[str, object] = dict(
        producer_id=12, prev_producer_id=-1, next_producer_id=-1, producer_epoch=3, last_producer_epoch=-1,
        txn_timeout_ms=60000, state=state,
        topic_partitions=parts if parts is not None else frozenset({("a", 0), ("a", 2), ("b", 1)}),
        txn_start_timestamp=1000, txn_last_update_timestamp=2000, client_transaction_version=0)
    values.update(kw)
    return TxnTransitMetadata(**values)  # type: ignore[arg-type]


def test_key_layout() -> None:
    assert key_to_bytes("t") == b"\x00\x00\x00\x01t"
    assert read_key(key_to_bytes("my-unique-static-tid")) == "my-unique-static-tid"
    assert read_key(b"\x00\x01\x00\x01t") is None  # another coordinator record type


def test_value_v0_layout() -> None:
    raw = value_to_bytes(transit(parts=frozenset({("a", 0)})), transaction_version_level=0)
    expected = (struct.pack(">hqhib", 0, 12, 3, 60000, 1) + struct.pack(">i", 1) + b"\x00\x01a"
                + struct.pack(">ii", 1, 0) + struct.pack(">qq", 2000, 1000))
    assert raw == expected


def test_value_v1_layout_with_tags() -> None:
    raw = value_to_bytes(transit(parts=frozenset({("a", 0)}), prev_producer_id=7, client_transaction_version=2),
                         transaction_version_level=2)
    expected = (struct.pack(">hqhib", 1, 12, 3, 60000, 1) + b"\x02" + b"\x02a" + b"\x02" + struct.pack(">i", 0)
                + b"\x00" + struct.pack(">qq", 2000, 1000)
                + b"\x02" + b"\x00\x08" + struct.pack(">q", 7) + b"\x02\x02" + struct.pack(">h", 2))
    assert raw == expected


@pytest.mark.parametrize("level", [0, 1, 2])
def test_round_trip(level: int) -> None:
    t = transit(next_producer_id=99 if level else -1, prev_producer_id=5 if level else -1,
                client_transaction_version=2 if level else 0)
    v = read_value(value_to_bytes(t, level))
    assert (v.producer_id, v.producer_epoch, v.txn_timeout_ms, v.state, v.partitions, v.last_update_ms, v.start_ms) == (
        12, 3, 60000, S.ONGOING, t.topic_partitions, 2000, 1000)
    assert (v.prev_producer_id, v.next_producer_id, v.client_transaction_version) == (
        t.prev_producer_id, t.next_producer_id, t.client_transaction_version)
    md = v.to_metadata("tid")
    assert (md.transactional_id, md.topic_partitions, md.last_producer_epoch) == ("tid", set(t.topic_partitions), -1)


@pytest.mark.parametrize("level", [0, 2])
def test_empty_is_written_with_null_partitions(level: int) -> None:
    raw = value_to_bytes(transit(S.EMPTY, frozenset(), txn_start_timestamp=-1), level)
    null = struct.pack(">i", -1) if level == 0 else b"\x00"
    assert null in raw
    assert read_value(raw).partitions == frozenset()
    with pytest.raises(ValueError):
        value_to_bytes(transit(S.EMPTY), level)


def test_unknown_tags_are_skipped() -> None:
    raw = value_to_bytes(transit(), 2)
    assert raw.endswith(b"\x00")
    with_tag = raw[:-1] + b"\x01" + b"\x09\x02" + b"\xab\xcd"  # tag 9, 2 bytes: a future field
    assert read_value(with_tag).producer_id == 12


def test_corrupt_values_raise() -> None:
    with pytest.raises(TransactionLogError):
        read_value(b"\x00\x05" + bytes(30))
    with pytest.raises(TransactionLogError):
        read_value(value_to_bytes(transit(), 0)[:-3])


@pytest.mark.parametrize("level", [0, 2])
def test_the_sweeps_independent_decoder_reads_our_records(level: int) -> None:
    t = transit(S.PREPARE_COMMIT)
    decoded = dumps.decode_value("tid", value_to_bytes(t, level))
    assert (decoded.producer_id, decoded.producer_epoch, decoded.state) == (12, 3, "PrepareCommit")
    assert set(decoded.partitions) == set(t.topic_partitions)
    assert dumps.decode_key(key_to_bytes("tid")) == "tid"
