"""commit: write the COMMIT marker a coordinator decided on and never delivered, after checking that decision.

A COMMIT marker makes records visible to every read_committed consumer, so this tool writes one only where
the transaction's own coordinator already decided to commit it (admin/decisions.py): Apache Kafka 4.3+
completes a commit without the marker of a partition whose leader was offline, and the partition then holds
the transaction open; an abort there would discard records the application was told were committed.

Nothing is written until `validate` has passed, and there is no --force: a commit nobody decided is never
the tool's to make.
1. The leader's DescribeProducers must show an open transaction starting at --start-offset (as abort checks
   it: admin/abort.py); none there is "already done" only with a marker as evidence.
2. The coordinator's view must call it hanging (a live transaction's coordinator will write its marker
   itself) and name its transactional id.
3. That id's `__transaction_state` partition, read from the transaction's last write on, must hold a
   PrepareCommit of this producer and epoch listing this partition. A PrepareAbort instead is a refusal that
   names `kafka-txn abort`; no decision at all (a late write after an abort, or a record removed by
   compaction) is a refusal too.
`abort.execute` then writes the marker (COMMIT, since the check carries the decision) and reads the LSO.
"""

from __future__ import annotations

from kafka_txn_broker.formats.partitioning import TXN_TOPIC
from kafka_txn_tools.admin import abort, advice, transaction_state
from kafka_txn_tools.admin.abort import AbortCheck, AbortClient, AbortTarget
from kafka_txn_tools.connection.capabilities import COORDINATOR_VIEW, require
from kafka_txn_tools.errors import Refused, UsageError
from kafka_txn_tools.models import AbortSpec, CoordinatorDecision


def validate(client: AbortClient, target: AbortTarget, inv: advice.Invocation = advice.Invocation()) -> AbortCheck:
    """Check that the coordinator decided to commit the open transaction at the target's start offset; write
    nothing. The check returned carries the decision, so `abort.execute` writes a COMMIT marker. `inv`: how the
    commands a refusal names reach this cluster."""
    if target.start_offset is None:
        raise UsageError("name the transaction with --start-offset")
    require(client, "commit", "WriteTxnMarkers", "DescribeProducers", *COORDINATOR_VIEW)
    tp = target.partition
    cluster, leader = abort.leader_of(client, tp)
    before = client.partition_offsets({tp: leader})[tp]
    producers = abort.producers_on_leader(client, tp, leader)
    producer = abort.match_open(client, target, leader, producers, before)
    abort.refuse_mismatches(target, producer)
    spec = AbortSpec(tp, producer.producer_id, producer.producer_epoch, max(producer.coordinator_epoch, 0),
                     producer.current_txn_start_offset)
    check = AbortCheck(target, leader, before, spec, producer=producer)
    abort.add_coordinator_view(client, cluster, check, producer)
    verdict = check.verdict
    if verdict is None:
        raise Refused(f"{check.refusal}; nothing was written", "retry once its coordinator answers")
    if not verdict.reason.is_hanging:
        raise Refused(f"{check.refusal}: it writes the marker itself; nothing was written",
                      f"wait for it: {advice.watch_until_ended(inv, tp)}")
    if verdict.transactional_id is None:
        raise Refused(f"no coordinator lists producer {producer.producer_id}, so its decision on this transaction "
                      "cannot be read; nothing was written", _see_advice(inv, target))
    check.decision = _commit_decision(client, check, verdict.transactional_id, inv)
    return check


def _commit_decision(client: AbortClient, check: AbortCheck, transactional_id: str, inv: advice.Invocation
                     ) -> CoordinatorDecision:
    p, tp = check.producer, check.partition
    assert p is not None
    read = transaction_state.decision_on(client, transactional_id, tp, p)
    found = read.decision
    if read.home is None:
        raise Refused(f"{'; '.join(read.notes)}, so the coordinator's decision on {transactional_id!r} cannot be "
                      "checked; nothing was written", _see_advice(inv, check.target))
    if found is None:
        unread = f" ({'; '.join(read.notes)})" if read.notes else ""
        raise Refused(f"{TXN_TOPIC}-{read.home} holds no PrepareCommit of {transactional_id!r} for producer "
                      f"{p.producer_id} epoch {p.producer_epoch} listing {tp} after its last write{unread}: its "
                      "coordinator never decided to commit this transaction (a late write after an abort, or the "
                      "record was removed by compaction); nothing was written", _see_advice(inv, check.target))
    if not found.commit:
        raise Refused(f"{found.describe()}: a COMMIT marker would expose records it aborted; nothing was written",
                      f"abort it: {advice.abort(inv, tp, p.current_txn_start_offset)}")
    return found


def _see_advice(inv: advice.Invocation, target: AbortTarget) -> str:
    return f"end it as find-hanging advises: {advice.find_hanging(inv, target.partition)}"
