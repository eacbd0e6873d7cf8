"""KIP-1289's read-process-write loop: acknowledgements inside the transaction vs outside it, in one run.

Both sides run the same loop over the same kind of input (one topic, 3 partitions, RF 1, 3 nodes, a fresh
share group per round): librdkafka's ShareConsumer (explicit acknowledgement) polls a batch, the project's
TransactionalShareProducer writes one output per input in a transaction, and
- transactional: stages the inputs' ACCEPTs in the transaction (send_share_acknowledgements_to_transaction,
  one TxnShareAcknowledge per share-partition leader), commits, then RELEASEs through the consumer (which
  the broker refuses for the committed records: the consumer needs every polled record acknowledged);
- plain: commits, then ACCEPTs through the consumer (ShareAcknowledge with its next fetch), which is
  at-least-once: a crash between the two processes the inputs again.
Rounds alternate plain/transactional; each side's median records/s is reported, and the median of the
per-round ratios transactional/plain (each round's two runs are back to back).

    python -m tests.benchmarks.bench_share_txn_acks [--records 3000] [--rounds 4]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from typing import Any

from confluent_kafka import Producer, ShareConsumer

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_tools.clients import TransactionalShareProducer, acks_from_messages, release_polled
from tests.e2e.share_support import FAST_GROUPS, set_group_configs

ENABLED = {"share.transactional.acknowledgement.enable": True, "offsets.topic.num.partitions": 3,
           "transaction.state.log.num.partitions": 3, **FAST_GROUPS}
PARTITIONS = 3
ACCEPT = 1


def fill(bootstrap: str, topic: str, records: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all", "log_level": 3})
    for i in range(records):
        p.produce(topic, value=f"in-{i}".encode(), partition=i % PARTITIONS)
        if i % 500 == 499:
            p.poll(0)
    assert p.flush(120) == 0


def run(bootstrap: str, topic: str, group: str, records: int, transactional: bool) -> float:
    set_group_configs(bootstrap, group, share_auto_offset_reset="earliest")
    reader = f"{group}-reader"
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": reader,
                              "share.acknowledgement.mode": "explicit", "log_level": 0})
    producer = TransactionalShareProducer(bootstrap_servers=bootstrap, transactional_id=f"{group}-txn")
    producer.init_transactions()
    consumer.subscribe([topic])
    done = 0
    start = time.perf_counter()
    try:
        while done < records:
            batch = [m for m in consumer.poll(0.5) if m.error() is None]
            if batch:
                one_transaction(producer, consumer, batch, group, reader, transactional)
                done += len(batch)
        elapsed = time.perf_counter() - start
    finally:
        consumer.close()
        producer.close()
    return records / elapsed


def one_transaction(producer: TransactionalShareProducer, consumer: Any, batch: list[Any], group: str, reader: str,
                    transactional: bool) -> None:
    producer.begin_transaction()
    for m in batch:
        producer.send(f"out-{group}", value=m.value())
    if transactional:
        producer.send_share_acknowledgements_to_transaction(acks_from_messages(batch),
                                                            producer.share_group_metadata(group, reader))
    producer.commit_transaction()
    if transactional:
        release_polled(consumer, batch)
    else:
        for m in batch:
            consumer.acknowledge(m, ACCEPT)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    plain_rates: list[float] = []
    txn_rates: list[float] = []
    ratios: list[float] = []
    with tempfile.TemporaryDirectory() as d, EmbeddedCluster(nodes=3, data_dir=d, config=ENABLED) as c:
        for r in range(args.rounds):
            rates = {}
            for transactional in (r % 2 == 1, r % 2 == 0):  # alternate which side goes first
                topic = f"in-{r}-{int(transactional)}"
                c.create_topic(topic, PARTITIONS, 1)
                c.create_topic(f"out-g-{topic}", 1, 1)
                fill(c.bootstrap_servers, topic, args.records)
                rates[transactional] = run(c.bootstrap_servers, topic, f"g-{topic}", args.records, transactional)
            plain_rates.append(rates[False])
            txn_rates.append(rates[True])
            ratios.append(rates[True] / rates[False])
            print(f"round {r + 1}: plain {rates[False]:,.0f} rec/s, transactional {rates[True]:,.0f} rec/s, "
                  f"ratio {ratios[-1]:.2f}", flush=True)
    print(f"median: plain {statistics.median(plain_rates):,.0f} rec/s, transactional "
          f"{statistics.median(txn_rates):,.0f} rec/s; ratio transactional/plain {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()
