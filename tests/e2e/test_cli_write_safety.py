"""Write safety, end to end: no form of either front end writes a marker or fences a producer unless every
identifier given names exactly the open transaction on the leader and the coordinator does not hold it as
live (unless forced). Every refusal writes nothing: the log end offset and the last stable offset of the
partitions involved, read with librdkafka, are unchanged; a refused fence leaves the producer's epoch.

One node, replication factor 1 (so the log end offset shows a stray marker at once), verification off
(Kafka before 3.6: the only way the hangs happen). Three hanging transactions from kafka_txn_broker's
scenarios, one live transaction of a healthy producer, and a topic that never had a transaction. Every
refusal class has its exit code in both front ends: 1 for what live state refuses, 2 for malformed input, 4
(kafka-txn) only when a marker proves the transaction was already completed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.testing.scenarios import ScenarioOptions, run_scenario
from kafka_txn_tools.cli import exit_codes
from tests.e2e.cli_support import (
    ZOMBIE_TIMEOUT_MS,
    kafka_transactions,
    kafka_txn,
    log_offsets,
    many_log_offsets,
    open_transaction,
)


@dataclass(frozen=True)
class Txn:
    topic: str
    partition: int
    producer_id: int
    epoch: int
    start: int

    def fields(self) -> dict[str, str]:
        return {"T": self.topic, "P": str(self.partition), "PID": str(self.producer_id), "E": str(self.epoch),
                "S": str(self.start)}


@dataclass
class World:
    bs: str
    hanging: list[Txn]
    live: Txn
    audit: Path
    reader: Any  # one librdkafka admin client for every offsets check

    def offsets(self) -> list[tuple[int, int]]:
        return many_log_offsets(self.bs, [(t.topic, t.partition) for t in [*self.hanging, self.live]] + [("plain", 0)],
                                self.reader)

    def live_epoch(self) -> int:
        return int(kafka_txn(self.bs, "describe", "-t", "live-app", "-o", "json").json()["transactions"][0][
            "producer_epoch"])


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with EmbeddedCluster(nodes=1, data_dir=tmp_path_factory.mktemp("kafka"),
                         config={"transaction.partition.verification.enable": False,
                                 "transaction.abort.timed.out.transaction.cleanup.interval.ms": 200}) as c:
        bs = c.bootstrap_servers
        results = run_scenario("partition-side", bs, ScenarioOptions(backdate_ms=30 * 60_000, healthy=False,
                                                                     zombie_timeout_ms=ZOMBIE_TIMEOUT_MS, wait_s=30))
        hanging = [Txn(h.topic, h.partition, h.producer_id, h.producer_epoch, h.start_offset)
                   for r in results for h in r.hanging]
        c.create_topic("live", 1, 1)
        producer = open_transaction(bs, "live-app", "live", [0])
        [row] = kafka_txn(bs, "describe-producers", "--topic", "live", "--open-only", "-o", "json").json()["producers"]
        live = Txn("live", 0, row["producer_id"], row["producer_epoch"], row["current_txn_start_offset"])
        c.create_topic("plain", 1, 1)
        from confluent_kafka import Producer
        from confluent_kafka.admin import AdminClient

        plain = Producer({"bootstrap.servers": bs, "log_level": 0})
        for i in range(5):
            plain.produce("plain", value=b"%d" % i, partition=0)
        plain.flush(30)

        reader = AdminClient({"bootstrap.servers": bs, "log_level": 0})
        yield World(bs, hanging, live, tmp_path_factory.mktemp("audit") / "audit.log", reader)
        del reader
        producer.commit_transaction(30)  # it was never touched: its commit works


@pytest.fixture(autouse=True)
def module_audit_log(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA_TXN_AUDIT_LOG", str(world.audit))


def fill(args: list[str], world: World) -> list[str]:
    values = {**world.hanging[0].fields(), **{f"L{k}": v for k, v in world.live.fields().items()}}
    values["S1"] = str(world.hanging[0].start + 1)
    return [a.format(**values) for a in args]


HANG = ["abort", "--topic", "{T}", "--partition", "{P}"]
PLAIN = ["abort", "--topic", "plain", "--partition", "0"]
LIVE = ["abort", "--topic", "{LT}", "--partition", "{LP}"]
COMMIT = ["commit", "--topic", "{T}", "--partition", "{P}"]
LEGACY = ["--producer-id", "{PID}", "--producer-epoch", "{E}", "--coordinator-epoch", "-1"]

KAFKA_TXN_REFUSALS = [
    (HANG + ["--start-offset", "-1", "--yes"], exit_codes.USAGE, "start offset -1 is not where a transaction"),
    (HANG + ["--start-offset", "{S}", "--producer-id", "999999", "--yes"], exit_codes.ERROR,
     "producer id 999999 (the partition has {PID})"),
    (HANG + ["--start-offset", "{S}", "--producer-epoch", "7", "--yes"], exit_codes.ERROR,
     "producer epoch 7 (the partition has {E})"),
    (HANG + ["--start-offset", "{S}", "--coordinator-epoch", "999", "--yes"], exit_codes.ERROR,
     "coordinator epoch 999 (the partition has"),
    (HANG + ["--producer-id", "{PID}", "--producer-epoch", "7", "--coordinator-epoch", "-1", "--yes"],
     exit_codes.ERROR, "producer epoch 7 (the partition has {E})"),
    (HANG + ["--producer-id", "999999", "--producer-epoch", "0", "--coordinator-epoch", "0", "--yes"],
     exit_codes.ERROR, "no state for producer id 999999"),
    (HANG + ["--producer-id", "{PID}", "--producer-epoch", "40000", "--coordinator-epoch", "0", "--yes"],
     exit_codes.USAGE, "producer epoch 40000 is out of range (-32768..32767)"),
    (HANG + ["--producer-id", "{PID}", "--producer-epoch", "{E}", "--coordinator-epoch", "2147483648", "--yes"],
     exit_codes.USAGE, "coordinator epoch 2147483648 is out of range"),
    (HANG + ["--start-offset", "{S1}", "--yes"], exit_codes.ERROR,
     "Could not find any open transactions starting at offset {S1} on partition {T}-{P}: offset {S1} is inside the "
     "open transaction of producer {PID}, which starts at offset {S}: abort it with --start-offset {S}"),
    (HANG + ["--start-offset", "{S}"], exit_codes.USAGE, "not a terminal: pass --yes"),
    (LIVE + ["--start-offset", "{LS}", "--yes"], exit_codes.ERROR, "still holds 'live-app' as ongoing"),
    (HANG + ["--start-offset", "100000", "--yes"], exit_codes.ERROR,
     "Could not find any open transactions starting at offset 100000 on partition {T}-{P}: the partition ends before "
     "it (high watermark"),
    (PLAIN + ["--start-offset", "2", "--yes"], exit_codes.ERROR,
     "Could not find any open transactions starting at offset 2 on partition plain-0: the record at offset 2 is not "
     "transactional (written by "),
    (PLAIN + ["--start-offset", "5", "--yes"], exit_codes.ERROR, "the partition ends before it (high watermark 5)"),
    (["abort", "--topic", "no-such-topic", "--partition", "0", "--start-offset", "0", "--yes"], exit_codes.ERROR,
     "topic 'no-such-topic' (UNKNOWN_TOPIC_OR_PARTITION) does not exist or is not visible to this principal"),
    (PLAIN + ["--producer-id", "{PID}", "--producer-epoch", "{E}", "--coordinator-epoch", "0", "--yes"],
     exit_codes.ERROR, "partition plain-0 has no state for producer id {PID}"),
    (LIVE + ["--producer-id", "{LPID}", "--producer-epoch", "{LE}", "--coordinator-epoch", "-1", "--yes"],
     exit_codes.ERROR, "pass --force to abort anyway"),
    # commit writes only the COMMIT marker a coordinator decided on: these hangs' coordinators decided nothing of
    # the kind (a late write after an abort, a forgotten producer), a live one is its coordinator's to end.
    (COMMIT + ["--start-offset", "{S}", "--yes"], exit_codes.ERROR,
     "its coordinator decided to abort it: PrepareAbort of "),
    (COMMIT + ["--start-offset", "{S1}", "--yes"], exit_codes.ERROR,
     "Could not find any open transactions starting at offset {S1} on partition {T}-{P}"),
    (["commit", "--topic", "{LT}", "--partition", "{LP}", "--start-offset", "{LS}", "--yes"], exit_codes.ERROR,
     "still holds 'live-app' as ongoing"),
    (["commit", "--topic", "plain", "--partition", "0", "--start-offset", "2", "--yes"], exit_codes.ERROR,
     "the record at offset 2 is not transactional"),
    (COMMIT + ["--start-offset", "{S}", "--force", "--yes"], exit_codes.USAGE, "--force"),
    (["force-terminate", "-t", "live-app", "--yes"], exit_codes.ERROR, "'live-app' is Ongoing and live"),
    (["force-terminate", "-t", "live-app", "--force"], exit_codes.USAGE, "not a terminal: pass --yes"),
]


@pytest.mark.parametrize("args, code, message", KAFKA_TXN_REFUSALS)
def test_kafka_txn_refusals_write_nothing(world: World, args: list[str], code: int, message: str) -> None:
    before, epoch = world.offsets(), world.live_epoch()
    r = kafka_txn(world.bs, *fill(args, world))
    assert r.code == code, r.err
    assert fill([message], world)[0] in r.err and "Traceback" not in r.err + r.out
    assert world.offsets() == before and world.live_epoch() == epoch


KAFKA_TRANSACTIONS_REFUSALS = [
    (HANG + ["--start-offset", "{S1}"], "Could not find any open transactions starting at offset {S1}"),
    (HANG + ["--producer-id", "{PID}", "--producer-epoch", "7", "--coordinator-epoch", "-1"],
     "Refusing to abort the transaction on partition {T}-{P}: the open transaction of producer {PID}"),
    (LIVE + ["--start-offset", "{LS}"],
     "To abort it anyway: kafka-txn abort --topic live --partition 0 --start-offset {LS} --force"),
    (HANG + ["--start-offset", "100000"],
     "Could not find any open transactions starting at offset 100000 on partition {T}-{P}: the partition ends before "
     "it"),
    (PLAIN + ["--start-offset", "2"],
     "Could not find any open transactions starting at offset 2 on partition plain-0: the record at offset 2 is not "
     "transactional"),
    (["abort", "--topic", "no-such-topic", "--partition", "0", "--start-offset", "0"],
     "Refusing to abort the transaction on partition no-such-topic-0: topic 'no-such-topic' "
     "(UNKNOWN_TOPIC_OR_PARTITION) does not exist"),
    (HANG + ["--start-offset", "{S}", "--producer-id", "999999"],
     "Refusing to abort the transaction on partition {T}-{P}: the open transaction of producer {PID} at offset {S}"),
    (["forceTerminateTransaction", "--transactionalId", "live-app"],
     "To fence it anyway: kafka-txn force-terminate --transactional-id live-app --force"),
]


@pytest.mark.parametrize("args, message", KAFKA_TRANSACTIONS_REFUSALS)
def test_kafka_transactions_refusals_write_nothing(world: World, args: list[str], message: str) -> None:
    before, epoch = world.offsets(), world.live_epoch()
    r = kafka_transactions(world.bs, *fill(args, world))
    assert (r.code, r.out) == (1, ""), r.err
    assert fill([message], world)[0] in r.err and "Traceback" not in r.err
    if "--force" not in message:  # only what --force overrides gets an override: never a command that is refused
        assert "--force" not in r.err
    assert world.offsets() == before and world.live_epoch() == epoch
    if "--producer-epoch" in args:
        # Identifiers that name another transaction than the open one: --force would not change that, so no
        # override is suggested (it would be refused again).
        assert "anyway" not in r.err and "--force" not in r.err


def test_kafka_transactions_malformed_input_exits_1_and_writes_nothing(world: World) -> None:
    before = world.offsets()
    r = kafka_transactions(world.bs, *fill(HANG + ["--start-offset", "-1"], world))
    assert (r.code, r.out) == (exit_codes.ERROR, "")  # upstream's code for every error
    assert "start offset -1 is not where a transaction can start" in r.err
    assert world.offsets() == before


def test_kafka_transactions_rejects_an_epoch_outside_int16_like_argparse4j(world: World, capsys) -> None:
    r = kafka_transactions(world.bs, *fill(HANG + LEGACY[:3] + ["40000", "--coordinator-epoch", "0"], world))
    assert r.code == exit_codes.ERROR  # argparse4j's text and TransactionsCommand's exit 1
    assert "could not convert '40000' to Short (Value out of range." in capsys.readouterr().err


def plan_file(tmp_path: Path, *entries: dict[str, object]) -> Path:
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump({"version": 1, "kind": "kafka-txn-abort-plan", "entries": list(entries)}))
    return path


def entry(t: Txn, **changes: object) -> dict[str, object]:
    return {"topic": t.topic, "partition": t.partition, "start_offset": t.start, "producer_id": t.producer_id,
            "producer_epoch": t.epoch, **changes}


def test_plans_refuse_stale_and_live_entries_and_reject_bad_types(world: World, tmp_path: Path) -> None:
    before = world.offsets()
    stale = plan_file(tmp_path, entry(world.hanging[0], producer_epoch=world.hanging[0].epoch + 1),
                      entry(world.live), entry(world.hanging[1], coordinator_epoch=9))
    r = kafka_txn(world.bs, "abort", "--plan", str(stale), "--yes", "-o", "json")
    assert r.code == exit_codes.ERROR, r.err
    rows = r.json()["aborts"]
    assert [row["result"] for row in rows] == ["refused", "refused", "refused"]
    assert "producer epoch" in rows[0]["message"] and "still holds 'live-app'" in rows[1]["message"]
    assert "coordinator epoch 9" in rows[2]["message"]
    bad = plan_file(tmp_path, entry(world.hanging[0], partition=1.9))
    r = kafka_txn(world.bs, "abort", "--plan", str(bad), "--yes")
    assert r.code == exit_codes.USAGE and "entries[0].partition: 1.9 is a float, not an integer" in r.err
    assert world.offsets() == before


def test_dry_run_writes_nothing_and_shows_the_exact_marker(world: World) -> None:
    before = world.offsets()
    h = world.hanging[0]
    r = kafka_txn(world.bs, *fill(HANG + ["--start-offset", "{S}", "--dry-run", "-o", "json"], world))
    assert r.code == 0, r.err
    assert r.json()["aborts"][0]["result"] == "dry-run"
    assert (f"ABORT marker for {h.topic}-{h.partition} to broker 0 (its leader): producer {h.producer_id}, "
            f"epoch {h.epoch}, coordinator epoch 0, start offset {h.start}") in r.err
    assert world.offsets() == before


def run_on_terminal(args: list[str], answer: str, tmp_path: Path) -> tuple[int, str, str]:
    """kafka-txn with a real terminal (a pty as controlling terminal and stdin) and stdout redirected to a
    file: what the terminal showed, what stdout got, and the exit code."""
    import fcntl
    import pty
    import select
    import termios

    master, slave = pty.openpty()
    out_path = tmp_path / "stdout.txt"

    def own_terminal() -> None:  # the child's session gets the pty as its controlling terminal
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    with open(out_path, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "kafka_txn_tools", *args], stdin=slave, stdout=out,
                                stderr=slave, start_new_session=True, preexec_fn=own_terminal,
                                env={**os.environ, "NO_COLOR": "1"})
    os.close(slave)
    shown, answered = b"", False
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
        if not answered and b"[y/N]" in shown:
            os.write(master, answer.encode() + b"\n")
            answered = True
        if proc.poll() is not None and not ready:
            break
    if proc.poll() is None and (not answered or time.monotonic() >= deadline):
        proc.kill()  # it never asked: fail the test, not the run
    code = proc.wait(30)
    os.close(master)
    return code, shown.decode(errors="replace").replace("\r\n", "\n"), out_path.read_text()


def test_the_prompt_is_on_the_terminal_names_the_cluster_and_lists_every_marker(world: World, tmp_path: Path) -> None:
    before = world.offsets()
    plan = plan_file(tmp_path, entry(world.hanging[0]), entry(world.hanging[1]))
    args = ["abort", "--plan", str(plan), "-b", world.bs, "-o", "json"]
    code, terminal, stdout = run_on_terminal(args, "n", tmp_path)
    assert code == exit_codes.ERROR, terminal
    assert f"Cluster: {world.bs}" in terminal and "About to write 2 changes:" in terminal
    for t in world.hanging[:2]:
        assert f"ABORT marker for {t.topic}-{t.partition} to broker 0" in terminal
    assert "cancelled: nothing was written" in terminal
    assert "[y/N]" not in stdout and "Cluster:" not in stdout  # the prompt never reaches redirected stdout
    assert [row["result"] for row in json.loads(stdout)["aborts"]] == ["cancelled", "cancelled"]
    assert world.offsets() == before


def test_force_on_a_live_transaction_gets_its_own_warning(world: World, tmp_path: Path) -> None:
    before = world.offsets()
    code, terminal, _ = run_on_terminal(fill(LIVE + ["--start-offset", "{LS}", "--force", "-b", world.bs], world),
                                        "no", tmp_path)
    assert code == exit_codes.ERROR
    assert "WARNING: --force: aborting live-0 although the coordinator still holds 'live-app' as ongoing" in terminal
    assert "cancelled: nothing was written" in terminal
    assert world.offsets() == before


def test_yes_on_the_terminal_aborts_and_the_lso_moves(world: World, tmp_path: Path) -> None:
    h = world.hanging[2]
    end, stable = log_offsets(world.bs, h.topic, h.partition)
    assert stable == h.start
    code, terminal, stdout = run_on_terminal(
        ["abort", "--topic", h.topic, "--partition", str(h.partition), "--start-offset", str(h.start), "-b",
         world.bs, "-o", "json"], "y", tmp_path)
    assert code == 0, terminal
    row = json.loads(stdout)["aborts"][0]
    assert row["result"] == "aborted" and row["lso_before"] == h.start
    assert log_offsets(world.bs, h.topic, h.partition) == (end + 1, end + 1)


def test_an_audit_log_that_cannot_be_written_does_not_hide_the_result(world: World, tmp_path: Path) -> None:
    h = world.hanging[1]
    end, _ = log_offsets(world.bs, h.topic, h.partition)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    r = kafka_txn(world.bs, "abort", "--topic", h.topic, "--partition", str(h.partition), "--start-offset",
                  str(h.start), "--yes", "--audit-log", str(blocker / "audit.log"), "-o", "json")
    assert r.code == 0, r.err
    assert r.json()["aborts"][0]["result"] == "aborted"
    assert f"warning: could not write the audit log {blocker / 'audit.log'}" in r.err
    assert "the command's result stands" in r.err
    assert log_offsets(world.bs, h.topic, h.partition) == (end + 1, end + 1)


def test_kafka_transactions_aborts_a_hanging_transaction_unchanged(world: World) -> None:
    h = world.hanging[0]
    end, stable = log_offsets(world.bs, h.topic, h.partition)
    assert stable == h.start
    r = kafka_transactions(world.bs, *fill(HANG + ["--start-offset", "{S}"], world))
    assert (r.code, r.out, r.err) == (0, "", "")
    assert log_offsets(world.bs, h.topic, h.partition) == (end + 1, end + 1)


def test_already_done_only_with_the_marker_as_evidence_in_both_front_ends(world: World) -> None:
    """After the abort above: kafka-txn says "nothing to do" (4) naming the ABORT marker; kafka-transactions
    keeps upstream's code (1) and text, with the same evidence."""
    h = world.hanging[0]
    before = world.offsets()
    again = kafka_txn(world.bs, *fill(HANG + ["--start-offset", "{S}", "--yes"], world))
    assert again.code == exit_codes.ALREADY_DONE, again.err
    evidence = (f"the transaction of producer {h.producer_id} that started at offset {h.start} on partition "
                f"{h.topic}-{h.partition} was already aborted: its ABORT marker is at offset")
    assert f"nothing to do: {evidence}" in again.err
    upstream = kafka_transactions(world.bs, *fill(HANG + ["--start-offset", "{S}"], world))
    assert (upstream.code, upstream.out) == (1, "")
    assert upstream.err.startswith(f"Could not find any open transactions starting at offset {h.start} on partition "
                                   f"{h.topic}-{h.partition}: {evidence}")
    assert world.offsets() == before


