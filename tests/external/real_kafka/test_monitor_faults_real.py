"""`kafka-txn monitor` (a child process, as production runs it) through a broker crash and a leader move on a
real 3-node Apache Kafka cluster (RF 3, min ISR 2):

- two hanging transactions (a late write after an abort, tests/support/real_kafka/hang.py) on partitions led by
  different brokers; the producer's transaction coordinator is the broker that leads the first;
- that broker is killed with -9 while the monitor scans every second: the scans go partial (never failed: two
  brokers of three answer), the findings are kept and flagged stale, /healthz stays 200 and the process runs on;
- the broker is started again on its log dir, and Kafka's own preferred leader election
  (`kafka-leader-election.sh`'s LeaderElectionCommand) moves back to it the leaders it lost, the first hang's
  partition and its coordinator's `__transaction_state` partition among them: the scans are complete again, in
  the same process, with both hangs reported as before;
- each hang's printed commands, run verbatim (plus --yes), end it; the history (`kafka-txn history -o json`) then
  holds exactly two incidents, one per hang, each ended by that audited abort, beside the partial scans it
  recorded: nothing the partial scans saw or missed opened, ended or duplicated an incident.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import subprocess
import sys
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient as CAdminClient

from kafka_txn_broker.testing.raw_client import RawKafkaClient
from kafka_txn_tools.admin.share_pending import samples
from tests.e2e.monitor_support import MonitorProcess, wait_for
from tests.e2e.test_monitor_prometheus import printed_fix, run_as_printed
from tests.support.real_kafka import KafkaCluster, UpstreamTool
from tests.support.real_kafka.hang import Hang, stage_hangs
from tests.support.real_kafka.staging import ready_topic, warm_up

PARTITIONS = 3
# kafka-leader-election.sh's class: in the tools jar since the tools moved there (3.9.2 has it), Scala's before.
LEADER_ELECTION = "org/apache/kafka/tools/LeaderElectionCommand.class"
OLD_LEADER_ELECTION = "kafka.admin.LeaderElectionCommand"


@pytest.fixture
def audit_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """One audit log for the monitor (which reads it) and the printed aborts (which write it)."""
    path = tmp_path / "audit.log"
    monkeypatch.setenv("KAFKA_TXN_AUDIT_LOG", str(path))
    yield path


def placement(bootstrap: str, topic: str, partition: int) -> tuple[int, tuple[int, ...]]:
    """(leader, ISR) of a partition as librdkafka's metadata has it."""
    admin = CAdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    meta = admin.list_topics(topic, timeout=20).topics[topic].partitions[partition]
    return meta.leader, tuple(meta.isrs)


def stage(bootstrap: str) -> tuple[list[Hang], int]:
    """Hangs on partitions 0 and 1 (led by different brokers) from a producer whose coordinator leads 0."""
    warm_up(bootstrap)
    topic = ready_topic(bootstrap, f"monkill-{uuid.uuid4().hex[:6]}", PARTITIONS, replication_factor=3)
    victim = placement(bootstrap, topic, 0)[0]
    assert placement(bootstrap, topic, 1)[0] != victim
    with RawKafkaClient(bootstrap) as client:
        txn_id = next(t for t in (f"monkill-{uuid.uuid4().hex[:8]}" for _ in range(200))
                      if client.transaction_coordinator(t) == victim)
    return stage_hangs(bootstrap, topic, [0, 1], txn_id), victim


def total(text: str, name: str, **labels: str) -> float:
    return sum(v for found, have, v in samples(text) if found == name and all(have.get(k) == x for k, x in
                                                                             labels.items()))


def topic_rows(doc: dict[str, Any] | None, topic: str) -> list[dict[str, Any]]:
    return [r for r in (doc or {}).get("hanging", []) if r.get("topic") == topic]


def identities(rows: list[dict[str, Any]]) -> list[tuple[int, int, int]]:
    return sorted((r["partition"], r["producer_id"], r["start_offset"]) for r in rows)


