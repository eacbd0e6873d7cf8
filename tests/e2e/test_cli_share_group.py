"""`kafka-txn describe-share-group` against state a real ShareConsumer built: start offsets, records by
state read back from __share_group_state, and a read_committed group held at a transaction's LSO."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import AcknowledgeType

from kafka_txn_broker import EmbeddedCluster
from tests.e2e.cli_support import kafka_txn, open_transaction
from tests.e2e.share_support import (
    FAST_GROUPS,
    poll_until,
    produce,
    set_group_configs,
    share_consumer,
    share_partitions,
)

TOPIC = "work"


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(nodes=3, data_dir=tmp_path, config=FAST_GROUPS) as c:
        c.create_topic(TOPIC, 3, 3)
        yield c


def test_the_share_view_of_a_group(cluster: EmbeddedCluster) -> None:
    bs = cluster.bootstrap_servers
    set_group_configs(bs, "g", share_auto_offset_reset="earliest", share_isolation_level="read_committed")
    produce(bs, TOPIC, 30, 3)  # record i goes to partition i % 3
    member = share_consumer(bs, "g", [TOPIC], explicit=True)
    # Partition 0: every record accepted; 1: rejected; 2: released (so available again).
    decision = [AcknowledgeType.ACCEPT, AcknowledgeType.REJECT, AcknowledgeType.RELEASE]

    seen: set[bytes] = set()

    def acknowledge(_i: int, consumer, batch) -> None:
        for m in batch:
            seen.add(m.value())
            consumer.acknowledge(m, decision[m.partition()])  # partition 2's come back: released again
        consumer.commit_sync(10)

    try:
        poll_until([member], lambda r: len(seen) == 30, on_batch=acknowledge)
    finally:
        member.close()
    producer = open_transaction(bs, "app", TOPIC, [1], records=2)  # a transaction holds partition 1's LSO
    try:
        r = kafka_txn(bs, "describe-share-group", "--group", "g", "-o", "json")
        assert r.code == 0, r.err
        doc = r.json()
        assert (doc["group"], doc["state"], doc["members"], doc["isolation_level"]) == ("g", "Empty", 0,
                                                                                       "read_committed")
        rows = {row["partition"]: row for row in doc["share_group"]}
        view = {p: (row["start_offset"], row["available"], row["unacknowledged"], row["held_at_lso"])
                for p, row in rows.items()}
        assert view == {0: (10, 0, 0, False), 1: (10, 0, 0, True), 2: (0, 10, 0, False)}
        assert rows[2]["max_delivery_count"] >= 1 and rows[1]["last_stable_offset"] == 10
        assert rows[1]["high_watermark"] == 12
        # The same as the share-partition leaders hold in memory.
        held = share_partitions(cluster, "g")
        assert {p: (held[(TOPIC, p)]["start"], held[(TOPIC, p)]["AVAILABLE"]) for p in range(3)} == {
            p: v[:2] for p, v in view.items()}
        table = kafka_txn(bs, "describe-share-group", "--group", "g")
        assert "HELD" in table.out and "yes" in table.out
    finally:
        producer.abort_transaction(30)


def test_an_unknown_group_is_a_clear_error(cluster: EmbeddedCluster) -> None:
    r = kafka_txn(cluster.bootstrap_servers, "describe-share-group", "--group", "nobody")
    assert r.code != 0 and "Group nobody not found" in r.err
