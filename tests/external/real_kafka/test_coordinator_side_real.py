"""A partition leader down while a transaction commits, on a real 3-node cluster: what Apache Kafka does, and
what the tools make of it. Releases differ (staging.Release.skips_markers_of_offline_leaders):

- 3.x and 4.0 to 4.2 keep retrying the marker (run on 4.2.0, 4.1.2, 3.9.2, 3.3.2): the transaction stays in
  PrepareCommit with the offline partition pending, a coordinator-side stuck transaction. `kafka-txn
  find-hanging` reports it (kind coordinator, markers-pending, leader-offline) without a write command;
  upstream's find-hanging has no such row. The broker's return clears it.
- 4.3 and later do otherwise (run on 4.3.0 and 4.4.0): the TransactionMarkerChannelManager finds no leader
  endpoint for the offline partition, logs "these partitions are likely deleted already and hence can be
  skipped", drops the partition from the transaction and completes it (CompleteCommit) within seconds. When
  the broker comes back, the partition still holds the producer's open transaction, which no coordinator will
  end: a partition-side hang (transaction-not-ongoing), found alike by `kafka-txn find-hanging` and by
  upstream's. The coordinator had
  committed it, so an abort would discard records the application was told were committed. `kafka-txn` reads
  the PrepareCommit in `__transaction_state` and prints `kafka-txn commit`, which writes the COMMIT marker:
  the records become visible to read_committed consumers. Upstream only offers the abort (a difference on
  purpose, in docs/compatibility.md).
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from kafka_txn_broker.testing.raw_client import RawKafkaClient
from kafka_txn_broker.testing.scenarios import _retry as retried
from tests.e2e.cli_support import invoke_printed, kafka_transactions, kafka_txn
from tests.external.real_kafka.sweep_of_a_commit import sweep_agrees_with_find_hanging
from tests.support.real_kafka import KafkaCluster, UpstreamTool
from tests.support.real_kafka.staging import Release, offsets, ready_topic, warm_up

DOWN = 3  # the broker down while the transaction commits


def txn_id_not_coordinated_by(client: RawKafkaClient, broker: int) -> str:
    """A fresh transactional id whose coordinator is another broker (its coordinator stays up)."""
    for _ in range(50):
        txn_id = f"real-stuck-{uuid.uuid4().hex[:8]}"
        if client.transaction_coordinator(txn_id) != broker:
            return txn_id
    raise AssertionError(f"every id hashed to broker {broker}'s coordinator")


def until(done: Any, what: str, seconds: float = 90.0) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        value = done()
        if value:
            return value
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.3)


def test_a_commit_with_a_leader_down_completes_without_its_marker_and_hangs_that_partition(
        real_kafka3: KafkaCluster, upstream: UpstreamTool) -> None:
    cluster = real_kafka3
    bs = cluster.bootstrap_servers
    warm_up(bs)
    topic = ready_topic(bs, f"real-stuck-{uuid.uuid4().hex[:6]}", 3, replication_factor=1)
    with RawKafkaClient(bs) as client:
        leaders = client.partition_leaders(topic)
        down_partition = next(p for p, leader in leaders.items() if leader == DOWN)
        up_partition = next(p for p, leader in leaders.items() if leader != DOWN)
        txn_id = txn_id_not_coordinated_by(client, DOWN)
        code, pe = retried(lambda: client.init_producer_id(txn_id, 60_000))  # its coordinator may still load
        assert code == 0
        assert client.add_partitions(txn_id, pe, topic, [down_partition, up_partition]) == 0
        for seq_partition in (down_partition, up_partition):
            assert client.produce_transactional(txn_id, pe, topic, seq_partition, 0, [b"stuck"],
                                                int(time.time() * 1000))[0] == 0
        cluster.kill(DOWN)
        assert client.end_txn(txn_id, pe, commit=True) == 0  # PrepareCommit written; one leader is down

    if not Release(cluster.version).skips_markers_of_offline_leaders:
        stuck_at_the_coordinator_until_the_leader_returns(cluster, upstream, topic, txn_id, down_partition,
                                                          up_partition)
        return
    # Within seconds the coordinator completes the commit without the offline partition's marker.
    with RawKafkaClient(live_servers(cluster)) as client:
        until(lambda: client.describe_transaction(txn_id).transaction_state == "CompleteCommit",
              "the coordinator to complete the commit without the offline partition")
    cluster.restart(DOWN)
    up_now = until(lambda: _stable(bs, topic, up_partition), f"{topic}-{up_partition} stable")
    assert up_now.lso == up_now.high_watermark  # the partition whose leader was up got its COMMIT marker
    held = offsets(bs, topic, down_partition)
    assert held.lso == 0 < held.high_watermark  # the other still holds the open transaction

    doc = kafka_txn(bs, "find-hanging", "--topic", topic, "--max-transaction-timeout", "0", "-o", "json").json()
    [row] = doc["hanging"]
    assert (row["kind"], row["reason"], row["partition"], row["transactional_id"]) == (
        "partition", "transaction-not-ongoing", down_partition, txn_id)
    assert "CompleteCommit" in row["detail"]
    decision = row["coordinator_decision"]
    assert (decision["outcome"], decision["transactional_id"], decision["producer_id"]) == (
        "commit", txn_id, pe.producer_id)
    assert [c.split()[1] for c in row["commands"]] == ["commit"]
    sweep_agrees_with_find_hanging(cluster, topic, row)  # the sweep of its log dirs: the same row and command
    theirs = upstream.run("--bootstrap-server", bs, "find-hanging", "--topic", topic, "--max-transaction-timeout",
                          "0")
    assert theirs.returncode == 0, theirs.stderr
    assert [line.split()[:3] for line in theirs.stdout.splitlines()[1:]] == [
        [topic, str(down_partition), str(pe.producer_id)]]
    assert read_committed(bs, topic, down_partition, held.high_watermark) == []  # held back until its marker
    # The partition whose marker landed: nothing to commit there, with the evidence (exit 4), nothing written.
    done = kafka_txn(bs, "commit", "--topic", topic, "--partition", str(up_partition), "--start-offset", "0",
                     "--yes")
    assert done.code == 4 and "already committed" in done.err, done.err
    assert offsets(bs, topic, up_partition) == up_now
    # An abort would discard what the application committed: both front ends refuse it and write nothing.
    abort_args = ("abort", "--topic", topic, "--partition", str(down_partition), "--start-offset", "0")
    for refused in (kafka_txn(bs, *abort_args, "--yes"), kafka_transactions(bs, *abort_args)):
        assert refused.code == 1 and "would discard records the application was told were committed" in refused.err
    assert offsets(bs, topic, down_partition) == held
    for command in row["commands"]:
        assert invoke_printed(command, "--yes").code == 0, command
    after = offsets(bs, topic, down_partition)
    assert after.lso == after.high_watermark == held.high_watermark + 1  # the COMMIT marker
    assert read_committed(bs, topic, down_partition, held.high_watermark) == [b"stuck"]  # committed, not discarded


def read_committed(bs: str, topic: str, partition: int, end: int) -> list[bytes]:
    """The records a read_committed consumer (librdkafka) gets from offsets 0 to `end` (exclusive)."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bs, "group.id": f"check-{uuid.uuid4().hex[:6]}", "log_level": 0,
                  "isolation.level": "read_committed", "enable.auto.commit": False, "enable.partition.eof": True})
    try:
        c.assign([TopicPartition(topic, partition, 0)])
        got: list[bytes] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                break  # end of what a read_committed consumer may read (partition EOF at the LSO)
            if m.offset() < end:
                got.append(m.value())
        return got
    finally:
        c.close()


