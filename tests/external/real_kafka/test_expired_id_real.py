"""A partition-side hang whose transactional id its coordinator expires (transactional.id.expiration.ms after its
last transaction ended), on real Apache Kafka: what find-hanging reports depends on when the id expires.

- Before the scan (KAFKA-9144's case): ListTransactions no longer maps the producer id to anything, so
  `kafka-txn find-hanging` reports `no-transactional-id`, names the id it last had from `__transaction_state`'s
  records, and its printed abort clears the partition.
- During the scan, between ListTransactions (which still lists the id under the hang's producer id) and
  DescribeTransactions: the coordinator answers TRANSACTIONAL_ID_NOT_FOUND, and the row's reason is
  `transactional-id-not-found`.
- During the scan, and the application starts again under the same id before DescribeTransactions: Kafka gives
  the expired id a new producer id, so the coordinator now describes the id under another producer id than the
  partition's open transaction: `epoch-mismatch` ("now belongs to producer id ...").

The scan's requests pass through a proxy that holds find-hanging's DescribeTransactions until the id has expired
(a slow network, made reproducible); the broker sees the bytes the tool sent. Kafka offers no other way to these
two reasons: its coordinator never holds an older epoch than a partition for the same producer id unless it
lost its own state (test_find_hanging_real's re-initialised id shows what a newer epoch gives), and once an id
expired, ListTransactions no longer names it.

The cluster is conftest's `proxied_kafka`: ids expire 4 s after their last transaction there.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kafka_txn_broker.testing.raw_client import RawKafkaClient
from tests.external.real_kafka.test_find_hanging_real import BACKDATE_MS, clear_by_printed_commands, only_row, scan
from tests.support.real_kafka import KafkaCluster
from tests.support.real_kafka.proxy import HoldingProxy
from tests.support.real_kafka.staging import stage

DESCRIBE_TRANSACTIONS = 65
TOOL_CLIENT_ID = "kafka-txn"
TRANSACTIONAL_ID_NOT_FOUND = 105


def until_expired(bs: str, transactional_id: str) -> None:
    with RawKafkaClient(bs) as client:
        deadline = time.monotonic() + 90
        while client.describe_transaction(transactional_id).error_code != TRANSACTIONAL_ID_NOT_FOUND:
            assert time.monotonic() < deadline, "the coordinator did not expire the transactional id"
            time.sleep(0.3)


def scan_while(network: HoldingProxy, bs: str, topic: str, meanwhile: Callable[[], None],
               api_key: int = DESCRIBE_TRANSACTIONS) -> dict[str, Any]:
    """find-hanging over `topic`, with `meanwhile` run after it sent its first request of `api_key` (by default
    after it listed the transactions and before the coordinator answers its DescribeTransactions)."""
    network.hold(api_key, TOOL_CLIENT_ID)
    with ThreadPoolExecutor(1) as pool:
        found = pool.submit(scan, bs, topic)
        try:
            assert network.holding.wait(60), "find-hanging described no transaction: the id expired before the scan"
            meanwhile()
        finally:
            network.release()
        return found.result(timeout=120)


def test_a_hang_whose_transactional_id_expired_is_found_by_its_last_known_id_and_cleared(
        proxied_kafka: KafkaCluster) -> None:
    bs = proxied_kafka.bootstrap_servers
    truth = stage(bs, "late-write-after-abort", backdate_ms=BACKDATE_MS).hanging[0]
    until_expired(bs, truth.transactional_id)
    row = only_row(scan(bs, truth.topic), truth.partition)
    assert (row["kind"], row["reason"], row["producer_id"], row["start_offset"]) == (
        "partition", "no-transactional-id", truth.producer_id, truth.start_offset)
    assert row["transactional_id"] is None
    assert row["last_known_transactional_id"] == truth.transactional_id
    clear_by_printed_commands(bs, row)


def test_an_id_expiring_during_the_scan_is_transactional_id_not_found_and_cleared(
        proxied_kafka: KafkaCluster, network: HoldingProxy) -> None:
    bs = proxied_kafka.bootstrap_servers
    truth = stage(bs, "late-write-after-abort", backdate_ms=BACKDATE_MS).hanging[0]
    doc = scan_while(network, bs, truth.topic, lambda: until_expired(bs, truth.transactional_id))
    row = only_row(doc, truth.partition)
    assert (row["kind"], row["reason"], row["producer_id"], row["start_offset"], row["transactional_id"]) == (
        "partition", "transactional-id-not-found", truth.producer_id, truth.start_offset, truth.transactional_id)
    assert truth.transactional_id in row["detail"]
    clear_by_printed_commands(bs, row)


def test_an_id_expired_and_taken_again_during_the_scan_is_epoch_mismatch_and_cleared(
        proxied_kafka: KafkaCluster, network: HoldingProxy) -> None:
    bs = proxied_kafka.bootstrap_servers
    truth = stage(bs, "late-write-after-abort", backdate_ms=BACKDATE_MS).hanging[0]
    restarted: dict[str, Any] = {}

    def expire_then_restart() -> None:
        until_expired(bs, truth.transactional_id)
        with RawKafkaClient(bs) as client:  # the application starts again under the same id
            code, restarted["pe"] = client.init_producer_id(truth.transactional_id, 60_000)
            assert code == 0

    doc = scan_while(network, bs, truth.topic, expire_then_restart)
    new_id = restarted["pe"].producer_id
    assert new_id != truth.producer_id  # Kafka gave the expired id a new producer id
    row = only_row(doc, truth.partition)
    assert (row["kind"], row["reason"], row["producer_id"], row["start_offset"], row["transactional_id"]) == (
        "partition", "epoch-mismatch", truth.producer_id, truth.start_offset, truth.transactional_id)
    assert f"now belongs to producer id {new_id}" in row["detail"]
    clear_by_printed_commands(bs, row)
