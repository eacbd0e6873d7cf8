"""The on-call flow end to end, per kind of stuck transaction, as a newcomer takes it: stage the incident with
`kafka-txn broker scenario` (as the runbook's "Rehearse it" says), run the scan it prints (`find-hanging --all`,
default thresholds), then every command printed, verbatim and in the printed order (plus --yes where a prompt
would come), each within a time limit, and scan again until nothing is printed to run (tests/e2e/newcomer.py).
That includes the broker upgrade where the remedy is one: on the embedded broker it is a printed command.

What "cleared" means comes from Kafka, not from the tool's tables: the partition's LSO is its high watermark,
the read_committed group held back at the LSO reads on past it, the coordinator holds the id as completed and
its producer can start again. Every scenario gets a cluster of its own (nothing of another scenario's in its
scans) and is staged alone (`--no-healthy`: a scenario's healthy open transaction runs for 10 minutes and is,
rightly, only reported as held; a newcomer following every printed command would wait for it).
The leader offline during a commit is in test_cli_stuck.py (the coordinator retries its marker); emulating Apache
Kafka 4.4, whose coordinator drops that partition and completes the commit, it is rehearsed here
(`commit-marker-skipped`, staged in this process: it stops a broker). move-coordinator's refusals and --watch are
here too.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.formats.partitioning import SHARE_STATE_TOPIC, TXN_TOPIC, partition_for
from kafka_txn_broker.testing.raw_client import RawKafkaClient
from kafka_txn_broker.testing.scenarios import (
    HangingTransaction,
    PreparedTransaction,
    ScenarioOptions,
    complete_prepared,
    run_scenario,
)
from kafka_txn_tools.cli import exit_codes
from tests.e2e import newcomer
from tests.e2e.cli_support import (
    ZOMBIE_TIMEOUT_MS,
    group_reads_to_the_end,
    hold_group,
    invoke_printed,
    kafka_txn,
    leader_of,
    log_offsets,
    read_committed,
    run_printed,
    until,
)

CONFIG = {"transaction.partition.verification.enable": False,  # the partition-side incidents need it off
          "transaction.two.phase.commit.enable": True,
          "share.transactional.acknowledgement.enable": True,
          "transaction.abort.timed.out.transaction.cleanup.interval.ms": 200,
          "transaction.state.log.num.partitions": 5, "offsets.topic.num.partitions": 3}
BACKDATE_MS = 30 * 60_000  # the misbehaving batches were built before the pause that made them late


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(nodes=3, data_dir=tmp_path_factory.mktemp("runbook"), config=CONFIG) as c:
        yield c


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[EmbeddedCluster]:
    """A cluster for one newcomer's rehearsal."""
    with EmbeddedCluster(nodes=3, data_dir=tmp_path, config=CONFIG) as c:
        yield c


@pytest.fixture
def one_node(tmp_path: Path) -> Iterator[EmbeddedCluster]:
    """For the 32,766 epoch bumps of epoch-exhaustion: each is a __transaction_state write, replicated nowhere."""
    with EmbeddedCluster(nodes=1, data_dir=tmp_path, config=CONFIG) as c:
        yield c


def stage(cluster: EmbeddedCluster, name: str, *options: str) -> tuple[dict[str, Any], str]:
    """`kafka-txn broker scenario NAME` as the runbook says (its defaults: backdated 30 minutes), staged alone:
    its ground truth, and the scan it prints for finding it."""
    bs = cluster.bootstrap_servers
    r = invoke_printed(f"kafka-txn broker scenario {name} --bootstrap-server {bs} --no-healthy", *options)
    assert r.code == 0, r.err
    doc = r.json()
    [result] = doc["scenarios"]
    assert doc["find"] == f"kafka-txn find-hanging --all --bootstrap-server {bs}"
    return result, doc["find"]


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


def described(bs: str, txn_id: str) -> dict[str, Any]:
    return dict(kafka_txn(bs, "describe", "-t", txn_id, "-o", "json").json()["transactions"][0])


def split(topic_partition: str) -> tuple[str, int]:
    topic, part = topic_partition.rsplit("-", 1)
    return topic, int(part)


# ---- partition side: an open transaction no coordinator will end -----------------------------------------
@pytest.mark.parametrize("name", ["late-write-after-abort", "zombie-after-timeout", "unregistered-partition-commit"])
def test_a_newcomer_clears_a_partition_side_hang_with_what_the_first_scan_prints(fresh: EmbeddedCluster,
                                                                                 name: str) -> None:
    bs = fresh.bootstrap_servers
    result, find = stage(fresh, name, "--zombie-timeout-ms", str(ZOMBIE_TIMEOUT_MS))
    [truth] = result["hanging"]
    assert truth["coordinator_state"] in ("CompleteAbort", "CompleteCommit")  # no marker is coming
    topic, part, start = truth["topic"], truth["partition"], truth["start_offset"]
    end, lso = log_offsets(bs, topic, part)
    assert lso == start < end
    group = f"{name}-readers"
    hold_group(bs, topic, part, group)
    trail = newcomer.clear(find)
    assert trail.ran[1] == (f"kafka-txn abort --topic {topic} --partition {part} --start-offset {start} "
                            f"--bootstrap-server {bs}"), trail  # found by the first scan, at default thresholds
    end, lso = log_offsets(bs, topic, part)
    assert lso == end
    group_reads_to_the_end(bs, topic, part, group)


