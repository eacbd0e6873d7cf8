"""The reason given when a case qualifies for two or more, in find-hanging's rules and the sweep's alike.

The order comes from Kafka, not from the rules' own code:
- KIP-664's find-hanging, step 4: a producer id that no coordinator lists is hanging (1); otherwise
  DescribeTransactions decides. Upstream's TransactionsCommand.FindHangingTransactionsCommand takes an id
  answered with TRANSACTIONAL_ID_NOT_FOUND as hanging before it looks at anything else (2).
- Of what DescribeTransactions shows, KIP-664 names the epoch first ("if the epoch does not match or the
  partition is not included"): a coordinator that holds the id for another producer id, or at an older
  epoch, writes its markers for that producer and epoch, and the partition leader fences them
  (ProducerAppendInfo.checkProducerEpoch), whatever its state (3).
- A coordinator in Empty / CompleteCommit / CompleteAbort has no partitions at all
  (TransactionMetadata.prepareComplete and prepareIncrementProducerEpoch clear topicPartitions), so every
  such case also lacks the partition; the state is the cause, so it comes first (4), and
  partition-not-in-transaction (5) is left for an Ongoing / Prepare* transaction without the partition.
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
HERE, ELSEWHERE = (("orders", 3),), (("orders", 2),)


@dataclass(frozen=True)
class View:
    """What the coordinator holds for the one transactional id listed under the partition's producer id."""

    state: str
    producer_id: int = PID
    epoch: int = EPOCH
    partitions: tuple[tuple[str, int], ...] = HERE


CASES = [
    # (case, coordinator view, reason)
    ("other producer id and Empty", View("Empty", producer_id=PID + 1, partitions=()), "epoch-mismatch"),
    ("other producer id and CompleteCommit", View("CompleteCommit", producer_id=PID + 1, partitions=()),
     "epoch-mismatch"),
    ("older epoch and CompleteAbort", View("CompleteAbort", epoch=EPOCH - 1, partitions=()), "epoch-mismatch"),
    ("older epoch and Ongoing without the partition", View("Ongoing", epoch=EPOCH - 1, partitions=ELSEWHERE),
     "epoch-mismatch"),
    ("other producer id, older epoch, Empty, no partition", View("Empty", PID + 1, EPOCH - 1, ()),
     "epoch-mismatch"),
    ("Empty without the partition", View("Empty", partitions=()), "transaction-not-ongoing"),
    ("CompleteCommit without the partition", View("CompleteCommit", partitions=ELSEWHERE),
     "transaction-not-ongoing"),
    ("CompleteAbort still naming the partition (a dump row)", View("CompleteAbort"), "transaction-not-ongoing"),
    ("Ongoing at a newer epoch without the partition", View("Ongoing", epoch=EPOCH + 1, partitions=ELSEWHERE),
     "partition-not-in-transaction"),
    ("PrepareAbort without the partition", View("PrepareAbort", partitions=ELSEWHERE),
     "partition-not-in-transaction"),
]


def find_hanging(view: View) -> str:
    candidate = OpenTransaction(TP, 1, ProducerState(PID, EPOCH, 7, OLD, 2, START))
    listing = TransactionListing("app", PID, view.state, 0)
    description = TransactionDescription("app", 0, view.state, view.producer_id, view.epoch, 60_000, OLD,
                                         frozenset(TopicPartition(*p) for p in view.partitions))
    verdicts, unknown = hanging.classify_all([candidate], [listing], {"app": description}, set())
    assert not unknown
    [verdict] = verdicts
    return verdict.reason.value


def sweep(view: View) -> str:
    # The sweep finds coordinator rows by the partition's producer id; the row's own producer id is what
    # the coordinator holds (C.Coordinator has one field for both, so the view's id is compared by the rule).
    row = C.OpenRow(TP.topic, TP.partition, 1, True, PID, EPOCH, 2, START, OLD, None, NOW, "describe-producers")
    coordinator = C.Coordinator(view.producer_id, "app", 0, view.state, view.epoch, view.partitions)
    return C.reason(row, coordinator)


@pytest.mark.parametrize(("view", "reason"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_case_that_qualifies_twice_gets_the_first_reason_in_kafkas_order(view: View, reason: str) -> None:
    assert find_hanging(view) == reason
    assert sweep(view) == reason


def test_not_found_comes_before_what_any_other_id_says() -> None:
    # TransactionsCommand: an id answered TRANSACTIONAL_ID_NOT_FOUND is hanging before descriptions are read;
    # with a second id that is not live either, the first id in order decides (as the shared table says).
    row = C.OpenRow(TP.topic, TP.partition, 1, True, PID, EPOCH, 2, START, OLD, None, NOW, "describe-producers")
    rows = [C.Coordinator(PID, "a", 0, "Dead", EPOCH, HERE), C.Coordinator(PID, "b", 0, "Empty", EPOCH - 1, ())]
    decisive, why = C.decide(row, rows)
    assert (decisive.transactional_id if decisive else None, why) == ("a", "transactional-id-not-found")
