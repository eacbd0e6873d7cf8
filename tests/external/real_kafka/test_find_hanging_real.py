"""Stuck transactions staged on real Apache Kafka as production makes them, found by `kafka-txn find-hanging` with
the right kind and reason, and cleared by its printed commands run verbatim (plus --yes): the partition's LSO,
read with librdkafka, reaches its high watermark. A live transaction is never given a write command and still
commits afterwards; a refused abort writes nothing (log end offset and LSO unchanged).

The session cluster does not verify transactional writes (transaction.partition.verification.enable=false), so
an unverified late write (Produce v8 without AddPartitionsToTxn) hangs a partition as before KIP-890, on 4.x
as on 3.x. Which kinds a release can produce is in staging.Release.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import pytest

from kafka_txn_broker.testing.raw_client import ProducerIdAndEpoch, RawClientError, RawKafkaClient
from kafka_txn_broker.testing.scenarios import HANGING_PARTITION, complete_prepared
from kafka_txn_broker.testing.scenarios import _retry as retried
from kafka_txn_tools.cli import exit_codes
from tests.e2e.cli_support import invoke_printed, kafka_txn
from tests.external.real_kafka.conftest import RELEASE
from tests.support.real_kafka import KafkaCluster
from tests.support.real_kafka.staging import Offsets, Release, offsets, ready_topic, stage, warm_up

BACKDATE_MS = 30 * 60_000


def scan(bs: str, topic: str) -> dict[str, Any]:
    """find-hanging over one topic, as JSON, with the default thresholds (the staged batches are 30 min old)."""
    r = kafka_txn(bs, "find-hanging", "--topic", topic, "-o", "json")
    assert r.code == 0, r.err
    doc: dict[str, Any] = r.json()
    assert doc["errors"] == [] and not doc["partial"], doc
    return doc


def clear_by_printed_commands(bs: str, row: dict[str, Any]) -> None:
    """Run each printed command verbatim plus --yes; the partition's LSO reaches its high watermark."""
    before = offsets(bs, row["topic"], row["partition"])
    assert before.lso == row["start_offset"] < before.high_watermark
    assert row["commands"], row
    for command in row["commands"]:
        assert command.startswith("kafka-txn abort ") and f"--bootstrap-server {bs}" in command, command
        done = invoke_printed(command, "--yes")
        assert done.code == 0, (command, done.out, done.err)
    after = offsets(bs, row["topic"], row["partition"])
    assert after.lso == after.high_watermark == before.high_watermark + 1  # one abort marker, nothing else


def only_row(doc: dict[str, Any], partition: int) -> dict[str, Any]:
    rows = [h for h in doc["hanging"] if h["partition"] == partition]
    assert len(rows) == 1, doc["hanging"]
    return rows[0]


@pytest.mark.parametrize(("scenario", "reason"), [
    ("late-write-after-abort", "transaction-not-ongoing"),
    # Committed: the coordinator's state (CompleteCommit) already says no marker is coming.
    ("unregistered-partition-commit", "transaction-not-ongoing"),
    ("zombie-after-timeout", "transaction-not-ongoing"),
])
def test_a_partition_side_hang_is_found_and_its_printed_commands_clear_it(
        real_kafka: KafkaCluster, scenario: str, reason: str) -> None:
    bs = real_kafka.bootstrap_servers
    truth = stage(bs, scenario, backdate_ms=BACKDATE_MS, zombie_timeout_ms=2_000).hanging[0]
    doc = scan(bs, truth.topic)
    row = only_row(doc, HANGING_PARTITION)
    assert (row["kind"], row["reason"]) == ("partition", reason)
    assert (row["producer_id"], row["producer_epoch"], row["start_offset"], row["transactional_id"]) == (
        truth.producer_id, truth.producer_epoch, truth.start_offset, truth.transactional_id)
    # What the coordinator says, read by the scenario itself: why no marker is coming.
    assert truth.coordinator_state in ("CompleteAbort", "CompleteCommit")
    assert f"{truth.topic}-{HANGING_PARTITION}" not in truth.coordinator_partitions
    clear_by_printed_commands(bs, row)
    assert scan(bs, truth.topic)["hanging"] == []


