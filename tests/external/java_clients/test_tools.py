"""Kafka's own tools, as operators run them, against the embedded broker: each test checks what the tool did
(records read back, tables parsed, the broker's state after) rather than only its exit code."""

from __future__ import annotations

import re

import pytest
from confluent_kafka import IsolationLevel, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from kafka_txn_broker.embedded import EmbeddedCluster
from tests.external.java_clients.tools import JavaTools, append_marks, major, table

END = "end-of-partition"


def ended(values: list[str]) -> bool:
    return bool(values) and values[-1] == END


def offsets(bootstrap: str, topic: str, partition: int) -> tuple[int, int]:
    """(last stable offset, high watermark) of a partition, as ListOffsets answers them."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    tp = TopicPartition(topic, partition)
    ends = [admin.list_offsets({tp: OffsetSpec.latest()}, isolation_level=level)[tp].result(30).offset
            for level in (IsolationLevel.READ_COMMITTED, IsolationLevel.READ_UNCOMMITTED)]
    return ends[0], ends[1]


def test_topic_and_config_commands(java: JavaTools) -> None:
    topic = f"tools-{java.release}"
    java.run("topics", "--create", "--topic", topic, "--partitions", "3", "--replication-factor", "1",
             "--config", "retention.ms=600000")
    described = java.run("topics", "--describe", "--topic", topic).stdout
    assert "PartitionCount: 3" in described and "retention.ms=600000" in described, described
    java.run("topics", "--alter", "--topic", topic, "--partitions", "4")
    java.run("configs", "--alter", "--entity-type", "topics", "--entity-name", topic,
             "--add-config", "retention.ms=12345,max.message.bytes=200000")
    configs = java.run("configs", "--describe", "--entity-type", "topics", "--entity-name", topic).stdout
    assert re.search(r"retention.ms=12345 sensitive=false", configs), configs
    assert "max.message.bytes=200000" in configs, configs
    java.run("configs", "--alter", "--entity-type", "topics", "--entity-name", topic,
             "--delete-config", "retention.ms")
    described = java.run("topics", "--describe", "--topic", topic).stdout
    assert "PartitionCount: 4" in described and "retention.ms" not in described, described
    assert "max.message.bytes=200000" in described
    java.run("topics", "--delete", "--topic", topic)
    assert topic not in java.run("topics", "--list").stdout.split()


@pytest.fixture(scope="module")
def perf_topic(java: JavaTools) -> str:
    """3,000 records that ProducerPerformance wrote in transactions of 100 ms each (3 partitions)."""
    topic = f"perf-{java.release}"
    java.run("topics", "--create", "--topic", topic, "--partitions", "3", "--replication-factor", "1")
    perf = java.run("producer-perf", "--topic", topic, "--num-records", "3000", "--record-size", "64",
                    "--throughput", "-1", java.props("producer-perf"), f"bootstrap.servers={java.bootstrap}",
                    "--transactional-id", f"perf-{java.release}", "--transaction-duration-ms", "100", check=False)
    assert perf.returncode == 0 and "3000 records sent" in perf.stdout, perf.stdout + perf.stderr
    return topic


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_transactional_producer_performance_read_committed_by_a_group(java: JavaTools, perf_topic: str,
                                                                      protocol: str) -> None:
    """A read_committed console consumer in a group of either protocol reads every record ProducerPerformance
    committed, and the group tools see its committed offsets."""
    group = f"g-{protocol}-{java.release}"
    lines = java.consume(perf_topic, "--group", group, "--from-beginning", "--max-messages", "3000",
                         java.props("console-consumer"), f"group.protocol={protocol}")
    assert len(lines) == 3000

    described = java.run("consumer-groups", "--describe", "--group", group)
    rows = table(described.stdout)
    assert {r["TOPIC"] for r in rows} == {perf_topic} and len(rows) == 3, described.stdout + described.stderr
    # Committed at the last record read; at most the transaction's commit marker may follow it.
    assert all(int(r["LAG"]) <= 1 for r in rows) and sum(int(r["CURRENT-OFFSET"]) for r in rows) >= 3000, rows
    reset = java.run("consumer-groups", "--reset-offsets", "--group", group, "--topic", perf_topic,
                     "--to-earliest", "--execute").stdout
    # (partition, new offset) pairs; 3.9's table has no line breaks between its rows.
    assert sorted(re.findall(rf"{perf_topic}\s+(\d+)\s+(\d+)", reset)) == [("0", "0"), ("1", "0"), ("2", "0")]
    rows = table(java.run("consumer-groups", "--describe", "--group", group).stdout)
    assert sum(int(r["LAG"]) for r in rows) >= 3000, rows
    java.run("consumer-groups", "--delete", "--group", group)
    assert group not in java.run("consumer-groups", "--list").stdout.split()

    listed = {r["TransactionalId"]: r for r in table(java.run("transactions", "list").stdout)}
    assert listed[f"perf-{java.release}"]["TransactionState"] == "CompleteCommit"


def test_console_producer_then_consumer_with_keys(java: JavaTools) -> None:
    topic = f"console-{java.release}"
    lines = [f"k{i}:v{i}" for i in range(50)]
    reader, formatter = java.line_props("console-producer"), java.line_props("console-consumer")
    java.run("console-producer", "--topic", topic, reader, "parse.key=true", reader, "key.separator=:",
             stdin="\n".join(lines) + "\n")
    read = java.consume(topic, "--from-beginning", formatter, "print.key=true", formatter, "key.separator=:",
                        "--max-messages", "50", isolation="read_uncommitted")
    assert sorted(read) == sorted(lines)


def test_upstream_runbook_for_a_hanging_transaction(java: JavaTools, broker: EmbeddedCluster) -> None:
    """Stage KAFKA-14402's late write, then clear it with upstream's own runbook: find-hanging, describe-
    producers, abort; the partition's last stable offset moves to its end."""
    from kafka_txn_broker.testing.scenarios import ScenarioOptions, run_scenario

    [result] = run_scenario("late-write-after-abort", broker.bootstrap_servers,
                          ScenarioOptions(topic_prefix=f"runbook-{java.release}", backdate_ms=30 * 60_000))
    truth = result.hanging[0]
    hanging = table(java.run("transactions", "find-hanging", "--broker-id", "0").stdout)
    mine = [r for r in hanging if r["Topic"] == truth.topic]
    assert [(int(r["Partition"]), int(r["ProducerId"]), int(r["StartOffset"])) for r in mine] == \
        [(truth.partition, truth.producer_id, truth.start_offset)]
    producers = table(java.run("transactions", "describe-producers", "--topic", truth.topic, "--partition",
                               str(truth.partition)).stdout)
    assert [r["CurrentTransactionStartOffset"] for r in producers if int(r["ProducerId"]) == truth.producer_id] \
        == [str(truth.start_offset)]
    lso, end = offsets(broker.bootstrap_servers, truth.topic, truth.partition)
    assert lso == truth.start_offset < end

    # The healthy partition: read_committed sees the committed transaction, never the aborted one. Each read
    # ends at a mark appended after them (no transaction is open there, so read_committed reaches it too).
    append_marks(broker.bootstrap_servers, truth.topic, {0: END})
    committed = java.consume_until(truth.topic, ended, "--partition", "0", "--offset", "earliest")[:-1]
    everything = java.consume_until(truth.topic, ended, "--partition", "0", "--offset", "earliest",
                                    isolation="read_uncommitted")[:-1]
    aborted = [v for v in everything if v not in committed]
    assert committed and aborted and all(v.startswith("aborted") for v in aborted), (committed, everything)

    java.run("transactions", "abort", "--topic", truth.topic, "--partition", str(truth.partition),
             "--start-offset", str(truth.start_offset))
    lso, end = offsets(broker.bootstrap_servers, truth.topic, truth.partition)
    assert lso == end  # the abort marker is the last record; nothing holds the partition back
    assert not [r for r in table(java.run("transactions", "find-hanging", "--broker-id", "0").stdout)
                if r["Topic"] == truth.topic]

    described = table(java.run("transactions", "describe", "--transactional-id", truth.transactional_id).stdout)
    assert described[0]["TransactionState"] == "CompleteAbort"
    if major(java.release) >= 4:  # KIP-939's force-terminate, from 4.1: the open transaction of the scenario
        open_txn = next(h for h in result.healthy if h.state == "Ongoing")
        java.run("transactions", "forceTerminateTransaction", "--transactionalId", open_txn.transactional_id)
        state = table(java.run("transactions", "describe", "--transactional-id", open_txn.transactional_id).stdout)
        # Aborted, then (the admin client retries its InitProducerId) fenced with a new epoch: no open transaction.
        assert state[0]["TransactionState"] in ("CompleteAbort", "Empty"), state
        assert int(state[0]["ProducerEpoch"]) > 0
        lso, end = offsets(broker.bootstrap_servers, open_txn.topic, open_txn.partition)
        assert lso == end


