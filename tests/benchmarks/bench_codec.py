"""The wire codec: kafka-python 3.0.12's classes (the broker's codec, behind formats/messages) against kio, a
codec generated from Kafka's message schemas (its reader native code, its writer Python), on the messages
that dominate the broker's CPU; and what the codec's door itself costs a request.

    python tests/benchmarks/bench_codec.py [--rounds 9] [--ms 150]

Each case is the same message on both sides: before timing, kio's bytes are checked equal to kafka-python's,
and the fields it decodes equal to kafka-python's. A request is decoded from its frame (size, header, body),
as the broker receives it; a response is encoded into its frame, from an object built once ("encode") and
built each time as a handler does ("build + encode"). Rounds alternate which codec goes first; each figure
is the median over the rounds of the time per message, and the ratio is kio's over kafka-python's (below 1:
kio is faster). The last rows time formats.messages' decode_request / encode_response against the same
library calls made inline, as the request handler made them before the door existed.
"""

# kio types its fields with phantom types (i32, BrokerId, TopicName ...) that plain values satisfy at run time:
# its entities are built from plain values here, kio's cheapest way, so mypy's view of them is switched off.
# mypy: disable-error-code="arg-type,misc"
from __future__ import annotations

import argparse
import dataclasses
import datetime
import gc
import io
import statistics
import struct
import time
import uuid
from collections.abc import Callable
from typing import Any

from kafka_txn_broker.formats.messages import (
    DescribeProducersRequest,
    DescribeProducersResponse,
    FetchResponse,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
    decode_request,
    encode_response,
    new_struct,
)
from kafka_txn_broker.formats.messages.validate import null_violation
from kafka_txn_broker.formats.record_batch import build_batch

PARTITIONS = 6
CORRELATION_ID = 5
ZERO = datetime.timedelta(0)
BATCH = build_batch([(None, b"v" * 100) for _ in range(100)], timestamp_ms=1_700_000_000_000, producer_id=7,
                    producer_epoch=0, base_sequence=0)
TOPIC_IDS = [uuid.UUID(int=i + 1) for i in range(10)]


@dataclasses.dataclass
class Case:
    name: str
    kafka_python: Callable[[], Any]
    other: Callable[[], Any]  # kio, or the seam's call in the last rows
    other_name: str = "kio"


# ---- kafka-python: frames as a client sends them, responses as a handler builds them --------------------------
def _frame(request: Any, version: int) -> bytes:
    request.with_header(correlation_id=CORRELATION_ID, client_id="rdkafka")
    return bytes(request.encode(version=version, header=True, framed=True))


def _kp_decoder(cls: Any, frame: bytes, version: int) -> Callable[[], Any]:
    return lambda: cls.decode(frame, version=version, header=True, framed=True)


def _kp_encode(response: Any) -> bytes:
    response.with_header(correlation_id=CORRELATION_ID)
    return bytes(response.encode(header=True, framed=True))


def kp_produce(version: int) -> Any:
    P = ProduceRequest[version]
    part = P.TopicProduceData.PartitionProduceData(index=0, records=BATCH)
    return P(transactional_id=None, acks=-1, timeout_ms=30000,
             topic_data=[P.TopicProduceData(name="orders", partition_data=[part])])


def kp_fetch() -> Any:
    R = FetchResponse[12]
    P = R.FetchableTopicResponse.PartitionData
    return R(throttle_time_ms=0, error_code=0, session_id=0, responses=[R.FetchableTopicResponse(
        topic="orders", partitions=[P(partition_index=i, error_code=0, high_watermark=1000, last_stable_offset=1000,
                                      log_start_offset=0, aborted_transactions=None, preferred_read_replica=-1,
                                      records=BATCH) for i in range(PARTITIONS)])])


def kp_markers_request() -> Any:
    R = WriteTxnMarkersRequest[1]
    M = R.WritableTxnMarker
    return R(markers=[M(producer_id=7, producer_epoch=3, transaction_result=False, coordinator_epoch=2, topics=[
        M.WritableTxnMarkerTopic(name="orders", partition_indexes=list(range(PARTITIONS)))])])


def kp_markers_response() -> Any:
    R = WriteTxnMarkersResponse[1]
    M = R.WritableTxnMarkerResult
    T = M.WritableTxnMarkerTopicResult
    return R(markers=[M(producer_id=7, topics=[T(name="orders", partitions=[
        T.WritableTxnMarkerPartitionResult(partition_index=i, error_code=0) for i in range(PARTITIONS)])])])


def kp_producers_request() -> Any:
    R = DescribeProducersRequest[0]
    return R(topics=[R.TopicRequest(name="orders", partition_indexes=list(range(PARTITIONS)))])


