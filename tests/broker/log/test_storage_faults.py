"""Storage faults end to end: a failing disk gives KAFKA_STORAGE_ERROR for the partitions on it, never a
corrupt log, and a torn or corrupt tail left by a crash is cut at the next start.

Fault injection (the test hook): every segment and index write of the broker goes through
kafka_txn_broker.log.file_cache (write_at / truncate / fsync), so `DiskFaults` patches those three
functions to fail for files under chosen partition directories, optionally writing part of the data
first (a torn write). The broker runs in this process (EmbeddedCluster), except for the kill -9 test.
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from kafka.protocol.consumer import FetchRequest, FetchResponse
from kafka.protocol.producer import ProduceRequest, ProduceResponse

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.formats.record_batch import build_batch, iter_batches, iter_records
from kafka_txn_broker.log import file_cache
from tests.broker.wire import roundtrip
from tests.e2e.helpers import BrokerProcess, consume_all, free_port_block

STORAGE_ERROR = 56
QUIET = {"log_level": 0}


class DiskFaults:
    """Fails the broker's file writes under chosen directories with an OSError (ENOSPC by default)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.rules: dict[str, tuple[frozenset[str], int, bool]] = {}
        self.hits = 0
        for op in ("write_at", "truncate", "fsync"):
            monkeypatch.setattr(file_cache, op, self._wrap(op, getattr(file_cache, op)))

    def fail(self, directory: Path, ops: tuple[str, ...] = ("write_at",), err: int = errno.ENOSPC,
             torn: bool = True) -> None:
        """From now on `ops` on files in `directory` fail; `torn`: a write lands half its bytes first."""
        self.rules[str(directory)] = (frozenset(ops), err, torn)

    def clear(self) -> None:
        self.rules.clear()

    def _wrap(self, op: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def faulty(path: str, *args: Any) -> Any:
            rule = self.rules.get(os.path.dirname(path))
            if rule is None or op not in rule[0]:
                return real(path, *args)
            ops, err, torn = rule
            self.hits += 1
            if op == "write_at" and torn and len(args[0]) > 1:
                real(path, memoryview(args[0])[:len(args[0]) // 2], args[1])
            raise OSError(err, os.strerror(err), path)

        return faulty


@pytest.fixture
def faults(monkeypatch: pytest.MonkeyPatch) -> DiskFaults:
    return DiskFaults(monkeypatch)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(nodes=1, data_dir=tmp_path) as c:
        c.create_topic("faulty", 2, 1)
        c.create_topic("healthy", 1, 1)
        yield c


def _dir(cluster: EmbeddedCluster, topic: str, partition: int, node: int = 0) -> Path:
    return Path(cluster.data_dir) / f"node-{node}" / f"{topic}-{partition}"


def _batch(*values: bytes) -> bytes:
    return build_batch([(None, v) for v in values], timestamp_ms=int(time.time() * 1000))


def _produce(cluster: EmbeddedCluster, parts: dict[tuple[str, int], bytes]) -> dict[tuple[str, int], tuple[int, int]]:
    """One Produce (acks=all) of a batch per partition: {(topic, partition): (error code, base offset)}."""
    topics: dict[str, list[Any]] = {}
    for (topic, p), records in parts.items():
        topics.setdefault(topic, []).append(
            ProduceRequest.TopicProduceData.PartitionProduceData(index=p, records=records))
    req = ProduceRequest[9](transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[
        ProduceRequest.TopicProduceData(name=t, partition_data=pd) for t, pd in topics.items()])
    resp = roundtrip(cluster.bootstrap_servers, req, ProduceResponse)
    return {(t.name, p.index): (p.error_code, p.base_offset) for t in resp.responses for p in t.partition_responses}


def _fetch(cluster: EmbeddedCluster, topic: str, partition: int) -> tuple[int, list[bytes]]:
    """(error code, every record value from offset 0) of one partition."""
    req = FetchRequest[11](replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 24, isolation_level=0,
                           session_id=0, session_epoch=-1, rack_id="", forgotten_topics_data=[], topics=[
                               FetchRequest.FetchTopic(topic=topic, partitions=[FetchRequest.FetchTopic.FetchPartition(
                                   partition=partition, current_leader_epoch=-1, fetch_offset=0, log_start_offset=-1,
                                   last_fetched_epoch=-1, partition_max_bytes=1 << 24)])])
    resp = roundtrip(cluster.bootstrap_servers, req, FetchResponse)
    (pd,) = resp.responses[0].partitions
    values: list[bytes] = []
    records = bytes(pd.records or b"")
    for pos, header in iter_batches(records):
        values.extend(r.value for r in iter_records(records[pos:pos + header.size]))  # type: ignore[misc]
    return pd.error_code, values


def _log_bytes_match_batches(directory: Path) -> None:
    """The segment files hold whole, contiguous batches and nothing after them."""
    for seg in sorted(directory.glob("*.log")):
        data = seg.read_bytes()
        end = 0
        for pos, header in iter_batches(data):
            assert pos == end
            end = pos + header.size
        assert end == len(data), f"{seg} has {len(data) - end} stray bytes after its last batch"


def test_write_error_is_kafka_storage_error_for_that_partition_only(cluster: EmbeddedCluster,
                                                                   faults: DiskFaults) -> None:
    ok = _produce(cluster, {("faulty", 0): _batch(b"a1"), ("faulty", 1): _batch(b"b1"),
                            ("healthy", 0): _batch(b"h1")})
    assert {k: v[0] for k, v in ok.items()} == dict.fromkeys(ok, 0)

    faults.fail(_dir(cluster, "faulty", 0))  # ENOSPC, half of the batch lands on disk first
    out = _produce(cluster, {("faulty", 0): _batch(b"a2", b"a2'"), ("faulty", 1): _batch(b"b2"),
                             ("healthy", 0): _batch(b"h2")})
    assert out[("faulty", 0)][0] == STORAGE_ERROR
    assert out[("faulty", 1)][0] == 0 and out[("healthy", 0)][0] == 0
    assert faults.hits >= 1
    assert _fetch(cluster, "faulty", 0) == (0, [b"a1"])  # reads go on: the failed append left nothing
    _log_bytes_match_batches(_dir(cluster, "faulty", 0))  # the torn half was cut back at once

    faults.clear()  # the disk recovers: the partition takes writes again, at the next offset
    assert _produce(cluster, {("faulty", 0): _batch(b"a3")})[("faulty", 0)] == (0, 1)
    assert _fetch(cluster, "faulty", 0) == (0, [b"a1", b"a3"])

    cluster.restart()
    assert _fetch(cluster, "faulty", 0) == (0, [b"a1", b"a3"])
    assert _fetch(cluster, "faulty", 1) == (0, [b"b1", b"b2"])
    assert _fetch(cluster, "healthy", 0) == (0, [b"h1", b"h2"])
    assert _produce(cluster, {("faulty", 0): _batch(b"a4")})[("faulty", 0)] == (0, 2)
    _log_bytes_match_batches(_dir(cluster, "faulty", 0))


def test_unrecoverable_write_takes_the_log_offline_until_restart(cluster: EmbeddedCluster,
                                                                faults: DiskFaults) -> None:
    assert _produce(cluster, {("faulty", 0): _batch(b"a1")})[("faulty", 0)][0] == 0
    # The write tears and the rollback (truncate) fails too: the file's tail is unknown.
    faults.fail(_dir(cluster, "faulty", 0), ops=("write_at", "truncate"), err=errno.EIO)
    assert _produce(cluster, {("faulty", 0): _batch(b"a2")})[("faulty", 0)][0] == STORAGE_ERROR
    faults.clear()
    # Offline (Kafka's offline log dir): writes and reads fail until restart, other partitions serve.
    assert _produce(cluster, {("faulty", 0): _batch(b"a3")})[("faulty", 0)][0] == STORAGE_ERROR
    assert _fetch(cluster, "faulty", 0) == (STORAGE_ERROR, [])
    assert _produce(cluster, {("faulty", 1): _batch(b"b1"), ("healthy", 0): _batch(b"h1")}) == {
        ("faulty", 1): (0, 0), ("healthy", 0): (0, 0)}
    assert (_dir(cluster, "faulty", 0) / "00000000000000000000.log").stat().st_size > \
        sum(h.size for _, h in iter_batches(_batch(b"a1")))  # the torn bytes really are on disk

    cluster.restart()  # no clean-shutdown marker for the offline log: recovery cuts the torn tail
    assert _fetch(cluster, "faulty", 0) == (0, [b"a1"])
    _log_bytes_match_batches(_dir(cluster, "faulty", 0))
    assert _produce(cluster, {("faulty", 0): _batch(b"a4")})[("faulty", 0)] == (0, 1)
    assert _fetch(cluster, "faulty", 0) == (0, [b"a1", b"a4"])


def test_fsync_failure_with_an_idempotent_producer_loses_and_duplicates_nothing(
        tmp_path: Path, faults: DiskFaults) -> None:
    # Every append is fsynced; a failed fsync takes the log offline (the page cache can no longer be
    # trusted). librdkafka retries KAFKA_STORAGE_ERROR; after a restart the retried batches either
    # land or are recognised as duplicates of what reached the disk: each value exactly once.
    with EmbeddedCluster(nodes=1, data_dir=tmp_path, config={"log.flush.interval.messages": 1}) as cluster:
        cluster.create_topic("faulty", 1, 1)
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "enable.idempotence": True,
                             "linger.ms": 0, "retry.backoff.ms": 50, "retry.backoff.max.ms": 200, **QUIET})
        delivered: list[bytes] = []
        failed: list[Any] = []

        def on_delivery(err: Any, msg: Any) -> None:
            (failed if err is not None else delivered).append(err or msg.value())

        for i in range(20):
            producer.produce("faulty", value=b"%d" % i, on_delivery=on_delivery)
        assert producer.flush(20) == 0
        faults.fail(_dir(cluster, "faulty", 0), ops=("fsync",), err=errno.EIO)
        for i in range(20, 40):
            producer.produce("faulty", value=b"%d" % i, on_delivery=on_delivery)
        producer.poll(1.0)  # the broker answers KAFKA_STORAGE_ERROR; the producer keeps retrying
        assert faults.hits >= 1
        assert len(delivered) == 20
        faults.clear()
        cluster.restart()
        assert producer.flush(60) == 0
        assert not failed
        assert sorted(delivered, key=int) == [b"%d" % i for i in range(40)]
        assert _fetch(cluster, "faulty", 0) == (0, [b"%d" % i for i in range(40)])
        _log_bytes_match_batches(_dir(cluster, "faulty", 0))


def test_garbage_after_a_crash_is_cut_and_nothing_acknowledged_is_lost(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path, 1, free_port_block(1), sets=["num.partitions=3"])
    bootstrap = broker.start()
    try:
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                             "linger.ms": 5, **QUIET})
        acked: list[bytes] = []
        for i in range(300):
            producer.produce("torn", key=b"%d" % (i % 3), value=b"%d" % i,
                             on_delivery=lambda err, msg: err is None and acked.append(msg.value()))
        assert producer.flush(30) == 0 and len(acked) == 300
        del producer
        broker.kill9()

        logs = sorted(tmp_path.glob("node-0/torn-*/*.log"))
        assert logs and not list(tmp_path.glob("node-0/torn-*/.kafka_cleanshutdown"))
        garbage = [
            os.urandom(37),  # noise
            bytes.fromhex("00000000000001f4" "00000200" "00000000" "02") + os.urandom(40),  # a batch header cut short
            bytes(61),  # zeros (a preallocated tail)
        ]
        for log_file, junk in zip(logs, garbage * len(logs), strict=False):
            with open(log_file, "ab") as f:
                f.write(junk)

        bootstrap = broker.start()
        for log_file in logs:
            _log_bytes_match_batches(log_file.parent)
        records = consume_all(bootstrap, "torn", len(logs))
        assert sorted((v for recs in records.values() for _, _, v in recs), key=int) == sorted(acked, key=int)

        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", **QUIET})
        for i in range(300, 330):
            producer.produce("torn", key=b"%d" % (i % 3), value=b"%d" % i)
        assert producer.flush(30) == 0
        records = consume_all(bootstrap, "torn", len(logs))
        assert sorted(v for recs in records.values() for _, _, v in recs) == sorted(b"%d" % i for i in range(330))
    finally:
        if broker.proc is not None and broker.proc.poll() is None:
            broker.terminate()


