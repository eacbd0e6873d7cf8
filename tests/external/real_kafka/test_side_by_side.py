"""Side by side with upstream's own tool: TransactionsCommand of the same release (`java -cp`) and our
`kafka-transactions` front end, with the same command lines, against the same real cluster, name the same
transactions, producers and partitions with the same exit codes. Where they differ on purpose, a test says why.

Cells that depend on when each tool ran (describe's TransactionDurationMs, find-hanging's Duration(min)) are left
out of the comparison; list's row order is upstream's map order, so rows are compared as sets.
"""

from __future__ import annotations

import io
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from kafka_txn_broker.testing.raw_client import RawKafkaClient
from kafka_txn_broker.testing.scenarios import HANGING_PARTITION, HEALTHY_PARTITION, OPEN_PARTITION, ScenarioResult
from kafka_txn_broker.testing.scenarios import _retry as retried
from kafka_txn_tools.cli.upstream import run as ours_run
from tests.e2e.cli_support import kafka_txn
from tests.support.real_kafka import KafkaCluster, UpstreamTool
from tests.support.real_kafka.staging import offsets, ready_topic, stage

BACKDATE_MS = 30 * 60_000


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str

    def rows(self, drop: tuple[int, ...] = ()) -> list[tuple[str, ...]]:
        """The table's cells (upstream pads with spaces and ends each cell with a tab), header first."""
        table = []
        for line in self.out.splitlines():
            cells = [c.strip() for c in line.split("\t")]
            if cells and cells[-1] == "":
                cells.pop()
            table.append(tuple(c for i, c in enumerate(cells) if i not in drop))
        return table


@dataclass(frozen=True)
class Both:
    upstream: UpstreamTool
    bs: str

    def theirs(self, *args: str) -> Run:
        done = self.upstream.run("--bootstrap-server", self.bs, *args)
        return Run(done.returncode, done.stdout, done.stderr)

    def ours(self, *args: str) -> Run:
        out, err = io.StringIO(), io.StringIO()
        code = ours_run(["--bootstrap-server", self.bs, *args], out, err)
        return Run(code, out.getvalue(), err.getvalue())

    def pair(self, *args: str) -> tuple[Run, Run]:
        theirs, ours = self.theirs(*args), self.ours(*args)
        assert theirs.code == ours.code == 0, (args, theirs.err[-800:], ours.err)
        return theirs, ours


@pytest.fixture(scope="module")
def both(real_kafka: KafkaCluster, upstream: UpstreamTool) -> Both:
    return Both(upstream, real_kafka.bootstrap_servers)


@pytest.fixture(scope="module")
def staged(real_kafka: KafkaCluster) -> ScenarioResult:
    """A late write after an abort (hanging, 30 min old) next to a committed, an aborted and an open
    transaction of well-behaved clients."""
    return stage(real_kafka.bootstrap_servers, "late-write-after-abort", backdate_ms=BACKDATE_MS, healthy=True)


def ids_of(result: ScenarioResult) -> set[str]:
    return {h.transactional_id for h in result.healthy} | {h.transactional_id for h in result.hanging}


def test_list_names_the_same_transactions(both: Both, staged: ScenarioResult) -> None:
    theirs, ours = both.pair("list")
    assert theirs.rows()[0] == ours.rows()[0] == ("TransactionalId", "Coordinator", "ProducerId", "TransactionState")
    assert set(theirs.rows()[1:]) == set(ours.rows()[1:])
    listed = {row[0]: row[3] for row in ours.rows()[1:]}
    assert {i: listed[i] for i in ids_of(staged)} == {
        **{h.transactional_id: h.state for h in staged.healthy},
        staged.hanging[0].transactional_id: "CompleteAbort"}


def test_describe_gives_the_same_transaction(both: Both, staged: ScenarioResult) -> None:
    for txn_id in sorted(ids_of(staged)):
        theirs, ours = both.pair("describe", "--transactional-id", txn_id)
        assert theirs.rows(drop=(7,)) == ours.rows(drop=(7,)), txn_id  # 7: TransactionDurationMs


def test_describe_producers_gives_the_same_producers(both: Both, staged: ScenarioResult) -> None:
    topic = staged.topics[0]
    for partition in (HEALTHY_PARTITION, HANGING_PARTITION, OPEN_PARTITION):
        theirs, ours = both.pair("describe-producers", "--topic", topic, "--partition", str(partition))
        assert theirs.rows() == ours.rows(), partition
        assert len(ours.rows()) > 1  # each partition has producer state to compare


