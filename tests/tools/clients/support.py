"""The embedded cluster with KIP-1289 enabled, and the loop's pieces, for the clients' end-to-end tests."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from confluent_kafka import ShareConsumer

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_tools.clients import TransactionalShareProducer, acks_from_messages, release_polled
from tests.e2e.share_support import FAST_GROUPS

# share.transactional.acknowledgement.enable needs transaction.version 2 (the default here).
ENABLED = {"share.transactional.acknowledgement.enable": True, "offsets.topic.num.partitions": 3,
           "transaction.state.log.num.partitions": 3, **FAST_GROUPS}
GROUP, READER = "rpw-group", "reader-1"


def reader(bootstrap: str, client_id: str = READER, errors: list[str] | None = None) -> ShareConsumer:
    """librdkafka's ShareConsumer as the loop needs it: explicit acknowledgement; `errors` collects the
    acknowledgement errors the broker answers to the consumer's own acknowledgements."""
    c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "client.id": client_id,
                       "share.acknowledgement.mode": "explicit", "log_level": 3})
    if errors is not None:
        c.set_acknowledgement_commit_callback(
            lambda offsets, exc: errors.append(exc.args[0].name()) if exc is not None else None)
    c.subscribe(["in"])
    return c


def poll_batch(consumer: ShareConsumer, timeout_s: float = 15.0) -> list[Any]:
    """The next non-empty poll (bounded)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        batch = [m for m in consumer.poll(0.2) if m.error() is None]
        if batch:
            return batch
    raise AssertionError(f"nothing polled within {timeout_s}s")


def poll_for(consumer: ShareConsumer, seconds: float) -> list[Any]:
    """Everything delivered within `seconds`, each poll's records released so the consumer can go on."""
    got: list[Any] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        batch = [m for m in consumer.poll(0.2) if m.error() is None]
        got += batch
        release_polled(consumer, batch)
    return got


def stage_and_end(producer: TransactionalShareProducer, consumer: ShareConsumer, batch: list[Any], *,
                  commit: bool, client_id: str = READER) -> None:
    """One turn of the loop: outputs (the input upper-cased) and the inputs' acknowledgements in one transaction."""
    meta = producer.share_group_metadata(GROUP, client_id)
    producer.begin_transaction()
    for m in batch:
        producer.send("out", m.value().upper())
    producer.send_share_acknowledgements_to_transaction(acks_from_messages(batch), meta)
    if commit:
        producer.commit_transaction()
    else:
        producer.abort_transaction()
    release_polled(consumer, batch)


def committed_output(cluster: EmbeddedCluster, expected: int, timeout_s: float = 10.0) -> list[bytes]:
    """The read_committed values of `out` once `expected` are there; with nothing expected, once no transaction
    is open on it (its last stable offset at its high watermark: the markers landed), everything up to its
    end (a committed record would be read, however late its marker came)."""
    from confluent_kafka import Consumer, TopicPartition

    from tests.e2e.cli_support import log_offsets

    deadline = time.monotonic() + timeout_s
    end = -1
    if not expected:
        while (ends := log_offsets(cluster.bootstrap_servers, "out", 0))[0] != ends[1]:
            assert time.monotonic() < deadline, f"a transaction is still open on out-0: {ends}"
            time.sleep(0.05)
        end = ends[0]
    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "check", "enable.auto.commit": False,
                  "isolation.level": "read_committed", "log_level": 3})
    tp = TopicPartition("out", 0, 0)
    c.assign([tp])
    got: list[bytes] = []
    try:
        while end != 0 and time.monotonic() < deadline:
            got += [m.value() or b"" for m in c.consume(1000, 0.2) if m.error() is None]
            if expected and len(got) >= expected or not expected and c.position([tp])[0].offset >= end:
                break
    finally:
        c.close()
    return got


def offsets(messages: Iterable[Any]) -> list[tuple[int, int]]:
    return sorted((m.partition(), m.offset()) for m in messages)