def test_a_failing_follower_leaves_the_isr_and_the_partition_stays_available(tmp_path: Path,
                                                                             faults: DiskFaults) -> None:
    with EmbeddedCluster(nodes=3, data_dir=tmp_path) as cluster:
        cluster.create_topic("replicated", 1, 3)
        assert cluster.cluster is not None
        state = cluster.cluster.metadata.partition("replicated", 0)
        leader, follower = state.leader, next(r for r in state.replicas if r != state.leader)
        assert _produce(cluster, {("replicated", 0): _batch(b"r1")})[("replicated", 0)] == (0, 0)

        faults.fail(_dir(cluster, "replicated", 0, node=follower))
        # acks=all still succeeds: the follower drops out of the ISR instead of failing the write.
        assert _produce(cluster, {("replicated", 0): _batch(b"r2")})[("replicated", 0)] == (0, 1)
        assert follower not in state.isr and leader in state.isr and len(state.isr) == 2
        _log_bytes_match_batches(_dir(cluster, "replicated", 0, node=follower))

        faults.clear()  # the next write catches the follower up and it rejoins
        assert _produce(cluster, {("replicated", 0): _batch(b"r3")})[("replicated", 0)] == (0, 2)
        assert sorted(state.isr) == sorted(state.replicas)
        files = {(_dir(cluster, "replicated", 0, node=n) / "00000000000000000000.log").read_bytes()
                 for n in state.replicas}
        assert len(files) == 1  # every replica holds the same bytes
        assert _fetch(cluster, "replicated", 0) == (0, [b"r1", b"r2", b"r3"])


