"""`kafka-txn find-hanging`: open transactions no coordinator will ever complete, and why."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kafka_txn_tools.admin import findings
from kafka_txn_tools.admin.lso_prefilter import DEFAULT_FULL_SCAN_EVERY
from kafka_txn_tools.cli import exit_codes
from kafka_txn_tools.cli.errors import KafkaTxnCommand, fail, note, report_errors, user_errors, warn
from kafka_txn_tools.cli.options import (
    OutputFormat,
    WideOpt,
    duration_ms,
)
from kafka_txn_tools.cli.session import CLUSTER, Connection, cluster_options, connect, invocation_of, now_ms

if TYPE_CHECKING:
    from kafka_txn_tools.admin.scan import ScanOptions, ScanReport
    from kafka_txn_tools.admin.share_pending import ShareHold
    from kafka_txn_tools.models import HangingTransaction, StalledGroup, StuckTransaction

EXAMPLES = """\b
The runbook:
  1. kafka-txn find-hanging --all          what holds an LSO, why, what to do
  2. run the commands printed under each row, as printed (a write asks on
     the terminal, or takes --yes)
  3. kafka-txn find-hanging --all --watch  until nothing is left to resolve
  Many at once: find-hanging --all -o plan > plan.yaml, then abort --plan.

Scope (one is required): --all, --broker-id ID, or --topic T [--partition P].
First each partition's LSO and high watermark are read from its leader; only
where the LSO is below it (and on replicas out of sync) is producer state
read. --full-scan reads it on every replica of the scope.
Rows of kind "partition": an open transaction older than the max timeout.
Hanging (no coordinator will end it): abort it. Late or prepared-2pc: a live
transaction that has held the LSO that long, named with who must end it
(its coordinator, or its external transaction manager), not counted by
--exit-code unless --count-held. Rows of kind "coordinator": PrepareCommit,
PrepareAbort or PrepareEpochFence longer than --max-prepare-time with markers
missing, or Ongoing at an exhausted epoch. With --metrics-url (each broker's
Prometheus endpoint), rows of kind "share": a transaction holding share-group
records TX_PENDING (KIP-1289) longer than --max-transaction-timeout. Each row
says why, what to do, the commands that do it (JSON: `commands`), and which
groups it holds back at the LSO. A step no command can take (a broker to
start, a broker upgrade) is said in words, with why.
--exit-code: 3 when hanging or stuck transactions or share holds were found in
a complete scan; a scan with errors exits 5 whatever it found (5 wins over 3),
and JSON/YAML say "partial": true. --watch exits 0 once clear.
"""


class FindHangingFormat(StrEnum):
    table = "table"
    json = "json"
    yaml = "yaml"
    csv = "csv"
    tsv = "tsv"
    kafka = "kafka"
    plan = "plan"


def write_plan(report: ScanReport, max_timeout_ms: int, cluster_id: str | None = None) -> str:
    """The abort plan YAML (format: kafka_txn_tools/dumps/plan.py) of the hanging results, stamped with the
    cluster it was made on and when the state was read (`abort --plan` refuses it on another cluster). A
    transaction its coordinator decided to commit is left out: its end is `kafka-txn commit` (its row's
    command), and abort would refuse it, holding back the whole plan."""
    from kafka_txn_tools.dumps.plan import AbortPlan, AbortPlanEntry, plan_yaml

    entries = [
        AbortPlanEntry(
            topic=h.partition.topic, partition=h.partition.partition,
            start_offset=h.producer.current_txn_start_offset, producer_id=h.producer.producer_id,
            producer_epoch=h.producer.producer_epoch, coordinator_epoch=h.producer.coordinator_epoch,
            reason=h.reason.value, last_timestamp_ms=h.producer.last_timestamp_ms,
            transactional_id=h.transactional_id, replica_broker_ids=list(h.brokers), commands=list(h.commands))
        for h in report.hanging if h.decision is None or not h.decision.commit
    ]
    plan = AbortPlan(entries=entries, as_of_ms=report.now_ms, max_transaction_timeout_ms=max_timeout_ms,
                     generated_by="kafka-txn find-hanging", cluster_id=cluster_id, capture_time_ms=report.now_ms)
    return plan_yaml(plan)


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


def _cells(row: Any) -> dict[str, Any]:
    from kafka_txn_tools.admin.share_pending import ShareHold
    from kafka_txn_tools.models import HangingTransaction

    if isinstance(row, HangingTransaction):
        return _partition_cells(row)
    return _share_cells(row) if isinstance(row, ShareHold) else _coordinator_cells(row)


def _commands(commands: tuple[str, ...] | list[str]) -> list[str]:
    """`run:`, then each command on its own line, indented under its row (cli/render keeps these lines whole)."""
    return ["  run:", *(f"    {c}" for c in commands)] if commands else []


in_order = findings.in_order  # the printed order is the document's


def _block(row: Any) -> list[str]:
    """One row's lines under the table: its verdict detail, what to do and why, and the commands that do it."""
    from kafka_txn_tools.admin.dependent_rows import row_name
    from kafka_txn_tools.admin.share_pending import ShareHold
    from kafka_txn_tools.models import HangingTransaction

    if isinstance(row, HangingTransaction):
        lines = [f"{row_name(row)}: {row.detail}"]
    elif isinstance(row, ShareHold):
        lines = [f"{row_name(row)} (broker {row.node}): holds {row.records} records of share group "
                 f"{row.group!r} TX_PENDING"]
    else:
        lines = [f"{row_name(row)}: {row.detail}",
                 *(f"  {p.partition} (leader {p.leader}): {p.detail}" for p in row.pending_partitions)]
    action = row.to_row()["action"] if isinstance(row, ShareHold) else row.action
    return [*lines, f"  do: {action}", *_commands(row.commands)]


