"""The embedded broker's CPU per transaction, in process: the server side of bench_transactions' 100-record
transactions without sockets or a client, so a change of a few percent stands out of the noise.

Each transaction is what librdkafka sends for 100 records over 3 partitions: AddPartitionsToTxn (v3),
one Produce (v10, acks=all, one batch of 33-34 records) to each partition's leader and EndTxn (v3),
handed as framed requests to the request handlers of a 3-node cluster (RF 3), then the loop runs the
markers and COMPLETE_COMMIT. The frames are built before the clock starts; the figure is this process's
CPU time per transaction (all three nodes), the median of the repetitions. The end-to-end figure
(bench_transactions) adds the sockets, the event loop's waits and whatever the client's threads cost the
broker's CPU caches: about half as much again on a shared 2-core machine.

    python -m tests.benchmarks.bench_txn_cpu [--txns 300] [--reps 3]
    python -m tests.benchmarks.bench_txn_cpu --compare OLD_CHECKOUT NEW_CHECKOUT [--rounds 3]

--compare runs the benchmark against each checkout's broker in turn (a child process each, with that
checkout first on its path), alternating, and prints each checkout's median over the rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PARTITIONS = 3
RECORDS_PER_TXN = 100
VALUE = b"x" * 100
TXN_ID = "bench-cpu"
WARMUP_TXNS = 50
_correlation = itertools.count(1)


def _frame(request: Any, version: int) -> bytes:
    request.API_VERSION = version
    request.with_header(correlation_id=next(_correlation), client_id="bench")
    return bytes(request.encode(header=True, framed=True))


class Transactions:
    """Builds the framed requests of consecutive transactions of one producer."""

    def __init__(self, producer_id: int, epoch: int) -> None:
        self.producer_id, self.epoch = producer_id, epoch
        self.sequences = [0] * PARTITIONS

    def next(self) -> tuple[bytes, list[bytes], bytes]:
        from kafka.protocol.producer import AddPartitionsToTxnRequest, EndTxnRequest, ProduceRequest

        from kafka_txn_broker.formats.record_batch import build_batch

        add = AddPartitionsToTxnRequest[3](
            v3_and_below_transactional_id=TXN_ID, v3_and_below_producer_id=self.producer_id,
            v3_and_below_producer_epoch=self.epoch, v3_and_below_topics=[
                AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name="t", partitions=list(range(PARTITIONS)))])
        produces = []
        for p in range(PARTITIONS):
            count = len(range(p, RECORDS_PER_TXN, PARTITIONS))
            batch = build_batch([(None, VALUE, ())] * count, producer_id=self.producer_id, producer_epoch=self.epoch,
                                base_sequence=self.sequences[p], transactional=True,
                                timestamp_ms=int(time.time() * 1000))
            self.sequences[p] += count
            data = ProduceRequest.TopicProduceData.PartitionProduceData(index=p, records=batch)
            produces.append(_frame(ProduceRequest(transactional_id=TXN_ID, acks=-1, timeout_ms=30000, topic_data=[
                ProduceRequest.TopicProduceData(name="t", partition_data=[data])]), 10))
        end = EndTxnRequest(transactional_id=TXN_ID, producer_id=self.producer_id, producer_epoch=self.epoch,
                            committed=True)
        return _frame(add, 3), produces, _frame(end, 3)


async def _measure(txns: int, reps: int) -> list[float]:
    from kafka.protocol.metadata import FindCoordinatorRequest

    from kafka_txn_broker.configs.broker_config import BrokerConfig
    from kafka_txn_broker.embedded import new_cluster

    with tempfile.TemporaryDirectory() as tmp:
        cluster = new_cluster(3, Path(tmp), BrokerConfig({}))
        await cluster.start()
        try:
            cluster.create_topic("t", PARTITIONS, 3, None)
            session = cluster.security.new_session("127.0.0.1", None)
            find = _frame(FindCoordinatorRequest(key=TXN_ID, key_type=1), 3)
            while cluster.channel.txn_coordinator_of(TXN_ID) is None:  # __transaction_state on first use
                await cluster.nodes[0].listener.handler.handle(find, session, "bench")
                await asyncio.sleep(0.05)
            coordinator = cluster.channel.txn_coordinator_of(TXN_ID)
            assert coordinator is not None
            code, producer_id, epoch = 51, -1, -1  # COORDINATOR_LOAD_IN_PROGRESS until the load is done
            while code == 51:
                await asyncio.sleep(0.05)
                code, producer_id, epoch = coordinator.init_producer_id(TXN_ID, 60000)
            assert code == 0, f"InitProducerId answered error {code}"
            coordinator_node = next(n for n in cluster.nodes.values() if n.txn_coordinator is coordinator)
            leaders = [cluster.nodes[cluster.metadata.leader("t", p)] for p in range(PARTITIONS)]
            source = Transactions(producer_id, epoch)

            async def run(frames: list[tuple[bytes, list[bytes], bytes]]) -> None:
                for add, produces, end in frames:
                    await coordinator_node.listener.handler.handle(add, session, "bench")
                    for leader, produce in zip(leaders, produces, strict=True):
                        await leader.listener.handler.handle(produce, session, "bench")
                    await coordinator_node.listener.handler.handle(end, session, "bench")
                    for _ in range(3):  # the markers and COMPLETE_COMMIT run on the next loop passes
                        await asyncio.sleep(0)

            await run([source.next() for _ in range(WARMUP_TXNS)])
            results = []
            for _ in range(reps):
                frames = [source.next() for _ in range(txns)]
                began = time.process_time()
                await run(frames)
                results.append((time.process_time() - began) / txns * 1e6)
            for p, leader in enumerate(leaders):  # every transaction committed: nothing left open
                log = leader.replica_manager.get("t", p).log
                assert log.last_stable_offset == log.log_end_offset, (p, log.last_stable_offset, log.log_end_offset)
            return results
        finally:
            await cluster.stop()


def _compare(checkouts: list[str], rounds: int, txns: int, reps: int) -> None:
    """Each checkout's broker in a child process, in turns; each child prints its median."""
    found: dict[str, list[float]] = {c: [] for c in checkouts}
    for _ in range(rounds):
        for checkout in checkouts:
            root = Path(checkout).resolve()
            env = {**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{root / 'broker'}"}
            out = subprocess.run([sys.executable, __file__, "--txns", str(txns), "--reps", str(reps)], env=env,
                                 check=True, capture_output=True, text=True, cwd=tempfile.gettempdir()).stdout
            found[checkout].append(float(out.split()[0]))
            print(f"{checkout}: {found[checkout][-1]:.0f} us/txn", flush=True)
    for checkout, values in found.items():
        print(f"{checkout}: median {statistics.median(values):.0f} us of CPU per transaction "
              f"({', '.join(f'{v:.0f}' for v in values)})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--txns", type=int, default=300, help="transactions per repetition")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--compare", nargs="+", metavar="CHECKOUT", help="checkouts to run in turns")
    ap.add_argument("--rounds", type=int, default=3, help="turns of --compare")
    args = ap.parse_args()
    if args.compare:
        _compare(args.compare, args.rounds, args.txns, args.reps)
        return
    results = asyncio.run(_measure(args.txns, args.reps))
    print(f"{statistics.median(results):.1f} us of CPU per transaction (median; reps "
          f"{', '.join(f'{r:.0f}' for r in results)})")


if __name__ == "__main__":
    main()