def _values(cluster: EmbeddedCluster) -> list[bytes]:
    """Every value of moving-0 in offset order, checking the offsets are contiguous (no gap, no repeat)."""
    rows = consume_all(cluster.bootstrap_servers, "moving", 1)[0]
    assert [offset for offset, _key, _value in rows] == list(range(len(rows)))
    return [value for _offset, _key, value in rows]


def test_an_offline_leader_log_hands_leadership_to_an_in_sync_replica(tmp_path: Path, faults: DiskFaults) -> None:
    # Kafka's log dir failure: the controller elects another ISR member, clients follow the new
    # leader, and nothing acknowledged is lost or duplicated; the failed replica returns after a restart.
    with EmbeddedCluster(nodes=3, data_dir=tmp_path) as cluster:
        cluster.create_topic("moving", 1, 3)
        assert cluster.cluster is not None
        state = cluster.cluster.metadata.partition("moving", 0)
        old_leader, old_epoch = state.leader, state.leader_epoch
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "enable.idempotence": True,
                             "linger.ms": 0, "retry.backoff.ms": 20, **QUIET})
        failed: list[Any] = []

        def send(values: range) -> None:
            for i in values:
                producer.produce("moving", value=b"%d" % i, on_delivery=lambda e, m: e and failed.append(e))
            assert producer.flush(30) == 0

        send(range(50))
        faults.fail(_dir(cluster, "moving", 0, node=old_leader), ops=("write_at", "truncate"), err=errno.EIO)
        send(range(50, 150))
        assert not failed and faults.hits >= 1
        assert state.leader != old_leader and state.leader_epoch > old_epoch and old_leader not in state.isr
        assert _values(cluster) == [b"%d" % i for i in range(150)]

        faults.clear()
        cluster.restart()  # the failed replica recovers its log, catches up and leads again
        state = cluster.cluster.metadata.partition("moving", 0)
        assert state.leader == old_leader and sorted(state.isr) == sorted(state.replicas)
        send(range(150, 160))
        assert _values(cluster) == [b"%d" % i for i in range(160)]
        for node in state.replicas:
            _log_bytes_match_batches(_dir(cluster, "moving", 0, node=node))
