"""`kafka-txn commit`'s validation (admin/commit.py) over the in-memory cluster: the check it returns is the
COMMIT marker of exactly the open transaction on the leader, and every way it refuses writes nothing and says why
and what to run instead (the connection options the user gave included).

The transaction: producer 7 holds orders-1 open from offset 40 at epoch 3 (its coordinator epoch on the partition
-1: it never received a marker there); 'app' decided on it 20 minutes ago (PrepareCommit at epoch 4: transaction
version 2 bumps it) and completed it without orders-1.
"""

from __future__ import annotations

import pytest

from kafka_txn_broker.formats.partitioning import partition_for
from kafka_txn_tools.admin.abort import AbortTarget
from kafka_txn_tools.admin.advice import Invocation
from kafka_txn_tools.admin.commit import validate
from kafka_txn_tools.errors import MissingApi, Refused, UsageError
from kafka_txn_tools.models import TopicPartition
from tests.tools.admin.fakes import MIN, NOW, cluster, producer, txn
from tests.tools.admin.test_decisions import committed_without_the_marker, record

TP = TopicPartition("orders", 1)
INV = Invocation("kafka-1:9092")
HOME = partition_for("app", 3)


def refused(c, target=AbortTarget(TP, 40)) -> Refused:
    with pytest.raises(Refused) as caught:
        validate(c, target, INV)
    return caught.value


def test_the_check_is_the_commit_marker_of_the_open_transaction_on_the_leader() -> None:
    c = committed_without_the_marker()
    c.producers = {k: [producer(7, 40, 25 * MIN, epoch=3, coordinator_epoch=-1)] for k in c.producers}
    check = validate(c, AbortTarget(TP, 40), INV)
    s = check.spec
    assert (s.partition, s.producer_id, s.producer_epoch, s.coordinator_epoch, s.start_offset) == (TP, 7, 3, 0, 40)
    assert check.leader == 1 and check.before.last_stable_offset == 40
    assert check.decision is not None and (check.decision.transactional_id, check.decision.offset) == ("app", 1)
    assert check.marker_text() == ("COMMIT marker for orders-1 to broker 1 (its leader): producer 7, epoch 3, "
                                   "coordinator epoch 0, start offset 40")
    assert check.refusal is None and not check.unverifiable


def test_an_abort_decision_names_the_abort_to_run() -> None:
    e = refused(committed_without_the_marker("PrepareAbort"))
    assert e.message == (f"its coordinator decided to abort it: PrepareAbort of 'app' (producer 7, epoch 4) at "
                         f"__transaction_state-{HOME} offset 1, listing this partition: a COMMIT marker would expose "
                         "records it aborted; nothing was written")
    assert e.fix == ("abort it: kafka-txn abort --topic orders --partition 1 --start-offset 40 --bootstrap-server "
                     "kafka-1:9092")


def test_no_decision_names_find_hanging() -> None:
    c = committed_without_the_marker()
    c.txn_log[HOME] = c.txn_log[HOME][:1]  # only the Ongoing record: the coordinator never decided
    e = refused(c)
    assert e.message == (f"__transaction_state-{HOME} holds no PrepareCommit of 'app' for producer 7 epoch 3 listing "
                         "orders-1 after its last write: its coordinator never decided to commit this transaction (a "
                         "late write after an abort, or the record was removed by compaction); nothing was written")
    assert e.fix == ("end it as find-hanging advises: kafka-txn find-hanging --topic orders --partition 1 "
                     "--bootstrap-server kafka-1:9092")


def test_a_decision_older_than_the_last_write_is_another_transactions() -> None:
    c = committed_without_the_marker()
    c.txn_log[HOME] = [record(1, "PrepareCommit", NOW - 27 * MIN, 4, (("orders", 1),))]  # 2 min before the write
    assert "holds no PrepareCommit" in refused(c).message


