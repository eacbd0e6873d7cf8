"""Log compaction end to end: a compacted topic and __transaction_state, real clients, a restart."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Producer
from kafka import KafkaAdminClient
from kafka.admin._transactions import AbortTransactionSpec
from kafka.structs import TopicPartition as KTP

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.formats.partitioning import TXN_TOPIC
from kafka_txn_broker.formats.record_batch import iter_batches
from kafka_txn_tools.dumps.transaction_log import read_transaction_log
from tests.e2e.helpers import consume_all

TXN_IDS = [f"compaction-txn-{i}" for i in range(3)]
KEYS = [b"key-%d" % i for i in range(8)]


@pytest.fixture
def cluster(tmp_path: Path):
    config = {"transaction.state.log.segment.bytes": 2048, "transaction.state.log.num.partitions": 1,
              "log.cleaner.enable": False}  # switched on once the history is written, to measure before/after
    with EmbeddedCluster(nodes=3, data_dir=tmp_path, config=config) as c:
        yield c


def _log_bytes(data_dir: Path, partition_dir: str) -> int:
    return sum(f.stat().st_size for f in data_dir.glob(f"node-*/{partition_dir}/*.log"))


def _run_cleaner(cluster: EmbeddedCluster) -> None:
    cluster.config.set("log.cleaner.enable", True)
    for _ in range(30):  # one log per tick: enough for every replica of both topics
        cluster.tick()


def _transactions(bootstrap: str, rounds: int) -> dict[str, Producer]:
    producers = {}
    for txn_id in TXN_IDS:
        p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id})
        p.init_transactions(30)
        producers[txn_id] = p
    for i in range(rounds):
        for txn_id, p in producers.items():
            p.begin_transaction()
            p.produce("events", key=txn_id.encode(), value=b"%d" % i)
            p.commit_transaction(30)
    return producers


def _produce_updates(bootstrap: str, count: int) -> list[tuple[int, bytes, bytes]]:
    delivered: list[tuple[int, bytes, bytes]] = []
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 2, "batch.size": 600})

    def on_delivery(err: KafkaError | None, msg: object) -> None:
        assert err is None, err
        delivered.append((msg.offset(), msg.key(), msg.value()))  # type: ignore[attr-defined]

    for i in range(count):
        key = KEYS[i % len(KEYS)]
        p.produce("compacted", key=key, value=key + b"=%d" % i, on_delivery=on_delivery)
        if i % 50 == 0:
            p.flush(30)
    assert p.flush(30) == 0
    return sorted(delivered)


def test_compacted_topic_and_transaction_state_shrink_and_survive_a_restart(
        cluster: EmbeddedCluster, tmp_path: Path) -> None:
    bootstrap = cluster.bootstrap_servers
    cluster.create_topic("events", 1, 3)
    cluster.create_topic("compacted", 1, 3, {"cleanup.policy": "compact", "segment.bytes": "2048"})
    delivered = _produce_updates(bootstrap, 600)
    producers = _transactions(bootstrap, 25)
    for p in producers.values():
        p.flush(10)
    txn_before = _log_bytes(tmp_path, f"{TXN_TOPIC}-0")
    data_before = _log_bytes(tmp_path, "compacted-0")
    states_before = {txn_id: read_transaction_log(tmp_path / "node-0" / f"{TXN_TOPIC}-0")[txn_id]
                     for txn_id in TXN_IDS}

    _run_cleaner(cluster)

    assert _log_bytes(tmp_path, f"{TXN_TOPIC}-0") < txn_before / 2
    assert _log_bytes(tmp_path, "compacted-0") < data_before / 2
    for replica in tmp_path.glob("node-*/*-0"):
        assert not [n for n in os.listdir(replica) if n.endswith((".cleaned", ".swap"))]
        for seg in replica.glob("*.log"):  # whole, contiguous batches only
            data = seg.read_bytes()
            end = 0
            for pos, header in iter_batches(data):
                assert pos == end
                end = pos + header.size
            assert end == len(data)
    for replica in tmp_path.glob(f"node-*/{TXN_TOPIC}-0"):
        states = read_transaction_log(replica)
        assert {t: (s.producer_id, s.producer_epoch, s.state) for t, s in states.items() if t in TXN_IDS} == \
            {t: (s.producer_id, s.producer_epoch, s.state) for t, s in states_before.items()}

    # A consumer from the beginning: the latest value of every key, at the offset it was written at,
    # and only the newest records repeat a key (what the active segment holds, never cleaned).
    (seen,) = consume_all(bootstrap, "compacted", 1).values()
    produced = {off: (key, value) for off, key, value in delivered}
    assert all(produced[off] == (key, value) for off, key, value in seen)
    latest = {key: (off, value) for off, key, value in delivered}
    assert {key: (off, value) for off, key, value in seen} == latest
    assert len(seen) < len(delivered) / 2
    first_repeat = next((i for i, (_o, key, _v) in enumerate(seen) if key in {k for _, k, _ in seen[:i]}), len(seen))
    assert first_repeat >= len(KEYS)

    # The coordinators reload the compacted __transaction_state: every id resumes where it was.
    for p in producers.values():
        p.flush(5)
    cluster.restart()
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        described = admin.describe_transactions(TXN_IDS)
        for txn_id in TXN_IDS:
            assert described[txn_id].producer_id == states_before[txn_id].producer_id
            assert described[txn_id].state.value == "CompleteCommit"
    finally:
        admin.close()
    for txn_id in TXN_IDS:
        p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": txn_id})
        p.init_transactions(30)
        p.begin_transaction()
        p.produce("events", key=txn_id.encode(), value=b"after restart")
        p.commit_transaction(30)
        state = read_transaction_log(tmp_path / "node-0" / f"{TXN_TOPIC}-0")[txn_id]
        assert (state.producer_id, state.producer_epoch) == \
            (states_before[txn_id].producer_id, states_before[txn_id].producer_epoch + 1)


def test_a_record_without_key_is_refused_by_a_compacted_topic(cluster: EmbeddedCluster) -> None:
    cluster.create_topic("compacted", 1, 1, {"cleanup.policy": "compact"})
    errors: list[KafkaError] = []
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "retries": 0})
    p.produce("compacted", value=b"no key", on_delivery=lambda err, _m: errors.append(err))
    p.flush(30)  # its own request: Kafka fails the whole batch that holds a keyless record
    p.produce("compacted", key=b"k", value=b"keyed", on_delivery=lambda err, _m: errors.append(err))
    p.flush(30)
    codes = sorted(e.code() if e is not None else 0 for e in errors)
    assert codes == [0, KafkaError.INVALID_RECORD]


def _compacted_bytes_below(cluster: EmbeddedCluster, offset: int) -> int:
    """Bytes of the leader's segments that end at or below `offset`."""
    assert cluster.cluster is not None
    (replica,) = [p for n in cluster.cluster.nodes.values() if (p := n.replica_manager.get("compacted", 0))]
    segments = replica.log.log.segments
    return sum(s.size for s, nxt in zip(segments, segments[1:], strict=False) if nxt.base_offset <= offset)


