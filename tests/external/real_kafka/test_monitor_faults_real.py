"""`kafka-txn monitor` (a child process, as production runs it) through a broker crash and a leader move on a
real 3-node Apache Kafka cluster (RF 3, min ISR 2):

- two hanging transactions (a late write after an abort, tests/support/real_kafka/hang.py) on partitions led by
  different brokers; the producer's transaction coordinator is the broker that leads the first;
- that broker is killed with -9 while the monitor scans every second: the scans go partial (never failed: two
  brokers of three answer), the findings are kept and flagged stale, /healthz stays 200 and the process runs on;
- the broker is started again on its log dir, and a preferred leader election (ElectLeaders, sent by librdkafka
  as kafka-leader-election.sh sends it) moves back to it the leaders it lost, the first hang's partition among
  them: the scans are complete again, in the same process, with both hangs reported as before;
- each hang's printed commands, run verbatim (plus --yes), end it; the history file (read through the tool's
  history package, as `kafka-txn history` reads it) then holds exactly two incidents, one per hang, each ended
  by that audited abort, beside the partial scans it recorded and no failed one: nothing the partial scans saw or
  missed opened, ended or duplicated an incident.
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import ElectionType, KafkaException
from confluent_kafka.admin import AdminClient as CAdminClient

from kafka_txn_broker.testing.raw_client import RawKafkaClient
from kafka_txn_tools.admin.share_pending import samples
from kafka_txn_tools.history.store import HistoryStore
from tests.e2e.monitor_support import MonitorProcess, wait_for
from tests.e2e.test_monitor_prometheus import printed_fix, run_as_printed
from tests.support.real_kafka import KafkaCluster
from tests.support.real_kafka.hang import Hang, stage_hangs
from tests.support.real_kafka.staging import ready_topic, warm_up

PARTITIONS = 3


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
    return stage_hangs(bootstrap, topic, [0, 1], coordinated_by(bootstrap, victim)), victim


def coordinated_by(bootstrap: str, broker: int, seconds: float = 90.0) -> str:
    """A transactional id whose coordinator is `broker`. The folder's cluster: an earlier test's restart may have
    left the broker leading none of `__transaction_state` (a coordinator of nothing), and a preferred election
    gives its partitions back only once it has rejoined their in-sync replicas: elect until it leads one."""
    deadline = time.monotonic() + seconds
    while True:
        preferred_leaders(bootstrap)
        with RawKafkaClient(bootstrap) as client:
            found = next((t for t in (f"monkill-{uuid.uuid4().hex[:8]}" for _ in range(200))
                          if client.transaction_coordinator(t) == broker), None)
        if found is not None:
            return found
        assert time.monotonic() < deadline, f"broker {broker} never led a partition of __transaction_state again"
        time.sleep(1)


def preferred_leaders(bootstrap: str) -> None:
    """A preferred leader election over every partition (librdkafka's ElectLeaders): each broker leads again
    what it was assigned to lead."""
    admin = CAdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    with contextlib.suppress(KafkaException):  # partitions already led by their preferred replica
        admin.elect_leaders(ElectionType.PREFERRED, None).result(timeout=60)


def total(text: str, name: str, **labels: str) -> float:
    return sum(v for found, have, v in samples(text) if found == name and all(have.get(k) == x for k, x in
                                                                             labels.items()))


def topic_rows(doc: dict[str, Any] | None, topic: str) -> list[dict[str, Any]]:
    return [r for r in (doc or {}).get("hanging", []) if r.get("topic") == topic]


def identities(rows: list[dict[str, Any]]) -> list[tuple[int, int, int]]:
    return sorted((r["partition"], r["producer_id"], r["start_offset"]) for r in rows)


def recorded(history: Path, topic: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The history file read through the tool's history package: this topic's incidents, and every scan's
    result."""
    with HistoryStore(history) as store:
        incidents = [i.to_row() for i in store.incidents(0) if i.topic == topic]
        return incidents, [scan[3] for scan in store.all_scans()]


def move_leaders_back(bootstrap: str, topic: str, victim: int) -> None:
    """Once the restarted broker is back in the ISR, a preferred leader election over every partition (librdkafka's
    ElectLeaders, the request kafka-leader-election.sh sends): it leads again what it led (partition 0 of
    `topic`, its `__transaction_state` partitions)."""
    wait_for("the restarted broker back in the ISR", lambda: victim in placement(bootstrap, topic, 0)[1],
             timeout=120, every=0.5)
    admin = CAdminClient({"bootstrap.servers": bootstrap, "log_level": 0})

    def moved() -> bool:
        with contextlib.suppress(KafkaException):  # partitions already led by their preferred replica
            admin.elect_leaders(ElectionType.PREFERRED, None).result(timeout=60)
        return placement(bootstrap, topic, 0)[0] == victim

    wait_for("partition 0's leader back on the restarted broker", moved, timeout=120, every=1)


def test_a_broker_killed_with_minus_9_and_a_leader_moved_while_the_monitor_scans(
        real_kafka3: KafkaCluster, tmp_path: Path, audit_log: Path) -> None:
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
        move_leaders_back(bs, topic, victim)
        complete_after_move = total(metrics(), "kafka_txn_scans_total", result="complete")

        def recovered() -> str | None:
            text = metrics()
            return text if (total(text, "kafka_txn_scans_total", result="complete") >= complete_after_move + 2
                            and total(text, "kafka_txn_scan_stale") == 0 and both_seen()) else None

        text = wait_for("complete scans with both hangs after the move", recovered, timeout=120)
        assert total(text, "kafka_txn_scan_success") == 1 and total(text, "kafka_txn_stale_findings") == 0

        with ThreadPoolExecutor() as pool:  # each hang's commands in order, the two hangs side by side
            for runs in pool.map(lambda row: [run_as_printed(argv, bs) for argv in printed_fix(row)],
                                 topic_rows(monitor.findings(), topic)):
                assert all(done.returncode == 0 for done in runs), [done.stdout + done.stderr for done in runs]
        wait_for("the hangs gone", lambda: (doc := monitor.findings()) is not None and not doc["partial"]
                 and not topic_rows(doc, topic), timeout=90)
        assert monitor.proc is not None and monitor.proc.poll() is None
        code, log = monitor.terminate()
    assert code == 0 and "Traceback" not in log, log
    incidents, results = recorded(history, topic)
    assert "partial" in results and "failed" not in results, log  # one broker down is not the whole cluster
    assert sorted((i["partition"], i["producer_id"]) for i in incidents) == sorted(
        (h.partition, h.producer_id) for h in hangs), incidents  # each hang once: no duplicate, none missing
    ended = [(i["partition"], i["resolution"], i["resolved_command"]) for i in incidents]
    assert all(how == "audited write" and str(command).startswith("kafka-txn abort") for _, how, command in ended), (
        ended, audit_log.read_text() if audit_log.exists() else "no audit log", log)