def test_acl_command_denies_and_allows(java: JavaTools) -> None:
    topic = f"secret-{java.release}"
    java.run("console-producer", "--topic", topic, stdin="hello\n")
    acl = ["--deny-principal", "User:ANONYMOUS", "--operation", "Read", "--topic", topic]
    java.run("acls", "--add", *acl)
    listed = java.run("acls", "--list", "--topic", topic).stdout
    assert "principal=User:ANONYMOUS, host=*, operation=READ, permissionType=DENY" in listed, listed
    denied = java.run("console-consumer", "--topic", topic, "--from-beginning", "--timeout-ms", "8000", check=False)
    assert "TopicAuthorizationException" in denied.stderr and denied.stdout == "", denied.stderr
    java.run("acls", "--remove", "--force", *acl)
    assert "DENY" not in java.run("acls", "--list", "--topic", topic).stdout
    assert java.consume(topic, "--from-beginning", "--max-messages", "1") == ["hello"]


def test_share_group_tools(java: JavaTools) -> None:
    if major(java.release) < 4:
        pytest.xfail(f"Apache Kafka {java.release} has no share groups (KIP-932 is production-ready from 4.x)")
    topic, group = f"share-{java.release}", f"sg-{java.release}"
    java.run("topics", "--create", "--topic", topic, "--partitions", "2", "--replication-factor", "1")
    java.run("console-producer", "--topic", topic, stdin="".join(f"{i}\n" for i in range(20)))
    java.run("configs", "--alter", "--entity-type", "groups", "--entity-name", group,
             "--add-config", "share.auto.offset.reset=earliest")
    read = java.run("console-share-consumer", "--topic", topic, "--group", group, "--max-messages", "20",
                    "--timeout-ms", "30000")
    assert sorted(read.stdout.split(), key=int) == [str(i) for i in range(20)]
    assert group in java.run("share-groups", "--list").stdout.split()
    rows = table(java.run("share-groups", "--describe", "--group", group).stdout)
    assert sum(int(r["START-OFFSET"]) for r in rows) == 20 and all(r["LAG"] == "0" for r in rows), rows
    state = table(java.run("share-groups", "--describe", "--group", group, "--state").stdout)
    assert state[0]["STATE"] == "Empty"
    java.run("share-groups", "--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute")
    rows = table(java.run("share-groups", "--describe", "--group", group).stdout)
    assert sum(int(r["LAG"]) for r in rows) == 20, rows