def kp_producers_response() -> Any:
    R = DescribeProducersResponse[0]
    T = R.TopicResponse
    P = T.PartitionResponse
    return R(throttle_time_ms=0, topics=[T(name="orders", partitions=[P(
        partition_index=i, error_code=0, error_message=None, active_producers=[P.ProducerState(
            producer_id=1000 + j, producer_epoch=0, last_sequence=99, last_timestamp=1_700_000_000_000,
            coordinator_epoch=2, current_txn_start_offset=500 + j) for j in range(5)]) for i in range(PARTITIONS)])])


def kp_metadata_request() -> Any:
    R = MetadataRequest[12]
    return R(topics=[R.MetadataRequestTopic(topic_id=None, name=name) for name in ("orders", "payments")],
             allow_auto_topic_creation=False, include_topic_authorized_operations=False)


def kp_metadata_response() -> Any:
    R = MetadataResponse[12]
    T = R.MetadataResponseTopic
    P = T.MetadataResponsePartition
    return R(throttle_time_ms=0, cluster_id="bench", controller_id=0, brokers=[
        R.MetadataResponseBroker(node_id=n, host="127.0.0.1", port=9092 + n, rack=None) for n in range(3)],
        topics=[T(error_code=0, name=f"topic-{t}", topic_id=TOPIC_IDS[t], is_internal=False,
                  partitions=[P(
                      error_code=0, partition_index=p, leader_id=p % 3, leader_epoch=0, replica_nodes=[0, 1, 2],
                      isr_nodes=[0, 1, 2], offline_replicas=[]) for p in range(PARTITIONS)]) for t in range(10)])


# ---- kio: the same messages ------------------------------------------------------------------------------------
def kio_cases(frames: dict[str, bytes], kp_bytes: dict[str, bytes]) -> dict[str, tuple[Callable[[], Any], ...]]:
    """name -> (the timed kio call, a check that it matches kafka-python)."""
    import kio.schema.describe_producers.v0.request as dpq
    import kio.schema.describe_producers.v0.response as dps
    import kio.schema.fetch.v12.response as fr
    import kio.schema.metadata.v12.request as mq
    import kio.schema.metadata.v12.response as ms
    import kio.schema.produce.v9.request as pq
    import kio.schema.write_txn_markers.v1.request as wq
    import kio.schema.write_txn_markers.v1.response as ws
    from kio.schema.errors import ErrorCode
    from kio.schema.request_header.v2.header import RequestHeader
    from kio.schema.response_header.v1.header import ResponseHeader
    from kio.serial import entity_reader, entity_writer

    read_header = entity_reader(RequestHeader)
    write_header = entity_writer(ResponseHeader)

    def decoder(entity: Any, frame: bytes) -> Callable[[], Any]:
        read_body = entity_reader(entity)

        def decode() -> Any:
            view = memoryview(frame)
            header, size = read_header(view, 4)
            return header, read_body(view, 4 + size)[0]
        return decode

    def encoder(entity: Any) -> Callable[[Any], bytes]:
        write_body = entity_writer(entity)

        def encode(response: Any) -> bytes:
            out = io.BytesIO()
            out.write(b"\0\0\0\0")
            write_header(out, ResponseHeader(correlation_id=CORRELATION_ID))
            write_body(out, response)
            framed = out.getbuffer()
            struct.pack_into(">i", framed, 0, len(framed) - 4)
            return bytes(framed)
        return encode

    none = ErrorCode.none

    def fetch() -> Any:
        return fr.FetchResponse(throttle_time=ZERO, error_code=none, session_id=0, responses=(fr.FetchableTopicResponse(
            topic="orders", partitions=tuple(fr.PartitionData(
                partition_index=i, error_code=none, high_watermark=1000, last_stable_offset=1000, log_start_offset=0,
                aborted_transactions=None, preferred_read_replica=-1, records=BATCH) for i in range(PARTITIONS))),))

    def markers() -> Any:
        return ws.WriteTxnMarkersResponse(markers=(ws.WritableTxnMarkerResult(producer_id=7, topics=(
            ws.WritableTxnMarkerTopicResult(name="orders", partitions=tuple(
                ws.WritableTxnMarkerPartitionResult(partition_index=i, error_code=none)
                for i in range(PARTITIONS))),)),))

    def producers() -> Any:
        return dps.DescribeProducersResponse(throttle_time=ZERO, topics=(dps.TopicResponse(
            name="orders", partitions=tuple(dps.PartitionResponse(
                partition_index=i, error_code=none, error_message=None, active_producers=tuple(dps.ProducerState(
                    producer_id=1000 + j, producer_epoch=0, last_sequence=99, last_timestamp=1_700_000_000_000,
                    coordinator_epoch=2, current_txn_start_offset=500 + j) for j in range(5)))
                for i in range(PARTITIONS))),))

    def metadata() -> Any:
        return ms.MetadataResponse(throttle_time=ZERO, cluster_id="bench", controller_id=0, brokers=tuple(
            ms.MetadataResponseBroker(node_id=n, host="127.0.0.1", port=9092 + n, rack=None) for n in range(3)),
            topics=tuple(ms.MetadataResponseTopic(
                error_code=none, name=f"topic-{t}", topic_id=TOPIC_IDS[t], is_internal=False,
                partitions=tuple(ms.MetadataResponsePartition(
                    error_code=none, partition_index=p, leader_id=p % 3, leader_epoch=0, replica_nodes=(0, 1, 2),
                    isr_nodes=(0, 1, 2), offline_replicas=()) for p in range(PARTITIONS))) for t in range(10)))

    out: dict[str, tuple[Callable[[], Any], ...]] = {}
    requests = {"produce": pq.ProduceRequest, "markers request": wq.WriteTxnMarkersRequest,
                "producers request": dpq.DescribeProducersRequest, "metadata request": mq.MetadataRequest}
    for name, entity in requests.items():
        decode = decoder(entity, frames[name])
        out[name] = (decode, decode)
    responses = {"fetch": (fr.FetchResponse, fetch), "markers response": (ws.WriteTxnMarkersResponse, markers),
                 "producers response": (dps.DescribeProducersResponse, producers),
                 "metadata response": (ms.MetadataResponse, metadata)}
    for name, (entity, build) in responses.items():
        encode, built = encoder(entity), build()
        if encode(built) != kp_bytes[name]:
            raise SystemExit(f"kio's {name} bytes differ from kafka-python's: not the same message")
        out[name] = (lambda e=encode, b=built: e(b), lambda e=encode, f=build: e(f()))
    return out