def test_a_hanging_transaction_pins_compaction_until_it_is_aborted(cluster: EmbeddedCluster) -> None:
    """The operators' rehearsal: a compacted topic grows without bound behind a hanging transaction."""
    bootstrap = cluster.bootstrap_servers
    cluster.create_topic("compacted", 1, 1, {"cleanup.policy": "compact", "segment.bytes": "2048"})
    cluster.config.set("log.cleaner.backoff.ms", 0)
    _produce_updates(bootstrap, 100)
    hanging = Producer({"bootstrap.servers": bootstrap, "transactional.id": "hanging",
                        "transaction.timeout.ms": 600000})
    hanging.init_transactions(30)
    hanging.begin_transaction()
    hanging.produce("compacted", key=b"txn", value=b"never committed")
    hanging.flush(30)
    _produce_updates(bootstrap, 1200)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        tp = KTP("compacted", 0)
        (producer,) = admin.describe_producers([tp])[tp].active_producers
        start = producer.current_transaction_start_offset
        pinned = _log_bytes(cluster.data_dir, "compacted-0") - _compacted_bytes_below(cluster, start)
        _run_cleaner(cluster)
        # Below the transaction's first offset the log is compacted; from there on nothing is.
        assert _log_bytes(cluster.data_dir, "compacted-0") - _compacted_bytes_below(cluster, start) == pinned
        assert pinned > 10 * 2048  # and it grows with every update

        admin.abort_transaction(AbortTransactionSpec(tp, producer.producer_id, producer.producer_epoch, 0))
        _run_cleaner(cluster)
        assert _log_bytes(cluster.data_dir, "compacted-0") < pinned / 2
    finally:
        admin.close()
    (seen,) = consume_all(bootstrap, "compacted", 1, read_committed=True).values()
    assert b"txn" not in {key for _o, key, _v in seen}
