"""KAFKA-19999's trigger on real Apache Kafka: a transaction marker lands, but its WriteTxnMarkers response is lost
on the way back to the coordinator (the proxy in front of the broker cuts the connection once the broker has
answered). The coordinator sends the marker again at the same epoch.

Where a release has KAFKA-19999 its leader rejects that retry (INVALID_PRODUCER_EPOCH: transaction version 2
markers must carry a newer epoch) and the coordinator gives the markers up, leaving the transaction in
PrepareCommit for good. No release on Maven Central has it (docs/compatibility.md has the evidence): 4.0.x and
4.1.x leaders accept a marker at the current epoch, and 4.2.0, which made the check strict for transaction
version 2, accepts a retry of a completed transaction ("Idempotent transaction marker retry detected"). So here
the retry is accepted, the transaction completes, its partition's LSO reaches the high watermark, and
`kafka-txn find-hanging` reports nothing: a fault the cluster recovered from by itself is no finding.

The transaction is Kafka's own Java producer's (ProducerPerformance with a transactional id): a client of the
release's transaction version, 2 on 4.x.
"""

from __future__ import annotations

import subprocess
import time
import uuid

from kafka_txn_broker.testing.raw_client import RawKafkaClient
from tests.e2e.cli_support import kafka_txn
from tests.external.real_kafka.test_find_hanging_real import until_stable
from tests.support.real_kafka import KafkaCluster
from tests.support.real_kafka.proxy import HoldingProxy
from tests.support.real_kafka.staging import ready_topic, warm_up

WRITE_TXN_MARKERS = 27
RECORDS = 6


def commit_one_transaction(cluster: KafkaCluster, topic: str, txn_id: str) -> None:
    """One transaction of RECORDS records, committed by Kafka's Java producer (one partition: sticky)."""
    run = subprocess.run(cluster.java_command(
        "-Xmx256m", "org.apache.kafka.tools.ProducerPerformance", "--topic", topic, "--num-records", str(RECORDS),
        "--record-size", "10", "--throughput", "-1", "--producer-props",
        f"bootstrap.servers={cluster.bootstrap_servers}", "--transactional-id", txn_id, "--transaction-duration-ms",
        "600000"), capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stdout + run.stderr


def test_a_lost_marker_response_is_retried_and_the_transaction_completes(
        proxied_kafka: KafkaCluster, network: HoldingProxy) -> None:
    bs = proxied_kafka.bootstrap_servers
    warm_up(bs)
    topic = ready_topic(bs, f"real-lost-{uuid.uuid4().hex[:6]}", 1)
    txn_id = f"{topic}-txn"
    network.lose_next_response(WRITE_TXN_MARKERS)
    try:
        commit_one_transaction(proxied_kafka, topic, txn_id)
        assert network.lost.wait(60), "the coordinator sent no marker"
    finally:
        network.keep_responses()  # the session's other tests get every response
    with RawKafkaClient(bs) as client:
        deadline = time.monotonic() + 60
        while (state := client.describe_transaction(txn_id).transaction_state) != "CompleteCommit":
            assert time.monotonic() < deadline, f"the transaction stayed {state} after its marker's response was lost"
            time.sleep(0.3)
    now = until_stable(bs, topic, 0)
    assert now.high_watermark >= RECORDS + 1  # the records and the marker (a retried marker is written again)
    found = kafka_txn(bs, "find-hanging", "--all", "--max-transaction-timeout", "0", "--max-prepare-time", "0s",
                      "-o", "json")
    assert found.code == 0, found.err
    assert [h for h in found.json()["hanging"] if h.get("transactional_id") == txn_id or h["topic"] == topic] == []