@dataclass
class LiveTransaction:
    """An open transaction its coordinator still owns (Ongoing, partition added), its batch 30 min old."""

    client: RawKafkaClient
    transactional_id: str
    pe: Any
    topic: str
    partition: int
    start_offset: int


@pytest.fixture
def live_transaction(real_kafka: KafkaCluster) -> Any:
    bs = real_kafka.bootstrap_servers
    warm_up(bs)
    topic = ready_topic(bs, f"real-live-{time.monotonic_ns() % 10**8}", 1)
    txn_id = f"{topic}-txn"
    with RawKafkaClient(bs) as client:
        code, pe = retried(lambda: client.init_producer_id(txn_id, 600_000), attempts=300)  # may still load
        assert code == 0
        assert client.add_partitions(txn_id, pe, topic, [0]) == 0
        code, start = client.produce_transactional(txn_id, pe, topic, 0, 0, [b"live-0", b"live-1"],
                                                   int(time.time() * 1000) - BACKDATE_MS)
        assert code == 0
        yield LiveTransaction(client, txn_id, pe, topic, 0, start)


def test_a_live_long_transaction_gets_no_write_command_and_still_commits(
        real_kafka: KafkaCluster, live_transaction: LiveTransaction) -> None:
    bs, live = real_kafka.bootstrap_servers, live_transaction
    doc = scan(bs, live.topic)
    row = only_row(doc, live.partition)
    assert (row["kind"], row["reason"], row["transactional_id"]) == ("partition", "late", live.transactional_id)
    assert all(" abort " not in c and "fence" not in c and "force" not in c for c in row["commands"]), row
    assert kafka_txn(bs, "find-hanging", "--topic", live.topic, "--exit-code").code == 0  # live: not counted
    assert live.client.end_txn(live.transactional_id, live.pe, commit=True) == 0
    until_stable(bs, live.topic, live.partition)


def until_stable(bs: str, topic: str, partition: int, seconds: float = 60.0) -> Offsets:
    """The coordinator writes the commit marker asynchronously after EndTxn answers: wait for the LSO."""
    deadline = time.monotonic() + seconds
    while True:
        now = offsets(bs, topic, partition)
        if now.lso == now.high_watermark or time.monotonic() > deadline:
            assert now.lso == now.high_watermark, now
            return now
        time.sleep(0.2)


def test_an_abort_of_a_live_transaction_is_refused_and_writes_nothing(
        real_kafka: KafkaCluster, live_transaction: LiveTransaction) -> None:
    bs, live = real_kafka.bootstrap_servers, live_transaction
    before = offsets(bs, live.topic, live.partition)
    assert before.lso == live.start_offset < before.high_watermark
    args = ("--topic", live.topic, "--partition", str(live.partition), "--start-offset", str(live.start_offset))
    refused = kafka_txn(bs, "abort", *args, "--yes")
    assert refused.code == exit_codes.ERROR, (refused.out, refused.err)
    assert "live" in refused.err or "Ongoing" in refused.err, refused.err
    wrong = kafka_txn(bs, "abort", "--topic", live.topic, "--partition", "0", "--start-offset",
                      str(live.start_offset + 1), "--yes")  # no transaction starts there
    assert wrong.code != 0, (wrong.out, wrong.err)
    assert offsets(bs, live.topic, live.partition) == before
    assert live.client.end_txn(live.transactional_id, live.pe, commit=True) == 0
    until_stable(bs, live.topic, live.partition)


def test_a_write_outside_an_ongoing_transaction_is_cleared_and_the_transaction_still_commits(
        real_kafka: KafkaCluster) -> None:
    """A client writes to a partition it never added while its transaction is still Ongoing elsewhere: the
    coordinator will end the transaction on its own partitions only, so the unregistered one hangs now
    (partition-not-in-transaction). Its abort marker ends that partition's part; the transaction still commits."""
    bs = real_kafka.bootstrap_servers
    warm_up(bs)
    topic = ready_topic(bs, f"real-outside-{time.monotonic_ns() % 10**8}", 2)
    txn_id = f"{topic}-txn"
    with RawKafkaClient(bs) as client:
        code, pe = retried(lambda: client.init_producer_id(txn_id, 600_000), attempts=300)  # may still load
        assert code == 0 and client.add_partitions(txn_id, pe, topic, [0]) == 0
        assert client.produce_transactional(txn_id, pe, topic, 0, 0, [b"registered"], int(time.time() * 1000))[0] == 0
        code, start = client.produce_transactional(txn_id, pe, topic, 1, 0, [b"outside-0", b"outside-1"],
                                                   int(time.time() * 1000) - BACKDATE_MS)
        assert code == 0
        row = only_row(scan(bs, topic), 1)
        assert (row["kind"], row["reason"], row["start_offset"]) == ("partition", "partition-not-in-transaction", start)
        assert row["transactional_id"] == txn_id
        clear_by_printed_commands(bs, row)
        assert client.end_txn(txn_id, pe, commit=True) == 0
        until_stable(bs, topic, 0)


