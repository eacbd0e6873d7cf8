"""Real clients ride through a coordinator move while the new coordinator loads a large partition.

The transaction coordinator's partition (`__transaction_state`-0, thousands of other applications' ids) and the
group coordinator's (`__consumer_offsets`-0, thousands of other groups' offsets) move to another node, whose
load is held after its first chunk (tests/broker/coordinator/holding.py) while the client works: the client is
answered COORDINATOR_LOAD_IN_PROGRESS (counted by the runtime) and retries, as Kafka's clients do, until the load
ends; then its transaction commits (confluent-kafka) or its offset commit lands (kafka-python), with nothing lost
of what the partition held. The load replays the partition in many chunks (a 64 KiB load buffer), yielding to the
event loop between them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from kafka import KafkaConsumer, OffsetAndMetadata
from kafka import TopicPartition as KTP

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.formats.group_records import OffsetValue, encode_offset_key, encode_offset_value
from kafka_txn_broker.formats.partitioning import GROUP_TOPIC, TXN_TOPIC
from kafka_txn_broker.formats.record_batch import build_batch
from kafka_txn_broker.formats.transaction_log import TransactionLogValue, encode_key, encode_value
from kafka_txn_broker.formats.transactions import TransactionState
from tests.broker.coordinator.holding import group_runtime, loading, txn_runtime
from tests.e2e.test_partitions_and_records import consume

FILLER_BATCHES, RECORDS_PER_BATCH = 400, 50  # 20,000 records of other applications and groups
LOAD_BUFFER = 65536


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[EmbeddedCluster]:
    config = {"transaction.state.log.num.partitions": 1, "offsets.topic.num.partitions": 1,
              "transaction.state.log.load.buffer.size": LOAD_BUFFER, "offsets.load.buffer.size": LOAD_BUFFER,
              "auto.leader.rebalance.enable": False}
    with EmbeddedCluster(nodes=3, data_dir=tmp_path / "kafka", config=config) as c:
        c.create_topic("out", 1, 3)
        yield c


def fill(cluster: EmbeddedCluster, topic: str, records: Callable[[int], list[tuple[bytes, bytes | None]]]) -> int:
    """Append FILLER_BATCHES batches to `topic`-0 through its leader (as its coordinator would); the log end."""
    core = cluster.cluster
    assert core is not None

    def append() -> int:
        core.ensure_internal_topic(topic, 1, 3)
        state = core.metadata.partition(topic, 0)
        part = core.nodes[state.leader].replica_manager.get(topic, 0)
        assert part is not None
        for i in range(FILLER_BATCHES):
            part.append_as_leader(build_batch(records(i), timestamp_ms=1_700_000_000_000), -1)
        return int(part.log.log_end_offset)

    return cluster.call_soon(append)


def other_applications(i: int) -> list[tuple[bytes, bytes | None]]:
    value = TransactionLogValue(10_000 + i, 0, 60_000, TransactionState.COMPLETE_COMMIT, (), 1_700_000_000_000, -1)
    return [(encode_key(f"other-app-{i}-{j}"), encode_value(value, 1)) for j in range(RECORDS_PER_BATCH)]


def other_groups(i: int) -> list[tuple[bytes, bytes | None]]:
    return [(encode_offset_key(f"other-group-{i}-{j}", "out", 0), encode_offset_value(OffsetValue(i)))
            for j in range(RECORDS_PER_BATCH)]


def in_background(work: Callable[[], Any]) -> tuple[threading.Thread, list[BaseException]]:
    errors: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as exc:  # reported by the test thread
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, errors


def answered_loading(cluster: EmbeddedCluster, runtime: Any, thread: threading.Thread) -> int:
    """Wait until the loading coordinator has told the client to wait (or the client gave up)."""
    for _ in range(2_000):
        told = cluster.call_soon(lambda: runtime.load_in_progress_answers)
        if told or not thread.is_alive():
            return int(told)
        thread.join(0.01)
    return 0


def test_a_transactional_producer_rides_through_a_coordinator_move_during_a_large_load(
        cluster: EmbeddedCluster) -> None:
    assert fill(cluster, TXN_TOPIC, other_applications) == FILLER_BATCHES * RECORDS_PER_BATCH
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": "rider",
                         "transaction.timeout.ms": 60_000})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce("out", b"before the move", partition=0)
    producer.commit_transaction(30)
    core = cluster.cluster
    assert core is not None
    with loading(cluster, TXN_TOPIC, txn_runtime) as node:
        runtime = txn_runtime(core.nodes[node])

        def second_transaction() -> None:
            producer.begin_transaction()
            producer.produce("out", b"during the load", partition=0)
            producer.commit_transaction(60)

        thread, errors = in_background(second_transaction)
        assert answered_loading(cluster, runtime, thread) >= 1, errors
        assert thread.is_alive()  # the commit waits for the coordinator
    thread.join(60)
    assert not thread.is_alive() and errors == []
    assert len(consume(cluster, "out", 0, 0, read_committed=True, expect=2)) == 2
    loaded = cluster.call_soon(lambda: runtime.active(0).metadata)
    assert len(loaded) == FILLER_BATCHES * RECORDS_PER_BATCH + 1 and "rider" in loaded


def test_a_consumer_commit_rides_through_a_group_coordinator_move_during_a_large_load(
        cluster: EmbeddedCluster) -> None:
    assert fill(cluster, GROUP_TOPIC, other_groups) == FILLER_BATCHES * RECORDS_PER_BATCH
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id="rider",
                             enable_auto_commit=False)
    try:
        tp = KTP("out", 0)
        consumer.commit({tp: OffsetAndMetadata(1, "", -1)})
        core = cluster.cluster
        assert core is not None
        with loading(cluster, GROUP_TOPIC, group_runtime) as node:
            runtime = group_runtime(core.nodes[node])
            thread, errors = in_background(lambda: consumer.commit({tp: OffsetAndMetadata(2, "", -1)}))
            assert answered_loading(cluster, runtime, thread) >= 1, errors
            assert thread.is_alive()
        thread.join(60)
        assert not thread.is_alive() and errors == []
        assert consumer.committed(tp) == 2
        shard = cluster.call_soon(lambda: runtime.active(0))
        assert len(shard.offsets.groups()) == FILLER_BATCHES * RECORDS_PER_BATCH + 1
    finally:
        consumer.close()
