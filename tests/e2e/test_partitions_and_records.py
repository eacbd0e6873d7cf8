"""CreatePartitions, DeleteRecords and ListOffsets through librdkafka's AdminClient, as Kafka answers them
(and as `kafka-topics.sh --alter --partitions` and `kafka-delete-records.sh` use them): new partitions are
usable at once, the log start offset moves for consumers and followers and survives a restart, segments
below it are deleted, and read_committed offsets stay at the last stable offset."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import OFFSET_END, Consumer, IsolationLevel, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, OffsetSpec

from kafka_txn_broker import EmbeddedCluster

TS = 1_700_000_000_000


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[EmbeddedCluster]:
    config = {"offsets.topic.num.partitions": 3, "transaction.state.log.num.partitions": 3,
              "log.retention.check.interval.ms": 0}
    with EmbeddedCluster(nodes=3, data_dir=tmp_path / "kafka", config=config) as c:
        yield c


def admin(cluster: EmbeddedCluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers})


def produce(cluster: EmbeddedCluster, topic: str, partition: int, count: int, first_ts: int = TS) -> None:
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 0})
    for i in range(count):
        p.produce(topic, value=b"v%d" % i, partition=partition, timestamp=first_ts + i)
        p.flush()  # one batch per record, so offsets and segments are predictable
    p.flush()


def consume(cluster: EmbeddedCluster, topic: str, partition: int, offset: int, *, read_committed: bool = False,
            expect: int, wait_s: float = 10.0) -> list[int]:
    """Offsets read from `offset` (auto.offset.reset=earliest) until `expect` records or `wait_s`."""
    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "g", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest",
                  "isolation.level": "read_committed" if read_committed else "read_uncommitted"})
    c.assign([TopicPartition(topic, partition, offset)])
    got: list[int] = []
    try:
        for _ in range(int(wait_s * 4)):
            for m in c.consume(100, 0.25):
                if m.error() is None:
                    got.append(m.offset())
            if len(got) >= expect:
                break
    finally:
        c.close()
    return got


def offsets(a: AdminClient, topic: str, partition: int, spec: Any, committed: bool = False) -> tuple[int, int]:
    """(offset, timestamp) from ListOffsets."""
    level = IsolationLevel.READ_COMMITTED if committed else IsolationLevel.READ_UNCOMMITTED
    tp = TopicPartition(topic, partition)
    info = a.list_offsets({tp: spec}, isolation_level=level)[tp].result()
    return info.offset, info.timestamp


def refused(future: Any) -> str:
    with pytest.raises(KafkaException) as err:
        future.result()
    return str(err.value.args[0].name())


def test_create_partitions_usable_at_once(cluster: EmbeddedCluster) -> None:
    a = admin(cluster)
    cluster.create_topic("t", 2, 2)
    a.create_partitions([NewPartitions("t", 4)], validate_only=True)["t"].result()
    assert len(cluster.cluster.metadata.topics["t"].partitions) == 2  # type: ignore[union-attr]
    a.create_partitions([NewPartitions("t", 4)])["t"].result()
    meta = a.list_topics("t").topics["t"].partitions
    assert sorted(meta) == [0, 1, 2, 3] and all(len(p.replicas) == 2 and p.leader >= 0 for p in meta.values())
    produce(cluster, "t", 3, 3)
    assert consume(cluster, "t", 3, 0, expect=3) == [0, 1, 2]
    # Manual placement (kafka-topics.sh --replica-assignment): as given, the first replica leads.
    a.create_partitions([NewPartitions("t", 5, replica_assignment=[[2, 0]])])["t"].result()
    p4 = cluster.cluster.metadata.partition("t", 4)  # type: ignore[union-attr]
    assert (p4.replicas, p4.leader, p4.isr) == ([2, 0], 2, [2, 0])


@pytest.mark.parametrize(("topic", "count", "assignment", "code"), [
    ("t", 5, None, "INVALID_PARTITIONS"),  # already has 5
    ("t", 3, None, "INVALID_PARTITIONS"),  # not an increase
    ("t", 6, [[0, 7]], "INVALID_REPLICA_ASSIGNMENT"),  # no broker 7
    ("t", 6, [[1, 1]], "INVALID_REPLICA_ASSIGNMENT"),  # a broker twice
    ("t", 6, [[0, 1, 2]], "INVALID_REPLICA_ASSIGNMENT"),  # not the topic's replication factor
    ("nope", 2, None, "UNKNOWN_TOPIC_OR_PART"),  # librdkafka's name for UNKNOWN_TOPIC_OR_PARTITION
])
def test_create_partitions_refused(cluster: EmbeddedCluster, topic: str, count: int, assignment: Any,
                                   code: str) -> None:
    cluster.create_topic("t", 5, 2)
    a = admin(cluster)
    new = NewPartitions(topic, count) if assignment is None else NewPartitions(topic, count, assignment)
    assert refused(a.create_partitions([new])[topic]) == code
    assert len(cluster.cluster.metadata.topics["t"].partitions) == 5  # type: ignore[union-attr]


def test_list_offsets_earliest_latest_timestamps(cluster: EmbeddedCluster) -> None:
    cluster.create_topic("t", 1, 3)
    produce(cluster, "t", 0, 5)
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    p.produce("t", value=b"late", partition=0, timestamp=TS + 100)  # offset 5: the largest timestamp
    p.produce("t", value=b"old", partition=0, timestamp=TS - 5)  # offset 6
    p.flush()
    a = admin(cluster)
    assert offsets(a, "t", 0, OffsetSpec.earliest())[0] == 0
    assert offsets(a, "t", 0, OffsetSpec.latest())[0] == 7
    assert offsets(a, "t", 0, OffsetSpec.max_timestamp()) == (5, TS + 100)  # v7 (KIP-734)
    assert offsets(a, "t", 0, OffsetSpec.for_timestamp(TS + 3)) == (3, TS + 3)
    assert offsets(a, "t", 0, OffsetSpec.for_timestamp(TS + 101))[0] == -1  # nothing that late


def test_list_offsets_read_committed_is_the_lso(cluster: EmbeddedCluster) -> None:
    cluster.create_topic("t", 1, 3)
    produce(cluster, "t", 0, 2)
    txn = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": "app"})
    txn.init_transactions()
    txn.begin_transaction()
    txn.produce("t", value=b"open", partition=0)
    txn.flush()
    a = admin(cluster)
    assert offsets(a, "t", 0, OffsetSpec.latest(), committed=True)[0] == 2  # the open transaction's start
    assert offsets(a, "t", 0, OffsetSpec.latest())[0] == 3  # the high watermark
    txn.commit_transaction()
    assert offsets(a, "t", 0, OffsetSpec.latest(), committed=True)[0] == 4  # past the marker


def test_delete_records_moves_the_start_for_everyone(cluster: EmbeddedCluster) -> None:
    cluster.create_topic("t", 1, 3)
    produce(cluster, "t", 0, 10)
    a = admin(cluster)
    tp = TopicPartition("t", 0, 4)
    assert a.delete_records([tp])[tp].result().low_watermark == 4
    assert offsets(a, "t", 0, OffsetSpec.earliest())[0] == 4
    # A consumer asking below it is reset to it (OFFSET_OUT_OF_RANGE, then auto.offset.reset=earliest).
    assert consume(cluster, "t", 0, 1, expect=6) == [4, 5, 6, 7, 8, 9]
    assert offsets(a, "t", 0, OffsetSpec.for_timestamp(TS))[0] == 4  # timestamps below it are gone too
    # Up to the high watermark (OFFSET_END, -1) and never past it.
    end = TopicPartition("t", 0, OFFSET_END)
    assert a.delete_records([end])[end].result().low_watermark == 10
    past = TopicPartition("t", 0, 11)
    assert refused(a.delete_records([past])[past]) == "OFFSET_OUT_OF_RANGE"
    # Followers follow: the next leader starts there too.
    cluster.stop_node(cluster.cluster.metadata.partition("t", 0).leader)  # type: ignore[union-attr]
    assert offsets(admin(cluster), "t", 0, OffsetSpec.earliest())[0] == 10


def test_delete_records_refused(cluster: EmbeddedCluster) -> None:
    cluster.create_topic("compacted", 1, 3, {"cleanup.policy": "compact"})
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    p.produce("compacted", key=b"k", value=b"v", partition=0)
    p.flush()
    a = admin(cluster)
    tp = TopicPartition("compacted", 0, 1)
    assert refused(a.delete_records([tp])[tp]) == "POLICY_VIOLATION"


def test_delete_records_survives_restart_and_deletes_segments(cluster: EmbeddedCluster) -> None:
    cluster.create_topic("t", 1, 3, {"internal.segment.bytes": "300"})  # a segment every few batches
    produce(cluster, "t", 0, 12)
    a = admin(cluster)
    tp = TopicPartition("t", 0, 9)
    a.delete_records([tp])[tp].result()
    cluster.tick()  # log.retention.check.interval.ms=0: every replica deletes what is wholly below 9
    for node in cluster.cluster.nodes.values():  # type: ignore[union-attr]
        part = node.replica_manager.get("t", 0)
        assert part is not None
        bases = [s.base_offset for s in part.log.log.segments]
        assert bases[0] <= 9 and (len(bases) == 1 or bases[1] > 9)
        assert sorted(int(f.name.split(".")[0]) for f in part.log.dir.glob("*.log")) == bases
    cluster.restart()
    a = admin(cluster)
    assert offsets(a, "t", 0, OffsetSpec.earliest())[0] == 9
    assert consume(cluster, "t", 0, 0, expect=3) == [9, 10, 11]


def test_delete_records_keeps_transactions_pinned_and_aborts_hidden(cluster: EmbeddedCluster) -> None:
    cluster.create_topic("t", 1, 3)
    txn = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": "app"})
    txn.init_transactions()

    def transaction(values: list[bytes], end: str | None) -> None:
        txn.begin_transaction()
        for v in values:
            txn.produce("t", value=v, partition=0)
        txn.flush()
        if end == "commit":
            txn.commit_transaction()
        elif end == "abort":
            txn.abort_transaction()

    transaction([b"a0", b"a1", b"a2"], "abort")  # offsets 0-2, marker 3
    transaction([b"c4", b"c5"], "commit")  # offsets 4-5, marker 6
    a = admin(cluster)
    tp = TopicPartition("t", 0, 1)  # inside the aborted transaction: the rest of it stays hidden
    a.delete_records([tp])[tp].result()
    assert consume(cluster, "t", 0, 0, read_committed=True, expect=2) == [4, 5]
    transaction([b"o7", b"o8", b"o9"], None)  # open: offsets 7-9
    tp = TopicPartition("t", 0, 8)  # inside the open transaction: the LSO stays at the new start
    a.delete_records([tp])[tp].result()
    assert offsets(a, "t", 0, OffsetSpec.latest(), committed=True)[0] == 8
    assert consume(cluster, "t", 0, 8, read_committed=True, expect=1, wait_s=1) == []
    txn.commit_transaction()  # marker 10
    assert offsets(a, "t", 0, OffsetSpec.latest(), committed=True)[0] == 11
    assert consume(cluster, "t", 0, 0, read_committed=True, expect=2) == [8, 9]