# ---- Apache Kafka 4.3+: a commit completed without one partition's marker ---------------------------------------
def test_a_newcomer_commits_what_the_coordinator_committed_without_one_partitions_marker(tmp_path: Path) -> None:
    # The coordinator decided to commit, so the end is the COMMIT marker (an abort would discard records the
    # application was told were committed): the first scan prints `kafka-txn commit`, and afterwards a
    # read_committed consumer gets the transaction's records.
    config = {"kafka.version.emulate": "4.4", "transaction.state.log.num.partitions": 5,
              "offsets.topic.num.partitions": 3}
    with EmbeddedCluster(nodes=3, data_dir=tmp_path, config=config) as cluster:
        bs = cluster.bootstrap_servers
        truth = scenario(cluster, "commit-marker-skipped", nodes=cluster)
        assert (truth.coordinator_state, truth.coordinator_decision) == ("CompleteCommit", "commit")
        topic, part, start = truth.topic, truth.partition, truth.start_offset
        assert log_offsets(bs, topic, part)[1] == start
        assert read_committed(bs, topic, part) == []
        hold_group(bs, topic, part, "skipped-readers")
        trail = newcomer.clear(f"kafka-txn find-hanging --all --bootstrap-server {bs}")
        assert trail.ran[1:] == [f"kafka-txn commit --topic {topic} --partition {part} --start-offset {start} "
                                 f"--bootstrap-server {bs}", f"kafka-txn find-hanging --all --bootstrap-server {bs}"
                                 ], trail
        end, lso = log_offsets(bs, topic, part)
        assert lso == end
        assert read_committed(bs, topic, part) == [b"committed-0", b"committed-1"]
        group_reads_to_the_end(bs, topic, part, "skipped-readers")


# ---- coordinator side: the emulated upstream bugs, up to their upgrade -------------------------------------------
def test_a_newcomer_clears_marker_retry_rejected_up_to_the_upgrade(fresh: EmbeddedCluster) -> None:
    # KAFKA-19999: the marker landed, its retries are rejected and the coordinator gave up. Seconds in
    # PrepareCommit, it is below --max-prepare-time: the first scan names it and prints the scan that reports
    # it now. Its move makes a new coordinator send the marker again, which a leader without the fix rejects
    # again; the row then says the remaining step is the upgrade, and on the embedded broker prints it.
    bs = fresh.bootstrap_servers
    result, find = stage(fresh, "marker-retry-rejected")
    [truth] = result["stuck"]
    txn_id = truth["transactional_id"]
    topic, part = split(truth["pending_partitions"][0])
    assert described(bs, txn_id)["state"] == "PrepareCommit"
    unasked = invoke_printed(f"kafka-txn broker upgrade --bootstrap-server {bs}")  # no terminal, no --yes: refused
    assert unasked.code == exit_codes.USAGE and "pass --yes" in unasked.err  # (the flow below still needs it)
    said: list[list[str]] = []

    def before(command: str) -> None:  # describe prints the same commands for the same finding
        if command.startswith("kafka-txn broker upgrade"):
            said.append(described(bs, txn_id)["commands"])

    trail = newcomer.clear(find, before)
    assert said == [[f"kafka-txn broker upgrade --bootstrap-server {bs}",
                     f"kafka-txn move-coordinator --transactional-id {txn_id} --bootstrap-server {bs}"]]
    first = trail.outputs[0].out
    assert txn_id in first and "--max-prepare-time 0" in first, trail  # named by the first scan, with why
    upgrades = [c for c in trail.ran if c.startswith("kafka-txn broker upgrade")]
    moves = [c for c in trail.ran if c.startswith("kafka-txn move-coordinator")]
    assert upgrades == [f"kafka-txn broker upgrade --bootstrap-server {bs}"] and len(moves) == 2, trail
    assert trail.ran[trail.ran.index(upgrades[0]) + 1] == moves[0]  # the upgrade, then the move that now lands
    assert described(bs, txn_id)["state"] == "CompleteCommit"
    end, lso = log_offsets(bs, topic, part)
    assert lso == end
    with RawKafkaClient(bs) as raw:  # its producer can work again (no more CONCURRENT_TRANSACTIONS)
        assert raw.init_producer_id(txn_id, 60_000)[0] == 0
    again = invoke_printed(f"kafka-txn broker upgrade --bootstrap-server {bs}", "--yes")
    assert again.code == exit_codes.ERROR and "nothing to upgrade" in again.err