def live_servers(cluster: KafkaCluster) -> str:
    return ",".join(n.address for i, n in cluster.nodes.items() if i != DOWN)


def _stable(bs: str, topic: str, partition: int) -> Any:
    now = offsets(bs, topic, partition)
    return now if now.lso == now.high_watermark else None


def stuck_at_the_coordinator_until_the_leader_returns(cluster: KafkaCluster, upstream: UpstreamTool, topic: str,
                                                      txn_id: str, down: int, up: int) -> None:
    """Releases whose coordinator keeps retrying the marker: PrepareCommit with the offline partition pending.
    kafka-txn reports it (kind coordinator, markers-pending, leader-offline) with no write command; upstream's
    find-hanging has no such row (it reads open transactions only, and the partition has no leader to ask).
    Starting the broker again lets the retried marker land: CompleteCommit, both LSOs at the high watermark."""
    live = live_servers(cluster)
    # Until the controller fences the killed broker (its session timeout), Metadata still names it the partition's
    # leader, and the row says only that it did not answer; then the leader is offline.
    row = until(lambda: _settled(_stuck_row(live, txn_id)), "find-hanging to report the stuck transaction, its "
                "pending partition's leader offline")
    assert (row["kind"], row["reason"], row["state"]) == ("coordinator", "markers-pending", "PrepareCommit")
    assert [(p["topic"], p["partition"], p["reason"]) for p in row["pending_partitions"]] == [
        (topic, down, "leader-offline")]
    assert not any(" abort " in c or "force-terminate" in c for c in row["commands"]), row["commands"]
    theirs = upstream.run("--bootstrap-server", live, "find-hanging", "--topic", topic, "--partition", str(up),
                          "--max-transaction-timeout", "0")
    assert theirs.returncode == 0 and theirs.stdout.splitlines()[1:] == [], theirs.stdout + theirs.stderr
    cluster.restart(DOWN)
    bs = cluster.bootstrap_servers
    with RawKafkaClient(bs) as client:
        until(lambda: client.describe_transaction(txn_id).transaction_state == "CompleteCommit",
              "the coordinator's retried marker")
    for partition in (down, up):
        now = until(lambda p=partition: _stable(bs, topic, p), f"{topic}-{partition} stable")
        assert now.lso == now.high_watermark
    assert _stuck_row(bs, txn_id) is None


def _settled(row: dict[str, Any] | None) -> dict[str, Any] | None:
    """The row once every pending partition's reason is known."""
    return row if row is not None and all(p["reason"] for p in row["pending_partitions"]) else None


def _stuck_row(bs: str, txn_id: str) -> dict[str, Any] | None:
    r = kafka_txn(bs, "find-hanging", "--all", "--max-prepare-time", "0s", "-o", "json")
    rows = [h for h in r.json()["hanging"] if h.get("transactional_id") == txn_id and h["kind"] == "coordinator"]
    return rows[0] if rows else None