def _next_steps(report: ScanReport) -> str:
    """After the table: each row's block, in the order its commands run."""
    lines = [line for row in in_order(report) for line in _block(row)]
    return "\n" + "\n".join(lines) + "\n" if lines else ""


def unreported_lines(report: ScanReport, scope: Any, invocation: Any, max_timeout_ms: int,
                     max_prepare_ms: int) -> list[str]:
    """What the scan saw and did not report (younger than its thresholds), why, and the command that reports it."""
    from kafka_txn_tools.admin.hanging import unreported_summary

    where = ["--all"] if scope.all else [
        *(["--broker-id", str(scope.broker_id)] if scope.broker_id is not None else []),
        *(["--topic", scope.topic] if scope.topic is not None else []),
        *(["--partition", str(scope.partition)] if scope.partition is not None else [])]
    return unreported_summary(report.young_holds, report.young_prepares, max_timeout_ms, max_prepare_ms,
                              invocation.line("find-hanging", *where, "--max-transaction-timeout", "0"),
                              invocation.line("find-hanging", *where, "--max-prepare-time", "0"))


def held_back_note(report: ScanReport, with_metrics: bool) -> str:
    """The footnote that says why HELD BACK shows no share group for a transaction staging share
    acknowledgements: no Kafka API lists them; the brokers' metrics do (--metrics-url)."""
    from kafka_txn_broker.formats.partitioning import SHARE_STATE_TOPIC

    if with_metrics or not any(r.partition.topic == SHARE_STATE_TOPIC for r in report.results):
        return ""
    return (f"note: HELD BACK lists groups at the LSO; the share groups whose records a row on {SHARE_STATE_TOPIC} "
            "holds TX_PENDING (KIP-1289) are known only from the brokers' metrics, which this scan did not read: "
            "add --metrics-url with each broker's Prometheus endpoint to name them\n")


