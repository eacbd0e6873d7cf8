"""Sustained transactional load on many connections (outside CI):

    python tests/benchmarks/load_soak.py --connections 500 --minutes 10 [--tracemalloc]

`kafka-txn broker start` runs in a child process with Kafka's default segment sizes; this process opens
--connections TCP connections, each one a transactional producer speaking the protocol directly (asyncio,
kafka-python's message classes, the versions every Kafka 2.x-4.x serves): InitProducerId once, then
transactions back to back (AddPartitionsToTxn, one transactional Produce of --records records, EndTxn
commit), for --minutes.

Reported: committed transactions and rate, EndTxn latency p50/p99/max (per minute and overall), the bytes
the broker wrote, and its resident memory sampled every --sample-s seconds. Memory is judged over the
second half of the run, two ways: the growth in percent (limit --max-growth) and the least-squares slope
of RSS against committed transactions, in bytes per transaction. Its limit (--max-bytes-per-txn) is by
default twice what Kafka's indexes cost for the bytes written per transaction in that half (8 + 12 bytes
per log.index.interval.bytes = 4096, memory-mapped) plus 8 bytes. Exit code 1 when either is over.

tracemalloc (tests/benchmarks/traced_command.py runs the broker): when the verdict fails, the load goes on
with tracing started in the broker, and the allocation sites that grew over --trace-s seconds (after as
long again for the traced working set to settle) are printed, largest first, in bytes per committed
transaction. `--tracemalloc` traces the whole run
instead and prints the sites that grew over its second half (the RSS figures then include tracemalloc's
own tables, and the broker runs slower).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import shutil
import signal
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

TRACED_COMMAND = Path(__file__).resolve().with_name("traced_command.py")

V_INIT, V_ADD, V_PRODUCE, V_END = 3, 3, 8, 3
CONCURRENT_TRANSACTIONS, COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR = 51, 14, 16
RETRIABLE = {CONCURRENT_TRANSACTIONS, COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR, 6, 7, 15}
TOPIC = "load"


@dataclass
class Stats:
    deadline: float = 0.0  # monotonic; moved on when a trace phase follows the judged run
    committed: int = 0
    aborted: int = 0
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


async def _retry(fn: Any, stats: Stats, what: str) -> int:
    """Call fn() (returning an error code) until it succeeds, fails with a non-retriable code, or the
    run is over (-1)."""
    delay = 0.005
    while True:
        code: int = await fn()
        if code in RETRIABLE and time.monotonic() > stats.deadline:
            return -1
        if code not in RETRIABLE:
            if code:
                stats.errors[f"{what}:{code}"] = stats.errors.get(f"{what}:{code}", 0) + 1
            return code
        stats.retries += 1
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.2)


@dataclass(frozen=True)
class Workload:
    host: str
    port: int
    partitions: int
    records: int
    abort_every: int  # every Nth transaction of a producer aborts (0: none)
    new_producer_every: int  # a producer's life: then a new connection and a new transactional id (0: one life)


async def producer(index: int, work: Workload, started: float, stats: Stats, ready: asyncio.Event) -> None:
    """One client: transactions back to back until the deadline, in lives of work.new_producer_every
    transactions (each its own connection and transactional id, as short-lived producers have)."""
    for life in itertools.count():
        if time.monotonic() >= stats.deadline:
            return
        txn_id = f"load-{index}" if not work.new_producer_every else f"load-{index}-{life}"
        if not await producer_life(txn_id, index % work.partitions, work, started, stats, ready):
            return


async def producer_life(txn_id: str, partition: int, work: Workload, started: float, stats: Stats,
                        ready: asyncio.Event) -> bool:
    """Returns False when the producer must stop (an error, or the run is over)."""
    reader, writer = await asyncio.open_connection(work.host, work.port)
    conn = Conn(reader, writer)
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

        if await _retry(find, stats, "find") or await _retry(init, stats, "init"):
            return False
        ready.set()
        seq = 0
        topics = [AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=TOPIC, partitions=[partition])]
        for n in itertools.count(1):
            if time.monotonic() >= stats.deadline:
                return False
            if work.new_producer_every and n > work.new_producer_every:
                return True

            async def add() -> int:
                resp = await conn.call(AddPartitionsToTxnRequest[V_ADD](
                    v3_and_below_transactional_id=txn_id, v3_and_below_producer_id=pid,
                    v3_and_below_producer_epoch=epoch, v3_and_below_topics=topics), AddPartitionsToTxnResponse)
                return int(resp.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code)

            if await _retry(add, stats, "add"):
                return False
            batch = build_batch([(b"%d" % i, b"x" * 100) for i in range(work.records)],
                                timestamp_ms=int(time.time() * 1000), producer_id=pid, producer_epoch=epoch,
                                base_sequence=seq, transactional=True)
            req = ProduceRequest[V_PRODUCE](transactional_id=txn_id, acks=-1, timeout_ms=30000, topic_data=[
                ProduceRequest.TopicProduceData(name=TOPIC, partition_data=[
                    ProduceRequest.TopicProduceData.PartitionProduceData(index=partition, records=batch)])])
            resp = await conn.call(req, ProduceResponse)
            code = resp.responses[0].partition_responses[0].error_code
            if code:
                stats.errors[f"produce:{code}"] = stats.errors.get(f"produce:{code}", 0) + 1
                return False
            seq += work.records
            commit = not (work.abort_every and n % work.abort_every == 0)

            async def end(commit: bool = commit) -> int:
                t0 = time.monotonic()
                resp = await conn.call(EndTxnRequest[V_END](transactional_id=txn_id, producer_id=pid,
                                                            producer_epoch=epoch, committed=commit), EndTxnResponse)
                if resp.error_code == 0:
                    stats.end_txn_ms.append((t0 - started, (time.monotonic() - t0) * 1000))
                return int(resp.error_code)

            if await _retry(end, stats, "end"):
                return False
            if commit:
                stats.committed += 1
            else:
                stats.aborted += 1
        return False
    finally:
        writer.close()


@dataclass
class Sample:
    at: float  # seconds since the load started
    rss_mib: float
    connections: int
    committed: int
    written: int  # bytes in the broker's data directory


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


def bytes_on_disk(directory: Path) -> int:
    total = 0
    for d, _dirs, names in os.walk(directory):
        for name in names:
            with contextlib.suppress(OSError):  # deleted meanwhile (an old snapshot, a cleaned segment)
                total += os.path.getsize(os.path.join(d, name))
    return total


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def fitted_slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of ys against xs (NaN with fewer than two distinct xs)."""
    if len(xs) < 2:
        return float("nan")
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    var = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var if var else float("nan")


