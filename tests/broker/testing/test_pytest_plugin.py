"""The pytest11 plugin's `kafka_cluster` fixture works for anyone's tests."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition


@pytest.mark.kafka_config({"num.partitions": 2, "default.replication.factor": 3})
def test_fixture_gives_a_working_cluster(kafka_cluster) -> None:
    p = Producer({"bootstrap.servers": kafka_cluster.bootstrap_servers})
    p.produce("plugin-topic", value=b"hello", partition=1)
    assert p.flush(30) == 0
    c = Consumer({"bootstrap.servers": kafka_cluster.bootstrap_servers, "group.id": "g",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.assign([TopicPartition("plugin-topic", 1, 0)])
    msg = None
    for _ in range(40):
        msg = c.poll(0.5)
        if msg is not None and msg.error() is None:
            break
    c.close()
    assert msg is not None and msg.value() == b"hello"
    topic = kafka_cluster.cluster.metadata.topics["plugin-topic"]
    assert len(topic.partitions) == 2 and len(topic.partitions[0].replicas) == 3


USER_TEST = '''
def test_uses_the_fixture(kafka_cluster):
    assert kafka_cluster.bootstrap_servers.count(",") == 0
'''


def test_a_users_test_run_shows_no_warning(tmp_path) -> None:
    # A user's own test file, in a folder of its own, run as a user runs pytest, with deprecations as errors both
    # for the interpreter (imports before pytest's capture) and inside pytest: it passes and reports no warning.
    import re
    import subprocess
    import sys

    (tmp_path / "test_user.py").write_text(USER_TEST)
    done = subprocess.run(
        [sys.executable, "-W", "error::DeprecationWarning", "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "-W", "error::DeprecationWarning", "--kafka-nodes", "1", "test_user.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    summary = done.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"1 passed in [\d.]+s", summary), done.stdout[-3000:]
    assert "warning" not in (done.stdout + done.stderr).lower()