def test_find_hanging_names_the_same_hanging_transaction(both: Both, staged: ScenarioResult) -> None:
    hang, topic = staged.hanging[0], staged.topics[0]
    expected = (topic, str(HANGING_PARTITION), str(hang.producer_id), str(hang.producer_epoch))
    for scope in (("--topic", topic), ("--topic", topic, "--partition", str(HANGING_PARTITION)),
                  ("--broker-id", "1")):
        theirs, ours = both.pair("find-hanging", *scope)
        drop = (7,)  # Duration(min): each tool's own clock
        assert set(theirs.rows(drop)) == set(ours.rows(drop)), scope
        assert any(row[:4] == expected for row in ours.rows()), (scope, ours.out)
    # kafka-txn's own find-hanging names it too, with the coordinator's reason.
    doc = kafka_txn(both.bs, "find-hanging", "--topic", topic, "-o", "json").json()
    assert [(h["topic"], h["partition"], h["producer_id"], h["start_offset"]) for h in doc["hanging"]] == [
        (topic, HANGING_PARTITION, hang.producer_id, hang.start_offset)]


def test_abort_of_the_hang_then_again_exits_like_upstream(both: Both, staged: ScenarioResult) -> None:
    """Ours aborts the hanging transaction (exit 0, nothing printed, as upstream); then each tool, asked again,
    finds no open transaction there and exits 1."""
    hang = staged.hanging[0]
    args = ("abort", "--topic", hang.topic, "--partition", str(hang.partition), "--start-offset",
            str(hang.start_offset))
    done = both.ours(*args)
    assert (done.code, done.out) == (0, ""), done.err
    after = offsets(both.bs, hang.topic, hang.partition)
    assert after.lso == after.high_watermark
    theirs, ours = both.theirs(*args), both.ours(*args)
    assert theirs.code == ours.code == 1, (theirs.err, ours.err)
    assert "Could not find any open transactions starting at offset" in theirs.err
    assert "Could not find any open transactions starting at offset" in ours.err
    assert offsets(both.bs, hang.topic, hang.partition) == after


@pytest.fixture
def live(real_kafka: KafkaCluster) -> Iterator[dict[str, Any]]:
    bs = real_kafka.bootstrap_servers
    topic = ready_topic(bs, f"real-sbs-live-{time.monotonic_ns() % 10**8}", 1)
    with RawKafkaClient(bs) as client:
        txn_id = f"{topic}-txn"
        code, pe = retried(lambda: client.init_producer_id(txn_id, 600_000), attempts=300)  # may still load
        assert code == 0 and client.add_partitions(txn_id, pe, topic, [0]) == 0
        code, start = client.produce_transactional(txn_id, pe, topic, 0, 0, [b"live"],
                                                   int(time.time() * 1000) - BACKDATE_MS)
        assert code == 0
        yield {"topic": topic, "start": start, "txn_id": txn_id}


def test_difference_upstream_aborts_a_live_transaction_ours_refuses_and_writes_nothing(
        both: Both, live: dict[str, Any]) -> None:
    """Upstream writes the marker blindly: a live transaction (Ongoing, its coordinator will end it) is cut,
    and its producer's commit would then leave the partition inconsistent with the coordinator. Ours validates
    against the coordinator first, refuses in upstream's words (exit 1, as upstream's failures) and names the
    override. Neither tool's find-hanging calls it hanging (upstream: the partition is in the transaction)."""
    topic = live["topic"]
    theirs_found, ours_found = both.pair("find-hanging", "--topic", topic)
    assert theirs_found.rows()[1:] == ours_found.rows()[1:] == []
    args = ("abort", "--topic", topic, "--partition", "0", "--start-offset", str(live["start"]))
    before = offsets(both.bs, topic, 0)
    refused = both.ours(*args)
    assert refused.code == 1 and refused.err.startswith("Refusing to abort the transaction on partition"), refused.err
    assert "--force" in refused.err
    assert offsets(both.bs, topic, 0) == before
    theirs = both.theirs(*args)
    assert theirs.code == 0, theirs.err
    after = offsets(both.bs, topic, 0)
    assert after.lso == after.high_watermark == before.high_watermark + 1  # upstream's marker