def _same_fields(kp: Any, kio: Any, path: str = "") -> None:
    """The decoded requests agree, field by field of kio's (whose durations are timedeltas named without the
    _ms, and whose arrays are tuples)."""
    if dataclasses.is_dataclass(kio):
        for f in dataclasses.fields(kio):
            name = f.name if hasattr(kp, f.name) else f"{f.name}_ms"
            if hasattr(kp, name):  # else a tagged field kafka-python's version leaves out
                _same_fields(getattr(kp, name), getattr(kio, f.name), f"{path}.{f.name}")
    elif isinstance(kio, tuple):
        if len(kp) != len(kio):
            raise SystemExit(f"{path}: {len(kio)} items in kio, {len(kp)} in kafka-python: not the same message")
        for i, (theirs, ours) in enumerate(zip(kp, kio, strict=True)):
            _same_fields(theirs, ours, f"{path}[{i}]")
    else:
        ours = int(kio.total_seconds() * 1000) if isinstance(kio, datetime.timedelta) else kio
        theirs = bytes(kp) if isinstance(kp, memoryview | bytearray) else kp
        if theirs != ours:
            raise SystemExit(f"{path}: kio decodes {ours!r:.60}, kafka-python {theirs!r:.60}: not the same message")


# ---- timing --------------------------------------------------------------------------------------------------
def per_call_us(fn: Callable[[], Any], budget_s: float) -> float:
    n, elapsed = 1, 0.0
    while elapsed < budget_s / 4:  # find a count that fills a quarter of the budget
        n *= 2
        start = time.perf_counter()
        for _ in range(n):
            fn()
        elapsed = time.perf_counter() - start
    reps = max(1, int(n * budget_s / elapsed))
    gc.disable()
    try:
        start = time.perf_counter()
        for _ in range(reps):
            fn()
        return (time.perf_counter() - start) / reps * 1e6
    finally:
        gc.enable()


