"""The six upstream commands of `kafka-transactions` (cli/upstream.py parses; this executes).

Failure texts follow TransactionsCommand.java: `<what failed>: <cause>. Enable debug logging for
additional detail.`, where the cause is Kafka's description of the error.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, NoReturn

from kafka_txn_tools.admin.errors import BrokerError, KafkaTxnError, NothingToDo
from kafka_txn_tools.cli.render import upstream_table
from kafka_txn_tools.cli.upstream import UpstreamExit
from kafka_txn_tools.cli.upstream_format import (
    DESCRIBE_HEADERS,
    HANGING_HEADERS,
    LIST_HEADERS,
    PRODUCERS_HEADERS,
    describe_row,
    hanging_row,
    list_rows,
    producer_row,
)
from kafka_txn_tools.models import ScanError, TopicPartition

if TYPE_CHECKING:
    from collections.abc import Iterator

    from kafka_txn_tools.admin.client import AdminClient

SUFFIX = ". Enable debug logging for additional detail."


def fail(message: str, cause: object | None = None) -> NoReturn:
    raise UpstreamExit(message if cause is None else f"{message}: {cause}{SUFFIX}")


def cause_of(error: str) -> str:
    """Kafka's description of an error name, as the Java exception message would read."""
    from kafka_txn_tools.admin.errors import error_code, error_description

    code = error_code(error)
    return error_description(code) if code > 0 else error


def _scan_cause(err: ScanError) -> str:
    """Kafka's text for a broker error code; our message for transport failures (no code)."""
    return cause_of(err.error) if err.code > 0 else err.message


@contextmanager
def failing_as(message: str) -> Iterator[None]:
    """Any failure inside becomes upstream's `<message>: <cause>.` exit."""
    try:
        yield
    except BrokerError as exc:
        fail(message, cause_of(exc.error))
    except KafkaTxnError as exc:
        fail(message, exc.message)


def _connect(ns: argparse.Namespace, what: str) -> AdminClient:
    from pathlib import Path

    from kafka_txn_tools.admin.client import AdminClient
    from kafka_txn_tools.admin.config import ClientSettings, load_properties, settings_from_properties

    settings = ClientSettings()
    if ns.command_config:
        with failing_as("Failed to load admin client properties"):
            settings = settings_from_properties(load_properties(Path(ns.command_config)), ns.command_config)
    settings.bootstrap_servers = ns.bootstrap_server
    with failing_as(what):
        # Java's admin client gives an operation default.api.timeout.ms (60 s) before failing it.
        return AdminClient(settings, timeout_ms=settings.timeout_ms or 60_000)


def execute(ns: argparse.Namespace, out: IO[str]) -> None:
    COMMANDS[ns.command](ns, out)


def cmd_list(ns: argparse.Namespace, out: IO[str]) -> None:
    from kafka_txn_tools.admin.listing import ListFilters, list_transactions
    from kafka_txn_tools.cli.common import now_ms

    what = "Failed to list transactions"
    duration = ns.duration_filter if ns.duration_filter is not None and ns.duration_filter >= 0 else None
    with _connect(ns, what) as admin, failing_as(what):
        listed = list_transactions(admin, ListFilters(duration_ms=duration, pattern=ns.transactional_id_pattern),
                                   now_ms)
    if listed.errors:
        fail(what, _scan_cause(listed.errors[0]))
    out.write(upstream_table(LIST_HEADERS, list_rows(listed.listings)))


def cmd_describe(ns: argparse.Namespace, out: IO[str]) -> None:
    from kafka_txn_tools.cli.common import now_ms

    txn_id = ns.transactional_id
    what = f"Failed to describe transaction state of transactional-id `{txn_id}`"
    with _connect(ns, what) as admin, failing_as(what):
        result = admin.describe_transactions([txn_id])
    if txn_id in result.not_found:
        fail(what, cause_of("TRANSACTIONAL_ID_NOT_FOUND"))
    if txn_id not in result.descriptions:
        fail(what, _scan_cause(result.errors[0]) if result.errors else "no answer from the coordinator")
    out.write(upstream_table(DESCRIBE_HEADERS, [describe_row(result.descriptions[txn_id], now_ms())]))