def test_a_prepared_two_phase_commit_transaction_is_held_not_hanging_and_its_manager_ends_it(
        real_kafka: KafkaCluster) -> None:
    """KIP-939 (4.2+): a transaction under an external transaction manager never times out. However old its
    batch, find-hanging lists it as held (prepared-2pc), with no write command and not counted by --exit-code;
    the manager recovers it (KeepPreparedTxn) and commits, and the LSO reaches the high watermark."""
    if not Release(RELEASE).two_phase_commit:
        pytest.skip(f"Apache Kafka {RELEASE} does not serve two-phase commit (KIP-939's InitProducerId v6): "
                    "test_two_phase_commit_is_refused_where_the_release_lacks_it checks that")
    bs = real_kafka.bootstrap_servers
    truth = stage(bs, "2pc-prepared", backdate_ms=BACKDATE_MS).prepared[0]
    row = only_row(scan(bs, truth.topic), truth.partition)
    assert (row["kind"], row["reason"], row["producer_id"], row["start_offset"]) == (
        "partition", "prepared-2pc", truth.producer_id, truth.start_offset)
    assert all(" abort " not in c and "force" not in c for c in row["commands"]), row
    assert kafka_txn(bs, "find-hanging", "--topic", truth.topic, "--exit-code").code == 0
    assert complete_prepared(bs, truth, commit=True) == 0
    until_stable(bs, truth.topic, truth.partition)


def test_two_phase_commit_is_refused_where_the_release_lacks_it(real_kafka: KafkaCluster) -> None:
    """The fact the skip above rests on: this release refuses an InitProducerId with Enable2Pc (v6)."""
    if Release(RELEASE).two_phase_commit:
        pytest.skip(f"Apache Kafka {RELEASE} serves two-phase commit")
    with pytest.raises(RawClientError, match="closed the connection"):
        stage(real_kafka.bootstrap_servers, "2pc-prepared", backdate_ms=BACKDATE_MS)


def test_a_partition_ahead_of_its_coordinators_epoch_is_epoch_mismatch_and_cleared(real_kafka: KafkaCluster) -> None:
    """The partition holds the producer's transaction at an epoch its coordinator never reached: what a coordinator
    that lost its newest `__transaction_state` records (an unclean election of that partition) leaves behind, staged
    here by writing at epoch + 1 without the coordinator (partition verification is off). The coordinator's
    markers would carry the older epoch and be fenced: `epoch-mismatch`, and the printed abort, written at the
    partition's epoch, clears it."""
    bs = real_kafka.bootstrap_servers
    warm_up(bs)
    topic = ready_topic(bs, f"real-ahead-{time.monotonic_ns() % 10**8}", 2)
    txn_id = f"{topic}-txn"
    with RawKafkaClient(bs) as client:
        code, pe = retried(lambda: client.init_producer_id(txn_id, 60_000))
        assert code == 0
        ahead = ProducerIdAndEpoch(pe.producer_id, pe.epoch + 1)
        code, start = client.produce_transactional(txn_id, ahead, topic, 1, 0, [b"ahead-0", b"ahead-1"],
                                                   int(time.time() * 1000) - BACKDATE_MS)
        assert code == 0
    row = only_row(scan(bs, topic), 1)
    assert (row["kind"], row["reason"], row["producer_id"], row["start_offset"]) == (
        "partition", "epoch-mismatch", pe.producer_id, start)
    assert f"coordinator epoch {pe.epoch} for {txn_id!r} is older than the partition's {ahead.epoch}" in row["detail"]
    clear_by_printed_commands(bs, row)
