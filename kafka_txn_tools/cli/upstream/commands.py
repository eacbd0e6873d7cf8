"""The six upstream commands of `kafka-transactions`, each a call of the flow `kafka-txn` uses.

Failure texts follow TransactionsCommand.java: `<what failed>: <cause>. Enable debug logging for
additional detail.`, where the cause is Kafka's description of the error. Writes that upstream would
make blindly but that are not safe (a live transaction, a transaction the cluster cannot validate)
are refused in the same style, naming the `kafka-txn` command that overrides the refusal.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, NoReturn

from kafka_txn_tools.cli.render import upstream_table
from kafka_txn_tools.cli.upstream import USAGE, UpstreamExit
from kafka_txn_tools.cli.upstream.format import (
    DESCRIBE_HEADERS,
    HANGING_HEADERS,
    LIST_HEADERS,
    PRODUCERS_HEADERS,
    describe_row,
    hanging_row,
    list_rows,
    producer_row,
)
from kafka_txn_tools.errors import BrokerError, KafkaTxnError, MissingApi
from kafka_txn_tools.models import ScanError, TopicPartition

if TYPE_CHECKING:
    from kafka_txn_tools.admin.abort_batch import AbortItem
    from kafka_txn_tools.admin.advice import Invocation
    from kafka_txn_tools.admin.audit import AuditLog
    from kafka_txn_tools.connection.client import AdminClient

SUFFIX = ". Enable debug logging for additional detail."
COMMAND = "kafka-transactions"


def fail(message: str, cause: object | None = None, code: int = 1) -> NoReturn:
    """Upstream's failure text; `code` 1 (a failure or refusal from live state) or USAGE (malformed input)."""
    raise UpstreamExit(message if cause is None else f"{message}: {cause}{SUFFIX}", code)


def cause_of(error: str) -> str:
    """Kafka's description of an error name, as the Java exception message would read."""
    from kafka_txn_tools.errors import error_code, error_description

    code = error_code(error)
    return error_description(code) if code > 0 else error


def _scan_cause(err: ScanError) -> str:
    """Kafka's text for a broker error code; our message for transport failures (no code)."""
    return cause_of(err.error) if err.code > 0 else err.message


def _exception_cause(exc: KafkaTxnError) -> str:
    if isinstance(exc, MissingApi):
        return f"The broker does not support {exc.api}"  # the Java client's UnsupportedVersionException
    if isinstance(exc, BrokerError):
        return cause_of(exc.error)
    return exc.message


@contextmanager
def failing_as(message: str) -> Iterator[None]:
    """Any failure inside becomes upstream's `<message>: <cause>.` exit."""
    from kafka_txn_tools.errors import UsageError

    try:
        yield
    except KafkaTxnError as exc:
        fail(message, _exception_cause(exc), USAGE if isinstance(exc, UsageError) else 1)


def _connect(ns: argparse.Namespace, what: str) -> AdminClient:
    from pathlib import Path

    from kafka_txn_tools.connection.client import AdminClient
    from kafka_txn_tools.connection.config import ClientSettings, load_properties, settings_from_properties

    settings = ClientSettings()
    if ns.command_config:
        with failing_as("Failed to load admin client properties"):
            settings = settings_from_properties(load_properties(Path(ns.command_config)), ns.command_config)
    settings.bootstrap_servers = ns.bootstrap_server
    with failing_as(what):
        # Java's admin client gives an operation default.api.timeout.ms (60 s) before failing it.
        return AdminClient(settings, timeout_ms=settings.timeout_ms or 60_000)


def execute(ns: argparse.Namespace, out: IO[str], err: IO[str]) -> None:
    COMMANDS[ns.command](ns, out, err)


def cmd_list(ns: argparse.Namespace, out: IO[str], err: IO[str]) -> None:
    from kafka_txn_tools.admin.listing import ListFilters, list_transactions
    from kafka_txn_tools.cli.session import now_ms

    what = "Failed to list transactions"
    duration = ns.duration_filter if ns.duration_filter is not None and ns.duration_filter >= 0 else None
    with _connect(ns, what) as admin, failing_as(what):
        listed = list_transactions(admin, ListFilters(duration_ms=duration, pattern=ns.transactional_id_pattern),
                                   now_ms)
    if listed.errors:
        fail(what, _scan_cause(listed.errors[0]))
    out.write(upstream_table(LIST_HEADERS, list_rows(listed.listings)))


