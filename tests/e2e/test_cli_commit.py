"""`kafka-txn commit` end to end on the embedded broker emulating Apache Kafka 4.4 (`kafka.version.emulate`).

The incident is made as 4.3+ makes it (scenario `commit-marker-skipped`): a transaction over two partitions led
by different brokers commits while one leader is down; the coordinator drops that partition and writes
CompleteCommit; the broker comes back holding the open transaction. Its records were committed by the
coordinator, so the end is the COMMIT marker: a read_committed consumer (librdkafka) must get them.

Write safety as for abort (tests/e2e/test_cli_write_safety.py): `--dry-run` and the refused abort write nothing
(log end offset and LSO read with librdkafka before and after); the printed command writes exactly one marker
(the log end offset grows by one, the LSO reaches the high watermark); run again, it exits 4 naming the COMMIT
marker's offset; every attempt is in the audit log. The tests run in file order on one staged incident.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.testing.scenarios import HangingTransaction, ScenarioOptions, run_scenario
from kafka_txn_tools.cli import exit_codes
from tests.e2e.cli_support import invoke_printed, kafka_transactions, kafka_txn, log_offsets, read_committed

CONFIG = {"kafka.version.emulate": "4.4", "transaction.state.log.num.partitions": 5,
          "offsets.topic.num.partitions": 3}
BACKDATE_MS = 30 * 60_000  # older than find-hanging's default max transaction timeout (15m)
RECORDS = [b"committed-0", b"committed-1"]  # what the scenario's producer wrote to the hanging partition


@dataclass
class Staged:
    bs: str
    truth: HangingTransaction
    audit: Path

    @property
    def where(self) -> tuple[str, int]:
        return self.truth.topic, self.truth.partition

    def offsets(self) -> tuple[int, int]:
        return log_offsets(self.bs, *self.where)

    def printed(self) -> str:
        return (f"kafka-txn commit --topic {self.truth.topic} --partition {self.truth.partition} "
                f"--start-offset {self.truth.start_offset} --bootstrap-server {self.bs}")


@pytest.fixture(scope="module")
def staged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Staged]:
    with EmbeddedCluster(nodes=3, data_dir=tmp_path_factory.mktemp("commit"), config=CONFIG) as cluster:
        [result] = run_scenario("commit-marker-skipped", cluster.bootstrap_servers,
                                ScenarioOptions(nodes=cluster, healthy=False, backdate_ms=BACKDATE_MS, wait_s=30))
        [truth] = result.hanging
        yield Staged(cluster.bootstrap_servers, truth, tmp_path_factory.mktemp("audit") / "audit.log")


@pytest.fixture(autouse=True)
def module_audit_log(staged: Staged, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA_TXN_AUDIT_LOG", str(staged.audit))


def audit_records(staged: Staged) -> list[dict[str, Any]]:
    return [json.loads(line) for line in staged.audit.read_text().splitlines()] if staged.audit.exists() else []


def test_the_coordinator_committed_without_the_marker_and_find_hanging_prints_the_commit(staged: Staged) -> None:
    truth = staged.truth
    assert (truth.coordinator_state, truth.coordinator_partitions, truth.coordinator_decision) == (
        "CompleteCommit", [], "commit")
    end, lso = staged.offsets()
    assert lso == truth.start_offset < end  # the partition still holds the open transaction
    assert read_committed(staged.bs, *staged.where) == []
    rows = kafka_txn(staged.bs, "find-hanging", "--all", "-o", "json").json()["hanging"]
    [row] = [r for r in rows if (r["topic"], r["partition"]) == staged.where]
    assert (row["kind"], row["reason"], row["transactional_id"]) == (
        "partition", "transaction-not-ongoing", truth.transactional_id)
    decision = row["coordinator_decision"]
    assert (decision["outcome"], decision["producer_id"]) == ("commit", truth.producer_id)
    assert row["commands"] == [staged.printed()]


def test_dry_run_and_the_refused_abort_write_nothing(staged: Staged) -> None:
    before = staged.offsets()
    dry = invoke_printed(staged.printed(), "--dry-run", "-o", "json")
    assert dry.code == exit_codes.OK, dry.err
    [row] = dry.json()["commits"]
    assert (row["result"], row["transactional_id"], row["lso_after"]) == ("dry-run", staged.truth.transactional_id,
                                                                          None)
    assert "COMMIT" in dry.err and staged.offsets() == before
    topic, part = staged.where
    abort = ("abort", "--topic", topic, "--partition", str(part), "--start-offset", str(staged.truth.start_offset))
    for refused in (kafka_txn(staged.bs, *abort, "--yes"), kafka_transactions(staged.bs, *abort)):
        assert refused.code == exit_codes.ERROR, refused.out + refused.err
        assert "would discard records the application was told were committed" in refused.err
        assert staged.offsets() == before
    # Upstream's syntax names the commit too, exactly as find-hanging prints it (our front end's own difference).
    assert f"To commit it, as its coordinator decided: {staged.printed()}. To abort it anyway: " in refused.err


def test_the_printed_commit_writes_the_marker_once_and_every_attempt_is_audited(staged: Staged) -> None:
    end, lso = staged.offsets()
    assert lso < end, "an earlier test wrote a marker"
    done = invoke_printed(staged.printed(), "--yes", "-o", "json")
    assert done.code == exit_codes.OK, done.err
    [row] = done.json()["commits"]
    assert row["result"] == "committed"
    after_end, after_lso = staged.offsets()
    assert after_end == end + 1 and after_lso == after_end  # one control record (the marker), at offset `end`
    assert row["lso_after"] == row["high_watermark_after"] == after_end
    assert read_committed(staged.bs, *staged.where) == RECORDS  # committed, not discarded

    again = invoke_printed(staged.printed(), "--yes")
    assert again.code == exit_codes.ALREADY_DONE, again.out + again.err
    assert f"already committed: its COMMIT marker is at offset {end}" in again.err
    assert staged.offsets() == (after_end, after_lso)

    commits = [r for r in audit_records(staged) if r["command"] == "kafka-txn commit"]
    assert [r["result"] for r in commits] == ["dry-run", "committed", "already-done"]
    topic, part = staged.where
    assert all(r["target"] == {"topic": topic, "partition": part, "start_offset": staged.truth.start_offset}
               for r in commits)
    aborts = [r for r in audit_records(staged) if r["command"] == "kafka-txn abort"]
    assert [r["result"] for r in aborts] == ["refused"]


def test_the_scenario_command_refuses_it_without_a_hand_on_the_nodes_and_makes_no_topic(staged: Staged) -> None:
    from confluent_kafka.admin import AdminClient

    def topics() -> set[str]:
        return set(AdminClient({"bootstrap.servers": staged.bs, "log_level": 0}).list_topics(timeout=20).topics)

    before = topics()
    r = invoke_printed(f"kafka-txn broker scenario commit-marker-skipped --bootstrap-server {staged.bs}")
    assert r.code == exit_codes.ERROR and "ScenarioOptions(nodes=cluster)" in r.err, r.err
    assert topics() == before