class BrokerTracer:
    """Drives tests/benchmarks/traced_command.py in the broker process (see its docstring)."""

    def __init__(self, pid: int, dump_dir: Path) -> None:
        self.pid = pid
        self.dump_dir = dump_dir
        self.diffs = 0

    def start(self) -> None:
        os.kill(self.pid, signal.SIGUSR1)

    async def snapshot(self) -> dict[str, Any] | None:
        """Baseline on the first call (None), the sites grown since it on later ones."""
        name = "base.json" if not (self.dump_dir / "base.json").exists() else f"diff-{self.diffs + 1}.json"
        os.kill(self.pid, signal.SIGUSR2)
        path = self.dump_dir / name
        for _ in range(1200):  # a snapshot of millions of blocks takes a while
            if path.exists():
                break
            await asyncio.sleep(0.1)
        else:
            raise RuntimeError(f"the broker wrote no {path}")
        if name == "base.json":
            return None
        self.diffs += 1
        data: dict[str, Any] = json.loads(path.read_text())
        return data


def print_sites(diff: dict[str, Any], committed: int, seconds: float) -> None:
    per = max(committed, 1)
    print(f"\ntracemalloc: allocation sites that grew over {seconds:.0f} s and {committed} committed transactions "
          f"(traced now {diff['traced'] / 2**20:.1f} MiB; tracemalloc's own tables "
          f"{diff['tracemalloc_overhead'] / 2**20:.1f} MiB):")
    for site in diff["sites"]:
        if site["size_diff"] <= 0:
            continue
        frames = " <- ".join(_short(f) for f in reversed(site["frames"][-4:]))
        print(f"  {site['size_diff'] / 1024:+10.1f} KiB {site['size_diff'] / per:+8.2f} B/txn "
              f"{site['count_diff']:+9d} blocks  {frames}")


def _short(frame: str) -> str:
    for marker in ("/site-packages/", "/issue-17/", "/lib/python3"):
        if marker in frame:
            return frame.split(marker, 1)[1]
    root = str(Path(__file__).resolve().parents[2]) + "/"
    return frame.replace(root, "")


def broker_settings(args: argparse.Namespace) -> list[str]:
    # Ten coordinator partitions instead of 50: each active __transaction_state segment gets five times
    # the data, which makes any per-byte cost of an active segment show sooner. Segment sizes are Kafka's.
    sets = ["transaction.state.log.num.partitions=10"]
    if args.expire_s:
        # Idle transactional ids and producer ids are forgotten within the run (Kafka's defaults are 7 days
        # and 1 day), checked every tenth of that.
        ms = int(args.expire_s * 1000)
        sets += [f"transactional.id.expiration.ms={ms}", f"producer.id.expiration.ms={ms}",
                 f"transaction.remove.expired.transaction.cleanup.interval.ms={max(ms // 10, 1)}",
                 f"producer.id.expiration.check.interval.ms={max(ms // 10, 1)}"]
    return sets