def test_every_attempt_is_in_the_audit_log(world: World) -> None:
    """Runs last in this module: every abort and fence attempted above, successful or not."""
    import getpass

    records = [json.loads(line) for line in world.audit.read_text().splitlines()]
    assert all(set(r) == {"time", "user", "principal", "cluster", "command", "target", "result", "detail"}
               for r in records)
    assert {r["user"] for r in records} == {getpass.getuser()}
    assert {r["principal"] for r in records} == {None}  # PLAINTEXT: no SASL principal
    assert {r["cluster"] for r in records} == {world.bs}
    by_command: dict[str, list[str]] = {}
    for r in records:
        by_command.setdefault(r["command"], []).append(r["result"])
    # Refusals, failures, cancellations and writes alike (usage errors found before any request excepted).
    assert by_command["kafka-txn abort"].count("refused") >= 8
    assert {"cancelled", "aborted", "dry-run", "refused"} <= set(by_command["kafka-txn abort"])
    assert by_command["kafka-txn force-terminate"] == ["refused", "refused"]
    assert by_command["kafka-transactions abort"].count("refused") == 7
    assert by_command["kafka-transactions abort"][-2:] == ["aborted", "already-done"]
    assert by_command["kafka-transactions forceTerminateTransaction"] == ["refused"]
    aborted = next(r for r in records if r["command"] == "kafka-transactions abort" and r["result"] == "aborted")
    assert aborted["target"]["topic"] == world.hanging[0].topic and aborted["time"].endswith("Z")