def cmd_describe(ns: argparse.Namespace, out: IO[str], err: IO[str]) -> None:
    from kafka_txn_tools.admin.describe import describe_transactions
    from kafka_txn_tools.cli.session import now_ms

    txn_id = ns.transactional_id
    what = f"Failed to describe transaction state of transactional-id `{txn_id}`"
    with _connect(ns, what) as admin, failing_as(what):
        described = describe_transactions(admin, [txn_id], describe_all=False)
    if described.errors:
        fail(what, _scan_cause(described.errors[0]))
    if not described.descriptions:
        fail(what, "no answer from the coordinator")
    out.write(upstream_table(DESCRIBE_HEADERS, [describe_row(described.descriptions[0], now_ms())]))


def cmd_describe_producers(ns: argparse.Namespace, out: IO[str], err: IO[str]) -> None:
    from kafka_txn_tools.admin.producers import describe_producers
    from kafka_txn_tools.admin.scan import Scope
    from kafka_txn_tools.errors import UsageError

    tp = TopicPartition(ns.topic, ns.partition)
    where = f"broker {ns.broker_id}" if ns.broker_id is not None else "leader"
    what = f"Failed to describe producers for partition {tp} on {where}"
    with _connect(ns, what) as admin, failing_as(what):
        try:
            report = describe_producers(admin, Scope(topic=tp.topic, partition=tp.partition, broker_id=ns.broker_id),
                                        open_only=False)
        except UsageError:
            fail(what, cause_of("UNKNOWN_TOPIC_OR_PARTITION"))
    if report.errors:
        fail(what, _scan_cause(report.errors[0]))
    rows = [producer_row(p) for r in report.replicas for p in r.producers]
    out.write(upstream_table(PRODUCERS_HEADERS, rows))


def _spec_text(item: AbortItem) -> str:
    # Java's AbortTransactionSpec.toString()
    assert item.check is not None
    s = item.check.spec
    return (f"AbortTransactionSpec(topicPartition={s.partition}, producerId={s.producer_id}, "
            f"producerEpoch={s.producer_epoch}, coordinatorEpoch={s.coordinator_epoch})")


def _invocation(ns: argparse.Namespace) -> Invocation:
    from kafka_txn_tools.admin.advice import Invocation

    return Invocation.of(ns.bootstrap_server, None, ns.command_config)


def _override(ns: argparse.Namespace, item: AbortItem) -> str:
    """The kafka-txn command that writes this abort anyway: the transaction as validation found it (the
    identifiers matched), with --force, which overrides what the refusal was about (a live or unverifiable
    transaction) and nothing else."""
    from kafka_txn_tools.admin import advice

    check = item.check
    if check is not None and check.spec.start_offset is not None:
        return advice.abort(_invocation(ns), check.partition, check.spec.start_offset, force=True)
    ids = ["--producer-id", str(ns.producer_id), "--producer-epoch", str(ns.producer_epoch),
           "--coordinator-epoch", str(ns.coordinator_epoch)]
    return _invocation(ns).line("abort", "--topic", ns.topic, "--partition", str(ns.partition), *ids, "--force")


