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

from kafka_txn_tools.admin import coordinator_rules, hanging
from kafka_txn_tools.models import (
    BrokerInfo,
    ClusterInfo,
    OpenTransaction,
    PartitionInfo,
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
    timeout_ms: int = 60_000


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
    # KIP-939: an external transaction manager owns a transaction whose timeout is Integer.MAX_VALUE.
    ("2PC Ongoing with this partition: prepared, never hanging by age",
     {"app": Answer("Ongoing", timeout_ms=2**31 - 1)}, "prepared-2pc", "app"),
    ("2PC Ongoing without this partition: hanging all the same",
     {"app": Answer("Ongoing", partitions=(("orders", 2),), timeout_ms=2**31 - 1)}, "partition-not-in-transaction",
     "app"),
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
    descriptions = {tid: TransactionDescription(tid, 0, a.state, PID, a.epoch, a.timeout_ms, OLD,
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
                                  a.epoch, None if a.state is None else a.partitions, timeout_ms=a.timeout_ms)
                    for tid, a in answers.items()]
    [verdict] = C.analyze([row], replicas, coordinators, C.SweepParams(NOW, TIMEOUT, include_late=True)).verdicts
    return verdict["reason"], verdict["transactional_id"]


@pytest.mark.parametrize(("answers", "reason", "decided_by"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_find_hanging_and_the_sweep_give_the_same_verdict(answers: dict[str, Answer], reason: str,
                                                          decided_by: str | None) -> None:
    assert sweep(answers) == (reason, decided_by)
    assert find_hanging(answers) == (reason, None if reason == UNKNOWN else decided_by)


# ---- who owned the producer id: the same answer from the records either front end reads -----------------
OWNERS = [hanging.Ownership("old-app", PID, NOW - 3 * 86_400_000), hanging.Ownership("app", PID, NOW - 86_400_000),
          hanging.Ownership("other", 555, NOW)]


def test_the_last_owner_of_a_forgotten_producer_id_is_the_same_for_both() -> None:
    row = C.OpenRow(TP.topic, TP.partition, 1, True, PID, EPOCH, 2, START, OLD, None, NOW, "describe-producers")
    replicas = [C.Replica(TP.topic, TP.partition, 1, True, NOW, C.MAX_LONG)]
    [verdict] = C.analyze([row], replicas, [], C.SweepParams(NOW, TIMEOUT), owners=OWNERS).verdicts
    assert verdict["reason"] == "no-transactional-id"
    assert verdict["last_known_transactional_id"] == hanging.last_known_owner(PID, OWNERS) == "app"
    assert hanging.last_known_owner(999, OWNERS) is None


# ---- coordinator-side stuck transactions: one table for find-hanging (admin/stuck.py over what
# DescribeTransactions, `__transaction_state` and the leaders' DescribeProducers say) and for the sweep
# (a coordinator row of a log or dump, and the leaders' producer rows) ------------------------------------
MIN = 60_000
MAX_PREPARE = MIN
MAX_INT = 2**31 - 1
# __transaction_state with 50 partitions, three in-sync replicas each.
TXN_META = ClusterInfo(tuple(BrokerInfo(b, "h", 9092) for b in range(3)), tuple(
    PartitionInfo(TopicPartition("__transaction_state", i), 1, (1, 0, 2), (1, 0, 2), True, 4) for i in range(50)))
P1, P2 = TopicPartition("orders", 1), TopicPartition("orders", 2)
OPEN, NOTHING, ABSENT = "open", "nothing", "absent"  # what the leader of a partition shows for the producer


@dataclass(frozen=True)
class Held:
    state: str
    epoch: int = EPOCH
    timeout_ms: int = MIN
    start_ago: int = 20 * MIN
    entered_ago: int | None = 5 * MIN  # None: no record says when (DescribeTransactions / a live dump only)
    partitions: tuple[TopicPartition, ...] = (P1,)
    leaders: tuple[tuple[TopicPartition, str], ...] = ((P1, OPEN),)


STUCK_CASES: list[tuple[str, Held, str | None, list[tuple[TopicPartition, str | None]]]] = [
    # (case, what the coordinator holds and the leaders show, expected reason, pending partitions and why)
    ("PrepareCommit 5 min, the leader still shows the transaction open",
     Held("PrepareCommit"), "markers-pending", [(P1, "open-transaction")]),
    ("PrepareAbort 5 min, one partition open, one unknown to the cluster",
     Held("PrepareAbort", partitions=(P1, P2)), "markers-pending", [(P1, "open-transaction"), (P2, "leader-unknown")]),
    ("PrepareEpochFence 5 min", Held("PrepareEpochFence"), "markers-pending", [(P1, "open-transaction")]),
    ("PrepareCommit for 30 s only: not yet", Held("PrepareCommit", entered_ago=30_000), None, []),
    ("PrepareCommit with no record: at least 20m - 1m - 10s by its start and timeout",
     Held("PrepareCommit", entered_ago=None), "markers-pending", [(P1, "open-transaction")]),
    ("PrepareCommit with no record, started 90 s ago with a 1 min timeout: the bound is 20 s, not reported",
     Held("PrepareCommit", entered_ago=None, start_ago=90_000), None, []),
    ("2PC PrepareCommit with no record: no bound from its timeout, not reported",
     Held("PrepareCommit", entered_ago=None, timeout_ms=MAX_INT), None, []),
    ("2PC PrepareCommit 5 min by its record: its markers are stuck all the same",
     Held("PrepareCommit", timeout_ms=MAX_INT), "markers-pending", [(P1, "open-transaction")]),
    ("PrepareCommit 5 min, no leader shows anything open: COMPLETE_* never written",
     Held("PrepareCommit", leaders=((P1, NOTHING),)), "completion-pending", []),
    ("Ongoing at Short.MAX_VALUE: nothing can end it (KAFKA-20090)",
     Held("Ongoing", epoch=32767, timeout_ms=10 * 60_000, entered_ago=None, start_ago=5 * MIN), "epoch-exhausted",
     [(P1, "open-transaction")]),
    ("Ongoing at Short.MAX_VALUE - 1 past its timeout: the reaper could not fence it",
     Held("Ongoing", epoch=32766, entered_ago=None, start_ago=5 * MIN), "epoch-exhausted", [(P1, "open-transaction")]),
    ("Ongoing at Short.MAX_VALUE - 1 within its timeout: live",
     Held("Ongoing", epoch=32766, timeout_ms=10 * MIN, entered_ago=None, start_ago=5 * MIN), None, []),
    ("Ongoing at an ordinary epoch: the partition side's business", Held("Ongoing", entered_ago=None), None, []),
    ("2PC Ongoing at Short.MAX_VALUE - 1, days old: never by age",
     Held("Ongoing", epoch=32766, timeout_ms=MAX_INT, entered_ago=None, start_ago=3 * 86_400_000), None, []),
    ("CompleteCommit: done", Held("CompleteCommit", partitions=()), None, []),
]


def _leader_state(held: Held, tp: TopicPartition) -> str:
    return dict(held.leaders).get(tp, ABSENT)


def find_hanging_stuck(held: Held) -> tuple[str | None, list[tuple[TopicPartition, str | None]]]:
    from kafka_txn_tools.admin import stuck
    from kafka_txn_tools.admin.transaction_state import StateRecord, TxnStateRead

    # DescribeTransactions lists, in a Prepare state, only the partitions still waiting: not those whose
    # leader shows the marker landed and nothing open (the coordinator had its acknowledgement).
    listed = frozenset(tp for tp in held.partitions if _leader_state(held, tp) != NOTHING)
    d = TransactionDescription("app", 0, held.state, PID, held.epoch, held.timeout_ms, NOW - held.start_ago, listed)
    log = TxnStateRead()
    if held.entered_ago is not None:
        log.latest["app"] = StateRecord("app", held.state, PID, held.epoch, NOW - held.entered_ago, 4, 10)
    views = {}
    for tp in listed:
        seen = _leader_state(held, tp)
        views[tp] = (coordinator_rules.LeaderView(None) if seen == ABSENT else
                     coordinator_rules.LeaderView(1, producer=ProducerState(PID, held.epoch, 3, OLD, 2, START)))
    rows = stuck.judge([d], log, views, NOW, MAX_PREPARE, TXN_META)
    if not rows:
        return None, []
    [row] = rows
    return row.reason.value, [(p.partition, p.reason.value if p.reason else None) for p in row.pending_partitions]


def sweep_stuck(held: Held) -> tuple[str | None, list[tuple[TopicPartition, str | None]]]:
    entered = None if held.entered_ago is None else NOW - held.entered_ago
    coordinator = C.Coordinator(PID, "app", 0, held.state, held.epoch, tuple(held.partitions), held.timeout_ms,
                                NOW - held.start_ago, entered)
    replicas, rows = [], []
    for tp in held.partitions:
        seen = _leader_state(held, tp)
        if seen == ABSENT:
            continue
        replicas.append(C.Replica(tp.topic, tp.partition, 1, True, NOW, C.MAX_LONG))
        if seen == OPEN:
            rows.append(C.OpenRow(tp.topic, tp.partition, 1, True, PID, held.epoch, 2, START, OLD, None, NOW,
                                  "describe-producers"))
    found = C.analyze(rows, replicas, [], C.SweepParams(NOW, TIMEOUT, max_prepare_ms=MAX_PREPARE),
                      stuck_coordinators=[coordinator]).stuck
    if not found:
        return None, []
    [row] = found
    return row.reason.value, [(p.partition, p.reason.value if p.reason else None) for p in row.pending_partitions]


@pytest.mark.parametrize(("held", "reason", "pending"), [c[1:] for c in STUCK_CASES], ids=[c[0] for c in STUCK_CASES])
def test_find_hanging_and_the_sweep_find_the_same_stuck_transactions(
        held: Held, reason: str | None, pending: list[tuple[TopicPartition, str | None]]) -> None:
    assert find_hanging_stuck(held) == (reason, pending)
    assert sweep_stuck(held) == (reason, pending)
