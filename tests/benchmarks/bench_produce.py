"""Produce throughput with librdkafka: the embedded broker vs a minimal asyncio sink, side by side.

The sink decodes Produce requests with the same kafka-python classes and acknowledges them without
storing anything: the ceiling for a Python server on this machine. Target: the broker (acks=all, RF=3
on 3 nodes) reaches at least 50% of the sink's records/s.

    python tests/benchmarks/bench_produce.py [--records 200000]
"""

from __future__ import annotations

import argparse
import asyncio
import struct
import tempfile
import threading
import time
from typing import Any

from kafka.protocol.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.producer import InitProducerIdRequest, ProduceRequest

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.apis.api_versions import build_response
from kafka_txn_broker.apis.registry import load_all

PARTITIONS = 6


class Sink:
    """ApiVersions, Metadata, InitProducerId and Produce; acknowledges every batch at offset 0."""

    def __init__(self) -> None:
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self) -> None:
        ready = threading.Event()

        def run() -> None:
            self._loop = asyncio.new_event_loop()
            server = self._loop.run_until_complete(asyncio.start_server(self._conn, "127.0.0.1", 0))
            self.port = server.sockets[0].getsockname()[1]
            ready.set()
            self._loop.run_forever()

        threading.Thread(target=run, daemon=True).start()
        ready.wait()

    def _answer(self, key: int, version: int, frame: bytes) -> Any:
        if key == 18:
            return build_response(min(version, 3))
        if key == 3:
            req = MetadataRequest.decode(frame, version=version, header=True, framed=True)
            R = MetadataResponse
            parts = [R.MetadataResponseTopic.MetadataResponsePartition(
                error_code=0, partition_index=i, leader_id=0, leader_epoch=0, replica_nodes=[0], isr_nodes=[0],
                offline_replicas=[]) for i in range(PARTITIONS)]
            topics = [R.MetadataResponseTopic(error_code=0, name=t.name, is_internal=False, partitions=parts)
                      for t in (req.topics or [])]
            return req, R[version](brokers=[R.MetadataResponseBroker(node_id=0, host="127.0.0.1", port=self.port)],
                                   cluster_id="sink", controller_id=0, topics=topics)
        if key == 22:
            req = InitProducerIdRequest.decode(frame, version=version, header=True, framed=True)
            from kafka.protocol.producer import InitProducerIdResponse

            return req, InitProducerIdResponse[version](error_code=0, producer_id=1, producer_epoch=0)
        req = ProduceRequest.decode(frame, version=version, header=True, framed=True)
        from kafka.protocol.producer import ProduceResponse as P

        TR, PR = P.TopicProduceResponse, P.TopicProduceResponse.PartitionProduceResponse
        return req, P[version](responses=[TR(name=t.name, partition_responses=[
            PR(index=p.index, error_code=0, base_offset=0) for p in t.partition_data]) for t in req.topic_data])

    async def _conn(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readexactly(4)
                frame = head + await reader.readexactly(struct.unpack(">i", head)[0])
                key, version, corr = struct.unpack_from(">hhi", frame, 4)
                out = self._answer(key, version, frame)
                resp = out if key == 18 else out[1]
                resp.with_header(correlation_id=corr)
                writer.write(bytes(resp.encode(header=True, framed=True)))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()


def produce(bootstrap: str, topic: str, records: int, size: int) -> float:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                  "linger.ms": 5, "batch.size": 1_000_000, "compression.type": "none"})
    value = b"x" * size
    errors = []
    start = time.perf_counter()
    for i in range(records):
        while True:
            try:
                p.produce(topic, value=value, partition=i % PARTITIONS,
                          on_delivery=lambda e, m: errors.append(e) if e else None)
                break
            except BufferError:
                p.poll(0.01)
    p.flush(300)
    elapsed = time.perf_counter() - start
    assert not errors, errors[:3]
    return records / elapsed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=200_000)
    args = ap.parse_args()
    load_all()
    sink = Sink()
    sink.start()
    with tempfile.TemporaryDirectory() as tmp, EmbeddedCluster(nodes=3, data_dir=tmp) as cluster:
        cluster.create_topic("bench", PARTITIONS, 3)
        print(f"{'record size':>12} {'sink rec/s':>12} {'broker rec/s':>13} {'ratio':>7}")
        for size in (100, 1000):
            n = args.records if size == 100 else args.records // 2
            sink_rate = produce(f"127.0.0.1:{sink.port}", "bench", n, size)
            broker_rate = produce(cluster.bootstrap_servers, "bench", n, size)
            print(f"{size:>10} B {sink_rate:>12,.0f} {broker_rate:>13,.0f} {broker_rate / sink_rate:>7.2f}")


if __name__ == "__main__":
    main()
