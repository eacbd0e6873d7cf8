"""The read-process-write loop end to end on the embedded broker (3 nodes, KIP-1289 enabled): librdkafka's
ShareConsumer reads, TransactionalShareProducer writes the outputs and stages the inputs' acknowledgements in
the same transaction. What KIP-1289 promises: commit makes the outputs visible to read_committed readers and
the inputs ACKNOWLEDGED (never delivered again); abort shows nothing and gives the inputs back for redelivery;
a fenced producer stages nothing; a stale member epoch aborts the transaction, the producer goes on. The
cluster runs on a manual clock: no acquisition lock expires during a test, so a redelivery is the abort's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka.errors import KafkaError

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.clock import ManualClock
from kafka_txn_tools.clients import (
    ACCEPT,
    AbortableShareAcknowledgementError,
    FatalShareAcknowledgementError,
    ShareGroupMetadata,
    ShareMemberNotFoundError,
    TransactionalShareProducer,
    TxnShareAcknowledgeUnsupportedError,
    acks_from_messages,
    release_polled,
    share_group_metadata,
)
from tests.e2e.share_support import produce, set_group_configs, share_partitions
from tests.tools.clients.support import (
    ENABLED,
    GROUP,
    READER,
    committed_output,
    offsets,
    poll_batch,
    poll_for,
    reader,
    stage_and_end,
)

RECORDS, PARTITIONS = 12, 3


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(nodes=3, data_dir=tmp_path, config=ENABLED, clock=ManualClock()) as c:
        c.create_topic("in", PARTITIONS, 1)  # RF 1: the partitions' leaders differ
        c.create_topic("out", 1, 3)
        set_group_configs(c.bootstrap_servers, GROUP, share_auto_offset_reset="earliest")
        produce(c.bootstrap_servers, "in", RECORDS, PARTITIONS)
        yield c


@pytest.fixture
def producer(cluster: EmbeddedCluster) -> Iterator[TransactionalShareProducer]:
    p = TransactionalShareProducer(bootstrap_servers=cluster.bootstrap_servers, transactional_id="rpw-1")
    p.init_transactions()
    yield p
    p.close()


def states(cluster: EmbeddedCluster) -> dict[str, int]:
    """Records by state over the group's share-partitions, and the summed start offsets."""
    out: dict[str, int] = {}
    for sp in share_partitions(cluster, GROUP).values():
        for k, v in sp.items():
            if k != "leader":
                out[k] = out.get(k, 0) + v
    return out


def test_committed_loop_shows_the_outputs_and_acknowledges_the_inputs(cluster, producer):
    errors: list[str] = []
    consumer = reader(cluster.bootstrap_servers, errors=errors)
    processed: list[Any] = []
    try:
        while len(processed) < RECORDS:
            batch = poll_batch(consumer)
            stage_and_end(producer, consumer, batch, commit=True)
            processed += batch
        again = poll_for(consumer, 1.5)
    finally:
        consumer.close()
    assert len(offsets(processed)) == RECORDS and again == []  # each input once, none delivered again
    assert sorted(committed_output(cluster, RECORDS)) == sorted(m.value().upper() for m in processed)
    s = states(cluster)
    assert (s["start"], s["ACQUIRED"], s["TX_PENDING"], s["AVAILABLE"]) == (RECORDS, 0, 0, 0)
    # librdkafka's own RELEASE of committed records is refused, and only reported to its callback.
    assert set(errors) <= {"INVALID_RECORD_STATE"}


def test_aborted_transaction_shows_nothing_and_the_inputs_are_delivered_again(cluster, producer):
    consumer = reader(cluster.bootstrap_servers)
    try:
        batch = poll_batch(consumer)
        stage_and_end(producer, consumer, batch, commit=False)  # ends with the consumer's RELEASE
        wanted = set(offsets(batch))
        again: dict[tuple[int, int], Any] = {}
        while not wanted <= again.keys():  # bounded by poll_batch; other partitions' records come too
            polled = poll_batch(consumer)
            again.update({(m.partition(), m.offset()): m for m in polled if (m.partition(), m.offset()) in wanted})
            release_polled(consumer, polled)
    finally:
        consumer.close()
    # Delivered a second time: the abort gave them back, the RELEASE made them available (no lock expired).
    assert {m.delivery_count() for m in again.values()} == {2}
    assert committed_output(cluster, 0) == []


def test_aborted_outputs_are_invisible_before_any_retry(cluster, producer):
    consumer = reader(cluster.bootstrap_servers)
    try:
        batch = poll_batch(consumer)
        meta = producer.share_group_metadata(GROUP, READER)
        producer.begin_transaction()
        for m in batch:
            producer.send("out", m.value())
        producer.send_share_acknowledgements_to_transaction(acks_from_messages(batch), meta)
        assert states(cluster)["TX_PENDING"] == len(batch)
        producer.abort_transaction()
        assert committed_output(cluster, 0) == []
        s = states(cluster)
        assert (s["TX_PENDING"], s["ACQUIRED"], s["start"]) == (0, len(batch), 0)  # the member's again
    finally:
        consumer.close()


