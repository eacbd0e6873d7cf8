"""KIP-939's prepared two-phase-commit transaction on real Apache Kafka.

Apache Kafka 4.4.0 serves two-phase commit only behind `unstable.api.versions.enable=true` (InitProducerId
v6 is an unstable version; without it the broker closes the connection, which test_find_hanging_real.py's
refusal test checks) and `transaction.two.phase.commit.enable=true`. This module starts its own cluster so
configured, and stages what an external transaction manager leaves behind: a transaction with no timeout,
prepared, holding its partition's LSO.

What 4.4.0 does, read from its jars and seen here: the coordinator keeps the transaction Ongoing and never
aborts it; a restarted manager cannot recover it yet (InitProducerId with KeepPreparedTxn answers
UNSUPPORTED_VERSION whatever the configuration), so only the producer that prepared it ends it. find-hanging's
advice says so.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.testing.raw_client import ProducerIdAndEpoch, RawKafkaClient
from kafka_txn_broker.testing.scenarios import _retry as retried
from kafka_txn_tools.cli import exit_codes
from tests.e2e.cli_support import invoke_printed, kafka_txn
from tests.external.real_kafka.conftest import RELEASE, SESSION_CONFIG
from tests.external.real_kafka.test_find_hanging_real import BACKDATE_MS, only_row, scan, until_stable
from tests.support.real_kafka import KafkaCluster
from tests.support.real_kafka.staging import Release, offsets, stage

TWO_PHASE = {**SESSION_CONFIG, "unstable.api.versions.enable": "true",
             "transaction.two.phase.commit.enable": "true"}


@pytest.fixture(scope="module")
def two_phase_kafka(kafka_libs: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    if not Release(RELEASE).two_phase_commit_unstable:
        pytest.skip(f"two-phase commit on Apache Kafka {RELEASE} is not known to be served even as unstable")
    base = tmp_path_factory.mktemp("real-kafka-2pc")
    with KafkaCluster(kafka_libs, base, nodes=1, config=TWO_PHASE, version=RELEASE) as cluster:
        yield cluster
    shutil.rmtree(base, ignore_errors=True)


def test_a_prepared_transaction_is_held_refused_to_abort_and_ended_by_the_producer_that_prepared_it(
        two_phase_kafka: KafkaCluster) -> None:
    bs = two_phase_kafka.bootstrap_servers
    truth = stage(bs, "2pc-prepared", backdate_ms=BACKDATE_MS).prepared[0]
    assert truth.coordinator_state == "Ongoing"  # prepared, as 4.4.0 keeps it: no PrepareCommit before the decision
    row = only_row(scan(bs, truth.topic), truth.partition)
    assert (row["kind"], row["reason"], row["producer_id"], row["start_offset"]) == (
        "partition", "prepared-2pc", truth.producer_id, truth.start_offset)
    assert "keepPreparedTxn, which Apache Kafka 4.4 does not serve yet" in row["action"], row
    [watch] = row["commands"]
    assert watch.startswith("kafka-txn find-hanging ") and " --watch " in watch, watch
    assert kafka_txn(bs, "find-hanging", "--topic", truth.topic, "--exit-code").code == 0  # held, not hanging

    before = offsets(bs, truth.topic, truth.partition)
    assert before.lso == truth.start_offset < before.high_watermark
    refused = kafka_txn(bs, "abort", "--topic", truth.topic, "--partition", str(truth.partition),
                        "--start-offset", str(truth.start_offset), "--yes")
    assert refused.code == exit_codes.ERROR and "two-phase-commit" in refused.err, (refused.out, refused.err)
    assert offsets(bs, truth.topic, truth.partition) == before  # nothing written

    with RawKafkaClient(bs) as manager:
        code, _ = manager.init_producer_id_2pc(truth.transactional_id, keep_prepared=True)
        assert code == E.UNSUPPORTED_VERSION  # a restarted manager cannot recover it on this release
        assert offsets(bs, truth.topic, truth.partition) == before
        pe = ProducerIdAndEpoch(truth.producer_id, truth.producer_epoch)
        assert retried(lambda: (manager.end_txn(truth.transactional_id, pe, commit=True), None))[0] == 0
    after = until_stable(bs, truth.topic, truth.partition)
    assert after.high_watermark == before.high_watermark + 1  # the commit marker
    done = invoke_printed(watch, "--timeout", "20s")  # the printed watch ends at once now
    assert done.code == 0, (done.out, done.err)


def test_its_last_resort_abort_with_force_clears_the_partition(two_phase_kafka: KafkaCluster) -> None:
    """What the advice names for a manager gone for good: kafka-txn abort with --force on each partition."""
    bs = two_phase_kafka.bootstrap_servers
    truth = stage(bs, "2pc-prepared", backdate_ms=BACKDATE_MS).prepared[0]
    before = offsets(bs, truth.topic, truth.partition)
    assert before.lso == truth.start_offset < before.high_watermark
    forced = kafka_txn(bs, "abort", "--topic", truth.topic, "--partition", str(truth.partition),
                       "--start-offset", str(truth.start_offset), "--force", "--yes")
    assert forced.code == 0, (forced.out, forced.err)
    after = offsets(bs, truth.topic, truth.partition)
    assert after.lso == after.high_watermark == before.high_watermark + 1  # one abort marker
    assert kafka_txn(bs, "find-hanging", "--topic", truth.topic, "--exit-code", "--count-held").code == 0
