"""formats.messages.plain: a response written from plain values has the bytes kafka-python's encoder writes for
the same content, framed the same way by encode_response, at every version the broker serves; a request written
so has kafka-python's bytes, and a response kafka-python wrote reads back as written."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_txn_broker.formats.messages import ListOffsetsRequest, ListOffsetsResponse, decode_response, encode_response
from kafka_txn_broker.formats.messages.plain import (
    ListOffsetsAnswer,
    PartitionOffset,
    PartitionQuery,
    list_offsets_request_body,
    read_list_offsets_response,
)

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


# ---- a client's side: the ListOffsets request written, the response read -----------------------------------------
QUERIES = st.lists(st.tuples(NAMES, st.lists(st.tuples(INT32, INT32, INT64), max_size=8)), max_size=4)


@settings(max_examples=60, deadline=None)
@given(QUERIES, st.integers(0, 1), st.integers(1, 11))
def test_list_offsets_request_bytes_equal_kafka_pythons(topics: list[tuple[str, list[PartitionQuery]]],
                                                        isolation: int, version: int) -> None:
    T = ListOffsetsRequest.ListOffsetsTopic
    P = T.ListOffsetsPartition
    stock = ListOffsetsRequest[version](replica_id=-1, isolation_level=isolation, timeout_ms=0, topics=[
        T(name=name, partitions=[P(partition_index=i, current_leader_epoch=e, timestamp=ts) for i, e, ts in parts])
        for name, parts in topics])
    assert list_offsets_request_body(version, topics, isolation) == bytes(stock.encode(version=version))


@settings(max_examples=60, deadline=None)
@given(ANSWERS, st.integers(1, 11))
def test_a_list_offsets_response_reads_back_as_written(answer: ListOffsetsAnswer, version: int) -> None:
    frame = kafka_python(answer, version)
    body = frame[8 + (1 if version >= 6 else 0):]  # size, correlation id, the header's tagged fields
    got = read_list_offsets_response(body, version)
    assert got.throttle_time_ms == (answer.throttle_time_ms if version >= 2 else 0)
    assert got.topics == [(name, [(*row[:4], row[4] if version >= 4 else -1) for row in rows])
                          for name, rows in answer.topics]


@pytest.mark.parametrize("version", [3, 11])
def test_a_response_cut_short_is_a_value_error(version: int) -> None:
    frame = kafka_python(ListOffsetsAnswer([("orders", [(0, 0, -1, 42, 3)])]), version)
    body = frame[8 + (1 if version >= 6 else 0):]
    for end in range(len(body)):
        with pytest.raises((ValueError, struct.error)):
            read_list_offsets_response(body[:end], version)