def test_a_fenced_producer_gets_the_fatal_error_and_stages_nothing(cluster):
    bs = cluster.bootstrap_servers
    consumer = reader(bs)
    zombie = TransactionalShareProducer(bootstrap_servers=bs, transactional_id="rpw-z")
    successor = TransactionalShareProducer(bootstrap_servers=bs, transactional_id="rpw-z")
    try:
        batch = poll_batch(consumer)
        meta = zombie.share_group_metadata(GROUP, READER)
        zombie.init_transactions()
        zombie.begin_transaction()
        successor.init_transactions()  # a new instance with the same transactional id: the old one is fenced
        with pytest.raises(FatalShareAcknowledgementError) as info:
            zombie.send_share_acknowledgements_to_transaction(acks_from_messages(batch), meta)
        assert info.value.error == "PRODUCER_FENCED"
        s = states(cluster)
        assert (s["TX_PENDING"], s["ACQUIRED"]) == (0, len(batch))
        # The successor does the work.
        successor.begin_transaction()
        successor.send_share_acknowledgements_to_transaction(acks_from_messages(batch), meta)
        successor.commit_transaction()
        release_polled(consumer, batch)
        assert states(cluster)["ACQUIRED"] == 0
    finally:
        consumer.close()
        zombie.close()
        successor.close()


def test_a_stale_member_epoch_is_abortable_and_the_producer_goes_on(cluster, producer):
    consumer = reader(cluster.bootstrap_servers)
    try:
        batch = poll_batch(consumer)
        meta = producer.share_group_metadata(GROUP, READER)
        stale = ShareGroupMetadata(GROUP, meta.member_id, meta.member_epoch - 1)
        producer.begin_transaction()
        producer.send("out", b"lost")
        with pytest.raises(AbortableShareAcknowledgementError) as info:
            producer.send_share_acknowledgements_to_transaction(acks_from_messages(batch), stale)
        assert info.value.error == "STALE_MEMBER_EPOCH"
        with pytest.raises(KafkaError, match="error state"):  # kafka-python refuses to commit
            producer.commit_transaction()
        producer.abort_transaction()
        assert states(cluster)["TX_PENDING"] == 0
        # The loop retries with a fresh snapshot: the producer is still good.
        producer.begin_transaction()
        producer.send("out", b"kept")
        producer.send_share_acknowledgements_to_transaction(acks_from_messages(batch), meta)
        producer.commit_transaction()
        release_polled(consumer, batch)
        assert committed_output(cluster, 1) == [b"kept"]
    finally:
        consumer.close()


def test_a_transaction_of_acknowledgements_only_is_committed(cluster, producer):
    # kafka-python would skip EndTxn for a transaction it thinks is empty; the records would stay TX_PENDING.
    consumer = reader(cluster.bootstrap_servers)
    try:
        batch = poll_batch(consumer)
        meta = producer.share_group_metadata(GROUP, READER)
        producer.begin_transaction()
        producer.send_share_acknowledgements_to_transaction(acks_from_messages(batch, ACCEPT), meta)
        producer.commit_transaction()
        release_polled(consumer, batch)
        s = states(cluster)
        assert (s["TX_PENDING"], s["ACQUIRED"], s["start"]) == (0, 0, len(batch))
    finally:
        consumer.close()


def test_a_bad_ack_type_fails_before_any_request(cluster, producer):
    consumer = reader(cluster.bootstrap_servers)
    try:
        batch = poll_batch(consumer)
        meta = producer.share_group_metadata(GROUP, READER)
        producer.begin_transaction()
        with pytest.raises(ValueError, match="RELEASE"):
            producer.send_share_acknowledgements_to_transaction(acks_from_messages(batch) | {
                ("in", batch[0].partition()): [(batch[0].offset(), 2)]}, meta)
        served = cluster.call_soon(lambda: sum(n.share_partition_manager.txn_ack_latency.count
                                               for n in cluster.cluster.nodes.values()))
        assert served == 0
        producer.abort_transaction()
        release_polled(consumer, batch)
    finally:
        consumer.close()


def test_the_member_is_found_by_its_client_id_and_only_if_unique(cluster):
    bs = cluster.bootstrap_servers
    first, twin = reader(bs, "same"), reader(bs, "same")
    try:
        for c in (first, twin):
            c.poll(0.5)
        with pytest.raises(ShareMemberNotFoundError, match="2 members"):
            share_group_metadata(bs, GROUP, "same")
        with pytest.raises(ShareMemberNotFoundError, match="no member"):
            share_group_metadata(bs, GROUP, "nobody")
    finally:
        first.close()
        twin.close()


def test_a_cluster_without_the_api_is_named(tmp_path: Path):
    with EmbeddedCluster(nodes=1, data_dir=tmp_path, config={"offsets.topic.num.partitions": 1,
                                                             "transaction.state.log.num.partitions": 1}) as c:
        c.create_topic("in", 1, 1)
        with TransactionalShareProducer(bootstrap_servers=c.bootstrap_servers, transactional_id="t") as p:
            p.init_transactions()
            p.begin_transaction()
            with pytest.raises(TxnShareAcknowledgeUnsupportedError,
                               match="share.transactional.acknowledgement.enable"):
                p.send_share_acknowledgements_to_transaction({("in", 0): [(0, ACCEPT)]},
                                                             ShareGroupMetadata("g", "m", 1))
            p.abort_transaction()
