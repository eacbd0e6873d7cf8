"""Real hanging transactions (kafka_txn_broker.testing.scenarios) among healthy ones: find-hanging reports exactly
the hanging ones, abort unblocks a stalled read_committed consumer, and no healthy transaction is touched.

The cluster runs without transaction verification (as Kafka before 3.6), the only way the incidents
happen. Scenario batches are backdated 30 minutes, so they are "late" without waiting.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
import yaml
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as CTopicPartition

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.testing.scenarios import HANGING_PARTITION, ScenarioOptions, ScenarioResult, run_scenario
from kafka_txn_tools.admin import findings
from kafka_txn_tools.cli import exit_codes
from tests.e2e.cli_support import (
    ZOMBIE_TIMEOUT_MS,
    invoke_printed,
    kafka_transactions,
    kafka_txn,
    log_offsets,
    open_transaction,
)

BACKDATE_MS = 30 * 60_000
CONFIG = {"transaction.partition.verification.enable": False,
          "transaction.abort.timed.out.transaction.cleanup.interval.ms": 200}


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(nodes=3, data_dir=tmp_path / "kafka", config=CONFIG) as c:
        yield c


def scenarios(bs: str) -> list[ScenarioResult]:
    return run_scenario("partition-side", bs, ScenarioOptions(backdate_ms=BACKDATE_MS,
                                                              zombie_timeout_ms=ZOMBIE_TIMEOUT_MS, wait_s=30))


def truth(results: list[ScenarioResult]) -> set[tuple[str, int, int, int]]:
    return {(h.topic, h.partition, h.producer_id, h.start_offset) for r in results for h in r.hanging}


def found(rows: list[dict]) -> set[tuple[str, int, int, int]]:
    return {(h["topic"], h["partition"], h["producer_id"], h["start_offset"]) for h in rows}


def committed_after_hang(bs: str, topic: str) -> None:
    """Healthy committed records behind the hanging transaction: invisible to read_committed while it hangs."""
    producer = open_transaction(bs, f"{topic}-after", topic, [HANGING_PARTITION], records=3)
    producer.commit_transaction(30)


def read_committed(bs: str, topic: str, timeout_s: float = 60.0) -> list[bytes]:
    """The values a read_committed consumer gets from the hanging partition: it reads until its position
    reaches the partition's last stable offset (ListOffsets', when the read starts), so a stalled partition
    and a resumed one both end the read as soon as it is complete, not after a fixed time."""
    _end, lso = log_offsets(bs, topic, HANGING_PARTITION)
    tp = CTopicPartition(topic, HANGING_PARTITION, 0)
    c = Consumer({"bootstrap.servers": bs, "group.id": "stall-check", "isolation.level": "read_committed",
                  "enable.auto.commit": False, "log_level": 0})
    c.assign([tp])
    values: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    try:
        while lso > 0:
            values += [m.value() for m in c.consume(100, 0.2) if m.error() is None]
            [position] = c.position([tp])
            if position.offset >= lso:
                break
            assert time.monotonic() < deadline, f"read_committed of {topic}: at {position.offset}, LSO {lso}"
    finally:
        c.close()
    return values


def watch_first_round(command: str, monkeypatch: pytest.MonkeyPatch) -> tuple[str, int]:
    """Run a printed watch command as printed, interrupted (as Ctrl-C would) at its first pause: its first
    event and the producer it names."""
    def interrupt(_seconds: float) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("kafka_txn_tools.cli.commands.find_hanging.watch_sleep", interrupt)
    r = invoke_printed(command)
    assert r.code == 130, (r.out, r.err)  # interrupted, not clear: it saw the transaction
    first = json.loads(r.out.splitlines()[0])
    return first["event"], first["row"]["producer_id"]


def test_find_hanging_reports_exactly_the_hanging_ones_and_abort_unblocks_consumers(
    cluster: EmbeddedCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    bs = cluster.bootstrap_servers
    results = scenarios(bs)
    expected = truth(results)
    assert len(expected) == 3
    topic = results[0].topics[0]
    committed_after_hang(bs, topic)
    assert not any(v.endswith(b"-after-0") for v in read_committed(bs, topic))  # stalled by the hang

    # Exactly the hanging ones, with the default timeout and with every open transaction a candidate.
    healthy_open = {(r.topics[0], h.producer_id) for r in results for h in r.healthy if h.state == "Ongoing"}
    for timeout in ("15m", "0"):
        r = kafka_txn(bs, "find-hanging", "--all", "--max-transaction-timeout", timeout, "--exit-code", "-o", "json")
        assert r.code == exit_codes.FOUND, r.err
        doc = r.json()
        jsonschema.validate(doc, findings.schema())  # the document users validate against (admin/findings.py)
        rows = [h for h in doc["hanging"] if h["reason"] != "late"]
        assert found(rows) == expected and doc["errors"] == []
        # With every open transaction a candidate, the healthy open ones are named too: late but live, nothing
        # to run, and not what --exit-code counts.
        live = {(h["topic"], h["producer_id"]) for h in doc["hanging"] if h["reason"] == "late"}
        assert live == (healthy_open if timeout == "0" else set())
        # A look that waits, no write; with the scan's own threshold where it was not the default, so that the
        # watch sees the row the scan saw.
        threshold = "" if timeout == "15m" else "--max-transaction-timeout 0ms "
        assert all(h["commands"] == [f"kafka-txn find-hanging --topic {h['topic']} --partition {h['partition']} "
                                    f"{threshold}--watch --count-held --bootstrap-server {bs}"]
                   for h in doc["hanging"] if h["reason"] == "late")
    young = next(h for h in doc["hanging"] if h["reason"] == "late")
    assert watch_first_round(young["commands"][0], monkeypatch) == ("appeared", young["producer_id"])
    assert {h["reason"] for h in rows} <= {"transaction-not-ongoing", "partition-not-in-transaction",
                                           "epoch-mismatch", "no-transactional-id", "transactional-id-not-found"}
    for h in rows:
        assert h["lso"] == h["start_offset"] < h["high_watermark"] and h["brokers"] == [0, 1, 2]
        assert h["transactional_id"] is not None and h["duration_ms"] >= BACKDATE_MS

    # Abort the first by hand: dry run, then for real; its consumer resumes.
    first = next(h for h in rows if h["topic"] == topic)
    args = ["abort", "--topic", topic, "--partition", str(HANGING_PARTITION),
            "--start-offset", str(first["start_offset"])]
    dry = kafka_txn(bs, *args, "--dry-run", "-o", "json")
    assert dry.code == 0 and dry.json()["aborts"][0]["result"] == "dry-run", dry.err
    done = kafka_txn(bs, *args, "--yes", "-o", "json")
    assert done.code == 0, done.err
    row = done.json()["aborts"][0]
    assert row["result"] == "aborted" and row["lso_after"] == row["high_watermark_after"] > row["lso_before"]
    assert b"%s-after-2" % topic.encode() in read_committed(bs, topic)
    assert kafka_txn(bs, *args, "--yes").code == exit_codes.ALREADY_DONE

    # The rest through a plan, as a scheduled sweep would.
    plan_text = kafka_txn(bs, "find-hanging", "--all", "-o", "plan").out
    plan = yaml.safe_load(plan_text)
    aborted = (topic, HANGING_PARTITION, first["producer_id"], first["start_offset"])
    assert found(plan["entries"]) == expected - {aborted}
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(plan_text)
    applied = kafka_txn(bs, "abort", "--plan", str(plan_file), "--yes", "-o", "json")
    assert applied.code == 0, applied.err
    assert [a["result"] for a in applied.json()["aborts"]] == ["aborted", "aborted"]
    again = kafka_txn(bs, "abort", "--plan", str(plan_file), "--yes", "-o", "json")
    assert again.code == exit_codes.ALREADY_DONE

    after = kafka_txn(bs, "find-hanging", "--all", "--exit-code", "-o", "json")
    assert after.code == exit_codes.OK and after.json()["hanging"] == []
    # No healthy transaction was touched: the open one is still open, the coordinator still has it.
    states = {t["transactional_id"]: t["state"] for t in kafka_txn(bs, "list", "-o", "json").json()["transactions"]}
    for r in results:
        for h in r.healthy:
            assert states[h.transactional_id] == h.state


def test_upstream_find_hanging_per_broker(cluster: EmbeddedCluster) -> None:
    bs = cluster.bootstrap_servers
    expected = truth(scenarios(bs))
    seen = set()
    for broker in (0, 1, 2):
        r = kafka_transactions(bs, "find-hanging", "--broker-id", str(broker))
        assert r.code == 0, r.err
        lines = r.out.splitlines()
        assert lines[0].split() == ["Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch",
                                    "StartOffset", "LastTimestamp", "Duration(min)"]
        for line in lines[1:]:
            cells = [c.strip() for c in line.split("\t")]
            assert int(cells[7]) >= 30
            seen.add((cells[0], int(cells[1]), int(cells[2]), int(cells[5])))
    assert seen == expected
    # The legacy abort form (brokers < 3.0) through both entry points: producer id, epoch, coordinator epoch.
    rows = kafka_txn(bs, "find-hanging", "--all", "-o", "json").json()["hanging"]
    for entry_point, h in zip((kafka_transactions, kafka_txn), rows[:2], strict=True):
        args = ["abort", "--topic", h["topic"], "--partition", str(h["partition"]), "--producer-id",
                str(h["producer_id"]), "--producer-epoch", str(h["producer_epoch"]), "--coordinator-epoch",
                str(h["coordinator_epoch"])]
        r = entry_point(bs, *args, *(["--yes"] if entry_point is kafka_txn else []))
        assert r.code == 0, r.err
    left = found(kafka_txn(bs, "find-hanging", "--all", "-o", "json").json()["hanging"])
    assert left == expected - found(rows[:2])


def test_a_late_transaction_committing_during_the_scan_is_never_reported(
    cluster: EmbeddedCluster, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Late-but-live transactions commit in the worst window: after the scan read the partitions' producer
    state (open) and before it asks the coordinators (by then: CompleteCommit). The re-check must drop them."""
    from kafka_txn_tools.connection.client import AdminClient

    bs = cluster.bootstrap_servers
    cluster.create_topic("busy", 3, 3)
    old = int(time.time() * 1000) - BACKDATE_MS
    producers = {}
    for p in range(3):
        producer = open_transaction(bs, f"busy-{p}", "busy", [p], records=0)
        producer.produce("busy", value=b"x", partition=p, timestamp=old)  # a late (backdated) write
        producer.flush(30)
        producers[f"busy-{p}"] = producer
    real_list = AdminClient.list_transactions
    committed: list[str] = []

    def commit_then_list(self: AdminClient, *args, **kwargs):  # type: ignore[no-untyped-def]
        if committed:  # the coordinator-side look-up lists transactions again, later
            return real_list(self, *args, **kwargs)
        for txn_id, producer in producers.items():
            producer.commit_transaction(30)
            committed.append(txn_id)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            states = {d.state for d in self.describe_transactions(producers).descriptions.values()}
            if states == {"CompleteCommit"}:
                break
            time.sleep(0.05)
        return real_list(self, *args, **kwargs)

    monkeypatch.setattr(AdminClient, "list_transactions", commit_then_list)
    r = kafka_txn(bs, "find-hanging", "--topic", "busy", "--include-late", "-o", "json")
    assert r.code == exit_codes.OK, r.err
    assert r.json()["candidates"] == 3  # all three were open and late when the partitions were read
    assert r.json()["hanging"] == []


def test_a_down_broker_is_reported_and_the_scan_goes_on(cluster: EmbeddedCluster) -> None:
    bs = cluster.bootstrap_servers
    expected = truth(scenarios(bs))
    cluster.stop_node(2)
    live = ",".join(a for a in bs.split(",")[:2])
    r = kafka_txn(live, "find-hanging", "--all", "-o", "json")
    assert r.code == exit_codes.PARTIAL, r.err
    doc = r.json()
    assert any(e["broker_id"] == 2 and e["error"] == "BROKER_UNREACHABLE" for e in doc["errors"])
    assert "broker 2 is unreachable" in r.err
    rows = doc["hanging"]
    assert found(rows) == expected  # every partition still has live replicas that show the hang
    assert all(2 not in h["brokers"] for h in rows)
    assert doc["partial"] is True and doc["read_replicas"] < doc["scanned_replicas"]
    # --exit-code: the hanging ones were found, but part of the cluster was not read: 5 wins over 3.
    with_exit_code = kafka_txn(live, "find-hanging", "--all", "--exit-code", "-o", "json")
    assert with_exit_code.code == exit_codes.PARTIAL and found(with_exit_code.json()["hanging"]) == expected

