"""force-terminate: fence a transactional id's producer through its coordinator (KIP-939), checked first.

InitProducerId with producer id and epoch -1 bumps the epoch: the coordinator aborts the open
transaction and the producer that owned the id fails with a fenced error from then on. That is the
tool for a transaction stuck on the coordinator's side (PrepareCommit/PrepareAbort whose markers never
land, Ongoing past its timeout at epoch exhaustion). It is refused, unless forced, when:

- the coordinator does not know the id: fencing would create it (`Refused`: an unknown id is no
  evidence that a transaction completed; it may be a typo);
- no transaction is in progress (Empty, CompleteCommit, CompleteAbort): fencing would only make a
  healthy producer fail;
- the transaction is live: still within its transaction.timeout.ms (its coordinator will abort it at
  the timeout by itself), or a prepared two-phase commit (KIP-939, timeout Integer.MAX_VALUE) that
  belongs to an external transaction manager.

Without DescribeTransactions (Kafka before 3.0) nothing can be checked: only --force fences then.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafka_txn_tools.admin.api import ClusterApi
from kafka_txn_tools.connection.capabilities import missing_api_error, require
from kafka_txn_tools.durations import format_duration_ms
from kafka_txn_tools.errors import BrokerError, ConnectionFailed, Refused
from kafka_txn_tools.models import EXHAUSTED_EPOCH, LAST_EPOCH, TWO_PHASE_COMMIT_TIMEOUT_MS, TransactionDescription

IDLE_STATES = frozenset({"Empty", "CompleteCommit", "CompleteAbort"})


@dataclass
class FenceCheck:
    transactional_id: str
    description: TransactionDescription | None  # None: could not be described (no DescribeTransactions)
    refusal: str | None = None  # --force overrides
    live: bool = False
    unverifiable: str | None = None  # only --force fences

    def summary(self, now_ms: int) -> str:
        d = self.description
        if d is None:
            return f"{self.transactional_id!r}: not described ({self.unverifiable})"
        age = ("no transaction in progress" if d.start_time_ms < 0
               else f"started {_minutes(now_ms - d.start_time_ms)} ago")
        return (f"{self.transactional_id!r}: {d.state}, producer {d.producer_id} epoch {d.producer_epoch}, "
                f"{len(d.partitions)} partitions, {age} (timeout {_minutes(d.timeout_ms)})")


def _minutes(ms: int) -> str:
    return format_duration_ms(max(ms, 0))  # the tools' one duration spelling


def check_fence(client: ClusterApi, transactional_id: str, now_ms: int, force: bool) -> FenceCheck:
    """Describe the id and decide whether fencing it is safe; writes nothing."""
    require(client, "force-terminate", "InitProducerId")
    if not client.supports("DescribeTransactions"):
        if not force:
            raise missing_api_error("DescribeTransactions", "force-terminate",
                                    "pass --force to fence without checking the transaction first")
        return FenceCheck(transactional_id, None, unverifiable=(
            "the cluster does not support DescribeTransactions (Apache Kafka 3.0+): the transaction's state cannot "
            "be checked before fencing"))
    described = client.describe_transactions([transactional_id])
    d = described.descriptions.get(transactional_id)
    if d is None:
        if transactional_id in described.not_found:
            # Not "already done": nothing shows that a transaction of this id ever completed (a typo, or an
            # id expired after transactional.id.expiration.ms, look the same).
            raise Refused(f"transactional id {transactional_id!r} is not known to its coordinator: nothing to fence "
                          "(fencing would create it)",
                          "check the id with `kafka-txn list` (a typo, or an id that expired after "
                          "transactional.id.expiration.ms)")
        errors = described.errors
        if errors and errors[0].code > 0:
            raise BrokerError(f"cannot describe {transactional_id!r} before fencing: {errors[0].message}",
                              errors[0].error)
        raise ConnectionFailed(f"cannot describe {transactional_id!r} before fencing: "
                               f"{errors[0].message if errors else 'no answer from its coordinator'}")
    return FenceCheck(transactional_id, d, *_judge(d, now_ms))


def needs_force(d: TransactionDescription, now_ms: int) -> bool:
    """Whether force-terminate refuses to fence this transaction without --force (the advice that prints a
    force-terminate command asks the very same rule)."""
    return _judge(d, now_ms)[0] is not None


def _judge(d: TransactionDescription, now_ms: int) -> tuple[str | None, bool]:
    """(refusal, live) for a described transaction."""
    if d.state in IDLE_STATES:
        return (f"{d.transactional_id!r} has no transaction in progress ({d.state}): fencing would only make its "
                "producer fail"), False
    if d.timeout_ms >= TWO_PHASE_COMMIT_TIMEOUT_MS:
        return (f"{d.transactional_id!r} is a prepared two-phase-commit transaction (KIP-939, no timeout): its "
                "external transaction manager must complete it"), True
    if d.state == "Ongoing" and d.producer_epoch >= LAST_EPOCH:
        # Not live: at Short.MAX_VALUE its producer cannot end it and its coordinator's timeout abort does not
        # either (KAFKA-20090), so "it ends by itself" would be false. A coordinator with the fixes fences it; one
        # without answers UNKNOWN_SERVER_ERROR, which `fence` explains (nothing is written either way).
        return None, False
    if d.start_time_ms >= 0 and now_ms - d.start_time_ms <= d.timeout_ms:
        left = d.timeout_ms - (now_ms - d.start_time_ms)
        return (f"{d.transactional_id!r} is {d.state} and live: started {_minutes(now_ms - d.start_time_ms)} ago, "
                f"within its {_minutes(d.timeout_ms)} timeout, so its coordinator will abort it by itself in "
                f"{_minutes(left)} if it does not complete; fencing now fails the running producer"), True
    return None, False


# Kafka's producer default transaction.timeout.ms: what a fence sets when the id's own cannot be kept.
DEFAULT_TRANSACTION_TIMEOUT_MS = 60_000


def fence_timeout(check: FenceCheck) -> tuple[int, str | None]:
    """The transaction timeout the fence's InitProducerId carries (it replaces the id's), and why it differs
    from the id's own, when it must. The id keeps its timeout when it was described; a 2PC transaction's
    (Integer.MAX_VALUE) cannot be set without Enable2Pc, and an undescribed one is not known."""
    d = check.description
    default = _minutes(DEFAULT_TRANSACTION_TIMEOUT_MS)
    if d is None:
        return DEFAULT_TRANSACTION_TIMEOUT_MS, (
            f"its transaction timeout is now {default} (Kafka's producer default): the id's own could not be read "
            "without DescribeTransactions; its producer sets its own again when it restarts")
    if d.timeout_ms >= TWO_PHASE_COMMIT_TIMEOUT_MS:
        return DEFAULT_TRANSACTION_TIMEOUT_MS, (
            f"its transaction timeout is now {default} (Kafka's producer default): a fence cannot keep a "
            "two-phase-commit transaction's no-timeout; its transaction manager sets it again when it re-enables "
            "two-phase commit")
    return d.timeout_ms, None


def fence(client: ClusterApi, check: FenceCheck) -> tuple[int, int]:
    """InitProducerId(-1, -1) with the id's own transaction timeout (`fence_timeout`): the new producer id and
    epoch. A coordinator that cannot fence the last epoch (KAFKA-20090) answers UNKNOWN_SERVER_ERROR: said so."""
    timeout, _changed = fence_timeout(check)
    try:
        return client.fence_transactional_id(check.transactional_id, timeout)
    except BrokerError as exc:
        d = check.description
        if exc.error != "UNKNOWN_SERVER_ERROR" or d is None or d.producer_epoch < EXHAUSTED_EPOCH:
            raise
        raise BrokerError(
            f"the coordinator could not fence {check.transactional_id!r}, producer {d.producer_id} at epoch "
            f"{d.producer_epoch} (UNKNOWN_SERVER_ERROR): a coordinator without the KAFKA-20090 fixes cannot fence a "
            "transaction at the last producer epoch; nothing was written", exc.error,
            "free its partitions' LSO with the aborts `kafka-txn find-hanging` prints for it, and upgrade the "
            "coordinator's broker to a release with the KAFKA-20090 fixes") from None
