"""Memory stays bounded under a sustained transactional load (the default run's version of load_soak.py).

A 3-node cluster (RF 3) on a manual clock serves transactions over the wire (RawKafkaClient: real
requests on real connections). tracemalloc counts what a measured run of transactions leaves allocated,
after a warm-up that brings every structure to its working size; per committed transaction it must stay
within a bound derived from Kafka:
- Kafka's indexes cost 8 (.index) + 12 (.timeindex) bytes per log.index.interval.bytes (4096) of log
  written, and nothing else grows with the data; the bound is that for the bytes the cluster wrote during
  the measurement (every replica, the coordinator's log included), plus BYTES_PER_TXN_SLACK.
- So everything kept per transaction (completed and aborted transactions) must be gone once the
  transaction is done (aborted ones live on in the .txnindex files only), and everything kept per producer
  (producer state on every replica, the coordinator's metadata, its connection) once Kafka forgets it:
  after producer.id.expiration.ms and transactional.id.expiration.ms, which pass on the manual clock.
Driven by transaction counts, never by time. Measured: about 9 B (steady producers) and -7..16 B
(short-lived ones) against bounds of 37 and 50; keeping index entries as tuples and aborted transactions as
objects costs 274 and 672 B, which the bounds refuse.
"""

from __future__ import annotations

import gc
import itertools
import os
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kafka.protocol.metadata import FindCoordinatorRequest
from kafka.protocol.producer import AddPartitionsToTxnRequest, EndTxnRequest, ProduceRequest

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.clock import ManualClock
from kafka_txn_broker.formats.partitioning import java_string_hash
from kafka_txn_broker.formats.record_batch import build_batch
from kafka_txn_broker.testing.raw_client import (
    V_ADD_PARTITIONS,
    V_END_TXN,
    V_FIND_COORDINATOR,
    V_PRODUCE,
    ProducerIdAndEpoch,
    RawKafkaClient,
)

TOPIC = "load"
EXPIRATION_MS = 60_000
CHECK_INTERVAL_MS = 10_000
INDEX_BYTES_PER_INTERVAL = 8 + 12  # Kafka's .index + .timeindex entry
BYTES_PER_TXN_SLACK = 16  # growth reserves of dicts and arrays, and tracemalloc's noise
VALUE = b"x" * 100
RECORDS = 5
ABORT_EVERY = 4
GENERATION = 100  # short-lived producers per generation
TRANSACTIONAL_ID_NOT_FOUND = 105


class Producer:
    """One transactional producer on its own connection."""

    def __init__(self, bootstrap: str, txn_id: str) -> None:
        self.txn_id = txn_id
        self.client = RawKafkaClient(bootstrap, client_id="memory-check")
        self.coordinator = self.client.transaction_coordinator(txn_id)
        code, self.pe = self.client.init_producer_id(txn_id, 60_000)
        assert code == 0, code
        self.leader = self.client.partition_leaders(TOPIC)[0]
        self.seq = 0

    def transaction(self, commit: bool, timestamp_ms: int) -> None:
        pe: ProducerIdAndEpoch = self.pe
        add = AddPartitionsToTxnRequest[V_ADD_PARTITIONS](
            v3_and_below_transactional_id=self.txn_id, v3_and_below_producer_id=pe.producer_id,
            v3_and_below_producer_epoch=pe.epoch,
            v3_and_below_topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=TOPIC, partitions=[0])])
        resp = self.client.send(add, V_ADD_PARTITIONS, self.coordinator)
        assert resp.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == 0
        batch = build_batch([(b"%d" % i, VALUE) for i in range(RECORDS)], timestamp_ms=timestamp_ms,
                            producer_id=pe.producer_id, producer_epoch=pe.epoch, base_sequence=self.seq,
                            transactional=True)
        data = ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=batch)
        produce = ProduceRequest[V_PRODUCE](transactional_id=self.txn_id, acks=-1, timeout_ms=30_000,
                                            topic_data=[ProduceRequest.TopicProduceData(name=TOPIC,
                                                                                        partition_data=[data])])
        assert self.client.send(produce, V_PRODUCE, self.leader).responses[0].partition_responses[0].error_code == 0
        self.seq += RECORDS
        end = EndTxnRequest[V_END_TXN](transactional_id=self.txn_id, producer_id=pe.producer_id,
                                       producer_epoch=pe.epoch, committed=commit)
        assert self.client.send(end, V_END_TXN, self.coordinator).error_code == 0

    def close(self) -> None:
        self.client.close()


class Load:
    def __init__(self, cluster: EmbeddedCluster, clock: ManualClock) -> None:
        self.cluster = cluster
        self.clock = clock
        self.committed = 0

    def transactions(self, producers: list[Producer], n: int, abort_every: int = ABORT_EVERY) -> None:
        """n transactions, round robin over the producers; every abort_every-th aborts."""
        for i, producer in zip(range(n), itertools.cycle(producers), strict=False):
            commit = i % abort_every != abort_every - 1
            producer.transaction(commit, self.clock.millis())
            self.committed += commit

    def short_lived_producers(self, prefix: str, n: int) -> None:
        """n producers that each connect, commit one transaction, abort one and go away (one committed
        transaction per producer: whatever a producer leaves behind counts in full)."""
        for i in range(n):
            producer = Producer(self.cluster.bootstrap_servers, f"{prefix}-{i}")
            self.transactions([producer], 2, abort_every=2)
            producer.close()

    def expire_idle_ids(self) -> None:
        """Let producer.id.expiration.ms and transactional.id.expiration.ms pass, and the checks run. The
        clock moves on the broker's loop: markers queued there by the last EndTxn are written first."""
        self.cluster.call_soon(self.clock.advance, EXPIRATION_MS + CHECK_INTERVAL_MS)
        self.cluster.tick()

    def bytes_on_disk(self) -> int:
        total = 0
        for directory, _dirs, names in os.walk(self.cluster.data_dir):  # not pathlib: it caches
            total += sum(os.path.getsize(os.path.join(directory, name)) for name in names)
        return total


