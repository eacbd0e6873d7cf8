"""The read-process-write loop over a share group: acknowledgements staged in the producer's transaction
(KIP-1289, exactly once) vs the same loop acknowledging through the consumer after the transaction commits
(at least once), in the same run.

Both sides: librdkafka's ShareConsumer (explicit acknowledgement) in a fresh share group reads every record of
`in` (3 partitions, RF 3, 3 nodes) from the start; each poll's records are processed (upper-cased) and written
to `out` by kafka-python's transactional producer, one transaction per poll (or per --per-transaction records). Then
- txn: TransactionalShareProducer.send_share_acknowledgements_to_transaction inside the transaction (one
  TxnShareAcknowledge per share-partition leader, plus a Metadata request), commit, and the consumer's RELEASE
  hand-back (refused by the broker for committed records, sent with the next fetch);
- plain: commit, then the consumer's ACCEPT and commit_sync (one ShareAcknowledge, written to
  `__share_group_state` before it is answered). `--piggyback` leaves them to the next fetch instead.
Rounds alternate txn/plain; each side's median records/s and the median of the per-round ratios txn/plain.

    python -m tests.benchmarks.bench_share_txn_acks [--records 20000] [--size 100] [--rounds 5] [--piggyback]
        [--per-transaction N]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from typing import Any

from confluent_kafka import AcknowledgeType, ShareConsumer

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_tools.clients import TransactionalShareProducer, acks_from_messages, release_polled
from tests.e2e.share_support import set_group_configs

PARTITIONS = 3
CONFIG = {"share.transactional.acknowledgement.enable": True}


def consumer(bootstrap: str, group: str, client_id: str) -> ShareConsumer:
    set_group_configs(bootstrap, group, share_auto_offset_reset="earliest")
    c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": client_id,
                       "share.acknowledgement.mode": "explicit", "fetch.wait.max.ms": 100, "log_level": 3})
    c.subscribe(["in"])
    return c


def produce_outputs(producer: TransactionalShareProducer, records: list[Any]) -> None:
    for m in records:
        producer.send("out", m.value().upper())


def loop(bootstrap: str, producer: TransactionalShareProducer, group: str, records: int, transactional: bool,
         args: argparse.Namespace) -> tuple[float, int]:
    """records/s of one full read of `in`, and the transactions it took."""
    client_id = f"{group}-reader"
    c = consumer(bootstrap, group, client_id)
    start = time.perf_counter()
    done = transactions = 0
    metadata = None
    while done < records:
        polled = [m for m in c.poll(0.5) if m.error() is None]
        step = args.per_transaction or len(polled) or 1
        for batch in (polled[i:i + step] for i in range(0, len(polled), step)):
            producer.begin_transaction()
            produce_outputs(producer, batch)
            if transactional:
                if metadata is None:
                    metadata = producer.share_group_metadata(group, client_id)
                producer.send_share_acknowledgements_to_transaction(acks_from_messages(batch), metadata)
                producer.commit_transaction()
                release_polled(c, batch)
            else:
                producer.commit_transaction()
                for m in batch:
                    c.acknowledge(m, AcknowledgeType.ACCEPT)
                if not args.piggyback:
                    c.commit_sync(30)
            done += len(batch)
            transactions += 1
    elapsed = time.perf_counter() - start
    c.close()
    return records / elapsed, transactions


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=20_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--piggyback", action="store_true", help="plain side: acknowledgements ride on the next fetch "
                                                              "instead of commit_sync")
    ap.add_argument("--per-transaction", type=int, default=0, help="records per transaction (default: a whole "
                    "poll, which librdkafka fills with the fetched batches, ~1,000 records here)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, EmbeddedCluster(nodes=3, data_dir=tmp, config=CONFIG) as cluster:
        cluster.create_topic("in", PARTITIONS, 3)
        cluster.create_topic("out", PARTITIONS, 3)
        bs = cluster.bootstrap_servers
        fill_in(bs, args.records, args.size)
        producer = TransactionalShareProducer(bootstrap_servers=bs, transactional_id="bench-rpw", linger_ms=0)
        producer.init_transactions()
        txn_rates: list[float] = []
        plain_rates: list[float] = []
        try:
            for i in range(args.rounds):
                rate, n = loop(bs, producer, f"txn-{i}", args.records, True, args)
                txn_rates.append(rate)
                plain, m = loop(bs, producer, f"plain-{i}", args.records, False, args)
                plain_rates.append(plain)
                print(f"round {i + 1}: txn {rate:,.0f} rec/s ({n} transactions), plain {plain:,.0f} rec/s "
                      f"({m} transactions)", flush=True)
        finally:
            producer.close()
        t, p = statistics.median(txn_rates), statistics.median(plain_rates)
        paired = statistics.median(a / b for a, b in zip(txn_rates, plain_rates, strict=True))
        plain_how = "acknowledged with the next fetch" if args.piggyback else "consumer commit_sync"
        print(f"{args.records} records of {args.size} B, {args.per_transaction or 'a poll'} per transaction: "
              f"transactional acknowledgements {t:,.0f} rec/s, "
              f"plain ({plain_how}) {p:,.0f} rec/s (medians); median per-round ratio txn/plain {paired:.2f}")


def fill_in(bootstrap: str, records: int, size: int) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.num.messages": 1000, "acks": "all"})
    value = b"x" * size
    for i in range(records):
        while True:
            try:
                p.produce("in", value=value, partition=i % PARTITIONS)
                break
            except BufferError:
                p.poll(0.01)
    assert p.flush(300) == 0


if __name__ == "__main__":
    main()
