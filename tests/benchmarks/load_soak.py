"""Sustained transactional load on many connections (outside CI):

    python tests/benchmarks/load_soak.py --connections 500 --minutes 10

`kafka-txn broker start` runs in a child process; this process opens --connections TCP connections,
each one a transactional producer speaking the protocol directly (asyncio, kafka-python's message
classes, the versions every Kafka 2.x-4.x serves): InitProducerId once, then transactions back to back
(AddPartitionsToTxn, one transactional Produce of --records records, EndTxn commit), for --minutes.
Reported: committed transactions and rate, EndTxn latency p50/p99/max (per minute and overall), and the
broker's resident memory sampled every --sample-s seconds, with the growth over the second half of
the run (memory is flat when that stays within --max-growth; exit code 1 otherwise). Segments are
small (--segment-mb) so they roll during the run: an active segment's in-memory index grows with the
data written to it until it rolls.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import struct
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from kafka.protocol.metadata import FindCoordinatorRequest, FindCoordinatorResponse  # noqa: E402
from kafka.protocol.producer import (  # noqa: E402
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    EndTxnResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    ProduceRequest,
    ProduceResponse,
)

from kafka_txn_broker.formats.record_batch import build_batch  # noqa: E402
from tests.e2e.helpers import BrokerProcess, free_port_block  # noqa: E402

V_INIT, V_ADD, V_PRODUCE, V_END = 3, 3, 8, 3
CONCURRENT_TRANSACTIONS, COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR = 51, 14, 16
RETRIABLE = {CONCURRENT_TRANSACTIONS, COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR, 6, 7, 15}
TOPIC = "load"


@dataclass
class Stats:
    committed: int = 0
    retries: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    end_txn_ms: list[tuple[float, float]] = field(default_factory=list)  # (time since start, latency)


class Conn:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.ids = itertools.count(1)

    async def call(self, req: Any, response_class: Any) -> Any:
        cid = next(self.ids)
        req.with_header(correlation_id=cid, client_id="load-soak")
        self.writer.write(bytes(req.encode(header=True, framed=True)))
        await self.writer.drain()
        (size,) = struct.unpack(">i", await self.reader.readexactly(4))
        body = await self.reader.readexactly(size)
        resp = response_class.decode(struct.pack(">i", size) + body, version=req.API_VERSION, header=True,
                                     framed=True)
        assert resp.header.correlation_id == cid
        return resp


async def _retry(fn: Any, stats: Stats, what: str, deadline: float) -> int:
    """Call fn() (returning an error code) until it succeeds, fails with a non-retriable code, or the
    run is over (-1)."""
    delay = 0.005
    while True:
        code: int = await fn()
        if code in RETRIABLE and time.monotonic() > deadline:
            return -1
        if code not in RETRIABLE:
            if code:
                stats.errors[f"{what}:{code}"] = stats.errors.get(f"{what}:{code}", 0) + 1
            return code
        stats.retries += 1
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.2)


async def producer(index: int, host: str, port: int, partitions: int, records: int, deadline: float,
                   started: float, stats: Stats, ready: asyncio.Event) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    conn = Conn(reader, writer)
    txn_id = f"load-{index}"
    partition = index % partitions
    try:
        pid = epoch = -1

        async def find() -> int:
            # Creates __transaction_state on first use, as a client's FindCoordinator does.
            resp = await conn.call(FindCoordinatorRequest[3](key=txn_id, key_type=1), FindCoordinatorResponse)
            return int(resp.error_code)

        async def init() -> int:
            nonlocal pid, epoch
            resp = await conn.call(InitProducerIdRequest[V_INIT](transactional_id=txn_id, transaction_timeout_ms=60000,
                                                                 producer_id=-1, producer_epoch=-1),
                                   InitProducerIdResponse)
            pid, epoch = resp.producer_id, resp.producer_epoch
            return int(resp.error_code)

        if await _retry(find, stats, "find", deadline) or await _retry(init, stats, "init", deadline):
            return
        ready.set()
        seq = 0
        topics = [AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=TOPIC, partitions=[partition])]
        while time.monotonic() < deadline:
            async def add() -> int:
                resp = await conn.call(AddPartitionsToTxnRequest[V_ADD](
                    v3_and_below_transactional_id=txn_id, v3_and_below_producer_id=pid,
                    v3_and_below_producer_epoch=epoch, v3_and_below_topics=topics), AddPartitionsToTxnResponse)
                return int(resp.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code)

            if await _retry(add, stats, "add", deadline):
                return
            batch = build_batch([(b"%d" % i, b"x" * 100) for i in range(records)], timestamp_ms=int(time.time() * 1000),
                                producer_id=pid, producer_epoch=epoch, base_sequence=seq, transactional=True)
            req = ProduceRequest[V_PRODUCE](transactional_id=txn_id, acks=-1, timeout_ms=30000, topic_data=[
                ProduceRequest.TopicProduceData(name=TOPIC, partition_data=[
                    ProduceRequest.TopicProduceData.PartitionProduceData(index=partition, records=batch)])])
            resp = await conn.call(req, ProduceResponse)
            code = resp.responses[0].partition_responses[0].error_code
            if code:
                stats.errors[f"produce:{code}"] = stats.errors.get(f"produce:{code}", 0) + 1
                return
            seq += records

            async def end() -> int:
                t0 = time.monotonic()
                resp = await conn.call(EndTxnRequest[V_END](transactional_id=txn_id, producer_id=pid,
                                                            producer_epoch=epoch, committed=True), EndTxnResponse)
                if resp.error_code == 0:
                    stats.end_txn_ms.append((t0 - started, (time.monotonic() - t0) * 1000))
                return int(resp.error_code)

            if await _retry(end, stats, "end", deadline):
                return
            stats.committed += 1
    finally:
        writer.close()


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def open_connections(pid: int) -> int:
    return sum(1 for fd in Path(f"/proc/{pid}/fd").iterdir() if "socket" in _readlink(fd))


def _readlink(p: Path) -> str:
    try:
        return str(p.readlink())
    except OSError:
        return ""


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


async def run(args: argparse.Namespace) -> int:
    data_dir = Path(args.data_dir or tempfile.mkdtemp(prefix="load-soak-"))
    broker = BrokerProcess(data_dir, 1, free_port_block(1), sets=[
        "transaction.state.log.num.partitions=10", f"log.segment.bytes={args.segment_mb * 1024 * 1024}"])
    bootstrap = broker.start()
    assert broker.proc is not None
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
        admin.create_topics([NewTopic(TOPIC, args.partitions, 1)])[TOPIC].result(30)
        stats = Stats()
        started = time.monotonic()
        deadline = started + args.minutes * 60
        ready = [asyncio.Event() for _ in range(args.connections)]
        tasks = [asyncio.create_task(producer(i, host, int(port), args.partitions, args.records, deadline, started,
                                              stats, ready[i])) for i in range(args.connections)]
        samples: list[tuple[float, float, int]] = []
        print(f"broker pid {broker.proc.pid} at {bootstrap}; {args.connections} connections, {args.minutes} min",
              flush=True)
        while time.monotonic() < deadline and not all(t.done() for t in tasks):
            await asyncio.sleep(args.sample_s)
            t = time.monotonic() - started
            samples.append((t, rss_mib(broker.proc.pid), open_connections(broker.proc.pid)))
            recent = [ms for at, ms in stats.end_txn_ms if at >= t - args.sample_s]
            print(f"t={t:6.0f}s rss={samples[-1][1]:7.1f} MiB conns={samples[-1][2]:4d} committed={stats.committed:8d} "
                  f"EndTxn p50={pct(recent, 0.5):6.1f} ms p99={pct(recent, 0.99):7.1f} ms", flush=True)
        results = await asyncio.gather(*tasks, return_exceptions=True)
        failures = [r for r in results if isinstance(r, BaseException)]
    finally:
        broker.terminate()
    return report(args, stats, samples, failures, time.monotonic() - started)


def report(args: argparse.Namespace, stats: Stats, samples: list[tuple[float, float, int]],
           failures: list[BaseException], elapsed: float) -> int:
    lat = [ms for _, ms in stats.end_txn_ms]
    print(f"\n== {args.connections} connections, {elapsed / 60:.1f} min: {stats.committed} transactions committed "
          f"({stats.committed / elapsed:.0f}/s), {stats.retries} retriable answers, errors {stats.errors}, "
          f"{len(failures)} connection failures {failures[:3]}")
    print(f"EndTxn latency: p50 {pct(lat, 0.5):.1f} ms, p99 {pct(lat, 0.99):.1f} ms, max {max(lat, default=0):.1f} ms")
    per_minute: dict[int, list[float]] = {}
    for at, ms in stats.end_txn_ms:
        per_minute.setdefault(int(at // 60), []).append(ms)
    for minute, values in sorted(per_minute.items()):
        print(f"  minute {minute + 1}: {len(values)} EndTxn, p50 {pct(values, 0.5):.1f} ms, "
              f"p99 {pct(values, 0.99):.1f} ms")
    if not samples:
        return 1
    rss = [r for _, r, _ in samples]
    half = rss[len(rss) // 2:]
    growth = (half[-1] - half[0]) / half[0] if half and half[0] else float("nan")
    print(f"broker RSS MiB: first {rss[0]:.1f}, at half time {half[0]:.1f}, last {rss[-1]:.1f}, max {max(rss):.1f}; "
          f"growth over the second half {growth * 100:+.1f}% (limit {args.max_growth * 100:.0f}%); "
          f"median connections {statistics.median(c for _, _, c in samples):.0f}")
    flat = growth <= args.max_growth
    ok = flat and not failures and stats.committed > 0
    print("PASSED" if ok else "FAILED", flush=True)
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--connections", type=int, default=500)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--partitions", type=int, default=12)
    parser.add_argument("--records", type=int, default=5, help="records per transaction")
    parser.add_argument("--sample-s", type=float, default=10.0)
    # The in-memory index of an active segment grows with the data written to it (about 6% of it) until
    # the segment rolls; small segments make the plateau visible within minutes.
    parser.add_argument("--segment-mb", type=int, default=8, help="log.segment.bytes in MiB")
    parser.add_argument("--max-growth", type=float, default=0.10, help="allowed RSS growth over the second half")
    parser.add_argument("--data-dir", default=None)
    return asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