def history_incidents(history: Path, topic: str) -> list[dict[str, Any]]:
    """`kafka-txn history -o json`, as an operator reads the file afterwards: this topic's incidents."""
    done = subprocess.run([sys.executable, "-m", "kafka_txn_tools", "history", "--history", str(history),
                           "--since", "1d", "-o", "json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return [i for i in json.loads(done.stdout)["incidents"] if i["topic"] == topic]


def scan_results(history: Path) -> list[str]:
    with contextlib.closing(sqlite3.connect(history, timeout=30)) as db:
        return [r[0] for r in db.execute("SELECT result FROM scans ORDER BY time_ms")]


def leader_election(libs: Path) -> UpstreamTool:
    """The release's kafka-leader-election.sh, wherever its class is."""
    for jar in libs.glob("kafka-tools-*.jar"):
        with zipfile.ZipFile(jar) as z:
            if LEADER_ELECTION in z.namelist():
                return UpstreamTool(libs, main_class=LEADER_ELECTION.removesuffix(".class").replace("/", "."))
    return UpstreamTool(libs, main_class=OLD_LEADER_ELECTION)


def move_leaders_back(libs: Path, bootstrap: str, topic: str, victim: int) -> None:
    """Once the restarted broker is back in the ISR, a preferred leader election over every partition: it leads
    again what it led (partition 0 of `topic`, its `__transaction_state` partitions)."""
    wait_for("the restarted broker back in the ISR", lambda: victim in placement(bootstrap, topic, 0)[1],
             timeout=120, every=0.5)
    election = leader_election(libs)

    def moved() -> bool:
        election.run("--bootstrap-server", bootstrap, "--election-type", "PREFERRED", "--all-topic-partitions")
        return placement(bootstrap, topic, 0)[0] == victim

    wait_for("partition 0's leader back on the restarted broker", moved, timeout=120, every=1)


def test_a_broker_killed_with_minus_9_and_a_leader_moved_while_the_monitor_scans(
        real_kafka3: KafkaCluster, kafka_libs: Path, tmp_path: Path, audit_log: Path) -> None:
    cluster, bs = real_kafka3, real_kafka3.bootstrap_servers
    hangs, victim = stage(bs)
    topic = hangs[0].topic
    history = tmp_path / "history.db"
    with MonitorProcess(bs, history, "--timeout", "3s") as monitor:
        def metrics() -> str:
            return monitor.get("/metrics")[1]

        def both_seen() -> bool:
            return identities(topic_rows(monitor.findings(), topic)) == identities([h.__dict__ for h in hangs])

        wait_for("both hangs", both_seen, timeout=90)
        assert total(metrics(), "kafka_txn_scans_total", result="partial") == 0

        cluster.kill(victim)  # the first hang's leader and the producer's coordinator
        def partial() -> str | None:
            text = metrics()
            return text if total(text, "kafka_txn_scan_partial") == 1 else None

        text = wait_for("a partial scan", partial, timeout=90)
        assert total(text, "kafka_txn_scan_success") == 1 and total(text, "kafka_txn_scan_stale") == 1
        assert total(text, "kafka_txn_findings", kind="partition", reason="transaction-not-ongoing") == 2
        assert total(text, "kafka_txn_scan_errors_total", cause="BROKER_UNREACHABLE") >= 1
        status, body = monitor.get("/healthz")
        assert status == 200 and json.loads(body)["last_scan"] == "partial" and json.loads(body)["stale"], body

        cluster.restart(victim)
        move_leaders_back(kafka_libs, bs, topic, victim)
        complete_after_move = total(metrics(), "kafka_txn_scans_total", result="complete")

        def recovered() -> str | None:
            text = metrics()
            return text if (total(text, "kafka_txn_scans_total", result="complete") >= complete_after_move + 2
                            and total(text, "kafka_txn_scan_stale") == 0 and both_seen()) else None

        text = wait_for("complete scans with both hangs after the move", recovered, timeout=120)
        assert total(text, "kafka_txn_scan_success") == 1 and total(text, "kafka_txn_stale_findings") == 0

        for row in topic_rows(monitor.findings(), topic):
            for argv in printed_fix(row):
                done = run_as_printed(argv, bs)
                assert done.returncode == 0, done.stdout + done.stderr
        wait_for("the hangs gone", lambda: (doc := monitor.findings()) is not None and not doc["partial"]
                 and not topic_rows(doc, topic), timeout=90)
        assert monitor.proc is not None and monitor.proc.poll() is None
        code, log = monitor.terminate()
    assert code == 0 and "Traceback" not in log, log
    results = scan_results(history)
    assert "partial" in results and "failed" not in results, log  # one broker down is not the whole cluster

    incidents = history_incidents(history, topic)
    assert sorted((i["partition"], i["producer_id"]) for i in incidents) == sorted(
        (h.partition, h.producer_id) for h in hangs), incidents  # each hang once: no duplicate, none missing
    assert all(i["resolution"] == "audited write" and i["resolved_command"].startswith("kafka-txn abort")
               for i in incidents), incidents
