"""`kafka-txn dump` and `kafka-txn sweep` on real Apache Kafka.

One single-node cluster of this module's own (it is stopped and started again) holds, on one topic: idempotent
producers' state on every partition, a committed and an aborted transaction with data (the abort lands in
Kafka's `.txnindex`), transactions Kafka's own Java producer committed (transaction version 2 on 4.x), a live
open transaction, and three hanging partitions from two transactional ids (late writes after an abort,
tests/support/real_kafka/hang.py). The ground truth is what was staged, and Kafka agrees
with it: its own LSO sits at each hang's first offset.

The abort plan must name exactly the hanging partitions (never the live transaction), whether the sweep reads
- a `kafka-txn dump` of the running cluster;
- a copy of the broker's log dir taken while it runs (no producer-state snapshot covers the hangs yet: the
  segments are replayed, `__transaction_state` read from its own segments);
- the log dir after a clean shutdown, where Kafka has written its `.snapshot` files.
The plan, applied to the restarted cluster with `kafka-txn abort --plan`, then releases every hang.
"""

from __future__ import annotations

import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kafka_txn_broker.testing.raw_client import ProducerIdAndEpoch, RawKafkaClient
from kafka_txn_broker.testing.scenarios import _retry as retried
from kafka_txn_tools.cli.app import app
from kafka_txn_tools.dumps.plan import load_plan
from tests.external.real_kafka.conftest import RELEASE
from tests.external.real_kafka.test_monitor_real import offsets
from tests.support.real_kafka import KafkaCluster
from tests.support.real_kafka.hang import Hang, seed_idempotent, stage_hangs, wait_for_leaders

PARTITIONS = 6
HEALTHY, OPEN = 0, 2
Entry = tuple[str, int, int, int, int]


