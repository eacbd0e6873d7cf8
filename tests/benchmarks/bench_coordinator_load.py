"""How long a coordinator load keeps the broker's event loop from serving requests, by load buffer size.

A 2-node embedded cluster whose `__transaction_state` has one partition, filled with RECORDS transaction log
records of other applications; its leadership moves to the other node, which loads it on the coordinator runtime.
Meanwhile a task on the broker's loop wakes up as often as the loop lets it: the longest gap between two of its
wake-ups is the longest time a request would have waited behind the load. A load reads the partition in
chunks of `transaction.state.log.load.buffer.size` bytes and yields after each chunk and every `step_records`
records within one; a buffer and a step larger than the partition replay it in one go, as a load without
chunks did.

    python -m tests.benchmarks.bench_coordinator_load [--records 200000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.coordinator.runtime import CoordinatorState
from kafka_txn_broker.formats.partitioning import TXN_TOPIC
from kafka_txn_broker.formats.record_batch import build_batch
from kafka_txn_broker.formats.transaction_log import TransactionLogValue, encode_key, encode_value
from kafka_txn_broker.formats.transactions import TransactionState

PER_BATCH = 50


def fill(cluster: EmbeddedCluster, records: int) -> int:
    core = cluster.cluster
    assert core is not None

    def append() -> int:
        core.ensure_internal_topic(TXN_TOPIC, 1, 2)
        state = core.metadata.partition(TXN_TOPIC, 0)
        part = core.nodes[state.leader].replica_manager.get(TXN_TOPIC, 0)
        assert part is not None
        for i in range(records // PER_BATCH):
            value = TransactionLogValue(i, 0, 60_000, TransactionState.COMPLETE_COMMIT, (("t", 0),),
                                        1_700_000_000_000, -1)
            part.append_as_leader(build_batch([(encode_key(f"app-{i}-{j}"), encode_value(value, 1))
                                               for j in range(PER_BATCH)], timestamp_ms=1_700_000_000_000), -1)
        return int(part.log.log_end_offset)

    return cluster.call_soon(append)


async def move_and_watch(cluster: EmbeddedCluster, step_records: int) -> tuple[float, float, int]:
    """On the broker's loop: move the partition, then wake up as often as possible until it is loaded.
    (load seconds, longest gap between wake-ups in seconds, wake-ups)."""
    core = cluster.cluster
    assert core is not None
    state = core.metadata.partition(TXN_TOPIC, 0)
    new = next(n for n in state.isr if n != state.leader)
    runtime = core.nodes[new].txn_coordinator.state_manager.runtime
    runtime.loader.step_records = step_records
    start = last = time.perf_counter()
    core.metadata.elect(state, new)
    longest, wakeups = time.perf_counter() - start, 0  # the election itself, in this step
    while runtime.state(0) is not CoordinatorState.ACTIVE:
        await asyncio.sleep(0)
        now = time.perf_counter()
        longest, last, wakeups = max(longest, now - last), now, wakeups + 1
    return time.perf_counter() - start, longest, wakeups


def run(records: int, buffer: int, step_records: int) -> tuple[float, float, int]:
    with tempfile.TemporaryDirectory() as tmp:
        config = {"transaction.state.log.num.partitions": 1, "transaction.state.log.replication.factor": 2,
                  "transaction.state.log.load.buffer.size": buffer, "auto.leader.rebalance.enable": False}
        with EmbeddedCluster(nodes=2, data_dir=Path(tmp), config=config) as cluster:
            fill(cluster, records)
            return cluster.call(move_and_watch(cluster, step_records), timeout=600)


CASES = [  # (load buffer, records per step)
    (5 * 1024 * 1024, 1000),  # the defaults: Kafka's buffer, steps of 1,000 records
    (65536, 1000),
    (1 << 30, 10**9),  # the whole partition in one step: a load without chunks
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    for buffer, step in CASES:
        results = sorted(run(args.records, buffer, step) for _ in range(args.rounds))
        load, longest, wakeups = results[len(results) // 2]
        print(f"{args.records} records, load buffer {buffer} B, {step} records per step: load {load * 1000:.0f} ms, "
              f"longest stall of the loop {longest * 1000:.1f} ms, {wakeups} wake-ups (median of {args.rounds})")


if __name__ == "__main__":
    main()