def empty_message(report: ScanReport) -> str:
    """What an empty result means: never a claim about replicas that were not read. (Coordinator rows
    never come with an empty result: the counts below are the partition side's.)"""
    if report.scanned_replicas and not report.read_replicas:
        return f"no result: none of the {report.scanned_replicas} partition replicas asked could be read"
    if report.unread_replicas:
        return (f"no hanging transactions found in the {report.read_replicas} of {report.scanned_replicas} "
                f"partition replicas that could be read ({report.unread_replicas} could not be)")
    read = f"{report.read_replicas} partition replicas read"
    first = report.first_pass
    if first is not None and not first.full:
        read = f"{first.clear} of {first.partitions} partitions clear by their LSO, {read}"
    if report.partial:
        return f"no hanging transactions confirmed ({read}; some candidates could not be classified)"
    return f"no hanging transactions found ({read})"


def _emit(report: ScanReport, fmt: FindHangingFormat, max_timeout_ms: int, max_prepare_ms: int, wide: bool,
          cluster_id: str | None = None, unreported: list[str] | None = None, footnote: str = "") -> None:
    from kafka_txn_tools.admin.advice import is_command_line
    from kafka_txn_tools.cli.render import Column, Output, human_duration, none_as_dash
    from kafka_txn_tools.cli.upstream.format import HANGING_HEADERS, hanging_row

    if fmt is FindHangingFormat.plan:
        typer.echo(write_plan(report, max_timeout_ms, cluster_id), nl=False)
        return
    doc = findings.findings_document(report, max_timeout_ms, max_prepare_ms)
    extra = {k: v for k, v in doc.items() if k not in (findings.ROWS, "errors")}
    Output(
        kind=findings.ROWS, rows=doc[findings.ROWS],
        table_rows=[_cells(row) for row in in_order(report)],
        columns=[Column("kind", "KIND", drop=8), Column("where", "PARTITIONS"),
                 Column("producer_id", "PRODUCER ID", drop=2), Column("producer_epoch", "EPOCH", drop=4),
                 Column("start_offset", "START OFFSET", none_as_dash), Column("age", "AGE", human_duration, drop=3),
                 Column("transactional_id", "TRANSACTIONAL ID", none_as_dash, drop=5), Column("reason", "REASON"),
                 Column("lso", "LSO", none_as_dash, drop=6), Column("high_watermark", "HW", none_as_dash, drop=7),
                 Column("held_back", "HELD BACK", none_as_dash, drop=9)],
        kafka_headers=HANGING_HEADERS, kafka_rows=[hanging_row(h, report.now_ms) for h in report.results],
        errors=doc["errors"], extra=extra,
        empty_message="\n".join([empty_message(report), *(unreported or [])]),
        footer=_next_steps(report) + footnote, verbatim=is_command_line,
    ).emit(OutputFormat(fmt.value), wide=wide)