@pytest.fixture(scope="module")
def cluster(kafka_libs: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    with KafkaCluster(kafka_libs, tmp_path_factory.mktemp("real-kafka-sweep"), nodes=1, version=RELEASE,
                      config={"transaction.partition.verification.enable": "false"}) as c:
        yield c


def cli(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(app, list(args))
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    return r.exit_code, r.stdout, r.stderr


def transaction(client: RawKafkaClient, topic: str, txn_id: str, partition: int, commit: bool | None) -> None:
    """A well-behaved transaction with data on `partition`: committed, aborted, or (None) left open, live."""
    code, pe = retried(lambda: client.init_producer_id(txn_id, 600_000), attempts=300)  # may still load
    assert code == 0
    assert client.add_partitions(txn_id, pe, topic, [partition]) == 0
    assert client.produce_transactional(txn_id, pe, topic, partition, 0, [b"a", b"b"], _now())[0] == 0
    if commit is not None:
        assert client.end_txn(txn_id, ProducerIdAndEpoch(pe.producer_id, pe.epoch), commit) == 0


def _now() -> int:
    import time

    return int(time.time() * 1000)


def stage(cluster: KafkaCluster) -> tuple[str, list[Hang]]:
    bootstrap = cluster.bootstrap_servers
    topic = f"sweep-real-{uuid.uuid4().hex[:8]}"
    with RawKafkaClient(bootstrap) as client:
        client.create_topic(topic, PARTITIONS, 1)
        wait_for_leaders(client, topic, PARTITIONS)
    seed_idempotent(bootstrap, topic, PARTITIONS, producers=3)
    hangs = stage_hangs(bootstrap, topic, [1, 4], f"{topic}-late-a")  # also settles __transaction_state
    with RawKafkaClient(bootstrap) as client:
        transaction(client, topic, f"{topic}-committed", HEALTHY, True)
        transaction(client, topic, f"{topic}-aborted", HEALTHY, False)
        transaction(client, topic, f"{topic}-open", OPEN, None)
    hangs += stage_hangs(bootstrap, topic, [5], f"{topic}-late-b")
    java_transactions(cluster, topic)
    for h in hangs:  # Kafka agrees: its LSO is held at the hang's first offset
        assert offsets(bootstrap, topic, h.partition)[0] == h.start_offset
    return topic, hangs


def java_transactions(cluster: KafkaCluster, topic: str) -> None:
    """Kafka's own Java producer (transaction version 2 on 4.x) commits a few transactions: its coordinator
    records (flexible values with tagged fields) are in `__transaction_state` for the log-dir sweeps to read."""
    cluster.java("org.apache.kafka.tools.ProducerPerformance", "--topic", topic, "--num-records", "30",
                 "--record-size", "10", "--throughput", "-1", "--transactional-id", f"{topic}-java",
                 "--transaction-duration-ms", "50", "--producer-props",
                 f"bootstrap.servers={cluster.bootstrap_servers}", "acks=all", timeout_s=180)


def truth(hangs: list[Hang]) -> set[Entry]:
    return {(h.topic, h.partition, h.start_offset, h.producer_id, h.producer_epoch) for h in hangs}


def plan_entries(plan_path: Path) -> set[Entry]:
    plan = load_plan(plan_path)
    assert {e.reason for e in plan.entries} == {"transaction-not-ongoing"}
    return {(e.topic, e.partition, e.start_offset, e.producer_id, e.producer_epoch) for e in plan.entries}


def sweep(inputs: list[Path], out: Path, bootstrap: str) -> set[Entry]:
    code, text, err = cli("sweep", *map(str, inputs), "--out", str(out), "-b", bootstrap, "--master", "local[2]")
    assert code == 0, text + err
    return plan_entries(out / "abort-plan.yaml")


def kafka_files(tree: Path, topic: str) -> dict[str, list[Path]]:
    """Kafka's own files for the topic and the transaction state in a log-dir tree."""
    return {"snapshot": sorted(tree.rglob(f"{topic}-*/*.snapshot")),
            "txnindex": [p for p in tree.rglob(f"{topic}-*/*.txnindex") if p.stat().st_size > 0],
            "txnstate": sorted(tree.rglob("__transaction_state-*/*.log"))}


def test_dump_and_log_dir_sweeps_of_a_real_cluster_plan_exactly_its_hangs(
        cluster: KafkaCluster, spark: Any, tmp_path: Path) -> None:
    bs = cluster.bootstrap_servers
    topic, hangs = stage(cluster)
    expected = truth(hangs)
    assert len(expected) == 3

    # Live find-hanging agrees with the ground truth (this cluster holds nothing else).
    code, text, err = cli("find-hanging", "--all", "-b", bs, "-o", "plan")
    assert code == 0, err
    (tmp_path / "live.yaml").write_text(text)
    assert plan_entries(tmp_path / "live.yaml") == expected

    # 1. A dump of the running cluster.
    code, text, err = cli("dump", "--all", "--out", str(tmp_path / "dump"), "-b", bs)
    assert code == 0, text + err
    assert sweep([tmp_path / "dump"], tmp_path / "from-dump", bs) == expected

    # 2. The broker's log dir copied while it runs: the hangs are in segments only, after any snapshot.
    log_dir = cluster.nodes[1].log_dir
    live_copy = tmp_path / "live-copy" / "node-1"
    shutil.copytree(log_dir, live_copy)
    files = kafka_files(live_copy, topic)
    assert files["txnindex"] and files["txnstate"]  # Kafka's index of the aborted transaction; the coordinator log
    assert sweep([live_copy.parent], tmp_path / "from-live-copy", bs) == expected

    # 3. The log dir after a clean shutdown: Kafka has written a producer-state snapshot per partition.
    cluster.stop_node(1)
    files = kafka_files(log_dir, topic)
    assert len(files["snapshot"]) >= PARTITIONS, files
    assert sweep([log_dir], tmp_path / "from-stopped", bs) == expected

    # The plan, applied to the cluster started again, releases every hang.
    cluster.restart(1)
    plan = str(tmp_path / "from-stopped" / "abort-plan.yaml")
    for _ in range(30):
        code, text, err = cli("abort", "--plan", plan, "--yes", "-b", bs)
        if "COORDINATOR_LOAD_IN_PROGRESS" not in err:
            break  # a coordinator still loading its log after the restart: refused whole, nothing written; again
        time.sleep(1)
    assert code == 0, text + err
    for h in hangs:
        lso, hw = offsets(bs, topic, h.partition)
        assert lso == hw, (h, lso, hw)
    code, text, err = cli("find-hanging", "--all", "-b", bs, "--exit-code")
    assert code == 0, text + err