def cmd_describe_producers(ns: argparse.Namespace, out: IO[str]) -> None:
    tp = TopicPartition(ns.topic, ns.partition)
    where = f"broker {ns.broker_id}" if ns.broker_id is not None else "leader"
    what = f"Failed to describe producers for partition {tp} on {where}"
    with _connect(ns, what) as admin, failing_as(what):
        broker = ns.broker_id
        if broker is None:
            info = admin.metadata([tp.topic]).partition(tp)
            if info is None or info.leader < 0:
                fail(what, cause_of("UNKNOWN_TOPIC_OR_PARTITION" if info is None else "LEADER_NOT_AVAILABLE"))
            broker = info.leader
        replicas, errors = admin.describe_producers({broker: [tp]})
    if errors:
        fail(what, _scan_cause(errors[0]))
    rows = [producer_row(p) for r in replicas for p in r.producers]
    out.write(upstream_table(PRODUCERS_HEADERS, rows))


def _spec_text(tp: TopicPartition, pid: int, epoch: int, coordinator_epoch: int) -> str:
    # Java's AbortTransactionSpec.toString()
    return (f"AbortTransactionSpec(topicPartition={tp}, producerId={pid}, producerEpoch={epoch}, "
            f"coordinatorEpoch={coordinator_epoch})")


def cmd_abort(ns: argparse.Namespace, out: IO[str]) -> None:
    from kafka_txn_tools.admin.abort import check_by_start_offset, check_legacy, execute

    tp = TopicPartition(ns.topic, ns.partition)
    if ns.start_offset is None and ns.producer_id is None:
        fail("The transaction to abort must be identified either with --start-offset (for brokers on 3.0 or "
             "above) or with --producer-id, --producer-epoch, and --coordinator-epoch (for older brokers)")
    if ns.start_offset is None:
        if ns.producer_epoch is None:
            fail("Missing required argument --producer-epoch")
        if ns.coordinator_epoch is None:
            fail("Missing required argument --coordinator-epoch")
    with _connect(ns, f"Failed to validate producer state for partition {tp}") as admin:
        try:
            if ns.start_offset is not None:
                check = check_by_start_offset(admin, tp, ns.start_offset)
            else:
                check = check_legacy(admin, tp, ns.producer_id, ns.producer_epoch, ns.coordinator_epoch)
        except NothingToDo:
            fail(f"Could not find any open transactions starting at offset {ns.start_offset} on partition {tp}")
        except KafkaTxnError as exc:
            message = exc.message
            if message.startswith("Could not find"):
                fail(message)
            fail(f"Failed to validate producer state for partition {tp}", _validation_cause(exc))
        spec = check.spec
        assert spec is not None
        # Upstream does not consult the coordinator or ask: runbooks rely on that.
        with failing_as("Failed to abort transaction "
                        + _spec_text(tp, spec.producer_id, spec.producer_epoch, spec.coordinator_epoch)):
            execute(admin, check, settle_s=0.0)


def _validation_cause(exc: KafkaTxnError) -> str:
    return cause_of(exc.error) if isinstance(exc, BrokerError) else exc.message


def cmd_find_hanging(ns: argparse.Namespace, out: IO[str]) -> None:
    from kafka_txn_tools.admin.scan import ScanOptions, Scope, find_hanging
    from kafka_txn_tools.cli.common import now_ms

    if ns.topic is None and ns.broker_id is None:
        fail("The `find-hanging` command requires either --topic or --broker-id to limit the scope of the search")
    if ns.partition is not None and ns.topic is None:
        fail("The --partition argument requires --topic to be provided")
    scope = Scope(broker_id=ns.broker_id, topic=ns.topic, partition=ns.partition)
    what = "Failed to find hanging transactions"
    with _connect(ns, what) as admin, failing_as(what):
        report = find_hanging(admin, scope, now_ms, ScanOptions(max_timeout_ms=ns.max_transaction_timeout * 60_000))
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


def cmd_force_terminate(ns: argparse.Namespace, out: IO[str]) -> None:
    txn_id = ns.transactionalId
    what = f"Failed to force terminate transactionalId `{txn_id}`"
    with _connect(ns, what) as admin, failing_as(what):
        admin.fence_transactional_id(txn_id)


COMMANDS: dict[str, Callable[[argparse.Namespace, IO[str]], None]] = {
    "list": cmd_list,
    "describe": cmd_describe,
    "describe-producers": cmd_describe_producers,
    "abort": cmd_abort,
    "find-hanging": cmd_find_hanging,
    "forceTerminateTransaction": cmd_force_terminate,
}