async def run(args: argparse.Namespace) -> int:
    data_dir = Path(args.data_dir or tempfile.mkdtemp(prefix="load-soak-"))
    dump_dir = Path(tempfile.mkdtemp(prefix="load-soak-trace-"))
    broker = BrokerProcess(data_dir, 1, free_port_block(1), sets=broker_settings(args),
                           launcher=[str(TRACED_COMMAND), "--dump-dir", str(dump_dir), "--"])
    bootstrap = broker.start()
    assert broker.proc is not None
    pid = broker.proc.pid
    tracer = BrokerTracer(pid, dump_dir)
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
        admin.create_topics([NewTopic(TOPIC, args.partitions, 1)])[TOPIC].result(30)
        if args.tracemalloc:
            tracer.start()
        started = time.monotonic()
        judged_until = started + args.minutes * 60
        # The producers go on past the judged run when a trace phase may follow, so that it sees the same load.
        trace_after = args.trace_s > 0 and not args.tracemalloc
        stats = Stats(deadline=judged_until + (1.5 * args.trace_s + 120 if trace_after else 0))
        ready = [asyncio.Event() for _ in range(args.connections)]
        work = Workload(host, int(port), args.partitions, args.records, args.abort_every, args.new_producer_every)
        tasks = [asyncio.create_task(producer(i, work, started, stats, ready[i])) for i in range(args.connections)]
        print(f"broker pid {pid} at {bootstrap}; {args.connections} connections, {args.minutes} min"
              f"{', tracemalloc on' if args.tracemalloc else ''}", flush=True)
        samples: list[Sample] = []
        trace_mark: tuple[float, int] | None = None
        while time.monotonic() < judged_until and not all(t.done() for t in tasks):
            await asyncio.sleep(min(args.sample_s, max(0.0, judged_until - time.monotonic())))
            t = time.monotonic() - started
            samples.append(Sample(t, rss_mib(pid), open_connections(pid), stats.committed, bytes_on_disk(data_dir)))
            recent = [ms for at, ms in stats.end_txn_ms if at >= t - args.sample_s]
            print(f"t={t:6.0f}s rss={samples[-1].rss_mib:7.1f} MiB conns={samples[-1].connections:4d} "
                  f"committed={stats.committed:8d} EndTxn p50={pct(recent, 0.5):6.1f} ms "
                  f"p99={pct(recent, 0.99):7.1f} ms", flush=True)
            if args.tracemalloc and trace_mark is None and t >= args.minutes * 30:
                await tracer.snapshot()  # the baseline of the second half
                trace_mark = (time.monotonic(), stats.committed)
        diff = None
        if trace_mark is not None:
            diff = await tracer.snapshot()
        elif trace_after and not judge(args, samples) and not all(t.done() for t in tasks):
            print(f"\nmemory verdict failed: tracing the broker for {args.trace_s:.0f} s more under the same load",
                  flush=True)
            # Only what is allocated once tracing runs is seen: the baseline waits until the working set
            # (requests in flight, producer entries) has been replaced by traced allocations.
            tracer.start()
            await asyncio.sleep(args.trace_s / 2)
            await tracer.snapshot()
            trace_mark = (time.monotonic(), stats.committed)
            await asyncio.sleep(args.trace_s)
            diff = await tracer.snapshot()
        stats.deadline = min(stats.deadline, time.monotonic())
        trace_committed = stats.committed - trace_mark[1] if trace_mark else 0
        trace_seconds = time.monotonic() - trace_mark[0] if trace_mark else 0.0
        results = await asyncio.gather(*tasks, return_exceptions=True)
        failures = [r for r in results if isinstance(r, BaseException)]
    finally:
        broker.terminate()
        shutil.rmtree(dump_dir, ignore_errors=True)
        if args.data_dir is None:  # a run writes about 1 GB
            shutil.rmtree(data_dir, ignore_errors=True)
    ok = report(args, stats, samples, failures)
    if diff is not None:
        print_sites(diff, trace_committed, trace_seconds)
    print("PASSED" if ok else "FAILED", flush=True)
    return 0 if ok else 1


KAFKA_INDEX_BYTES_PER_INTERVAL = 8 + 12  # .index + .timeindex entry per log.index.interval.bytes
INDEX_INTERVAL_BYTES = 4096


@dataclass
class HalfFigures:
    """The second half of the run: RSS growth (fraction), fitted slope and its limit (bytes per committed
    transaction), bytes written per committed transaction."""

    growth: float
    slope: float
    slope_limit: float
    written_per_txn: float
    transactions: int


