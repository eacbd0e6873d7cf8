"""How librdkafka's ShareConsumer (confluent-kafka 2.16.1) behaves when a producer acknowledges its records in a
transaction (KIP-1289) — the facts kafka_txn_tools.clients documents and its loop is built on."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import AcknowledgeType, IllegalStateException, ShareConsumer

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.clock import ManualClock
from kafka_txn_tools.clients import TransactionalShareProducer, acks_from_messages
from tests.e2e.share_support import produce, set_group_configs, share_partitions
from tests.tools.clients.support import ENABLED, GROUP, READER, committed_output, poll_batch, poll_for, reader


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(nodes=1, data_dir=tmp_path, config=ENABLED, clock=ManualClock()) as c:
        c.create_topic("in", 1, 1)
        c.create_topic("out", 1, 1)
        set_group_configs(c.bootstrap_servers, GROUP, share_auto_offset_reset="earliest")
        produce(c.bootstrap_servers, "in", 4, 1)
        yield c


@pytest.fixture
def producer(cluster: EmbeddedCluster) -> Iterator[TransactionalShareProducer]:
    p = TransactionalShareProducer(bootstrap_servers=cluster.bootstrap_servers, transactional_id="rpw-1")
    p.init_transactions()
    yield p
    p.close()


def in_state(cluster: EmbeddedCluster) -> dict[str, int]:
    return share_partitions(cluster, GROUP)[("in", 0)]


def transaction(producer: TransactionalShareProducer, batch: list, *, commit: bool) -> None:
    meta = producer.share_group_metadata(GROUP, READER)
    producer.begin_transaction()
    producer.send("out", b"output")
    producer.send_share_acknowledgements_to_transaction(acks_from_messages(batch), meta)
    producer.commit_transaction() if commit else producer.abort_transaction()


def test_explicit_mode_will_not_poll_before_the_previous_records_are_acknowledged_through_it(cluster, producer):
    consumer = reader(cluster.bootstrap_servers)
    try:
        batch = poll_batch(consumer)
        transaction(producer, batch, commit=True)
        with pytest.raises(IllegalStateException, match="not been acknowledged"):
            consumer.poll(0.2)
    finally:
        consumer.close()


@pytest.mark.parametrize("kind", [AcknowledgeType.RELEASE, AcknowledgeType.ACCEPT])
def test_its_own_acknowledgement_of_committed_records_is_refused_and_changes_nothing(cluster, producer, kind):
    errors: list[str] = []
    consumer = reader(cluster.bootstrap_servers, errors=errors)
    try:
        batch = poll_batch(consumer)
        transaction(producer, batch, commit=True)
        for m in batch:
            consumer.acknowledge(m, kind)
        again = poll_for(consumer, 1.0)  # sends the acknowledgement with the next fetch; does not raise
    finally:
        consumer.close()
    assert again == []
    assert errors == ["INVALID_RECORD_STATE"]
    s = in_state(cluster)
    assert (s["start"], s["ACQUIRED"], s["AVAILABLE"]) == (4, 0, 0)


def test_implicit_mode_accepts_aborted_records_itself_and_loses_them(cluster, producer):
    # Why the loop needs explicit mode: the implicit ACCEPT of the next poll acknowledges what the abort gave
    # back to the member, though its output was discarded (close() would accept them the same way).
    consumer = ShareConsumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": GROUP,
                              "client.id": READER, "log_level": 3})
    consumer.subscribe(["in"])
    try:
        batch = poll_batch(consumer)
        transaction(producer, batch, commit=False)
        assert in_state(cluster)["ACQUIRED"] == len(batch)
        assert [m for m in consumer.poll(1.0) if m.error() is None] == []
    finally:
        consumer.close()
    s = in_state(cluster)
    assert (s["start"], s["AVAILABLE"]) == (4, 0)  # acknowledged...
    assert committed_output(cluster, 0) == []  # ...with no output: lost