def test_a_newcomer_is_told_epoch_exhaustion_at_once_and_clears_it_up_to_the_upgrade(one_node: EmbeddedCluster
                                                                                    ) -> None:
    # KAFKA-20090: Ongoing at Short.MAX_VALUE; its producer cannot end it, the coordinator cannot fence it. The
    # first scan says so (no "wait" that a later scan takes back), frees the LSO with its abort and upgrades.
    cluster = one_node
    bs = cluster.bootstrap_servers
    result, find = stage(cluster, "epoch-exhaustion")
    [truth] = result["stuck"]
    txn_id, start = truth["transactional_id"], truth["start_offset"]
    topic, part = split(truth["pending_partitions"][0])
    group = "exhausted-readers"
    hold_group(bs, topic, part, group)
    held = log_offsets(bs, topic, part)
    assert held[1] == start < held[0]
    # force-terminate cannot fence it: it says why (not a bare error code) and writes nothing, with or without
    # --force; abort without --force is refused (its coordinator holds it as Ongoing), writing nothing.
    for force in ([], ["--force"]):
        fence = kafka_txn(bs, "force-terminate", "-t", txn_id, *force, "--yes")
        assert fence.code == exit_codes.ERROR and "KAFKA-20090" in fence.err and "nothing was written" in fence.err
        assert "UNKNOWN_SERVER_ERROR" not in fence.err.split(":")[0]
    refused = kafka_txn(bs, "abort", "--topic", topic, "--partition", str(part), "--start-offset", str(start), "--yes")
    assert refused.code == exit_codes.ERROR
    assert log_offsets(bs, topic, part) == held
    [row] = rows_of(scan(bs), txn_id, truth["producer_id"])  # default thresholds: what the first scan says
    assert (row["kind"], row["reason"], row["producer_epoch"]) == ("coordinator", "epoch-exhausted", 32767)
    assert row["commands"] == [f"kafka-txn abort --topic {topic} --partition {part} --start-offset {start} --force "
                               f"--bootstrap-server {bs}", f"kafka-txn broker upgrade --bootstrap-server {bs}"]
    assert "force-terminate" not in row["action"] and not row["action"].startswith("wait")
    assert [g["group_id"] for g in row["stalled_groups"]] == [group]
    trail = newcomer.clear(find)
    assert trail.ran[1:3] == row["commands"], trail  # the first scan's advice is what cleared it
    end, lso = log_offsets(bs, topic, part)
    assert lso == end
    group_reads_to_the_end(bs, topic, part, group)
    # The fixed coordinator's timeout abort ends it and frees the id.
    until(lambda: described(bs, txn_id)["state"] != "Ongoing", "the fixed coordinator's timeout abort")
    with RawKafkaClient(bs) as raw:
        assert raw.init_producer_id(txn_id, 60_000)[0] == 0


