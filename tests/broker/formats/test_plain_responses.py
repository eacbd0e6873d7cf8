"""formats.messages.plain: a response written from plain values has the bytes kafka-python's encoder writes for
the same content, framed the same way by encode_response, at every version the broker serves."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_txn_broker.formats.messages import ListOffsetsResponse, decode_response, encode_response
from kafka_txn_broker.formats.messages.plain import ListOffsetsAnswer, PartitionOffset

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
ROWS = st.tuples(INT32, st.integers(-(2**15), 2**15 - 1), INT64, INT64, INT32)
# Names long enough to need a second varint byte (127+) and outside ASCII.
NAMES = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=150)
ANSWERS = st.builds(ListOffsetsAnswer, st.lists(st.tuples(NAMES, st.lists(ROWS, max_size=8)), max_size=4), INT32)


def kafka_python(answer: ListOffsetsAnswer, version: int) -> bytes:
    T = ListOffsetsResponse.ListOffsetsTopicResponse
    P = T.ListOffsetsPartitionResponse
    topics = [T(name=name, partitions=[P(partition_index=i, error_code=e, timestamp=ts, offset=o, leader_epoch=ep)
                                       for i, e, ts, o, ep in rows]) for name, rows in answer.topics]
    return encode_response(ListOffsetsResponse[version](throttle_time_ms=answer.throttle_time_ms, topics=topics),
                           version, 7)


@settings(max_examples=60, deadline=None)
@given(ANSWERS, st.integers(1, 11))
def test_list_offsets_bytes_equal_kafka_pythons(answer: ListOffsetsAnswer, version: int) -> None:
    assert encode_response(answer, version, 7) == kafka_python(answer, version)


@pytest.mark.parametrize("version", range(1, 12))
def test_a_client_reads_back_every_field_of_its_version(version: int) -> None:
    rows: list[PartitionOffset] = [(0, 0, -1, 42, 3), (5, 74, -1, -1, -1)]
    answer = ListOffsetsAnswer([("orders", rows), ("", [])], throttle_time_ms=9)
    got = decode_response(ListOffsetsResponse, encode_response(answer, version, 7), version)
    assert got.header.correlation_id == 7
    assert [(t.name, [(p.partition_index, p.error_code, p.timestamp, p.offset, p.leader_epoch if version >= 4 else -1)
                      for p in t.partitions]) for t in got.topics] == [
        ("orders", [(0, 0, -1, 42, 3 if version >= 4 else -1), (5, 74, -1, -1, -1)]), ("", [])]
    assert got.throttle_time_ms == (9 if version >= 2 else 0)
