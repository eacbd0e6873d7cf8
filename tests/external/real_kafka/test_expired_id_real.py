"""KAFKA-9144's case on real Apache Kafka: a partition-side hang whose transactional id the coordinator has since
expired (transactional.id.expiration.ms after its last transaction ended). ListTransactions no longer maps the
producer id to anything, so `kafka-txn find-hanging` reports `no-transactional-id`, names the id it last had from
`__transaction_state`'s records, and its printed abort clears the partition.

Its own 1-node cluster (a few seconds to start): ids expire after 3 s here, which would change the other modules'
reasons while they run.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_txn_broker.testing.raw_client import RawKafkaClient
from tests.external.real_kafka.conftest import RELEASE, SESSION_CONFIG
from tests.external.real_kafka.test_find_hanging_real import BACKDATE_MS, clear_by_printed_commands, only_row, scan
from tests.support.real_kafka import KafkaCluster
from tests.support.real_kafka.staging import stage

EXPIRING = {**SESSION_CONFIG, "transactional.id.expiration.ms": "3000",
            "transaction.remove.expired.transaction.cleanup.interval.ms": "500"}


@pytest.fixture(scope="module")
def expiring_kafka(kafka_libs: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    with KafkaCluster(kafka_libs, tmp_path_factory.mktemp("real-kafka-expiring"), nodes=1, config=EXPIRING,
                      version=RELEASE) as cluster:
        yield cluster


def test_a_hang_whose_transactional_id_expired_is_found_by_its_last_known_id_and_cleared(
        expiring_kafka: KafkaCluster) -> None:
    bs = expiring_kafka.bootstrap_servers
    truth = stage(bs, "late-write-after-abort", backdate_ms=BACKDATE_MS).hanging[0]
    with RawKafkaClient(bs) as client:
        deadline = time.monotonic() + 90
        while client.describe_transaction(truth.transactional_id).error_code == 0:
            assert time.monotonic() < deadline, "the coordinator did not expire the transactional id"
            time.sleep(0.3)
        assert client.describe_transaction(truth.transactional_id).error_code == 105  # TRANSACTIONAL_ID_NOT_FOUND
    row = only_row(scan(bs, truth.topic), truth.partition)
    assert (row["kind"], row["reason"], row["producer_id"], row["start_offset"]) == (
        "partition", "no-transactional-id", truth.producer_id, truth.start_offset)
    assert row["transactional_id"] is None
    assert row["last_known_transactional_id"] == truth.transactional_id
    clear_by_printed_commands(bs, row)
