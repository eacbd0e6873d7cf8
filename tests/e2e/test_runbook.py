"""The on-call flow end to end, per kind of stuck transaction: find it, run the commands the finding prints -
exactly as printed, plus --yes, each in a process of its own - and see it clear.

Every scenario of `kafka-txn broker scenario` (partition-side, coordinator-side, 2pc-prepared) runs against one
small cluster; find-hanging runs with no flag beyond the scenario's short timeouts (--max-prepare-time 0 for
the coordinator side: its transactions are seconds old). Afterwards the partition's LSO is its high
watermark, the group held back at the LSO reads on past it, and a new scan has no row for the transaction -
or, where a broker upgrade is what is left (the emulated upstream bugs), only its coordinator row, saying so.
The leader offline during a commit is in test_cli_stuck.py, the share-side scenarios in
test_share_scenarios.py; move-coordinator's refusals and --watch are here too.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.formats.partitioning import TXN_TOPIC, partition_for
from kafka_txn_broker.testing.raw_client import RawKafkaClient
from kafka_txn_broker.testing.scenarios import (
    HANGING_PARTITION,
    HangingTransaction,
    ScenarioOptions,
    StuckTransaction,
    complete_prepared,
    run_scenario,
)
from kafka_txn_tools.cli import exit_codes
from tests.e2e.cli_support import (
    ZOMBIE_TIMEOUT_MS,
    group_reads_to_the_end,
    hold_group,
    invoke_printed,
    kafka_txn,
    leader_of,
    log_offsets,
    run_printed,
    until,
)

CONFIG = {"transaction.partition.verification.enable": False,  # the partition-side incidents need it off
          "transaction.two.phase.commit.enable": True,
          "transaction.abort.timed.out.transaction.cleanup.interval.ms": 200,
          "transaction.state.log.num.partitions": 5, "offsets.topic.num.partitions": 3}
BACKDATE_MS = 30 * 60_000  # the misbehaving batches were built before the pause that made them late


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(nodes=3, data_dir=tmp_path_factory.mktemp("runbook"), config=CONFIG) as c:
        yield c


def scenario(cluster: EmbeddedCluster, name: str, **options: Any) -> Any:
    opts = {"backdate_ms": BACKDATE_MS, "healthy": False, "wait_s": 20, "zombie_timeout_ms": ZOMBIE_TIMEOUT_MS,
            **options}
    [result] = run_scenario(name, cluster.bootstrap_servers, ScenarioOptions(**opts))
    [truth] = [*result.hanging, *result.stuck, *result.prepared]
    return truth


def scan(bs: str, *extra: str) -> list[dict[str, Any]]:
    r = kafka_txn(bs, "find-hanging", "--all", *extra, "-o", "json")
    assert r.code == exit_codes.OK, r.err
    return list(r.json()["hanging"])


def rows_of(rows: list[dict[str, Any]], txn_id: str, producer_id: int) -> list[dict[str, Any]]:
    return [r for r in rows if r.get("transactional_id") == txn_id or r.get("producer_id") == producer_id]


def run_all(row: dict[str, Any]) -> None:
    assert row["commands"], row
    for command in row["commands"]:
        run_printed(command)


# ---- partition side: an open transaction no coordinator will end -----------------------------------------
@pytest.mark.parametrize("name", ["late-write-after-abort", "zombie-after-timeout", "unregistered-partition-commit"])
def test_a_partition_side_hang_is_cleared_by_its_printed_abort(cluster: EmbeddedCluster, name: str) -> None:
    bs = cluster.bootstrap_servers
    truth: HangingTransaction = scenario(cluster, name)
    # Its coordinator holds the id as completed (the ground truth): no marker is coming.
    assert truth.coordinator_state in ("CompleteAbort", "CompleteCommit")
    reason = "transaction-not-ongoing"
    topic, part = truth.topic, truth.partition
    end, lso = log_offsets(bs, topic, part)
    assert lso == truth.start_offset < end
    group = f"{name}-readers"
    hold_group(bs, topic, part, group)
    [row] = rows_of(scan(bs), truth.transactional_id, truth.producer_id)
    assert (row["kind"], row["reason"], row["start_offset"]) == ("partition", reason, truth.start_offset)
    assert [g["group_id"] for g in row["stalled_groups"]] == [group]
    assert row["commands"] == [f"kafka-txn abort --topic {topic} --partition {part} --start-offset "
                               f"{truth.start_offset} --bootstrap-server {bs}"]
    run_all(row)
    end, lso = log_offsets(bs, topic, part)
    assert lso == end
    group_reads_to_the_end(bs, topic, part, group)
    assert rows_of(scan(bs), truth.transactional_id, truth.producer_id) == []


# ---- coordinator side: the emulated upstream bugs -----------------------------------------------------------
def test_marker_retry_rejected_its_move_then_the_upgrade_clears_it(cluster: EmbeddedCluster) -> None:
    # KAFKA-19999: the marker landed, its retries are rejected and the coordinator gave up. Moving the
    # coordinator makes the new one send it again; a leader without the fix rejects it again, and the row then
    # says the remaining step is an upgrade. With the fault off (the upgrade), the same command clears it.
    bs = cluster.bootstrap_servers
    truth: StuckTransaction = scenario(cluster, "marker-retry-rejected", healthy=True)
    rows = scan(bs, "--max-prepare-time", "0")
    run_id = truth.transactional_id.split("-")[1]  # the scenario's ids: scenario-<run>-<role>
    assert [r["transactional_id"] for r in rows if f"-{run_id}-" in str(r.get("transactional_id"))] == [
        truth.transactional_id]  # its healthy neighbours (committed, aborted, open within its timeout): no row
    [row] = rows_of(rows, truth.transactional_id, truth.producer_id)
    assert (row["kind"], row["reason"], row["state"]) == ("coordinator", "markers-pending", "PrepareCommit")
    assert [p["reason"] for p in row["pending_partitions"]] == ["marker-rejected"]
    assert row["commands"] == [f"kafka-txn move-coordinator --transactional-id {truth.transactional_id} "
                               f"--bootstrap-server {bs}"]
    described = kafka_txn(bs, "describe", "-t", truth.transactional_id, "-o", "json").json()["transactions"][0]
    assert (described["stuck_reason"], described["commands"]) == ("markers-pending", row["commands"])
    before = _coordinator(bs, truth.transactional_id)
    run_all(row)
    assert _coordinator(bs, truth.transactional_id) != before  # it moved, and the leader rejected it again
    [row] = rows_of(scan(bs, "--max-prepare-time", "0"), truth.transactional_id, truth.producer_id)
    assert row["action"].startswith("remaining step: a broker upgrade.") and "KAFKA-19999" in row["action"]
    with RawKafkaClient(bs) as raw:
        assert raw.set_broker_configs({"fault.injection": ""})[0] == 0  # the upgrade
    run_all(row)
    assert rows_of(scan(bs, "--max-prepare-time", "0"), truth.transactional_id, truth.producer_id) == []
    state = kafka_txn(bs, "describe", "-t", truth.transactional_id, "-o", "json").json()["transactions"][0]
    assert state["state"] == "CompleteCommit"
    end, lso = log_offsets(bs, truth.pending_partitions[0].rsplit("-", 1)[0], HANGING_PARTITION)
    assert lso == end
    with RawKafkaClient(bs) as raw:  # its producer can work again (no more CONCURRENT_TRANSACTIONS)
        assert raw.init_producer_id(truth.transactional_id, 60_000)[0] == 0


def _coordinator(bs: str, txn_id: str) -> int:
    return int(kafka_txn(bs, "describe", "-t", txn_id, "-o", "json").json()["transactions"][0]["coordinator_id"])


@pytest.fixture
def one_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    """For the 32,766 epoch bumps of epoch-exhaustion: each is a __transaction_state write, replicated nowhere."""
    with EmbeddedCluster(nodes=1, data_dir=tmp_path_factory.mktemp("one"), config=CONFIG) as c:
        yield c


def test_epoch_exhaustion_frees_the_lso_now_and_says_the_rest_is_an_upgrade(one_node: EmbeddedCluster) -> None:
    # KAFKA-20090: Ongoing at Short.MAX_VALUE; the coordinator cannot fence it. The printed abort frees the LSO
    # now; what is left is the upgrade (the row says so and prints nothing more: force-terminate would fail).
    cluster = one_node
    bs = cluster.bootstrap_servers
    truth: StuckTransaction = scenario(cluster, "epoch-exhaustion", zombie_timeout_ms=300)
    topic = truth.pending_partitions[0].rsplit("-", 1)[0]
    group = "exhausted-readers"
    hold_group(bs, topic, HANGING_PARTITION, group)
    [row] = rows_of(scan(bs, "--max-prepare-time", "0"), truth.transactional_id, truth.producer_id)
    assert (row["kind"], row["reason"], row["producer_epoch"]) == ("coordinator", "epoch-exhausted", 32767)
    assert row["commands"] == [f"kafka-txn abort --topic {topic} --partition {HANGING_PARTITION} --start-offset "
                               f"{truth.start_offset} --force --bootstrap-server {bs}"]
    assert [g["group_id"] for g in row["stalled_groups"]] == [group]
    assert [(p["reason"], p["start_offset"]) for p in row["pending_partitions"]] == [
        ("open-transaction", truth.start_offset)]
    held = log_offsets(bs, topic, HANGING_PARTITION)
    assert held[1] == truth.start_offset < held[0]
    # Not printed, and why: the coordinator cannot fence it; force-terminate says so, not a bare error code.
    fence = kafka_txn(bs, "force-terminate", "-t", truth.transactional_id, "--yes")
    assert fence.code == exit_codes.ERROR and "KAFKA-20090" in fence.err and "nothing was written" in fence.err
    assert log_offsets(bs, topic, HANGING_PARTITION) == held
    # Without --force the abort is refused (its coordinator holds it as Ongoing), and writes nothing.
    refused = kafka_txn(bs, "abort", "--topic", topic, "--partition", str(HANGING_PARTITION), "--start-offset",
                        str(truth.start_offset), "--yes")
    assert refused.code == exit_codes.ERROR and log_offsets(bs, topic, HANGING_PARTITION) == held
    run_all(row)
    end, lso = log_offsets(bs, topic, HANGING_PARTITION)
    assert lso == end
    group_reads_to_the_end(bs, topic, HANGING_PARTITION, group)
    [row] = rows_of(scan(bs, "--max-prepare-time", "0"), truth.transactional_id, truth.producer_id)
    assert row["action"].startswith("remaining step: a broker upgrade") and row["commands"] == []
    with RawKafkaClient(bs) as raw:
        assert raw.set_broker_configs({"fault.injection": ""})[0] == 0  # the upgrade: its timeout abort ends it
    until(lambda: rows_of(scan(bs, "--max-prepare-time", "0"), truth.transactional_id, truth.producer_id) == [],
          "the fixed coordinator's timeout abort")


# ---- a prepared 2PC transaction ---------------------------------------------------------------------------
def test_a_prepared_2pc_transaction_is_named_not_counted_and_its_manager_ends_it(
        cluster: EmbeddedCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    bs = cluster.bootstrap_servers
    truth = scenario(cluster, "2pc-prepared")
    topic, part = truth.topic, truth.partition
    group = "xa-readers"
    hold_group(bs, topic, part, group)
    plain = kafka_txn(bs, "find-hanging", "--all", "--exit-code")
    assert plain.code == exit_codes.OK and "no hanging transactions" not in plain.out  # named, not counted
    assert kafka_txn(bs, "find-hanging", "--all", "--exit-code", "--count-held").code == exit_codes.FOUND
    [row] = rows_of(scan(bs), truth.transactional_id, truth.producer_id)
    assert (row["kind"], row["reason"], row["start_offset"]) == ("partition", "prepared-2pc", truth.start_offset)
    assert row["action"].startswith("held by its external transaction manager")
    assert [g["group_id"] for g in row["stalled_groups"]] == [group]
    # Its one command writes nothing: it watches the partition until the manager has ended the transaction
    # (which the manager does here in the watch's first pause), then exits 0.
    [watch] = row["commands"]
    end_before, lso_before = log_offsets(bs, topic, part)
    pauses: list[float] = []

    def manager_acts(seconds: float) -> None:
        if not pauses:
            assert log_offsets(bs, topic, part) == (end_before, lso_before)  # the watch wrote nothing
            assert complete_prepared(bs, truth, commit=True) == 0  # what the row says its manager must do
        pauses.append(seconds)

    monkeypatch.setattr("kafka_txn_tools.cli.commands.find_hanging.watch_sleep", manager_acts)
    r = invoke_printed(watch)  # in this process, where the pause is this test's
    assert r.code == exit_codes.OK and pauses == [10.0], (r.out, r.err)
    events = [json.loads(line)["event"] for line in r.out.splitlines()]
    assert events[0] == "appeared" and events[-1] == "clear" and "resolved" in events
    end, lso = log_offsets(bs, topic, part)
    assert lso == end
    group_reads_to_the_end(bs, topic, part, group)
    assert rows_of(scan(bs), truth.transactional_id, truth.producer_id) == []


# ---- --watch ------------------------------------------------------------------------------------------------
def test_watch_reports_what_appears_and_what_is_resolved_and_exits_once_clear(
        cluster: EmbeddedCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    # The pause between two scans is where a person would act: here it runs the printed command.
    bs = cluster.bootstrap_servers
    truth: HangingTransaction = scenario(cluster, "late-write-after-abort")
    pauses: list[float] = []

    def act(seconds: float) -> None:
        pauses.append(seconds)
        [row] = rows_of(scan(bs), truth.transactional_id, truth.producer_id)
        run_all(row)

    monkeypatch.setattr("kafka_txn_tools.cli.commands.find_hanging.watch_sleep", act)
    r = kafka_txn(bs, "find-hanging", "--all", "--watch", "2s")
    assert r.code == exit_codes.OK, r.err
    events = [json.loads(line) for line in r.out.splitlines()]  # not a terminal: JSON lines
    mine = [e for e in events if e["event"] in ("appeared", "resolved")
            and e["row"].get("transactional_id") == truth.transactional_id]
    assert [(e["round"], e["event"]) for e in mine] == [(1, "appeared"), (2, "resolved")]
    assert mine[0]["row"]["commands"] and events[-1]["event"] == "clear" and pauses == [2.0]
    assert [e["event"] for e in events if e["round"] == 2][-1] == "clear"


# ---- move-coordinator: refusals write nothing -----------------------------------------------------------
def test_move_coordinator_refusals_and_a_dry_run_write_nothing(cluster: EmbeddedCluster) -> None:
    bs = cluster.bootstrap_servers
    with RawKafkaClient(bs) as raw:
        code, _pe = raw.init_producer_id("mover", 60_000)
        assert code == 0
    home = partition_for("mover", CONFIG["transaction.state.log.num.partitions"])
    leader = leader_of(bs, TXN_TOPIC, home)

    def state() -> tuple[tuple[int, int], int]:
        return log_offsets(bs, TXN_TOPIC, home), leader_of(bs, TXN_TOPIC, home)

    before = state()
    for args, code, message in [
        (["-t", "nobody-knows-me"], exit_codes.ERROR, "is not known to its coordinator"),
        (["-t", "mover", "--to-broker", str(leader)], exit_codes.ERROR, f"broker {leader} already leads"),
        (["-t", "mover", "--to-broker", "7"], exit_codes.ERROR, "broker 7 holds no replica"),
        (["-t", "mover"], exit_codes.USAGE, "not a terminal: pass --yes"),
        (["-t", "mover", "--dry-run"], exit_codes.OK, "elect broker"),
    ]:
        r = kafka_txn(bs, "move-coordinator", *args)
        assert r.code == code, (args, r.err)
        assert message in r.err and "Traceback" not in r.err
        assert state() == before, args
    moved = kafka_txn(bs, "move-coordinator", "-t", "mover", "--yes", "-o", "json")
    assert moved.code == exit_codes.OK, moved.err
    [result] = moved.json()["moves"]
    assert (result["from_broker"], result["result"]) == (leader, "moved")
    assert leader_of(bs, TXN_TOPIC, home) == result["to_broker"] != leader


# ---- force-terminate keeps the id's transaction timeout ------------------------------------------------------
def test_fencing_keeps_the_transaction_timeout_the_id_had(cluster: EmbeddedCluster) -> None:
    from tests.e2e.cli_support import open_transaction

    bs = cluster.bootstrap_servers
    cluster.create_topic("ten-minutes", 1, 3)
    producer = open_transaction(bs, "ten-minutes-app", "ten-minutes", [0], records=1, timeout_ms=600_000)
    fenced = kafka_txn(bs, "force-terminate", "-t", "ten-minutes-app", "--force", "--yes")
    assert fenced.code == exit_codes.OK, fenced.err
    [d] = kafka_txn(bs, "describe", "-t", "ten-minutes-app", "-o", "json").json()["transactions"]
    assert (d["state"], d["timeout_ms"]) in {("CompleteAbort", 600_000), ("Empty", 600_000)}
    assert "transaction timeout is now" not in fenced.err  # nothing changed, nothing to say
    del producer  # fenced: it cannot end anything any more