@cluster_options
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
        "--include-late", hidden=True,
        help="kept for scripts: late-but-live and prepared 2PC transactions are always listed")] = False,
    exit_code: Annotated[bool, typer.Option(
        "--exit-code", help="exit 3 when hanging or stuck transactions or share holds are found (5 when the scan "
                            "was partial)")] = False,
    count_held: Annotated[bool, typer.Option(
        "--count-held", help="--exit-code and --watch also count the rows held by live transactions (late but "
                             "live, prepared 2PC), which are listed but not counted otherwise")] = False,
    watch: Annotated[str | None, typer.Option(
        "--watch", metavar="[INTERVAL]",
        help="scan again every INTERVAL (default 10s) until nothing is left to resolve, saying what appeared and "
             "what was resolved (JSON lines when not on a terminal); exits 0 once clear")] = None,
    conn: Connection = CLUSTER,
    output: Annotated[FindHangingFormat | None, typer.Option(
        "--output", "-o", help="table, json, yaml, csv, tsv, kafka, or plan (abort plan YAML for "
                               "`abort --plan`)")] = None,
    wide: WideOpt = False,
    full_scan: Annotated[bool, typer.Option(
        "--full-scan", help="ask every replica for its producer state, without the first pass that reads each "
                            "partition's LSO and high watermark from its leader and asks only where a transaction "
                            "can hang")] = False,
    full_scan_every: Annotated[int | None, typer.Option(
        "--full-scan-every", metavar="N", min=0,
        help="with --watch: every N-th round is a full scan, which also finds what the first pass cannot (a "
             "follower whose producer state diverged from its leader's, a high watermark stuck longer than the "
             f"max timeout); 0: never. Default {DEFAULT_FULL_SCAN_EVERY}")] = None,
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
    """Find what holds a partition's LSO or a transactional id: open transactions older than the max timeout
    that no coordinator will complete (and the live ones that hold an LSO that long), transactions their
    coordinator holds in a Prepare state (or at an exhausted epoch) and cannot finish. Each result says why,
    what to do, the commands that do it, and who it holds back (groups at the LSO)."""
    from kafka_txn_tools.admin.acl_probe import scan_warning
    from kafka_txn_tools.admin.scan import ScanOptions, Scope, find_hanging
    from kafka_txn_tools.admin.scan_loop import ScanLoop
    from kafka_txn_tools.cli.progress import progress_bar

    del include_late  # always on: what holds an LSO is never hidden
    max_timeout_ms = duration_ms(max_timeout, "--max-transaction-timeout", bare_unit="m")
    max_prepare_ms = duration_ms(max_prepare, "--max-prepare-time", bare_unit="s")
    interval_s = duration_ms(watch, "--watch", bare_unit="s", allow_zero=False) / 1000 if watch else None
    fmt = output or FindHangingFormat.table
    if interval_s is not None and fmt not in (FindHangingFormat.table, FindHangingFormat.json):
        fail("--watch prints lines for a person or JSON lines: use it with -o table or -o json", exit_codes.USAGE)
    if full_scan_every is not None and (interval_s is None or full_scan):
        fail("--full-scan-every sets how often --watch's rounds scan in full: use it with --watch, without "
             "--full-scan", exit_codes.USAGE)
    scope = Scope(all=scan_all, broker_id=broker_id, topic=topic, partition=partition)
    with user_errors():
        scope.validate()
        began = now_ms()
        with connect(conn) as client:
            every = DEFAULT_FULL_SCAN_EVERY if full_scan_every is None else full_scan_every
            options = ScanOptions(max_timeout_ms, True, max_prepare_ms=max_prepare_ms,
                                  invocation=invocation_of(client, conn), first_pass=not full_scan)
            loop = ScanLoop(every)  # --watch's rounds share it; a one-off scan uses it once

            def scan() -> ScanReport:
                with progress_bar("scanning producer state") as (advance, set_total):
                    report = find_hanging(client, scope, now_ms, options, progress=advance, on_total=set_total,
                                          loop=loop)
                if metrics_url:
                    _add_share_holds(client, report, metrics_url, scope, max_timeout_ms, conn.timeout, options)
                _add_upgrades(client, report, options)
                _link(report)
                return report

            if interval_s is not None:
                raise typer.Exit(_watch(scan, interval_s, fmt, count_held))
            report = scan()
            acl_warning = scan_warning(client, scope, report)  # ACLs may have hidden ids or topics
            # A plan records the cluster it was made on: `abort --plan` refuses it on another one.
            cluster_id = client.metadata([]).cluster_id if fmt is FindHangingFormat.plan else None
            cluster = client.cluster_name if history is not None else ""
        if history is not None:
            _record_history(history, cluster, scope, report, now_ms() - began)
    report_errors(report.errors)
    unreported = unreported_lines(report, scope, options.invocation, max_timeout_ms, max_prepare_ms)
    if in_order(report) or fmt is not FindHangingFormat.table:
        report.notes += [" ".join(line.split()) for line in unreported]  # the summary's own lines only in a table
        unreported = []
    for text in report.notes:
        note(text)
    if acl_warning is not None:
        warn(acl_warning)
    _emit(report, fmt, max_timeout_ms, max_prepare_ms, wide, cluster_id, unreported,
          held_back_note(report, bool(metrics_url)))
    if report.partial:
        raise typer.Exit(exit_codes.PARTIAL)  # wins over FOUND: part of the answer is missing
    if exit_code and report.counted(count_held):
        raise typer.Exit(exit_codes.FOUND)


