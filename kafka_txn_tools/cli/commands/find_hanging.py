"""`kafka-txn find-hanging`: open transactions no coordinator will ever complete, and why."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kafka_txn_tools.cli import exit_codes
from kafka_txn_tools.cli.errors import KafkaTxnCommand, note, report_errors, user_errors, warn
from kafka_txn_tools.cli.options import (
    BootstrapOpt,
    CommandConfigOpt,
    OutputFormat,
    ProfileOpt,
    TimeoutOpt,
    WideOpt,
    duration_ms,
)
from kafka_txn_tools.cli.session import Connection, connect, now_ms

if TYPE_CHECKING:
    from kafka_txn_tools.admin.scan import ScanReport
    from kafka_txn_tools.admin.share_pending import ShareHold
    from kafka_txn_tools.models import HangingTransaction, StalledGroup, StuckTransaction

EXAMPLES = """\b
The runbook:
  1. kafka-txn find-hanging --all                 what hangs, and why
  2. kafka-txn abort --topic T --partition P --start-offset O --dry-run
  3. kafka-txn abort --topic T --partition P --start-offset O
  Many: find-hanging --all -o plan > plan.yaml, then abort --plan plan.yaml

Scope (one is required): --all, --broker-id ID, or --topic T [--partition P].
Two kinds of row: "partition" (an open transaction no coordinator will end:
abort it) and "coordinator" (PrepareCommit/PrepareAbort/PrepareEpochFence
longer than --max-prepare-time with markers missing, or Ongoing at an
exhausted epoch): each says why and exactly what to do, and which groups it
holds back at the LSO. With --metrics-url (each broker's Prometheus endpoint),
a third kind, "share": a transaction holding share-group records TX_PENDING
(KIP-1289) longer than --max-transaction-timeout, and the group it stalls.
--exit-code: 3 when hanging or stuck transactions were found in a complete
scan; a scan with errors exits 5 whatever it found (5 wins over 3), and
JSON/YAML say "partial": true.
"""


class FindHangingFormat(StrEnum):
    table = "table"
    json = "json"
    yaml = "yaml"
    csv = "csv"
    tsv = "tsv"
    kafka = "kafka"
    plan = "plan"


def write_plan(report: ScanReport, max_timeout_ms: int) -> str:
    """The abort plan YAML (format: kafka_txn_tools/dumps/plan.py) of the hanging results."""
    import yaml

    from kafka_txn_tools.dumps.plan import AbortPlan, AbortPlanEntry, plan_to_dict

    entries = [
        AbortPlanEntry(
            topic=h.partition.topic, partition=h.partition.partition,
            start_offset=h.producer.current_txn_start_offset, producer_id=h.producer.producer_id,
            producer_epoch=h.producer.producer_epoch, coordinator_epoch=h.producer.coordinator_epoch,
            reason=h.reason.value, last_timestamp_ms=h.producer.last_timestamp_ms,
            transactional_id=h.transactional_id, replica_broker_ids=list(h.brokers))
        for h in report.hanging
    ]
    plan = AbortPlan(entries=entries, as_of_ms=report.now_ms, max_transaction_timeout_ms=max_timeout_ms,
                     generated_by="kafka-txn find-hanging")
    return str(yaml.safe_dump(plan_to_dict(plan), sort_keys=False, default_flow_style=None))


def _groups_cell(groups: tuple[StalledGroup, ...] | None) -> str | None:
    if groups is None:
        return None
    return ",".join(sorted({g.group_id for g in groups})) or "-"


def _partition_cells(h: HangingTransaction) -> dict[str, Any]:
    txn = h.transactional_id or (f"(last: {h.last_known_transactional_id})" if h.last_known_transactional_id else None)
    return {"kind": "partition", "where": str(h.partition), "producer_id": h.producer.producer_id,
            "producer_epoch": h.producer.producer_epoch, "start_offset": h.producer.current_txn_start_offset,
            "age": h.duration_ms, "transactional_id": txn, "reason": h.reason.value,
            "lso": h.offsets.last_stable_offset if h.offsets else None,
            "high_watermark": h.offsets.high_watermark if h.offsets else None,
            "held_back": _groups_cell(h.stalled_groups)}


def _coordinator_cells(s: StuckTransaction) -> dict[str, Any]:
    where = ",".join(str(p.partition) for p in s.pending_partitions) or "-"
    return {"kind": "coordinator", "where": where, "producer_id": s.producer_id, "producer_epoch": s.producer_epoch,
            "start_offset": None, "age": s.time_in_state_ms, "transactional_id": s.transactional_id,
            "reason": f"{s.reason.value} ({s.state})", "lso": None, "high_watermark": None,
            "held_back": _groups_cell(s.stalled_groups)}


def _share_cells(h: ShareHold) -> dict[str, Any]:
    from kafka_txn_tools.models import SHARE_ACKS_PENDING

    return {"kind": "share", "where": f"{h.topic}-{h.partition}", "producer_id": h.producer_id,
            "producer_epoch": None, "start_offset": None, "age": h.oldest_age_ms,
            "transactional_id": h.transactional_id, "reason": f"{SHARE_ACKS_PENDING} ({h.records} records)",
            "lso": None, "high_watermark": None, "held_back": h.group}


def _next_steps(report: ScanReport) -> str:
    """After the table: each row's verdict detail and what to do."""
    lines = []
    for h in report.results:
        lines.append(f"{h.partition} producer {h.producer.producer_id}: {h.detail}\n  do: {h.action}")
    for s in report.stuck:
        lines.append(f"{s.transactional_id!r} ({s.state}): {s.detail}")
        lines += [f"  {p.partition} (leader {p.leader}): {p.detail}" for p in s.pending_partitions]
        lines.append(f"  do: {s.action}")
    for held in report.share:
        lines.append(f"{held.topic}-{held.partition} producer {held.producer_id} (broker {held.node}): holds "
                     f"{held.records} records of share group {held.group!r} TX_PENDING\n  do: {held.action()}")
    return "\n" + "\n".join(lines) + "\n" if lines else ""


def empty_message(report: ScanReport) -> str:
    """What an empty result means: never a claim about replicas that were not read. (Coordinator rows
    never come with an empty result: the counts below are the partition side's.)"""
    if report.scanned_replicas and not report.read_replicas:
        return f"no result: none of the {report.scanned_replicas} partition replicas asked could be read"
    if report.unread_replicas:
        return (f"no hanging transactions found in the {report.read_replicas} of {report.scanned_replicas} "
                f"partition replicas that could be read ({report.unread_replicas} could not be)")
    if report.partial:
        return (f"no hanging transactions confirmed ({report.read_replicas} partition replicas read; some "
                "candidates could not be classified)")
    return f"no hanging transactions ({report.read_replicas} partition replicas read)"


def finding_rows(report: ScanReport) -> list[dict[str, Any]]:
    """Every result row of a scan, as the machine formats print them."""
    return [*(h.to_row() for h in report.results), *(s.to_row() for s in report.stuck),
            *(h.to_row() for h in report.share)]


def _extra(report: ScanReport, max_timeout_ms: int, max_prepare_ms: int) -> dict[str, Any]:
    return {"as_of_ms": report.now_ms, "max_transaction_timeout_ms": max_timeout_ms,
            "max_prepare_time_ms": max_prepare_ms,
            "scanned_replicas": report.scanned_replicas, "read_replicas": report.read_replicas,
            "candidates": report.candidates, "partial": report.partial, "notes": report.notes}


def findings_document(report: ScanReport, max_timeout_ms: int, max_prepare_ms: int) -> dict[str, Any]:
    """The document `find-hanging -o json` prints (and the monitor serves at /api/findings)."""
    from kafka_txn_tools.cli.render import to_document

    return to_document("hanging", finding_rows(report), [e.to_row() for e in report.errors],
                       _extra(report, max_timeout_ms, max_prepare_ms))


def _emit(report: ScanReport, fmt: FindHangingFormat, max_timeout_ms: int, max_prepare_ms: int, wide: bool) -> None:
    from kafka_txn_tools.cli.render import Column, Output, human_duration, none_as_dash
    from kafka_txn_tools.cli.upstream.format import HANGING_HEADERS, hanging_row

    if fmt is FindHangingFormat.plan:
        typer.echo(write_plan(report, max_timeout_ms), nl=False)
        return
    extra = _extra(report, max_timeout_ms, max_prepare_ms)
    Output(
        kind="hanging", rows=finding_rows(report),
        table_rows=[*map(_partition_cells, report.results), *map(_coordinator_cells, report.stuck),
                    *map(_share_cells, report.share)],
        columns=[Column("kind", "KIND", drop=8), Column("where", "PARTITIONS"),
                 Column("producer_id", "PRODUCER ID", drop=2), Column("producer_epoch", "EPOCH", drop=4),
                 Column("start_offset", "START OFFSET", none_as_dash), Column("age", "AGE", human_duration, drop=3),
                 Column("transactional_id", "TRANSACTIONAL ID", none_as_dash, drop=5), Column("reason", "REASON"),
                 Column("lso", "LSO", none_as_dash, drop=6), Column("high_watermark", "HW", none_as_dash, drop=7),
                 Column("held_back", "HELD BACK", none_as_dash, drop=9)],
        kafka_headers=HANGING_HEADERS, kafka_rows=[hanging_row(h, report.now_ms) for h in report.results],
        errors=[e.to_row() for e in report.errors], extra=extra, empty_message=empty_message(report),
        footer=_next_steps(report),
    ).emit(OutputFormat(fmt.value), wide=wide)


def find_hanging_command(
    scan_all: Annotated[bool, typer.Option(
        "--all", help="every replica of every partition, internal topics included")] = False,
    broker_id: Annotated[int | None, typer.Option(
        "--broker-id", metavar="ID", help="partitions this broker replicates, asked on this broker")] = None,
    topic: Annotated[str | None, typer.Option("--topic", metavar="TOPIC", help="only this topic")] = None,
    partition: Annotated[int | None, typer.Option(
        "--partition", metavar="N", help="only this partition (needs --topic)")] = None,
    max_timeout: Annotated[str, typer.Option(
        "--max-transaction-timeout", metavar="DURATION",
        help="the brokers' transaction.max.timeout.ms: 15m, 900s (a bare number means minutes, as upstream)")] = "15m",
    max_prepare: Annotated[str, typer.Option(
        "--max-prepare-time", metavar="DURATION",
        help="report a transaction its coordinator holds in a Prepare state longer than this: 1m, 90s, 5m "
             "(a bare number means seconds)")] = "1m",
    include_late: Annotated[bool, typer.Option(
        "--include-late", help="also list late transactions the coordinator confirms as live, and prepared "
                               "two-phase-commit transactions (KIP-939)")] = False,
    exit_code: Annotated[bool, typer.Option(
        "--exit-code", help="exit 3 when hanging transactions are found (5 when the scan was partial)")] = False,
    bootstrap_server: BootstrapOpt = None,
    command_config: CommandConfigOpt = None,
    profile: ProfileOpt = None,
    timeout: TimeoutOpt = None,
    output: Annotated[FindHangingFormat | None, typer.Option(
        "--output", "-o", help="table, json, yaml, csv, tsv, kafka, or plan (abort plan YAML for "
                               "`abort --plan`)")] = None,
    wide: WideOpt = False,
    metrics_url: Annotated[list[str] | None, typer.Option(
        "--metrics-url", metavar="URL",
        help="a broker's Prometheus metrics endpoint (repeat for each broker): also report transactions holding "
             "share-group records TX_PENDING (KIP-1289) too long; no Kafka API lists them")] = None,
    history: Annotated[Path | None, typer.Option(
        "--history", metavar="FILE",
        help="record the results in this incident history (SQLite), as `kafka-txn monitor` does: what is new, "
             "what is still there, what was resolved and how (`kafka-txn history` reads it; its default is "
             "~/.local/state/kafka-txn/history.db)")] = None,
) -> None:
    """Find hanging transactions: open on a partition, older than the max timeout, and not completable by
    their coordinator; and transactions their coordinator holds in a Prepare state (or at an exhausted epoch)
    and cannot finish. Each result says why, what to do, and who it holds back (groups at the LSO)."""
    from kafka_txn_tools.admin.acl_probe import scan_warning
    from kafka_txn_tools.admin.scan import ScanOptions, Scope, find_hanging
    from kafka_txn_tools.cli.progress import progress_bar

    max_timeout_ms = duration_ms(max_timeout, "--max-transaction-timeout", bare_unit="m")
    max_prepare_ms = duration_ms(max_prepare, "--max-prepare-time", bare_unit="s")
    fmt = output or FindHangingFormat.table
    scope = Scope(all=scan_all, broker_id=broker_id, topic=topic, partition=partition)
    with user_errors():
        scope.validate()
        began = now_ms()
        with connect(Connection(bootstrap_server, command_config, profile, timeout)) as client, \
                progress_bar("scanning producer state") as (advance, set_total):
            options = ScanOptions(max_timeout_ms, include_late, max_prepare_ms=max_prepare_ms)
            report = find_hanging(client, scope, now_ms, options, progress=advance, on_total=set_total)
            acl_warning = scan_warning(client, scope, report)  # ACLs may have hidden ids or topics
            cluster = client.cluster_name if history is not None else ""
        if metrics_url:
            _add_share_holds(report, metrics_url, scope, max_timeout_ms, timeout)
        if history is not None:
            _record_history(history, cluster, scope, report, now_ms() - began)
    report_errors(report.errors)
    for text in report.notes:
        note(text)
    if acl_warning is not None:
        warn(acl_warning)
    _emit(report, fmt, max_timeout_ms, max_prepare_ms, wide)
    if report.partial:
        raise typer.Exit(exit_codes.PARTIAL)  # wins over FOUND: part of the answer is missing
    if exit_code and report.found:
        raise typer.Exit(exit_codes.FOUND)


def _add_share_holds(report: ScanReport, urls: list[str], scope: Any, max_timeout_ms: int,
                     timeout: str | None) -> None:
    from kafka_txn_tools.admin import share_pending

    timeout_s = duration_ms(timeout, "--timeout", bare_unit="s") / 1000 if timeout else 10.0
    found, errors = share_pending.read_metrics(urls, timeout_s)
    report.share = share_pending.past(share_pending.in_scope(found, scope.topic, scope.partition), max_timeout_ms)
    report.errors += errors


def _record_history(path: Path, cluster: str, scope: Any, report: ScanReport, duration_ms: int) -> None:
    """--history: the scan's hanging results (never --include-late's live ones) into the incident history; a
    history that cannot be written is a warning, never a change of the scan's result."""
    import sqlite3

    from kafka_txn_tools.admin.audit import default_path
    from kafka_txn_tools.admin.history import ScanRecord, record, scope_covers
    from kafka_txn_tools.monitor.history_store import HistoryStore

    live = {"late", "prepared-2pc"}
    rows = [r for r in finding_rows(report) if not (r["kind"] == "partition" and r["reason"] in live)]
    scan = ScanRecord(cluster, report.now_ms, duration_ms, not report.partial, rows, scope_covers(scope),
                      source="find-hanging")
    try:
        with HistoryStore(path) as store:
            record(store, scan, default_path())
    except (sqlite3.Error, OSError) as exc:
        warn(f"could not record the results in the history {path}: {exc}")


def register(app: typer.Typer) -> None:
    app.command("find-hanging", cls=KafkaTxnCommand,
                epilog=EXAMPLES + "\n" + exit_codes.HELP_TEXT)(find_hanging_command)