# ---- a prepared 2PC transaction -------------------------------------------------------------------------------
def test_a_newcomer_waits_for_a_prepared_2pc_transactions_manager_and_is_not_counted(
        fresh: EmbeddedCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    bs = fresh.bootstrap_servers
    result, find = stage(fresh, "2pc-prepared")
    [raw_truth] = result["prepared"]
    truth = PreparedTransaction(**raw_truth)
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
    # (which the manager does here in the watch's first pause, as the row says it must), then exits 0.
    [watch] = row["commands"]
    end_before, lso_before = log_offsets(bs, topic, part)
    pauses: list[float] = []

    def manager_acts(seconds: float) -> None:
        if not pauses:
            assert log_offsets(bs, topic, part) == (end_before, lso_before)  # the watch wrote nothing
            assert complete_prepared(bs, truth, commit=True) == 0  # what the row says its manager must do
        pauses.append(seconds)

    monkeypatch.setattr("kafka_txn_tools.cli.commands.find_hanging.watch_sleep", manager_acts)
    trail = newcomer.clear(find)
    assert trail.ran[1] == watch and pauses == [10.0], trail
    events = [json.loads(line)["event"] for line in trail.outputs[1].out.splitlines()]
    assert events[0] == "appeared" and events[-1] == "clear" and "resolved" in events
    end, lso = log_offsets(bs, topic, part)
    assert lso == end
    group_reads_to_the_end(bs, topic, part, group)


# ---- share side (KIP-1289) -----------------------------------------------------------------------------------
def state_partitions_free(bs: str, share: dict[str, Any]) -> None:
    """The transaction's staging on the group's `__share_group_state` partitions ended: LSO == high watermark
    (the newcomer's cluster has no other transaction there)."""
    for name in share["share_state_partitions"]:
        end, lso = log_offsets(bs, SHARE_STATE_TOPIC, split(name)[1])
        assert lso == end, (name, end, lso)


@pytest.mark.parametrize("name", ["share-ack-stalled", "share-ack-leadership-move"])
def test_a_newcomer_frees_a_share_group_held_by_a_live_transaction(fresh: EmbeddedCluster, name: str) -> None:
    # Staged seconds ago under a 10-minute timeout: the first scan does not report it, but says which partition
    # is held, by what, why it is not reported, and prints the scan that reports it; that row prints the fence
    # (a command, not words), and HELD BACK's '-' is explained (the share groups are in the brokers' metrics).
    bs = fresh.bootstrap_servers
    result, find = stage(fresh, name)
    [share] = result["share"]
    assert described(bs, share["transactional_id"])["state"] == "Ongoing"
    [state_partition] = share["share_state_partitions"]
    trail = newcomer.clear(find)
    first = trail.outputs[0].out
    assert f"{state_partition} (producer {share['producer_id']}," in first and "not reported" in first, trail
    assert trail.ran[1] == f"kafka-txn find-hanging --all --max-transaction-timeout 0 --bootstrap-server {bs}"
    assert trail.ran[2] == (f"kafka-txn force-terminate --transactional-id {share['transactional_id']} --force "
                            f"--bootstrap-server {bs}"), trail
    assert "known only from the brokers' metrics" in trail.outputs[1].out
    assert described(bs, share["transactional_id"])["state"] in ("CompleteAbort", "Empty")  # fenced: aborted
    until(lambda: state_partitions_free(bs, share) is None, "the ABORT marker on the share state partition")


def test_a_producer_that_dies_holding_a_share_group_leaves_the_newcomer_nothing_to_do(fresh: EmbeddedCluster
                                                                                     ) -> None:
    bs = fresh.bootstrap_servers
    result, find = stage(fresh, "share-ack-producer-dies")
    [share] = result["share"]
    # Its timeout (--zombie-timeout-ms, 1 s) ends it: the coordinator's abort, before anyone looks.
    until(lambda: described(bs, share["transactional_id"])["state"] == "CompleteAbort", "its timeout abort")
    until(lambda: state_partitions_free(bs, share) is None, "the ABORT marker on the share state partition")
    trail = newcomer.clear(find)
    assert trail.ran == [find], trail


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


# ---- rows held by one transaction: the root first, the dependent names it ----------------------------------------
def test_rows_of_one_transaction_print_the_root_first_and_the_dependent_names_it(fresh: EmbeddedCluster) -> None:
    # share-ack-stalled with the brokers' metrics: the share group's records held TX_PENDING (kind "share", its
    # command ends the transaction) and the transaction's staging on `__share_group_state` (kind "partition").
    # Printed in kind order, a newcomer ran the state partition's watch first, which waits for what only the
    # share row's command does. Now the share row comes first, and the other says it clears with it.
    from kafka_txn_broker.server import metrics

    bs = fresh.bootstrap_servers
    server = fresh.call(metrics.serve_metrics(fresh.cluster, "127.0.0.1", 0))
    try:
        url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/metrics"
        result, _find = stage(fresh, "share-ack-stalled")
        [share] = result["share"]
        [state_partition] = share["share_state_partitions"]
        r = kafka_txn(bs, "find-hanging", "--all", "--max-transaction-timeout", "0", "--metrics-url", url, "-o", "json")
        assert r.code == exit_codes.OK, r.err
        rows = rows_of(r.json()["hanging"], share["transactional_id"], share["producer_id"])
        assert [(x["kind"], x.get("group") or f"{x['topic']}-{x['partition']}") for x in rows] == [
            ("share", share["group"]), ("partition", state_partition)]
        root, dependent = rows
        fence = (f"kafka-txn force-terminate --transactional-id {share['transactional_id']} --force "
                 f"--bootstrap-server {bs}")
        name = f"{share['topic']}-{share['partition']} producer {share['producer_id']} (share group {share['group']!r})"
        assert (root["commands"], root["cleared_by"]) == ([fence], None)
        assert (dependent["commands"], dependent["cleared_by"]) == ([], name)
        assert dependent["action"].startswith(f"cleared by {name}")
        table = kafka_txn(bs, "find-hanging", "--all", "--max-transaction-timeout", "0", "--metrics-url", url).out
        assert newcomer.printed_commands(table) == [fence]
        assert table.index(f"{name} (broker") < table.index(f"{state_partition} producer {share['producer_id']}:")
        trail = newcomer.Trail()
        for command in newcomer.printed_commands(table):  # in the printed order, each within its limit
            newcomer.run_as_printed(command, trail)
        until(lambda: state_partitions_free(bs, share) is None, "the ABORT marker on the share state partition")
    finally:
        fresh.call_soon(server.close)
