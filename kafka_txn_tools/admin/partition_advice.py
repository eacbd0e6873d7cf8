"""What ends a partition-side row (a hanging transaction, or a live one with --include-late), and why: its action
text and its commands. admin/hanging.py's rules decide the reason; this module says what to do about it, and the
command lines themselves are admin/advice.py's. Shared with the sweep (spark/classify.py). Pure.
"""

from __future__ import annotations

from kafka_txn_broker.formats.partitioning import SHARE_STATE_TOPIC
from kafka_txn_broker.formats.transactions import DEFAULT_MAX_TRANSACTION_TIMEOUT_MS
from kafka_txn_tools.admin import advice
from kafka_txn_tools.models import CoordinatorDecision, HangingReason, TopicPartition


def partition_action(reason: HangingReason, tp: TopicPartition, start_offset: int, transactional_id: str | None,
                     decision: CoordinatorDecision | None = None) -> str:
    """What to do about a partition row, and why (its commands: `partition_commands`)."""
    if reason.is_hanging and decision is not None and decision.commit:
        return (f"commit it: its coordinator committed {decision.transactional_id!r} with {tp} (PrepareCommit) and "
                f"completed it without this partition's COMMIT marker (Apache Kafka 4.3+ skips the marker of a "
                f"partition whose leader is offline; an unclean election can lose one), so {tp}'s LSO stays at "
                f"{start_offset}. The application was told it committed: an abort would discard its records; the "
                "command below writes the COMMIT marker its coordinator decided on")
    if reason is HangingReason.LATE and tp.topic == SHARE_STATE_TOPIC:
        return (f"end it now with the command below: {transactional_id!r} stages share-group acknowledgements "
                f"(KIP-1289) on {tp}, and until it ends their records stay TX_PENDING: no member can have them and "
                "the group cannot pass them. Fencing the id aborts the transaction (--force: its coordinator still "
                "runs it; its producer fails and must restart), and the records are delivered again once their "
                "lock runs out; waiting for its producer or its timeout keeps the group held")
    if reason is HangingReason.LATE:
        return (f"wait: the coordinator of {transactional_id!r} still owns it and ends it by itself (its producer "
                "commits or aborts it, or the coordinator aborts it at its timeout), and the command below exits "
                "once it has; to end it now, fence the id with force-terminate and --force (its producer fails and "
                "must restart)")
    if reason is HangingReason.PREPARED_2PC:
        return (f"held by its external transaction manager (KIP-939): that manager must commit or abort "
                f"{transactional_id!r} (the producer that prepared it ends it; a restarted manager first recovers it "
                f"with InitProducerId keepPreparedTxn, which Apache Kafka 4.4 does not serve yet), and the command "
                f"below exits once it has; only if that manager is gone for good, abort it on each of its "
                f"partitions with kafka-txn abort and --force (its decision is lost)")
    return f"abort it: no coordinator will ever write the marker that ends it, so {tp}'s LSO stays at {start_offset}"


def partition_commands(reason: HangingReason, tp: TopicPartition, start_offset: int,
                       invocation: advice.Invocation,
                       max_timeout_ms: int = DEFAULT_MAX_TRANSACTION_TIMEOUT_MS,
                       transactional_id: str | None = None, decision: CoordinatorDecision | None = None
                       ) -> tuple[str, ...]:
    """The commands that resolve a partition row: the abort of a hanging transaction; for a live one (late:
    its coordinator ends it; prepared 2PC: its external transaction manager decides) the watch that waits
    for that end, since the owner ends it and nothing here should (its action names the last resort)."""
    if reason is HangingReason.LATE and tp.topic == SHARE_STATE_TOPIC and transactional_id is not None:
        return (advice.force_terminate(invocation, transactional_id, force=True),)  # partition_action says why
    if not reason.is_hanging:
        own = None if max_timeout_ms == DEFAULT_MAX_TRANSACTION_TIMEOUT_MS else max_timeout_ms
        return (advice.watch_until_ended(invocation, tp, own),)
    if decision is not None and decision.commit:
        return (advice.commit(invocation, tp, start_offset),)
    return (advice.abort(invocation, tp, start_offset),)