def second_half_figures(args: argparse.Namespace, samples: list[Sample]) -> HalfFigures | None:
    """None with fewer than two samples in the second half."""
    half = samples[len(samples) // 2:]
    if len(half) < 2 or half[-1].committed == half[0].committed:
        return None
    n = half[-1].committed - half[0].committed
    written = (half[-1].written - half[0].written) / n
    limit = args.max_bytes_per_txn
    if limit is None:
        limit = 2 * written / INDEX_INTERVAL_BYTES * KAFKA_INDEX_BYTES_PER_INTERVAL + 8
    return HalfFigures((half[-1].rss_mib - half[0].rss_mib) / half[0].rss_mib,
                       fitted_slope([s.committed for s in half], [s.rss_mib * 2**20 for s in half]), limit, written, n)


def judge(args: argparse.Namespace, samples: list[Sample]) -> bool:
    f = second_half_figures(args, samples)
    return f is not None and f.growth <= args.max_growth and f.slope <= f.slope_limit


def report(args: argparse.Namespace, stats: Stats, samples: list[Sample], failures: list[BaseException]) -> bool:
    if not samples:
        print("no samples")
        return False
    elapsed, committed = samples[-1].at, samples[-1].committed  # the judged run (a trace phase may follow)
    lat = [ms for at, ms in stats.end_txn_ms if at <= elapsed]
    print(f"\n== {args.connections} connections, {elapsed / 60:.1f} min: {committed} transactions committed "
          f"({committed / elapsed:.0f}/s), {stats.aborted} aborted in all, {stats.retries} retriable answers, "
          f"errors {stats.errors}, {len(failures)} connection failures {failures[:3]}")
    print(f"EndTxn latency: p50 {pct(lat, 0.5):.1f} ms, p99 {pct(lat, 0.99):.1f} ms, max {max(lat, default=0):.1f} ms")
    per_minute: dict[int, list[float]] = {}
    for at, ms in stats.end_txn_ms:
        if at <= elapsed:
            per_minute.setdefault(int(at // 60), []).append(ms)
    for minute, values in sorted(per_minute.items()):
        print(f"  minute {minute + 1}: {len(values)} EndTxn, p50 {pct(values, 0.5):.1f} ms, "
              f"p99 {pct(values, 0.99):.1f} ms")
    f = second_half_figures(args, samples)
    if f is None:
        print("too few memory samples for a verdict (run longer or sample more often)")
        return False
    rss = [s.rss_mib for s in samples]
    half = samples[len(samples) // 2:]
    print(f"broker wrote {samples[-1].written / 2**30:.2f} GiB ({f.written_per_txn:.0f} B per committed "
          "transaction in the second half, all partitions and the coordinator's log)")
    print(f"broker RSS MiB: first {rss[0]:.1f}, at half time {half[0].rss_mib:.1f}, last {rss[-1]:.1f}, "
          f"max {max(rss):.1f}; median connections {statistics.median(s.connections for s in samples):.0f}")
    mib_per_gib = f.slope / max(f.written_per_txn, 1) * 2**30 / 2**20
    print(f"second half ({f.transactions} transactions): growth {f.growth * 100:+.1f}% "
          f"(limit {args.max_growth * 100:.0f}%); fitted slope {f.slope:+.2f} B of RSS per committed transaction "
          f"(limit {f.slope_limit:.1f}) = {mib_per_gib:+.2f} MiB per GiB written")
    return judge(args, samples) and not failures and committed > 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--connections", type=int, default=500)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--partitions", type=int, default=12)
    parser.add_argument("--records", type=int, default=5, help="records per transaction")
    parser.add_argument("--abort-every", type=int, default=0, help="every Nth transaction aborts (0: none)")
    parser.add_argument("--new-producer-every", type=int, default=0,
                        help="after N transactions a client reconnects with a new transactional id (0: never)")
    parser.add_argument("--expire-s", type=float, default=0.0,
                        help="transactional.id.expiration.ms and producer.id.expiration.ms in seconds (0: Kafka's)")
    parser.add_argument("--sample-s", type=float, default=10.0)
    parser.add_argument("--max-growth", type=float, default=0.10, help="allowed RSS growth over the second half")
    parser.add_argument("--max-bytes-per-txn", type=float, default=None,
                        help="allowed fitted RSS slope over the second half, bytes per committed transaction "
                             "(default: twice Kafka's index cost for the bytes written per transaction, + 8)")
    parser.add_argument("--tracemalloc", action="store_true",
                        help="trace the broker's allocations for the whole run; print the sites that grew")
    parser.add_argument("--trace-s", type=float, default=60.0,
                        help="when the verdict fails, trace this long under load and print what grew (0: no)")
    parser.add_argument("--data-dir", default=None, help="the broker's data directory, kept (default: a temporary one)")
    return asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
