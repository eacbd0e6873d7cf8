"""Transactions stuck at their coordinator, 2PC transactions, who owns a producer id and who is held back,
end to end: real clients (confluent-kafka, the raw protocol client of the scenarios) against the embedded
cluster, and `kafka-txn find-hanging` / `describe` / `abort` / `kafka-transactions abort` reading them.

- A partition leader offline during a commit (replication factor 1, its node stopped) leaves PrepareCommit
  until it returns: reported with its pending partition, cleared once the node is back.
- The coordinator-side scenarios (`kafka-txn broker scenario`, emulating KAFKA-19999 and KAFKA-20090 with
  the broker's test-only fault injection): reported as their ground truth says, and cleared as an operator
  would clear them.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CTopicPartition

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.testing.raw_client import RawKafkaClient
from kafka_txn_broker.testing.scenarios import HANGING_PARTITION, ScenarioOptions, run_scenario
from kafka_txn_tools.cli import exit_codes
from tests.e2e.cli_support import (
    group_reads_to_the_end,
    hold_group,
    kafka_transactions,
    kafka_txn,
    leader_of,
    log_offsets,
    until,
)

FAST_REAPER = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": 200}
BACKDATE_MS = 30 * 60_000


def coordinator_rows(bs: str, *args: str) -> tuple[int, list[dict[str, Any]]]:
    r = kafka_txn(bs, "find-hanging", "--all", "--max-prepare-time", "0", "-o", "json", *args)
    return r.code, [row for row in r.json()["hanging"] if row["kind"] == "coordinator"]


# ---- a partition leader offline during a commit -----------------------------------------------------------
def test_a_leader_offline_during_a_commit_leaves_prepare_commit_until_it_returns(tmp_path: Path) -> None:
    with EmbeddedCluster(nodes=3, data_dir=tmp_path) as cluster:
        bs = cluster.bootstrap_servers
        cluster.create_topic("orders", 3, 1)
        coordinator = RawKafkaClient(bs).transaction_coordinator("app-1")
        leaders = {p: leader_of(bs, "orders", p) for p in range(3)}
        victim_partition = next(p for p, leader in leaders.items() if leader != coordinator)
        victim = leaders[victim_partition]
        other = next(p for p, leader in leaders.items() if leader not in (victim,))
        producer = Producer({"bootstrap.servers": bs, "transactional.id": "app-1", "log_level": 0})
        producer.init_transactions(30)
        producer.begin_transaction()
        for p in (other, victim_partition):
            producer.produce("orders", value=b"order", partition=p)
        producer.flush(30)
        hold_group(bs, "orders", victim_partition, "orders-readers")
        cluster.stop_node(victim)
        producer.commit_transaction(30)  # answered once PrepareCommit is durable; the markers come after
        live = ",".join(a for node, a in enumerate(bs.split(",")) if node != victim)

        code, rows = coordinator_rows(live, "--exit-code")
        assert code == exit_codes.PARTIAL  # a broker is down: part of the cluster could not be read
        [row] = rows
        assert (row["transactional_id"], row["state"], row["reason"]) == ("app-1", "PrepareCommit", "markers-pending")
        assert row["coordinator_id"] == coordinator and row["time_in_state_source"] == "transaction-log"
        [pending] = row["pending_partitions"]
        assert (pending["topic"], pending["partition"], pending["leader"], pending["reason"]) == (
            "orders", victim_partition, -1, "leader-offline")
        assert pending["offline_replicas"] == [victim]
        assert row["action"].startswith(f"bring broker {victim} back") and row["commands"] == []
        # Not yet a minute in PrepareCommit: the default --max-prepare-time does not report it.
        default = kafka_txn(live, "find-hanging", "--all", "-o", "json").json()["hanging"]
        assert [r for r in default if r["kind"] == "coordinator"] == []
        described = kafka_txn(live, "describe", "-t", "app-1", "-o", "json").json()["transactions"][0]
        assert [(p["partition"], p["reason"]) for p in described["pending_partitions"]] == [
            (victim_partition, "leader-offline")]

        cluster.start_node(victim)  # what its action says a person must do; no command of this tool can
        until(lambda: coordinator_rows(bs)[1] == [], "the markers to land once the leader is back")
        end, lso = log_offsets(bs, "orders", victim_partition)
        assert lso == end
        group_reads_to_the_end(bs, "orders", victim_partition, "orders-readers")  # held at 0, it moves on
        assert kafka_txn(bs, "find-hanging", "--all", "--max-prepare-time", "0", "--exit-code").code == exit_codes.OK
        state = kafka_txn(bs, "describe", "-t", "app-1", "-o", "json").json()["transactions"][0]
        assert state["state"] == "CompleteCommit" and state["pending_partitions"] is None


# ---- KAFKA-19999 emulated: the marker landed, its retries are rejected -----------------------------------
def test_marker_retry_rejected_is_reported_as_its_ground_truth_and_cleared_by_moving_the_coordinator(
        tmp_path: Path) -> None:
    with EmbeddedCluster(nodes=3, data_dir=tmp_path, config=FAST_REAPER) as cluster:
        bs = cluster.bootstrap_servers
        [result] = run_scenario("marker-retry-rejected", bs, ScenarioOptions(wait_s=20))
        [truth] = result.stuck
        assert truth.emulates == "KAFKA-19999" and "KAFKA-19999" in result.incident
        _, rows = coordinator_rows(bs)
        [row] = [r for r in rows if r["transactional_id"] == truth.transactional_id]
        assert (row["state"], row["reason"], row["producer_id"], row["producer_epoch"]) == (
            truth.state, truth.reason, truth.producer_id, truth.producer_epoch)
        assert [(f"{p['topic']}-{p['partition']}", p["reason"]) for p in row["pending_partitions"]] == [
            (truth.pending_partitions[0], truth.pending_reason)]
        assert "KAFKA-19999" in row["action"]
        # Its healthy neighbours are not reported.
        assert {r["transactional_id"] for r in rows} == {truth.transactional_id}
        # Cleared as an operator would: brokers with the fix (the fault off), then move the coordinator.
        with RawKafkaClient(bs) as raw:
            assert raw.set_broker_configs({"fault.injection": ""})[0] == 0
            coordinator = raw.transaction_coordinator(truth.transactional_id)
        cluster.stop_node(coordinator)
        cluster.start_node(coordinator)
        until(lambda: coordinator_rows(bs)[1] == [], "the new coordinator to complete the transaction")
        state = kafka_txn(bs, "describe", "-t", truth.transactional_id, "-o", "json").json()["transactions"][0]
        assert state["state"] == "CompleteCommit"


# ---- 2PC (KIP-939) ---------------------------------------------------------------------------------------
@pytest.fixture
def two_pc(tmp_path: Path) -> Iterator[tuple[str, str, int]]:
    """A prepared 2PC transaction on xa-orders-0, its batch 30 minutes old: (bootstrap, topic, start offset)."""
    config = {**FAST_REAPER, "transaction.two.phase.commit.enable": True}
    with EmbeddedCluster(nodes=1, data_dir=tmp_path, config=config) as cluster:
        bs = cluster.bootstrap_servers
        cluster.create_topic("xa-orders", 1, 1)
        with RawKafkaClient(bs) as raw:
            code, pe = raw.init_producer_id_2pc("xa-1")
            assert code == 0
            assert raw.add_partitions("xa-1", pe, "xa-orders", [0]) == 0
            old = int(time.time() * 1000) - BACKDATE_MS
            code, offset = raw.produce_transactional("xa-1", pe, "xa-orders", 0, 0, [b"prepared"], old)
            assert code == 0
        yield bs, "xa-orders", offset


def test_a_2pc_transaction_is_never_hanging_by_age_but_is_named_as_held_by_its_manager(
        two_pc: tuple[str, str, int]) -> None:
    bs, topic, offset = two_pc
    for timeout in ("15m", "0"):
        r = kafka_txn(bs, "find-hanging", "--all", "--max-transaction-timeout", timeout, "--max-prepare-time", "0",
                      "--exit-code", "-o", "json")
        assert r.code == exit_codes.OK, r.out  # not counted: its manager owns it
        [row] = r.json()["hanging"]
        assert (row["kind"], row["reason"], row["transactional_id"], row["start_offset"]) == (
            "partition", "prepared-2pc", "xa-1", offset)
        assert "external transaction manager" in row["action"]
        threshold = "" if timeout == "15m" else "--max-transaction-timeout 0ms "  # the scan's own, when not the default
        assert row["commands"] == [f"kafka-txn find-hanging --topic {topic} --partition {row['partition']} "
                                   f"{threshold}--watch --count-held --bootstrap-server {bs}"]  # a look, no write
        assert row["duration_ms"] >= BACKDATE_MS


def test_aborting_a_2pc_transaction_needs_force_and_warns_of_its_external_manager(
        two_pc: tuple[str, str, int]) -> None:
    bs, topic, offset = two_pc
    target = ["--topic", topic, "--partition", "0", "--start-offset", str(offset)]
    before = log_offsets(bs, topic, 0)
    refused = kafka_txn(bs, "abort", *target, "--yes")
    assert refused.code == exit_codes.ERROR and "external transaction manager" in refused.err
    upstream = kafka_transactions(bs, "abort", *target)
    assert upstream.code == 1 and "external transaction manager" in upstream.err and "--force" in upstream.err
    assert log_offsets(bs, topic, 0) == before  # nothing written by either front end
    forced = kafka_txn(bs, "abort", *target, "--yes", "--force", "-o", "json")
    assert forced.code == exit_codes.OK, forced.err
    assert "--force" in forced.err and "external transaction manager" in forced.err
    end, lso = log_offsets(bs, topic, 0)
    assert lso == end > before[1]


# ---- who owned the producer id, who is held back --------------------------------------------------------
def read_committed_group(bs: str, group: str, topic: str, partition: int, commit_at: int | None = None) -> None:
    """A read_committed consumer of the group that reads as far as it can (the LSO) and commits there, or
    commits `commit_at`."""
    c = Consumer({"bootstrap.servers": bs, "group.id": group, "isolation.level": "read_committed",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest", "log_level": 0})
    try:
        if commit_at is not None:
            c.commit(offsets=[CTopicPartition(topic, partition, commit_at)], asynchronous=False)
            return
        c.assign([CTopicPartition(topic, partition, 0)])
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            c.consume(100, 0.2)
            [pos] = c.position([CTopicPartition(topic, partition)])
            if pos.offset >= 0 and pos.offset == log_offsets(bs, topic, partition)[1]:
                break
        c.commit(offsets=[CTopicPartition(topic, partition, pos.offset)], asynchronous=False)
    finally:
        c.close()


def test_an_expired_id_is_named_as_the_last_owner_and_a_stalled_read_committed_group_is_listed(
        tmp_path: Path) -> None:
    from kafka_txn_broker.clock import ManualClock

    clock = ManualClock(int(time.time() * 1000))  # stamps records with "now", moves only when told
    config = {"transaction.partition.verification.enable": False, "transactional.id.expiration.ms": 3_600_000,
              "transaction.remove.expired.transaction.cleanup.interval.ms": 60_000}
    with EmbeddedCluster(nodes=1, data_dir=tmp_path, config=config, clock=clock) as cluster:
        bs = cluster.bootstrap_servers
        [result] = run_scenario("late-write-after-abort", bs, ScenarioOptions(backdate_ms=BACKDATE_MS, healthy=False))
        [truth] = result.hanging
        topic = truth.topic
        read_committed_group(bs, "orders-readers", topic, HANGING_PARTITION)
        read_committed_group(bs, "slow-readers", topic, HANGING_PARTITION, commit_at=0)
        r = kafka_txn(bs, "find-hanging", "--all", "-o", "json")
        [row] = r.json()["hanging"]
        assert row["reason"] == "transaction-not-ongoing" and row["transactional_id"] == truth.transactional_id
        assert row["last_known_transactional_id"] is None  # only for ids nobody lists any more
        end, lso = log_offsets(bs, topic, HANGING_PARTITION)
        assert [(g["group_id"], g["type"], g["committed_offset"], g["lag"]) for g in row["stalled_groups"]] == [
            ("orders-readers", "consumer", lso, end - lso)]

        clock.advance(2 * 3_600_000)  # past transactional.id.expiration.ms: the coordinator forgets the id
        cluster.tick()
        until(lambda: kafka_txn(bs, "describe", "-t", truth.transactional_id).code != exit_codes.OK,
              "the transactional id to expire")
        [row] = kafka_txn(bs, "find-hanging", "--all", "-o", "json").json()["hanging"]
        assert (row["reason"], row["transactional_id"]) == ("no-transactional-id", None)
        assert row["last_known_transactional_id"] == truth.transactional_id
        assert [g["group_id"] for g in row["stalled_groups"]] == ["orders-readers"]
        table = kafka_txn(bs, "find-hanging", "--all", "--wide").out
        assert f"(last: {truth.transactional_id})" in table and "orders-readers" in table


def test_a_read_committed_share_group_held_at_the_lso_is_listed_as_a_share_group(tmp_path: Path) -> None:
    from tests.e2e.cli_support import open_transaction
    from tests.e2e.share_support import FAST_GROUPS, poll_until, produce, set_group_configs, share_consumer

    with EmbeddedCluster(nodes=1, data_dir=tmp_path, config=FAST_GROUPS) as cluster:
        bs = cluster.bootstrap_servers
        cluster.create_topic("work", 1, 1)
        produce(bs, "work", 5, 1)
        producer = open_transaction(bs, "app", "work", [0], records=2)  # holds the LSO at 5, HW 7
        try:
            for group, level, records in (("share-rc", "read_committed", 5), ("share-ru", "read_uncommitted", 7)):
                set_group_configs(bs, group, share_auto_offset_reset="earliest", share_isolation_level=level)
                member = share_consumer(bs, group, ["work"])
                try:  # read what it may (up to the LSO for read_committed) and acknowledge it
                    assert len(poll_until([member], lambda got, n=records: len(got) >= n, timeout_s=10)) == records
                    member.commit_sync(10)
                finally:
                    member.close()
            r = kafka_txn(bs, "find-hanging", "--all", "--max-transaction-timeout", "0", "--include-late", "-o",
                          "json")
            [row] = r.json()["hanging"]
            assert (row["reason"], row["lso"], row["high_watermark"]) == ("late", 5, 7)
            # The read_uncommitted share group read past the LSO: it is not held back.
            assert [(g["group_id"], g["type"], g["committed_offset"], g["lag"]) for g in row["stalled_groups"]] == [
                ("share-rc", "share", 5, 2)]
        finally:
            producer.abort_transaction(30)


def test_a_kip848_consumer_group_held_at_the_lso_is_listed_while_its_member_runs(tmp_path: Path) -> None:
    from tests.e2e.cli_support import open_transaction
    from tests.e2e.share_support import produce

    config = {"group.consumer.heartbeat.interval.ms": 300, "group.consumer.min.heartbeat.interval.ms": 300}
    with EmbeddedCluster(nodes=1, data_dir=tmp_path, config=config) as cluster:
        bs = cluster.bootstrap_servers
        cluster.create_topic("work", 1, 1)
        produce(bs, "work", 5, 1)
        producer = open_transaction(bs, "app", "work", [0], records=2)  # holds the LSO at 5, HW 7
        member = Consumer({"bootstrap.servers": bs, "group.id": "new-protocol", "group.protocol": "consumer",
                           "isolation.level": "read_committed", "enable.auto.commit": False,
                           "auto.offset.reset": "earliest", "log_level": 0})
        try:
            member.subscribe(["work"])
            got: list[Any] = []
            deadline = time.monotonic() + 10
            while len(got) < 5 and time.monotonic() < deadline:
                got += [m for m in member.consume(10, 0.2) if m.error() is None]
            assert len(got) == 5
            member.commit(got[-1], asynchronous=False)  # at the LSO, and it stays a member
            r = kafka_txn(bs, "find-hanging", "--all", "--max-transaction-timeout", "0", "--include-late", "-o",
                          "json")
            [row] = r.json()["hanging"]
            assert [(g["group_id"], g["type"], g["committed_offset"], g["lag"]) for g in row["stalled_groups"]] == [
                ("new-protocol", "consumer", 5, 2)]
        finally:
            member.close()
            producer.abort_transaction(30)
