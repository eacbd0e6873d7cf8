"""Requests and responses of connection/wire.py, through real encoded bytes of kafka-python's message classes."""

from __future__ import annotations

import struct

from kafka.protocol.admin.transactions import (
    DescribeProducersRequest,
    DescribeProducersResponse,
    DescribeTransactionsResponse,
    ListTransactionsRequest,
    ListTransactionsResponse,
)
from kafka.protocol.producer.transaction import WriteTxnMarkersRequest as StockWriteTxnMarkersRequest
from kafka.protocol.producer.transaction import WriteTxnMarkersResponse

from kafka_txn_tools.connection import wire
from kafka_txn_tools.models import ProducerState, TopicPartition

TP = TopicPartition("orders", 3)


def roundtrip(message, cls, version):
    return cls.decode(bytes(message.encode(version=version)), version=version)


def test_abort_marker_carries_txn_start_offset_as_tag_0() -> None:
    request = wire.abort_marker_request(TP, producer_id=2000, producer_epoch=5, coordinator_epoch=7, start_offset=116)
    raw = bytes(request.encode(version=1))
    # A broker using kafka-python's stock class sees everything it knows, plus tag 0 as unknown bytes.
    stock = StockWriteTxnMarkersRequest.decode(raw, version=1)
    marker = stock.markers[0]
    assert (marker.producer_id, marker.producer_epoch, marker.transaction_result, marker.coordinator_epoch) == (
        2000, 5, False, 7)
    topic = marker.topics[0]
    assert (topic.name, topic.partition_indexes) == ("orders", [3])
    assert topic.unknown_tags == {"_0": struct.pack(">q", 116)}
    assert wire.decode_txn_start_offset(topic.unknown_tags) == 116
    # Our class reads it as a field, on v2 too.
    ours = wire.WriteTxnMarkersRequest.decode(bytes(request.encode(version=2)), version=2)
    assert ours.markers[0].topics[0].txn_start_offset == 116


def test_legacy_marker_has_no_tag_and_is_byte_identical_to_stock() -> None:
    ours = wire.abort_marker_request(TP, 2000, 5, 0, None)
    Marker = StockWriteTxnMarkersRequest.WritableTxnMarker
    stock = StockWriteTxnMarkersRequest(markers=[Marker(
        producer_id=2000, producer_epoch=5, transaction_result=False, coordinator_epoch=0,
        topics=[Marker.WritableTxnMarkerTopic(name="orders", partition_indexes=[3])])])
    assert bytes(ours.encode(version=1)) == bytes(stock.encode(version=1))
    assert wire.decode_txn_start_offset(StockWriteTxnMarkersRequest.decode(
        bytes(ours.encode(version=1)), version=1).markers[0].topics[0].unknown_tags) == -1


def test_marker_response() -> None:
    R = WriteTxnMarkersResponse
    result = R.WritableTxnMarkerResult
    topic = result.WritableTxnMarkerTopicResult
    response = R(markers=[result(producer_id=2000, topics=[topic(name="orders", partitions=[
        topic.WritableTxnMarkerPartitionResult(partition_index=3, error_code=48)])])])
    assert wire.parse_write_txn_markers(roundtrip(response, R, 1), TP) == "INVALID_TXN_STATE"
    assert wire.parse_write_txn_markers(roundtrip(response, R, 1), TopicPartition("x", 0)) == "UNKNOWN_SERVER_ERROR"


def test_describe_producers() -> None:
    request = roundtrip(wire.describe_producers_request([TP, TopicPartition("orders", 4), TopicPartition("a", 0)]),
                        DescribeProducersRequest, 0)
    assert {(t.name, tuple(t.partition_indexes)) for t in request.topics} == {("orders", (3, 4)), ("a", (0,))}
    R = DescribeProducersResponse
    T = R.TopicResponse
    P = T.PartitionResponse
    response = R(topics=[T(name="orders", partitions=[
        P(partition_index=3, error_code=0, active_producers=[P.ProducerState(
            producer_id=9, producer_epoch=2, last_sequence=4, last_timestamp=1000, coordinator_epoch=-1,
            current_txn_start_offset=116)]),
        P(partition_index=4, error_code=29, error_message=None, active_producers=[])])])
    ok, errors = wire.parse_describe_producers(roundtrip(response, R, 0), broker_id=1)
    assert ok[0].partition == TP and ok[0].broker_id == 1
    assert ok[0].producers == (ProducerState(9, 2, 4, 1000, -1, 116),)
    assert [(e.error, e.code, e.partition, e.broker_id) for e in errors] == [
        ("TOPIC_AUTHORIZATION_FAILED", 29, TopicPartition("orders", 4), 1)]