def _watch(scan: Any, interval_s: float, fmt: FindHangingFormat, count_held: bool) -> int:
    import sys

    from kafka_txn_tools.cli import watch
    from kafka_txn_tools.cli.terminal import table_width

    json_lines = fmt is FindHangingFormat.json or not sys.stdout.isatty()
    return watch.Watch(scan, interval_s, sys.stdout, json_lines, count_held, sleep=watch_sleep,
                       width=table_width(sys.stdout)).run()


def watch_sleep(seconds: float) -> None:
    """--watch's pause between scans (a test replaces it)."""
    import time

    time.sleep(seconds)


def _add_share_holds(client: Any, report: ScanReport, urls: list[str], scope: Any, max_timeout_ms: int,
                     timeout: str | None, options: ScanOptions) -> None:
    from kafka_txn_tools.admin import share_pending

    timeout_s = duration_ms(timeout, "--timeout", bare_unit="s") / 1000 if timeout else 10.0
    found, errors = share_pending.read_metrics(urls, timeout_s)
    held = share_pending.past(share_pending.in_scope(found, scope.topic, scope.partition), max_timeout_ms)
    report.errors += errors
    ids = sorted({h.transactional_id for h in held if h.transactional_id})
    described = client.describe_transactions(ids) if ids else None
    if described is not None:
        report.errors += described.errors
    now = now_ms()
    report.share = [share_pending.advise(
        h, described.descriptions.get(h.transactional_id) if described and h.transactional_id else None,
        bool(described and h.transactional_id in described.not_found), now, options.invocation, report.results)
        for h in held]


def _add_upgrades(client: Any, report: ScanReport, options: ScanOptions) -> None:
    """Where a row's remaining step is a broker upgrade the embedded broker can take, it is a command."""
    from kafka_txn_tools.admin.emulation import with_upgrades

    report.stuck = with_upgrades(client, report.stuck, options.invocation)


def _link(report: ScanReport) -> None:
    """The rows of one transaction linked (admin/dependent_rows.py): the dependents say which row clears them."""
    from kafka_txn_tools.admin.share_pending import ShareHold
    from kafka_txn_tools.models import HangingTransaction, StuckTransaction

    rows = in_order(report)
    report.results = [r for r in rows if isinstance(r, HangingTransaction)]
    report.stuck = [r for r in rows if isinstance(r, StuckTransaction)]
    report.share = [r for r in rows if isinstance(r, ShareHold)]


DEFAULT_WATCH = "10s"


class FindHangingCommand(KafkaTxnCommand):
    """find-hanging's command: `--watch` takes an optional INTERVAL (`--watch` alone is every 10 s)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        given = []
        for i, arg in enumerate(args):
            given.append(arg)
            if arg == "--watch" and (i + 1 == len(args) or args[i + 1].startswith("-")):
                given.append(DEFAULT_WATCH)
        return super().parse_args(ctx, given)


def _record_history(path: Path, cluster: str, scope: Any, report: ScanReport, duration_ms: int) -> None:
    """--history: the scan's hanging results (never --include-late's live ones) into the incident history; a
    history that cannot be written is a warning, never a change of the scan's result."""
    import sqlite3

    from kafka_txn_tools.admin.audit import default_path
    from kafka_txn_tools.history.incidents import ScanRecord, Unread, incident_rows, record, scope_covers
    from kafka_txn_tools.history.store import HistoryStore

    rows = incident_rows(findings.finding_rows(report))
    scan = ScanRecord(cluster, report.now_ms, duration_ms, not report.partial, rows, scope_covers(scope),
                      source="find-hanging", unread=Unread.of(report.errors))
    try:
        with HistoryStore(path) as store:
            record(store, scan, default_path())
    except (sqlite3.Error, OSError) as exc:
        warn(f"could not record the results in the history {path}: {exc}")


def register(app: typer.Typer) -> None:
    app.command("find-hanging", cls=FindHangingCommand,
                epilog=EXAMPLES + "\n" + exit_codes.HELP_TEXT)(find_hanging_command)
