"""A read-process-write loop over a share group, exactly once (KIP-1289): each poll's records are processed,
their outputs produced and the records acknowledged in one transaction, so either both happen or neither.

librdkafka's ShareConsumer reads (explicit acknowledgement: its implicit mode would accept records whose
transaction aborted); kafka_txn_tools.clients.TransactionalShareProducer writes and stages the
acknowledgements. The brokers need `share.transactional.acknowledgement.enable=true` (transaction.version 2).

    python docs/share_txn_loop.py --bootstrap-server localhost:9092 --group workers --input in --output out \
        --transactional-id worker-1 [--client-id worker-1] [--max-records N] [--idle-seconds 5]

Prints how many records it processed. Give each running copy its own --transactional-id and --client-id.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from confluent_kafka import ShareConsumer
from kafka.errors import KafkaError, ProducerFencedError

from kafka_txn_tools.clients import (
    FatalShareAcknowledgementError,
    ShareGroupMetadata,
    ShareMemberNotFoundError,
    TransactionalShareProducer,
    TxnShareAcknowledgeUnsupportedError,
    acks_from_messages,
    release_polled,
)

FATAL = (FatalShareAcknowledgementError, TxnShareAcknowledgeUnsupportedError, ProducerFencedError)


def process(value: bytes) -> bytes:
    """The work: here, upper-case the record's value."""
    return value.upper()


def transact(producer: TransactionalShareProducer, records: list[Any], metadata: ShareGroupMetadata,
             sink: str) -> bool:
    """One transaction: the records' outputs and their acknowledgements. False when it was aborted."""
    producer.begin_transaction()
    try:
        for m in records:
            producer.send(sink, process(m.value()), key=m.key())
        producer.send_share_acknowledgements_to_transaction(acks_from_messages(records), metadata)
        producer.commit_transaction()
        return True
    except FATAL:
        raise  # fenced by a newer instance, or the cluster cannot do it: stop
    except KafkaError:
        # Abortable (a rebalance made the member's epoch stale, a record it no longer holds...): the outputs
        # are discarded and the records go back to the group, to be delivered again.
        producer.abort_transaction()
        return False


def run(bootstrap: str, group: str, source: str, sink: str, transactional_id: str, client_id: str,
        max_records: int | None = None, idle_seconds: float = 5.0) -> int:
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": client_id,
                              "share.acknowledgement.mode": "explicit"})
    consumer.subscribe([source])
    producer = TransactionalShareProducer(bootstrap_servers=bootstrap, transactional_id=transactional_id)
    producer.init_transactions()
    metadata: ShareGroupMetadata | None = None  # the member's identity, asked again after an abort
    done, last_record = 0, time.monotonic()
    try:
        while (max_records is None or done < max_records) and time.monotonic() - last_record < idle_seconds:
            records = [m for m in consumer.poll(1.0) if m.error() is None]
            if not records:
                continue
            last_record = time.monotonic()
            try:
                if metadata is None:
                    metadata = producer.share_group_metadata(group, client_id)
                if transact(producer, records, metadata, sink):
                    done += len(records)
                else:
                    metadata = None
            except ShareMemberNotFoundError:
                pass  # not (or no longer) a member: the records go back, the next poll rejoins
            finally:
                # The consumer must see every record acknowledged before it polls again: RELEASE is refused for
                # committed records (already acknowledged) and hands aborted ones back at once.
                release_polled(consumer, records)
    finally:
        consumer.close()
        producer.close()
    return done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap-server", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--transactional-id", required=True)
    parser.add_argument("--client-id", help="the share consumer's client.id (default: the transactional id)")
    parser.add_argument("--max-records", type=int)
    parser.add_argument("--idle-seconds", type=float, default=5.0, help="stop after this long with no record")
    a = parser.parse_args()
    done = run(a.bootstrap_server, a.group, a.input, a.output, a.transactional_id, a.client_id or a.transactional_id,
               a.max_records, a.idle_seconds)
    print(f"processed {done} records")


if __name__ == "__main__":
    main()