def test_an_unreadable_transaction_log_is_a_refusal_that_says_why() -> None:
    c = committed_without_the_marker()
    c.partitions = [p for p in c.partitions if p.partition.topic != "__transaction_state"]  # not in the metadata
    e = refused(c)
    assert e.message.startswith("__transaction_state cannot be read (")
    assert e.message.endswith(", so the coordinator's decision on 'app' cannot be checked; nothing was written")
    assert e.fix and e.fix.startswith("end it as find-hanging advises: kafka-txn find-hanging --topic orders")


def test_a_live_transaction_is_its_coordinators_to_end() -> None:
    c = committed_without_the_marker()
    c.transactions["app"] = txn("app", 7, partitions=[TP], epoch=3, coordinator=1, start_ms=NOW - 25 * MIN)
    e = refused(c)
    assert e.message == ("the coordinator still holds 'app' as ongoing with orders-1: it is live and aborting it would "
                         "fail the producer's commit (wait for its timeout, or end it through its coordinator with "
                         "force-terminate, which needs --force while it is within its timeout): it writes the marker "
                         "itself; nothing was written")
    assert e.fix == ("wait for it: kafka-txn find-hanging --topic orders --partition 1 --watch --count-held "
                     "--bootstrap-server kafka-1:9092")


def test_a_producer_no_coordinator_lists_has_no_decision_to_read() -> None:
    c = committed_without_the_marker()
    del c.transactions["app"]
    e = refused(c)
    assert e.message == ("no coordinator lists producer 7, so its decision on this transaction cannot be read; "
                         "nothing was written")
    assert e.fix == ("end it as find-hanging advises: kafka-txn find-hanging --topic orders --partition 1 "
                     "--bootstrap-server kafka-1:9092")


def test_an_unreachable_coordinator_is_a_refusal_to_retry() -> None:
    c = committed_without_the_marker()
    c.transactions["app"] = txn("app", 7, "CompleteCommit", epoch=4, coordinator=2)
    c.down = {2}  # 'app''s coordinator; the partition's leader (1) answers
    e = refused(c)
    assert e.message.startswith("the coordinator's view could not be read, so the transaction may be live (")
    assert e.message.endswith("); nothing was written") and e.fix == "retry once its coordinator answers"


def test_what_the_command_needs_of_the_cluster() -> None:
    with pytest.raises(UsageError, match="^name the transaction with --start-offset$"):
        validate(cluster(), AbortTarget(TP, None, producer_id=7), INV)
    for api in ("WriteTxnMarkers", "DescribeProducers", "ListTransactions", "DescribeTransactions"):
        c = committed_without_the_marker()
        c.unsupported = {api}
        with pytest.raises(MissingApi, match=f"^the cluster does not support {api} .*`kafka-txn commit` needs"):
            validate(c, AbortTarget(TP, 40), INV)


def test_a_transaction_log_partition_that_does_not_answer_is_named_in_the_refusal() -> None:
    c = committed_without_the_marker()
    c.down = {0}  # __transaction_state-0's leader, where 'app' lives; orders-1's leader and 'app''s coordinator answer
    e = refused(c)
    assert e.message == (f"__transaction_state-{HOME} holds no PrepareCommit of 'app' for producer 7 epoch 3 listing "
                         "orders-1 after its last write (__transaction_state partitions 0 could not be read (no "
                         "leader, or no answer)): its coordinator never decided to commit this transaction (a late "
                         "write after an abort, or the record was removed by compaction); nothing was written")


def test_an_offset_where_no_transaction_starts_is_refused_with_what_is_there() -> None:
    c = committed_without_the_marker()
    e = refused(c, AbortTarget(TP, 41))
    assert e.message == ("Could not find any open transactions starting at offset 41 on partition orders-1: there is "
                         "no record at offset 41 any more (removed by compaction)")
    assert e.fix == ("open transactions on orders-1 start at 40: take --start-offset from `kafka-txn find-hanging` or "
                     "`describe-producers`")
    assert refused(c, AbortTarget(TP, 90)).message == (
        "Could not find any open transactions starting at offset 90 on partition orders-1: the partition ends before "
        "it (high watermark 90)")