def test_list_transactions_versions_follow_the_filters() -> None:
    assert wire.list_transactions_request()._min_version == 0
    assert wire.list_transactions_request(duration_ms=5)._min_version == 1
    request = wire.list_transactions_request(["Ongoing"], [7], 5, "orders-.*")
    assert request._min_version == 2
    decoded = roundtrip(request, ListTransactionsRequest, 2)
    assert (decoded.state_filters, decoded.producer_id_filters, decoded.duration_filter,
            decoded.transactional_id_pattern) == (["Ongoing"], [7], 5, "orders-.*")
    R = ListTransactionsResponse
    response = R(error_code=0, unknown_state_filters=[], transaction_states=[
        R.TransactionState(transactional_id="t", producer_id=7, transaction_state="Ongoing")])
    listings, error = wire.parse_list_transactions(roundtrip(response, R, 2), broker_id=2)
    assert error is None and [(t.transactional_id, t.coordinator_id) for t in listings] == [("t", 2)]
    failed = R(error_code=128, unknown_state_filters=[], transaction_states=[])
    assert wire.parse_list_transactions(roundtrip(failed, R, 2), 2) == ([], "INVALID_REGULAR_EXPRESSION")


def test_describe_transactions() -> None:
    R = DescribeTransactionsResponse
    S = R.TransactionState
    response = R(transaction_states=[
        S(error_code=0, transactional_id="t", transaction_state="Ongoing", transaction_timeout_ms=60000,
          transaction_start_time_ms=5, producer_id=7, producer_epoch=1,
          topics=[S.TopicData(topic="orders", partitions=[3, 4])]),
        S(error_code=105, transactional_id="gone", transaction_state="", transaction_timeout_ms=0,
          transaction_start_time_ms=-1, producer_id=-1, producer_epoch=-1, topics=[])])
    found, failed = wire.parse_describe_transactions(roundtrip(response, R, 0), coordinator_id=1)
    assert found["t"].partitions == frozenset({TP, TopicPartition("orders", 4)}) and found["t"].coordinator_id == 1
    assert failed == {"gone": "TRANSACTIONAL_ID_NOT_FOUND"}


def _share_offsets(version: int, *partitions: tuple[int, int, int]):
    """A DescribeShareGroupOffsets answer for group g on topic t: (partition, start offset, lag) each."""
    import uuid

    from kafka_txn_broker.formats.messages import DescribeShareGroupOffsetsResponse as R

    G = R.DescribeShareGroupOffsetsResponseGroup
    T = G.DescribeShareGroupOffsetsResponseTopic
    P = T.DescribeShareGroupOffsetsResponsePartition
    parts = [P(partition_index=p, start_offset=start, leader_epoch=0, lag=lag, error_code=0)
             for p, start, lag in partitions]
    answer = R(throttle_time_ms=0, groups=[G(group_id="g", error_code=0, topics=[
        T(topic_name="t", topic_id=uuid.uuid4(), partitions=parts)])])
    return roundtrip(answer, R, version)


def test_a_share_groups_position_is_its_start_offset_moved_past_what_it_delivered() -> None:
    """Kafka 4.4.0 persists the start offset one write behind: a group that delivered every record below the LSO
    (6 of a high watermark of 10) answers start offset 0 and lag 4 (counted to the high watermark); its position
    is 10 - 4 = 6. Without the lag (v0), or the high watermark, or any lag (-1), the start offset is all there is."""
    ends = {TopicPartition("t", 0): 10, TopicPartition("t", 1): None}
    v1 = _share_offsets(1, (0, 0, 4), (1, 3, 2), (2, 5, -1), (3, -1, -1))
    assert wire.parse_share_offsets(v1, ends) == ({"g": {TopicPartition("t", 0): 6, TopicPartition("t", 1): 3,
                                                         TopicPartition("t", 2): 5}}, {})
    assert wire.parse_share_offsets(_share_offsets(0, (0, 0, 4)), ends) == ({"g": {TopicPartition("t", 0): 0}}, {})
    # A lag beyond the high watermark read (records produced after it) never moves the position back.
    assert wire.parse_share_offsets(_share_offsets(1, (0, 7, 9)), ends) == ({"g": {TopicPartition("t", 0): 7}}, {})
