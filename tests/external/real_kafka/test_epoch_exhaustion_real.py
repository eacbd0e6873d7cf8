"""KAFKA-20090 on real Apache Kafka: a transaction stuck Ongoing at the last producer epoch, on a release without
the fixes (before 4.3.0), staged as the bug report tells it through the protocol:

1. a producer restarts until its epoch is Short.MAX_VALUE - 1 (32,766 InitProducerId bumps), opens a transaction
   and stalls past its timeout; the coordinator fences it to Short.MAX_VALUE and aborts it;
2. the producer's delayed EndTxn(ABORT) (transaction version 2) is taken as a retry and answered with epoch
   Short.MAX_VALUE, so the producer carries on there and opens another transaction;
3. that one cannot end: its producer's EndTxn would overflow the epoch, and the coordinator's timeout abort throws
   "Cannot fence producer with epoch equal to Short.MaxValue since this would overflow" on every pass. It stays
   Ongoing and holds the partition's LSO.

`kafka-txn find-hanging` reports it (kind coordinator, epoch-exhausted, KAFKA-20090) with one command, the
forced abort that frees the LSO now, and says the remaining step is an upgrade. The printed abort, run verbatim
with --yes, brings the LSO to the high watermark; the upgrade (the node restarted on the newest release's jars,
its log dir kept) lets the coordinator's timeout abort end the transaction, and the id works again.

The default release has the fixes and the 3.x releases have no transaction version 2, so this runs on a release
between them, outside the default run and the matrix (4.1.2 is not among its releases; fetched on first use,
54 MB):
    KAFKA_TXN_KAFKA_RELEASE=4.1.2 python3 -m pytest -q tests/external/real_kafka/test_epoch_exhaustion_real.py
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kafka_txn_broker.testing.raw_client import RawKafkaClient
from kafka_txn_broker.testing.scenarios import _retry as retried
from tests.e2e.cli_support import invoke_printed, kafka_txn
from tests.external.real_kafka.conftest import RELEASE, SESSION_CONFIG
from tests.support.real_kafka import DEFAULT_RELEASE, KafkaCluster, release_libs
from tests.support.real_kafka.staging import Release, offsets, ready_topic, warm_up

LAST_EPOCH = 32767  # Short.MAX_VALUE
TIMEOUT_MS = 3000


def until_state(client: RawKafkaClient, txn_id: str, done: str, seconds: float = 90.0) -> tuple[int, int]:
    """Until the coordinator holds `txn_id` in state `done`: its producer id and epoch then."""
    deadline = time.monotonic() + seconds
    while (d := client.describe_transaction(txn_id)).transaction_state != done:
        assert time.monotonic() < deadline, f"{txn_id} still {d.transaction_state}, not {done}"
        time.sleep(0.3)
    return int(d.producer_id), int(d.producer_epoch)


def stage_exhausted(bs: str, topic: str, txn_id: str) -> int:
    """Steps 1-3 above; the start offset of the transaction left Ongoing at the last epoch."""
    with RawKafkaClient(bs, timeout_s=600) as client:
        code, pe = retried(lambda: client.init_producer_id(txn_id, TIMEOUT_MS))  # its coordinator may still load
        assert code == 0
        code, pe = client.bump_epoch(txn_id, TIMEOUT_MS, LAST_EPOCH - 1 - pe.epoch)
        assert (code, pe.epoch) == (0, LAST_EPOCH - 1)
        assert client.add_partitions(txn_id, pe, topic, [0]) == 0
        assert client.produce_transactional(txn_id, pe, topic, 0, 0, [b"stalled"], int(time.time() * 1000))[0] == 0
        assert until_state(client, txn_id, "CompleteAbort")[1] == LAST_EPOCH  # fenced and aborted on its timeout
        code, resumed = client.end_txn_tv2(txn_id, pe, commit=False)  # the producer's delayed abort
        assert (code, resumed.epoch) == (0, LAST_EPOCH)
        assert client.add_partitions(txn_id, resumed, topic, [0]) == 0
        code, start = client.produce_transactional(txn_id, resumed, topic, 0, 0, [b"last-0", b"last-1"],
                                                   int(time.time() * 1000))
        assert code == 0
        time.sleep(3 * TIMEOUT_MS / 1000)  # past its timeout: the reaper tried, and failed, to fence it
        described = client.describe_transaction(txn_id)
        assert (described.transaction_state, described.producer_epoch) == ("Ongoing", LAST_EPOCH)
    return int(start)


def test_a_transaction_stuck_at_the_last_epoch_is_freed_by_the_printed_abort_and_ended_by_the_upgrade(
        kafka_libs: Path, tmp_path: Path) -> None:
    if not Release(RELEASE).stuck_at_the_last_epoch:
        pytest.skip(f"Apache Kafka {RELEASE} does not have KAFKA-20090 (it has the fixes, from 4.3.0, or no "
                    "transaction version 2, before 4.0): run with KAFKA_TXN_KAFKA_RELEASE=4.1.2")
    config = {**SESSION_CONFIG, "transaction.max.timeout.ms": "900000"}
    with KafkaCluster(kafka_libs, tmp_path / "exhausted", nodes=1, config=config, version=RELEASE) as cluster:
        bs = cluster.bootstrap_servers
        warm_up(bs)
        topic = ready_topic(bs, f"real-exhausted-{time.monotonic_ns() % 10**8}", 1)
        txn_id = f"{topic}-txn"
        start = stage_exhausted(bs, topic, txn_id)

        # Seconds old: --max-prepare-time 0s has it listed now rather than after the default minute.
        found = kafka_txn(bs, "find-hanging", "--topic", topic, "--max-prepare-time", "0s", "-o", "json")
        assert found.code == 0, found.err
        [row] = found.json()["hanging"]
        assert (row["kind"], row["reason"], row["state"], row["producer_epoch"], row["upgrade_for"]) == (
            "coordinator", "epoch-exhausted", "Ongoing", LAST_EPOCH, "KAFKA-20090")
        assert [(p["partition"], p["reason"], p["start_offset"]) for p in row["pending_partitions"]] == [
            (0, "open-transaction", start)]
        held = offsets(bs, topic, 0)
        assert held.lso == start < held.high_watermark
        assert row["commands"] == [f"kafka-txn abort --topic {topic} --partition 0 --start-offset {start} --force "
                                   f"--bootstrap-server {bs}"]
        for command in row["commands"]:
            done = invoke_printed(command, "--yes")
            assert done.code == 0, (command, done.out, done.err)
        freed = offsets(bs, topic, 0)
        assert freed.lso == freed.high_watermark == held.high_watermark + 1

        # The upgrade: the same node, its log dir kept, restarted on a release with the fixes.
        cluster.stop_node(1)
        cluster.libs = release_libs(DEFAULT_RELEASE)
        cluster.restart(1)
        with RawKafkaClient(bs) as client:
            until_state(client, txn_id, "CompleteAbort")  # the fixed coordinator's timeout abort ends it
            code, _ = retried(lambda: client.init_producer_id(txn_id, TIMEOUT_MS))
            assert code == 0  # the id works again
        after = kafka_txn(bs, "find-hanging", "--topic", topic, "--max-prepare-time", "0s", "--max-transaction-timeout",
                          "0", "-o", "json")
        assert after.json()["hanging"] == [], after.out