def cmd_abort(ns: argparse.Namespace, out: IO[str], err: IO[str]) -> None:
    from kafka_txn_tools.admin.abort import AbortTarget
    from kafka_txn_tools.admin.abort_batch import AbortItem, AbortResult, prepare, unverifiable, write
    from kafka_txn_tools.admin.audit import AuditLog

    tp = TopicPartition(ns.topic, ns.partition)
    if ns.start_offset is None and ns.producer_id is None:
        fail("The transaction to abort must be identified either with --start-offset (for brokers on 3.0 or "
             "above) or with --producer-id, --producer-epoch, and --coordinator-epoch (for older brokers)",
             code=USAGE)
    if ns.start_offset is None:
        if ns.producer_epoch is None:
            fail("Missing required argument --producer-epoch", code=USAGE)
        if ns.coordinator_epoch is None:
            fail("Missing required argument --coordinator-epoch", code=USAGE)
    what = f"Failed to validate producer state for partition {tp}"
    with failing_as(what):
        target = AbortTarget(tp, ns.start_offset, ns.producer_id, ns.producer_epoch, ns.coordinator_epoch)
    log, cluster, item = AuditLog(), str(ns.bootstrap_server), AbortItem(target)
    try:
        with _connect(ns, what) as admin:
            cluster, log.principal = admin.cluster_name, admin.principal
            with failing_as(what):
                [item] = prepare(admin, [target], force=False)
            _refuse_unsafe(ns, item, unverifiable([item]))
            # Upstream does not ask: runbooks rely on that. Only validated, non-live aborts get here.
            write(admin, [item], settle_s=0.0)
    except UpstreamExit as exc:
        if item.result is None:
            item.settle(AbortResult.FAILED, str(exc))
        raise
    finally:
        _audit(log, cluster, item)
        if log.problem:
            err.write(f"warning: {log.problem}; the command's result stands\n")
    if item.result is AbortResult.FAILED:
        fail(f"Failed to abort transaction {_spec_text(item)}",
             _exception_cause(item.error) if item.error is not None else item.message)


def _refuse_unsafe(ns: argparse.Namespace, item: AbortItem, unchecked: list[str]) -> None:
    """Stop, in upstream's words, on anything but a validated abort that is safe to write. Exit 1 for what
    live state refuses (nothing to abort there: upstream's code for it too), 2 for malformed input."""
    from kafka_txn_tools.admin import advice
    from kafka_txn_tools.admin.abort_batch import AbortResult
    from kafka_txn_tools.errors import Refused, UsageError

    tp = item.target.partition
    error = item.error
    if item.check is None and item.result is not None:  # stopped by validation itself
        message = str(error) if error is not None else item.message
        if message.startswith("Could not find"):
            fail(message)  # upstream's own text, with what is at that offset and where open transactions start
        if item.result is AbortResult.ALREADY_DONE and ns.start_offset is not None:
            fail(f"Could not find any open transactions starting at offset {ns.start_offset} on partition {tp}: "
                 f"{message}")
        if isinstance(error, Refused):  # a mismatch or an unknown producer: --force would not change that
            fail(f"Refusing to abort the transaction on partition {tp}: {message}")
        code = USAGE if isinstance(error, UsageError) else 1
        fail(f"Failed to validate producer state for partition {tp}",
             _exception_cause(error) if item.result is AbortResult.FAILED and error is not None else message, code)
    if item.result is AbortResult.REFUSED or unchecked:
        # Refused after validation: the coordinator holds it as live (or cannot be read), or the cluster cannot
        # check it. Those are exactly what kafka-txn's --force overrides, so the override is named.
        assert item.check is not None
        reason = item.check.refusal or item.message
        if unchecked:
            reason = "it cannot be validated: " + "; ".join(unchecked)
        item.settle(AbortResult.REFUSED, reason)
        start = item.check.spec.start_offset
        commit = (f"To commit it, as its coordinator decided: {advice.commit(_invocation(ns), tp, start)}. "
                  if item.check.committed_by is not None and start is not None else "")
        raise UpstreamExit(f"Refusing to abort the transaction on partition {tp}: {reason}. {commit}To abort it "
                           f"anyway: {_override(ns, item)}")


def _audit(log: AuditLog, cluster: str, item: AbortItem) -> None:
    from kafka_txn_tools.admin.audit import AuditRecord

    t = item.target
    target = {"topic": t.partition.topic, "partition": t.partition.partition, "start_offset": t.start_offset,
              "producer_id": t.producer_id, "producer_epoch": t.producer_epoch,
              "coordinator_epoch": t.coordinator_epoch}
    log.append(AuditRecord(cluster, f"{COMMAND} abort", target, str(item.result or "failed"), item.message))