@pytest.fixture
def load(tmp_path: Path) -> Iterator[Load]:
    clock = ManualClock()
    config = {"transactional.id.expiration.ms": EXPIRATION_MS, "producer.id.expiration.ms": EXPIRATION_MS,
              "transaction.remove.expired.transaction.cleanup.interval.ms": CHECK_INTERVAL_MS,
              "producer.id.expiration.check.interval.ms": CHECK_INTERVAL_MS,
              "transaction.state.log.num.partitions": 3}
    with EmbeddedCluster(nodes=3, data_dir=tmp_path, config=config, clock=clock) as cluster:
        cluster.create_topic(TOPIC, 1, 3)
        yield Load(cluster, clock)


class Retained:
    """What a measured run left allocated, per transaction it committed, and Kafka's bound for it."""

    def __init__(self, per_txn: float, bound: float, sites: list[tracemalloc.StatisticDiff]) -> None:
        self.per_txn = per_txn
        self.bound = bound
        self.sites = sites

    def __str__(self) -> str:
        top = "\n".join(f"  {s.size_diff:+8d} B {s.count_diff:+6d} blocks  "
                        + " <- ".join(f"{Path(f.filename).name}:{f.lineno}" for f in s.traceback)
                        for s in self.sites[:12])
        return (f"{self.per_txn:.1f} B retained per committed transaction (bound {self.bound:.1f}); "
                f"largest sites:\n{top}")


def measure(load: Load, settle: Callable[[], None], work: Callable[[], None]) -> Retained:
    """What the second of two runs of `work` leaves allocated. `settle` and the first run bring every
    structure to its working size (dicts keep their table size after deletions, bounded caches fill);
    both are traced, so that what the measured run frees of their allocations (the working set it
    replaces, cache entries it evicts) counts as freed."""
    gc.collect()
    tracemalloc.start(1)  # deeper tracebacks make the broker several times slower
    try:
        settle()
        work()
        load.cluster.call_soon(gc.collect)  # also lets callbacks queued on the broker's loop run
        committed, written = load.committed, load.bytes_on_disk()
        before = tracemalloc.take_snapshot()
        work()
        load.cluster.call_soon(gc.collect)
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    # The snapshots' own objects are not the broker's.
    before, after = (snap.filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)]) for snap in (before, after))
    retained = sum(s.size for s in after.statistics("filename")) - sum(s.size for s in before.statistics("filename"))
    n = load.committed - committed
    index_cost = (load.bytes_on_disk() - written) / 4096 * INDEX_BYTES_PER_INTERVAL
    return Retained(retained / n, index_cost / n + BYTES_PER_TXN_SLACK, after.compare_to(before, "lineno"))


def test_steady_producers_retain_only_index_bytes(load: Load) -> None:
    producers = [Producer(load.cluster.bootstrap_servers, f"steady-{i}") for i in range(4)]
    retained = measure(load, lambda: load.transactions(producers, 100), lambda: load.transactions(producers, 200))
    print(f"steady producers: {retained}")
    assert retained.per_txn <= retained.bound, retained


def test_expired_producers_and_transactional_ids_leave_nothing(load: Load) -> None:
    def fill_id_hash_cache() -> None:
        """The id-hash cache is bounded, but its dict's table reaches its steady size only at the first resize
        made while the cache is full: filled once from empty, the table is half that, and about 400 ids later
        it doubles (+25,936 B at 1,024 entries), in whichever run that falls. Whether it had happened depended
        on the tests this process ran before. So the cache starts empty, is filled over the wire, and then
        takes three times its size in new ids: far past that resize, after which the table keeps its size."""
        java_string_hash.cache_clear()
        size = java_string_hash.cache_info().maxsize or 0
        finder = RawKafkaClient(load.cluster.bootstrap_servers)
        for i in range(size):
            finder.send(FindCoordinatorRequest[V_FIND_COORDINATOR](key=f"other-{i}", key_type=1), V_FIND_COORDINATOR)
        finder.close()
        for i in range(3 * size):
            java_string_hash(f"filler-{i}")

    generations = itertools.count()

    def generation() -> None:
        load.short_lived_producers(f"gen{next(generations)}", GENERATION)
        load.expire_idle_ids()

    retained = measure(load, fill_id_hash_cache, generation)
    print(f"short-lived producers: {retained}")
    assert retained.per_txn <= retained.bound, retained
    # Forgotten as Kafka forgets them: the coordinator no longer knows the ids, no replica the producers.
    client = RawKafkaClient(load.cluster.bootstrap_servers)
    assert client.describe_transaction("gen1-0").error_code == TRANSACTIONAL_ID_NOT_FOUND
    client.close()
    core = load.cluster.cluster
    assert core is not None
    replicas = [node.replica_manager.get(TOPIC, 0) for node in core.nodes.values()]
    assert load.cluster.call_soon(lambda: [r.log.producer_state.active_producers() for r in replicas if r]) == [[]] * 3
