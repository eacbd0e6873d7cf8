"""`kafka-txn monitor` watching real Apache Kafka: a hanging transaction staged on the JVM
broker (a late write after an abort, tests/support/real_kafka/hang.py) shows in the monitor's metrics for that
partition, and the finding's printed commands, run verbatim (plus --yes), clear it: the metrics drop it and
librdkafka's read_committed view of the partition reaches its high watermark again.

The session's cluster is shared with other modules' tests, so every check names this test's own topic.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as CTopicPartition

from kafka_txn_broker.testing.raw_client import RawKafkaClient
from kafka_txn_tools.admin.share_pending import samples
from tests.e2e.monitor_support import MonitorProcess, wait_for
from tests.e2e.test_monitor_prometheus import printed_fix, run_as_printed
from tests.support.real_kafka import KafkaCluster
from tests.support.real_kafka.hang import seed_idempotent, stage_hangs, wait_for_leaders

PARTITIONS = 3
HANGING = 1


def offsets(bootstrap: str, topic: str, partition: int) -> tuple[int, int]:
    """(LSO, high watermark) as librdkafka reads them: the read_committed end and the read_uncommitted end."""
    ends = []
    for isolation in ("read_committed", "read_uncommitted"):
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "isolation.level": isolation,
                      "log_level": 0})
        try:
            ends.append(c.get_watermark_offsets(CTopicPartition(topic, partition), timeout=30)[1])
        finally:
            c.close()
    return ends[0], ends[1]


def topic_samples(text: str, name: str, topic: str) -> dict[int, float]:
    """partition -> value of metric `name`'s samples labelled with `topic`."""
    return {int(labels["partition"]): value for found, labels, value in samples(text)
            if found == name and labels.get("topic") == topic}


def test_the_monitor_shows_a_real_hang_and_its_printed_fix_clears_it(real_kafka: KafkaCluster,
                                                                       tmp_path: Path) -> None:
    bs = real_kafka.bootstrap_servers
    topic = f"monitor-real-{uuid.uuid4().hex[:8]}"
    with RawKafkaClient(bs) as client:
        client.create_topic(topic, PARTITIONS, 1)
        wait_for_leaders(client, topic, PARTITIONS)
    seed_idempotent(bs, topic, PARTITIONS, producers=2)
    [hang] = stage_hangs(bs, topic, [HANGING], f"{topic}-late")
    lso, hw = offsets(bs, topic, HANGING)
    assert lso == hang.start_offset < hw  # Kafka itself holds the partition back

    with MonitorProcess(bs, tmp_path / "history.db") as monitor:
        def held() -> str | None:
            text = monitor.get("/metrics")[1]
            return text if topic_samples(text, "kafka_txn_finding_age_seconds", topic) else None

        text = wait_for("the monitor's metric for the real hang", held, timeout=90)
        assert list(topic_samples(text, "kafka_txn_finding_age_seconds", topic)) == [HANGING]
        assert topic_samples(text, "kafka_txn_partition_lso_lag_records", topic) == {HANGING: hw - lso}
        age = next(v for name, labels, v in samples(text) if name == "kafka_txn_finding_age_seconds"
                   and labels.get("topic") == topic)
        assert age >= 29 * 60  # the late write's CreateTime, 30 minutes back
        doc = monitor.findings()
        assert doc is not None
        [row] = [r for r in doc["hanging"] if r["topic"] == topic]
        assert (row["partition"], row["producer_id"], row["start_offset"], row["transactional_id"]) == (
            HANGING, hang.producer_id, hang.start_offset, hang.transactional_id)
        assert row["reason"] == "transaction-not-ongoing"  # the coordinator holds the id as CompleteAbort

        for argv in printed_fix(row):
            done = run_as_printed(argv, bs)
            assert done.returncode == 0, done.stdout + done.stderr

        def cleared() -> str | None:
            text = monitor.get("/metrics")[1]
            gone = not topic_samples(text, "kafka_txn_finding_age_seconds", topic)
            return text if gone and not topic_samples(text, "kafka_txn_partition_lso_lag_records", topic) else None

        wait_for("the metric to clear after the printed fix", cleared, timeout=90)
        code, log = monitor.terminate()
    assert code == 0 and "Traceback" not in log
    lso, hw = offsets(bs, topic, HANGING)
    assert lso == hw  # the abort marker is the last record: nothing is held back any more