def cmd_find_hanging(ns: argparse.Namespace, out: IO[str], err: IO[str]) -> None:
    from kafka_txn_tools.admin.scan import ScanOptions, Scope, find_hanging
    from kafka_txn_tools.cli.session import now_ms

    if ns.topic is None and ns.broker_id is None:
        fail("The `find-hanging` command requires either --topic or --broker-id to limit the scope of the search",
             code=USAGE)
    if ns.partition is not None and ns.topic is None:
        fail("The --partition argument requires --topic to be provided", code=USAGE)
    scope = Scope(broker_id=ns.broker_id, topic=ns.topic, partition=ns.partition)
    what = "Failed to find hanging transactions"
    with _connect(ns, what) as admin, failing_as(what):
        # Upstream's scan: every replica the scope names, without find-hanging's first pass over the LSOs.
        report = find_hanging(admin, scope, now_ms, ScanOptions(max_timeout_ms=ns.max_transaction_timeout * 60_000,
                                                                 coordinator_side=False, first_pass=False))
    out.write(upstream_table(HANGING_HEADERS, [hanging_row(h, report.now_ms) for h in report.hanging]))
    if report.errors:
        # Upstream stops at the first failure; we finish the scan and print what we found, then fail
        # the same way (naming the broker plainly, not as `Optional[5]`).
        fail(_find_hanging_failure(report.errors[0], report.scanned_replicas), _scan_cause(report.errors[0]))


def _find_hanging_failure(err: ScanError, partitions: int) -> str:
    if err.api == "ListTransactions":
        return "Failed to list transactions for the candidate producers"
    if err.api in ("DescribeTransactions", "FindCoordinator"):
        return "Failed to describe the candidate transactions"
    broker = f" on broker {err.broker_id}" if err.broker_id is not None else ""
    return f"Failed to describe producers for {partitions} partitions{broker}"


def cmd_force_terminate(ns: argparse.Namespace, out: IO[str], err: IO[str]) -> None:
    from kafka_txn_tools.admin.audit import AuditLog, AuditRecord
    from kafka_txn_tools.admin.fence import check_fence, fence
    from kafka_txn_tools.cli.session import now_ms

    txn_id = ns.transactionalId
    what = f"Failed to force terminate transactionalId `{txn_id}`"
    log, cluster = AuditLog(), str(ns.bootstrap_server)
    result, detail = "failed", ""
    try:
        with _connect(ns, what) as admin:
            cluster, log.principal = admin.cluster_name, admin.principal
            from kafka_txn_tools.admin.advice import force_terminate

            override = force_terminate(_invocation(ns), txn_id, force=True)
            try:
                check = check_fence(admin, txn_id, now_ms(), force=False)
            except MissingApi as exc:
                if exc.api != "DescribeTransactions":
                    raise
                result = "refused"
                raise UpstreamExit(f"Refusing to force terminate transactionalId `{txn_id}`: it cannot be validated: "
                                   f"the broker does not support DescribeTransactions. To fence it anyway: "
                                   f"{override}") from None
            except KafkaTxnError as exc:
                fail(what, _exception_cause(exc))
            if check.refusal:
                result = "refused"
                raise UpstreamExit(f"Refusing to force terminate transactionalId `{txn_id}`: {check.refusal}. "
                                   f"To fence it anyway: {override}")
            with failing_as(what):
                pid, epoch = fence(admin, check)
            result, detail = "fenced", f"producer {pid} now at epoch {epoch}"
    except UpstreamExit as exc:
        detail = str(exc)
        raise
    finally:
        log.append(AuditRecord(cluster, f"{COMMAND} forceTerminateTransaction", {"transactional_id": txn_id},
                               result, detail))
        if log.problem:
            err.write(f"warning: {log.problem}; the command's result stands\n")


COMMANDS: dict[str, Callable[[argparse.Namespace, IO[str], IO[str]], None]] = {
    "list": cmd_list,
    "describe": cmd_describe,
    "describe-producers": cmd_describe_producers,
    "abort": cmd_abort,
    "find-hanging": cmd_find_hanging,
    "forceTerminateTransaction": cmd_force_terminate,
}
