"""connection/plain_request.py: a ListOffsets request written from plain values is framed as kafka-python frames
its own (size, header v1 or v2, body), and its answer is read from the frame as kafka-python's parser hands it
over (the header, then the body). The whole path over a real connection: tests/e2e/test_first_pass.py."""

from __future__ import annotations

import pytest
from kafka.protocol.consumer.offsets import ListOffsetsRequest as StockRequest
from kafka.protocol.consumer.offsets import ListOffsetsResponse as StockResponse
from kafka.protocol.frame import KafkaBytes

from kafka_txn_tools.connection import wire
from kafka_txn_tools.connection.plain_request import ListOffsetsRequest
from kafka_txn_tools.models import OffsetRead, TopicPartition

EPOCHS = {"orders": [(0, 3), (7, -1)], "payments": [(2, 5)]}


def _buffer(frame: bytes) -> KafkaBytes:
    """The frame after its size, as kafka-python's parser hands it to the response class."""
    buf = KafkaBytes(len(frame) - 4)
    buf.write(frame[4:])
    buf.seek(0)
    return buf


@pytest.mark.parametrize("version", range(2, 12))
def test_framed_as_kafka_python_frames_it(version: int) -> None:
    ours = wire.latest_offsets_request(EPOCHS, wire.READ_COMMITTED)
    assert isinstance(ours, ListOffsetsRequest)
    ours.API_VERSION = version
    ours.with_header(correlation_id=41, client_id="kafka-txn")
    T = StockRequest.ListOffsetsTopic
    stock = StockRequest[version](replica_id=-1, isolation_level=1, topics=[
        T(name=t, partitions=[T.ListOffsetsPartition(partition_index=p, current_leader_epoch=e, timestamp=-1)
                              for p, e in ps]) for t, ps in EPOCHS.items()])
    stock.with_header(correlation_id=41, client_id="kafka-txn")
    assert ours.encode(framed=True, header=True) == bytes(stock.encode(framed=True, header=True))
    assert ours.header is not None and ours.header.correlation_id == 41


@pytest.mark.parametrize("version", [2, 4, 5, 6, 11])
def test_the_answer_is_read_from_the_frame(version: int) -> None:
    request = wire.latest_offsets_request(EPOCHS, wire.READ_UNCOMMITTED)
    request.API_VERSION = version
    request.with_header(correlation_id=9)
    T = StockResponse.ListOffsetsTopicResponse
    P = T.ListOffsetsPartitionResponse
    stock = StockResponse[version](throttle_time_ms=0, topics=[
        T(name="orders", partitions=[P(partition_index=0, error_code=0, timestamp=-1, offset=120, leader_epoch=3),
                                     P(partition_index=7, error_code=6, timestamp=-1, offset=-1, leader_epoch=-1)])])
    stock.with_header(correlation_id=9)
    reader = request.header.get_response_class()
    buf = _buffer(bytes(stock.encode(framed=True, header=True)))
    assert reader.parse_header(buf).correlation_id == 9
    got = wire.parse_latest_offsets(reader.decode(buf))
    epoch = 3 if version >= 4 else -1
    assert got == {TopicPartition("orders", 0): OffsetRead(120, epoch),
                   TopicPartition("orders", 7): OffsetRead(None, -1, "NOT_LEADER_OR_FOLLOWER")}


def test_an_answer_cut_short_is_a_value_error_the_parser_reports() -> None:
    request = wire.latest_offsets_request(EPOCHS, wire.READ_UNCOMMITTED)
    request.API_VERSION = 11
    request.with_header(correlation_id=9)
    reader = request.header.get_response_class()
    # size, correlation id 9, no header tags, throttle 0, 8 topics ... and the frame ends
    buf = _buffer(b"\x00\x00\x00\x0a" + b"\x00\x00\x00\x09" + b"\x00" + b"\x00\x00\x00\x00" + b"\x09")
    assert reader.parse_header(buf).correlation_id == 9
    with pytest.raises(ValueError):
        reader.decode(buf)
