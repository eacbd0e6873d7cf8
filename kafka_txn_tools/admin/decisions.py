"""The coordinator's decision on a transaction whose marker never reached one of its partitions.

A transaction ends in two steps at its coordinator: a PrepareCommit (or PrepareAbort) record in
`__transaction_state`, listing every partition of the transaction, is the decision; the markers sent to
those partitions carry it out, and CompleteCommit (CompleteAbort) follows once they have landed. When a
partition's marker never lands, the partition keeps the producer's transaction open after the coordinator
has moved on: a hanging transaction whose right end is the decision the coordinator already made.

Apache Kafka 4.3+ does this to a partition whose leader is offline when the markers are sent: the
coordinator's marker channel finds no leader endpoint, treats the partition as deleted and completes the
transaction without it (3.x and 4.0-4.2 retry until the leader returns). An unclean election can likewise lose a
marker that had landed. If the decision was a commit, the application was told its transaction
committed: aborting that partition now would discard records it committed. The right end is the COMMIT
marker the coordinator meant to send (`kafka-txn commit`).

The rule (`decision_for`): among the Prepare records read that name the producer id (or, after an epoch
overflow, name it as the previous producer id) and list the partition, the newest one whose producer epoch
is the open transaction's - or one more, under transaction version 2 (KIP-890), where the coordinator
bumps the epoch when it prepares. A transaction still open on the partition at that epoch had no marker
from it: a marker of that decision would have ended it. Only records written at or after the open
transaction's last write count (read from then on: admin/transaction_state.py), so an older decision
of the same producer and epoch (transaction version 1 keeps one epoch across transactions) cannot
stand in for its own.

Pure: plain data in, plain data out.
"""

from __future__ import annotations

from collections.abc import Iterable

from kafka_txn_tools.models import CoordinatorDecision, TopicPartition

PREPARE_COMMIT = "PrepareCommit"
PREPARE_ABORT = "PrepareAbort"
DECIDING_STATES = frozenset({PREPARE_COMMIT, PREPARE_ABORT})

Decision = CoordinatorDecision


def decision_for(tp: TopicPartition, producer_id: int, producer_epoch: int, last_write_ms: int,
                 decisions: Iterable[Decision], slack_ms: int = 0) -> Decision | None:
    """The coordinator's decision on the open transaction of (producer id, epoch) on `tp`, None when none was
    read. `last_write_ms`: the open transaction's last write (the producer's clock; `slack_ms` allows for its
    difference from the coordinator's)."""
    found = [d for d in decisions if tp in d.partitions and d.names(producer_id, producer_epoch)
             and d.time_ms >= last_write_ms - slack_ms]
    return max(found, key=lambda d: (d.time_ms, d.offset), default=None)
