"""One table of cases, fed to find-hanging's rules (admin/hanging.py) and to the sweep's classification
(spark/classify.py, plain Python, no Spark): both must give the verdict Kafka's facts call for.

Each case is an open transaction older than the timeout on orders-3 (producer 100, epoch 5, start offset
50) and what the coordinators hold for the transactional ids listed under that producer id, as the CLI
reads them live (DescribeTransactions, TRANSACTIONAL_ID_NOT_FOUND, or no answer) and as a dump holds
them (a row per id; Dead for not found; partitions null when the describe failed).
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from kafka_txn_tools.admin import hanging
from kafka_txn_tools.models import (
    OpenTransaction,
    ProducerState,
    TopicPartition,
    TransactionDescription,
    TransactionListing,
)
from kafka_txn_tools.spark import classify as C

NOW = 1_700_000_000_000
TIMEOUT = 900_000
OLD = NOW - TIMEOUT - 60_000
TP = TopicPartition("orders", 3)
PID, EPOCH, START = 100, 5, 50
UNKNOWN = "coordinator-state-unknown"  # the sweep's name for "cannot tell"; find-hanging leaves it out


@dataclass(frozen=True)
class Answer:
    """A coordinator's answer for one transactional id."""

    state: str | None  # None: no answer (the describe failed); "NOT_FOUND": TRANSACTIONAL_ID_NOT_FOUND
    epoch: int = EPOCH
    partitions: tuple[tuple[str, int], ...] = (("orders", 3),)


ONGOING_HERE = Answer("Ongoing")
CASES: list[tuple[str, dict[str, Answer], str, str | None]] = [
    # (case, answers by transactional id, expected reason, transactional id that decides)
    ("no coordinator lists the producer", {}, "no-transactional-id", None),
    ("id unknown to its coordinator", {"app": Answer("NOT_FOUND")}, "transactional-id-not-found", "app"),
    ("coordinator epoch older: markers fenced", {"app": Answer("Ongoing", epoch=4)}, "epoch-mismatch", "app"),
    ("coordinator epoch newer (TV2 bump): still live", {"app": Answer("PrepareCommit", epoch=6)}, "late", "app"),
    ("Empty", {"app": Answer("Empty", partitions=())}, "transaction-not-ongoing", "app"),
    ("CompleteCommit", {"app": Answer("CompleteCommit", partitions=())}, "transaction-not-ongoing", "app"),
    ("CompleteAbort", {"app": Answer("CompleteAbort", partitions=())}, "transaction-not-ongoing", "app"),
    ("Ongoing without this partition", {"app": Answer("Ongoing", partitions=(("orders", 2),))},
     "partition-not-in-transaction", "app"),
    ("Ongoing with this partition", {"app": ONGOING_HERE}, "late", "app"),
    ("PrepareCommit with this partition", {"app": Answer("PrepareCommit")}, "late", "app"),
    ("PrepareAbort with this partition", {"app": Answer("PrepareAbort")}, "late", "app"),
    ("PrepareEpochFence with this partition", {"app": Answer("PrepareEpochFence")}, "late", "app"),
    ("no answer: cannot tell", {"app": Answer(None)}, UNKNOWN, "app"),
    ("two ids, one live: live wins", {"a-old": Answer("CompleteAbort", partitions=()), "z-new": ONGOING_HERE},
     "late", "z-new"),
    ("two ids, none live: the first id decides", {"b": Answer("Empty", partitions=()), "a": Answer("NOT_FOUND")},
     "transactional-id-not-found", "a"),
    ("two ids, one without an answer: cannot tell", {"a": ONGOING_HERE, "b": Answer(None)}, UNKNOWN, "b"),
]


def find_hanging(answers: dict[str, Answer]) -> tuple[str, str | None]:
    candidate = OpenTransaction(TP, 1, ProducerState(PID, EPOCH, 7, OLD, 2, START))
    listings = [TransactionListing(tid, PID, a.state or "Ongoing", 0) for tid, a in answers.items()]
    descriptions = {tid: TransactionDescription(tid, 0, a.state, PID, a.epoch, 60_000, OLD,
                                                frozenset(TopicPartition(*p) for p in a.partitions))
                    for tid, a in answers.items() if a.state not in (None, "NOT_FOUND")}
    not_found = {tid for tid, a in answers.items() if a.state == "NOT_FOUND"}
    verdicts, unknown = hanging.classify_all([candidate], listings, descriptions, not_found)
    if unknown:
        return UNKNOWN, None  # find-hanging reports such a candidate as unclassified, without an id
    [verdict] = verdicts
    return verdict.reason.value, verdict.transactional_id


def sweep(answers: dict[str, Answer]) -> tuple[str, str | None]:
    row = C.OpenRow(TP.topic, TP.partition, 1, True, PID, EPOCH, 2, START, OLD, None, NOW, "describe-producers")
    replicas = [C.Replica(TP.topic, TP.partition, 1, True, NOW, C.MAX_LONG)]
    coordinators = [C.Coordinator(PID, tid, 0, "Dead" if a.state == "NOT_FOUND" else (a.state or "Ongoing"),
                                  a.epoch, None if a.state is None else a.partitions)
                    for tid, a in answers.items()]
    [verdict] = C.analyze([row], replicas, coordinators, C.SweepParams(NOW, TIMEOUT, include_late=True)).verdicts
    return verdict["reason"], verdict["transactional_id"]


@pytest.mark.parametrize(("answers", "reason", "decided_by"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_find_hanging_and_the_sweep_give_the_same_verdict(answers: dict[str, Answer], reason: str,
                                                          decided_by: str | None) -> None:
    assert sweep(answers) == (reason, decided_by)
    assert find_hanging(answers) == (reason, None if reason == UNKNOWN else decided_by)