def cases() -> list[Case]:
    frames = {"produce": _frame(kp_produce(9), 9), "markers request": _frame(kp_markers_request(), 1),
              "producers request": _frame(kp_producers_request(), 0),
              "metadata request": _frame(kp_metadata_request(), 12)}
    kp_request = {"produce": (ProduceRequest, 9), "markers request": (WriteTxnMarkersRequest, 1),
                  "producers request": (DescribeProducersRequest, 0), "metadata request": (MetadataRequest, 12)}
    kp_response = {"fetch": kp_fetch, "markers response": kp_markers_response,
                   "producers response": kp_producers_response, "metadata response": kp_metadata_response}
    kp_bytes = {name: _kp_encode(build()) for name, build in kp_response.items()}
    kio = kio_cases(frames, kp_bytes)
    for name, (cls, version) in kp_request.items():
        _same_fields(cls.decode(frames[name], version=version, header=True, framed=True), kio[name][0]()[1])

    label = {"produce": "Produce v9 request, decode (1 batch of 100 records x 100 B)",
             "markers request": f"WriteTxnMarkers v1 request, decode (1 marker, {PARTITIONS} partitions)",
             "producers request": f"DescribeProducers v0 request, decode ({PARTITIONS} partitions)",
             "metadata request": "Metadata v12 request, decode (2 topics)",
             "fetch": f"Fetch v12 response ({PARTITIONS} partitions x 100 records)",
             "markers response": f"WriteTxnMarkers v1 response ({PARTITIONS} partitions)",
             "producers response": f"DescribeProducers v0 response ({PARTITIONS} partitions x 5 producers)",
             "metadata response": f"Metadata v12 response (3 brokers, 10 topics x {PARTITIONS} partitions)"}
    out = [Case(label[name], _kp_decoder(cls, frames[name], version), kio[name][0])
           for name, (cls, version) in kp_request.items()]
    for name, build in kp_response.items():
        built = build()
        out.append(Case(f"{label[name]}, encode", lambda b=built: _kp_encode(b), kio[name][0]))
        out.append(Case(f"{label[name]}, build + encode", lambda f=build: _kp_encode(f()), kio[name][1]))
    out += seam_cases(frames["produce"])
    out += plain_cases()
    return out


def seam_cases(produce_frame: bytes) -> list[Case]:
    """The door's functions against the same calls inline, as request_handler made them before."""
    def inline_decode() -> Any:
        request = ProduceRequest.decode(produce_frame, version=9, header=True, framed=True)
        if null_violation(request, 9) is not None:
            raise ValueError("null")
        header = request.header
        return request, header.correlation_id, getattr(header, "client_id", None)

    built = kp_fetch()

    def inline_encode() -> bytes:
        if built.API_VERSION != 12:
            built.API_VERSION = 12
        built.with_header(correlation_id=CORRELATION_ID)
        return bytes(built.encode(header=True, framed=True))

    return [Case("seam: Produce v9 request, decode_request vs inline", inline_decode,
                 lambda: decode_request(ProduceRequest, produce_frame, 9), "seam"),
            Case("seam: Fetch v12 response, encode_response vs inline", inline_encode,
                 lambda: encode_response(built, 12, CORRELATION_ID), "seam")]


def plain_cases() -> list[Case]:
    """formats.messages.plain against kafka-python's classes: a ListOffsets answer as a leader of 6,700 partitions
    gives it to a find-hanging first pass, built and encoded; the bytes are checked equal first."""
    from kafka_txn_broker.formats.messages import ListOffsetsResponse
    from kafka_txn_broker.formats.messages.plain import ListOffsetsAnswer

    T = ListOffsetsResponse.ListOffsetsTopicResponse
    P = T.ListOffsetsPartitionResponse
    rows = [(f"bench-{t:04d}", [(p, 0, -1, 1000 + p, 3) for p in range(67)]) for t in range(100)]

    def kp() -> bytes:
        topics = [T(name=name, partitions=[new_struct(P, partition_index=i, error_code=e, timestamp=ts, offset=o,
                                                      leader_epoch=ep) for i, e, ts, o, ep in parts])
                  for name, parts in rows]
        return encode_response(ListOffsetsResponse[11](throttle_time_ms=0, topics=topics), 11, CORRELATION_ID)

    def plain() -> bytes:
        return encode_response(ListOffsetsAnswer([(name, list(parts)) for name, parts in rows]), 11, CORRELATION_ID)

    assert kp() == plain()
    return [Case("ListOffsets v11 response (100 topics x 67 partitions), build + encode", kp, plain, "plain")]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--ms", type=float, default=150.0, help="time budget per case, codec and round")
    args = ap.parse_args()
    try:
        import kio
    except ImportError:
        raise SystemExit("kio is not installed: pip install kio==0.6.5 (the dev extra has it)") from None
    import kafka

    todo = cases()
    times: dict[str, tuple[list[float], list[float]]] = {c.name: ([], []) for c in todo}
    for r in range(args.rounds):
        for case in todo:
            first_kp = r % 2 == 0
            for is_kp in (first_kp, not first_kp):
                fn = case.kafka_python if is_kp else case.other
                times[case.name][0 if is_kp else 1].append(per_call_us(fn, args.ms / 1000))
    print(f"kafka-python {kafka.__version__} vs kio {kio.__version__}, {args.rounds} alternating rounds, "
          f"median us per message")
    width = max(len(c.name) for c in todo)
    print(f"{'message':<{width}} {'kafka-python':>12} {'other':>10} {'other/kp':>9}")
    for case in todo:
        kp_us, other_us = (statistics.median(t) for t in times[case.name])
        print(f"{case.name:<{width}} {kp_us:>12.1f} {other_us:>7.1f} {case.other_name:<3}"
              f"{other_us / kp_us:>8.2f}")


if __name__ == "__main__":
    main()
