"""__transaction_state key/value codec: Kafka's v0 and v1 layouts, tombstone-free values, tags, versions."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_txn_broker.formats.transaction_log import (
    TransactionLogError,
    TransactionLogValue,
    UnknownKeyError,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    value_version_for,
)
from kafka_txn_broker.formats.transactions import TransactionState

S = TransactionState

# An Ongoing record written by a transaction-version-1 coordinator (flexible value v1):
# pid 0, epoch 0, timeout 60000, Ongoing, [txtest-0], last update = start = 0x019e7b4b367a.
V1_ONGOING = bytes.fromhex(
    "0001" "0000000000000000" "0000" "0000ea60" "01" "02" "07" "747874657374" "02" "00000000" "00"
    "0000019e7b4b367a" "0000019e7b4b367a" "00"
)


def value(state: TransactionState = S.ONGOING, parts: tuple[tuple[str, int], ...] = (("a", 0), ("a", 2), ("b", 1)),
          **kw: int) -> TransactionLogValue:
    fields: dict[str, object] = dict(producer_id=12, producer_epoch=3, timeout_ms=60000, state=state, partitions=parts,
                                     last_update_ms=2000, start_ms=1000)
    fields.update(kw)
    return TransactionLogValue(**fields)  # type: ignore[arg-type]


def test_key_layout() -> None:
    assert encode_key("t") == b"\x00\x00\x00\x01t"
    assert decode_key(encode_key("my-unique-static-tid")) == "my-unique-static-tid"
    with pytest.raises(UnknownKeyError, match="key version 2"):  # another coordinator record type
        decode_key(struct.pack(">hh", 2, 1) + b"x")
    with pytest.raises(TransactionLogError, match="TransactionalId"):
        decode_key(b"\x00\x00\x00\x05ab")


def test_value_v0_layout() -> None:
    raw = encode_value(value(parts=(("a", 0),)), 0)
    expected = (struct.pack(">hqhib", 0, 12, 3, 60000, 1) + struct.pack(">i", 1) + b"\x00\x01a"
                + struct.pack(">ii", 1, 0) + struct.pack(">qq", 2000, 1000))
    assert raw == expected


def test_value_v1_layout_with_tags() -> None:
    raw = encode_value(value(parts=(("a", 0),), prev_producer_id=7, client_transaction_version=2), 1)
    expected = (struct.pack(">hqhib", 1, 12, 3, 60000, 1) + b"\x02" + b"\x02a" + b"\x02" + struct.pack(">i", 0)
                + b"\x00" + struct.pack(">qq", 2000, 1000)
                + b"\x02" + b"\x00\x08" + struct.pack(">q", 7) + b"\x02\x02" + struct.pack(">h", 2))
    assert raw == expected


def test_decode_flexible_v1_vector() -> None:
    v = decode_value(V1_ONGOING)
    assert (v.producer_id, v.producer_epoch, v.timeout_ms, v.state) == (0, 0, 60_000, S.ONGOING)
    assert v.partitions == (("txtest", 0),)
    assert v.last_update_ms == v.start_ms == 0x019E7B4B367A
    assert encode_value(v, 1) == V1_ONGOING


def test_decode_v0_by_hand() -> None:
    raw = (struct.pack(">hqhib", 0, 77, 3, 30_000, 3) + struct.pack(">i", 1) + struct.pack(">h", 6) + b"orders"
           + struct.pack(">iii", 2, 0, 4) + struct.pack(">qq", 1_000, -1))
    v = decode_value(raw)
    assert (v.producer_id, v.producer_epoch, v.state, v.start_ms) == (77, 3, S.PREPARE_ABORT, -1)
    assert v.partitions == (("orders", 0), ("orders", 4))


@given(st.sampled_from(list(S)),
       st.lists(st.tuples(st.sampled_from(["a", "b-c", "ü"]), st.integers(0, 1000)), unique=True, max_size=6),
       st.integers(0, 2**62), st.integers(0, 2**15 - 1), st.sampled_from([0, 1]))
def test_round_trip_keeps_partition_order(state: TransactionState, parts: list[tuple[str, int]], pid: int,
                                          epoch: int, version: int) -> None:
    ordered = () if state is S.EMPTY else tuple(sorted(parts))
    v = value(state, ordered, producer_id=pid, producer_epoch=epoch)
    assert decode_value(encode_value(v, version)) == v


@pytest.mark.parametrize("level", [0, 1, 2])
def test_tagged_fields_round_trip_from_v1(level: int) -> None:
    v = value(next_producer_id=99, prev_producer_id=5, client_transaction_version=2)
    decoded = decode_value(encode_value(v, value_version_for(level)))
    kept = (decoded.prev_producer_id, decoded.next_producer_id, decoded.client_transaction_version)
    assert kept == ((5, 99, 2) if level else (-1, -1, 0))  # v0 has no tagged fields


@pytest.mark.parametrize("version", [0, 1])
def test_empty_is_written_with_null_partitions(version: int) -> None:
    raw = encode_value(value(S.EMPTY, (), start_ms=-1), version)
    null = struct.pack(">i", -1) if version == 0 else b"\x00"
    assert raw[struct.calcsize(">hqhib"):].startswith(null)
    assert decode_value(raw).partitions == ()
    with pytest.raises(ValueError):
        encode_value(value(S.EMPTY), version)


def test_known_tags_are_read_and_unknown_tags_skipped() -> None:
    tags = (b"\x03"  # three tagged fields
            + b"\x00\x08" + struct.pack(">q", 41)  # PreviousProducerId
            + b"\x02\x02" + struct.pack(">h", 2)  # ClientTransactionVersion
            + b"\x09\x03abc")  # unknown tag 9: skipped
    v = decode_value(V1_ONGOING[:-1] + tags)
    assert (v.prev_producer_id, v.next_producer_id, v.client_transaction_version) == (41, -1, 2)
    assert v.state is S.ONGOING


def test_newer_versions_are_refused_by_default_and_read_as_v1_on_request() -> None:
    v2 = b"\x00\x02" + V1_ONGOING[2:]
    with pytest.raises(TransactionLogError, match="unknown __transaction_state value version 2"):
        decode_value(v2)  # Kafka's coordinator: IllegalStateException
    assert decode_value(v2, newer_versions=True).partitions == (("txtest", 0),)
    with pytest.raises(TransactionLogError, match="version -1"):
        decode_value(b"\xff\xff" + V1_ONGOING[2:], newer_versions=True)


def test_corrupt_values_name_the_field() -> None:
    with pytest.raises(TransactionLogError, match="TransactionTimeoutMs"):
        decode_value(V1_ONGOING[:13])
    with pytest.raises(TransactionLogError, match="status 9"):
        decode_value(struct.pack(">hqhib", 0, 1, 0, 1, 9))
    with pytest.raises(TransactionLogError, match="TransactionStartTimestampMs"):
        decode_value(encode_value(value(), 0)[:-3])
