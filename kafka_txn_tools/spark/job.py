"""The sweep job: ingest -> normalize -> classify -> write. Entry: `run_sweep`, or

    python -m kafka_txn_tools.spark.job INPUT... --out DIR [--master M] [--max-transaction-timeout 15m]
                                       [--as-of MS] [--include-late] [--executor-python PATH]
    spark-submit .../kafka_txn_tools/spark/job.py INPUT... --out DIR      (master from spark-submit)

Outputs in DIR: late_transactions/ (Parquet), late_transactions.csv, replica_divergence.csv,
stuck_transactions.json (coordinator-side, find-hanging's rows of kind "coordinator"), summary.json,
abort-plan.yaml (every hanging transaction but those their coordinator committed, which summary.json's
left_out_of_plan lists with their `kafka-txn commit`), report.html. The producer table is only scanned by executors; the
driver gets the small sets gather.py reduces it to (the partitions with late transactions, their
replicas and open transactions, the coordinator rows that concern them) and judges them in
classify.py.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_txn_broker.formats.transactions import DEFAULT_MAX_TRANSACTION_TIMEOUT_MS
from kafka_txn_tools.dumps.plan import AbortPlan, AbortPlanEntry, write_plan
from kafka_txn_tools.durations import parse_duration_ms
from kafka_txn_tools.spark.executors import check_executors, ship_package
from kafka_txn_tools.spark.origin import Origin, choose
from kafka_txn_tools.spark.session import get_session, require_java

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from kafka_txn_tools.admin.advice import Invocation
    from kafka_txn_tools.spark.classify import Analysis, SweepParams
    from kafka_txn_tools.spark.gather import Gathered
    from kafka_txn_tools.spark.ingest import Ingested


class SweepError(RuntimeError):
    """The sweep cannot run on the given inputs."""


@dataclass
class SweepResult:
    out_dir: Path
    summary: dict[str, Any]
    rows: list[dict[str, Any]]  # the reported transactions (late_transactions)
    stuck: list[dict[str, Any]] = field(default_factory=list)  # coordinator-side (stuck_transactions.json)

    @property
    def hanging(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if r["verdict"] == "hanging"]


def _capture_and_brokers(ingested: Ingested) -> tuple[int | None, set[int]]:
    from pyspark.sql import functions as F

    captures = list(ingested.known_capture_ms)
    brokers = set(ingested.known_brokers)
    if ingested.scan_for_capture:
        frame = ingested.scan_for_capture[0]
        for other in ingested.scan_for_capture[1:]:
            frame = frame.unionByName(other)
        row = frame.agg(F.max("capture_time_ms").alias("c"), F.collect_set("broker_id").alias("b")).first()
        if row is not None and row["c"] is not None:
            captures.append(int(row["c"]))
        if row is not None:
            brokers.update(int(b) for b in row["b"] or [])
    return (max(captures) if captures else None), brokers


def _write_csv(path: Path, rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as out:
        writer = csv.DictWriter(out, fieldnames=list(columns), extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: _cell(v) for k, v in row.items()})


def _cell(value: Any) -> Any:
    """A CSV cell: none is empty; a list (the commands) one item a line, so each line is a whole command."""
    if value is None:
        return ""
    if isinstance(value, dict):  # the coordinator's decision
        return json.dumps(value, sort_keys=True)
    return "\n".join(map(str, value)) if isinstance(value, list) else value


def _plan(rows: Sequence[dict[str, Any]], now: int, timeout: int, cluster_id: str | None = None,
          capture_ms: int | None = None) -> AbortPlan:
    entries = [
        AbortPlanEntry(
            topic=r["topic"],
            partition=int(r["partition"]),
            start_offset=int(r["start_offset"]),
            producer_id=int(r["producer_id"]),
            producer_epoch=int(r["producer_epoch"]),
            coordinator_epoch=int(r["coordinator_epoch"]),
            reason=r["reason"],
            last_timestamp_ms=int(r["last_timestamp_ms"]),
            transactional_id=r["transactional_id"],
            leader_broker_id=None if r["leader_broker_id"] is None else int(r["leader_broker_id"]),
            replica_broker_ids=[int(b) for b in (r["open_on_brokers"] or "").split(",") if b],
            commands=list(r.get("commands") or []),
        )
        for r in rows
        # Never late-but-live ones, never unverified ones; nor one its coordinator committed: its end is
        # `kafka-txn commit` (its row's command), and abort would refuse it, holding back the whole plan.
        if r["verdict"] == "hanging" and not committed(r)
    ]
    return AbortPlan(entries=entries, as_of_ms=now, max_transaction_timeout_ms=timeout, cluster_id=cluster_id,
                     capture_time_ms=capture_ms)


def committed(row: dict[str, Any]) -> bool:
    from kafka_txn_tools.spark.classify import committed as decided_commit

    return decided_commit(row)


def left_out_of_plan(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The hanging transactions the plan leaves out, each with why and the commands that end them instead."""
    return [{"topic": r["topic"], "partition": r["partition"], "start_offset": r["start_offset"],
             "producer_id": r["producer_id"], "transactional_id": r["transactional_id"],
             "why": (f"its coordinator committed {r['transactional_id']!r} with this partition (PrepareCommit at "
                     f"__transaction_state-{r['coordinator_decision']['transaction_state_partition']} offset "
                     f"{r['coordinator_decision']['offset']}): an abort would discard records the application was "
                     "told were committed, and abort --plan would refuse it; end it with kafka-txn commit"),
             "commands": list(r.get("commands") or [])}
            for r in rows if committed(r)]


def plan_cluster_id(specs: Sequence[Any]) -> str | None:
    """The cluster every input comes from (a dump's manifest, log dirs' meta.properties); None when an
    input does not say (kafka-dump-log.sh text): the plan then records none, and applying it says so.
    Inputs of different clusters are refused: one sweep, one cluster."""
    ids = {i for spec in specs for i in spec.cluster_ids}
    if len(ids) > 1:
        raise SweepError(f"the inputs come from {len(ids)} clusters ({', '.join(sorted(ids))}): sweep each cluster "
                         "on its own, so that its abort plan is for one cluster")
    if not ids or any(not spec.cluster_ids for spec in specs):
        return None
    return ids.pop()


def _count_by(rows: Sequence[dict[str, Any]], key: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for row in rows:
        name = str(row[key])
        out[name] = out.get(name, 0) + 1
    return dict(sorted(out.items()))


def run_sweep(
    inputs: Sequence[str],
    out_dir: str | os.PathLike[str],
    master: str | None = "local[2]",
    max_transaction_timeout_ms: int = DEFAULT_MAX_TRANSACTION_TIMEOUT_MS,
    as_of_ms: int | None = None,
    include_late: bool = False,
    spark: SparkSession | None = None,
    max_prepare_ms: int | None = None,
    executor_python: str | None = None,
    invocation: Invocation | None = None,
    history: str | os.PathLike[str] | None = None,
    env_bootstrap: str | None = None,
) -> SweepResult:
    """Sweep `inputs` (dump dirs, log-dir trees, dump-log text files) and write the outputs to out_dir.
    `executor_python`: the interpreter a cluster's executors run (local workers run this one). `history`: a
    `kafka-txn history --export` directory, whose trends per cluster and topic the report shows.
    `invocation`: the connection options given to the sweep, over what a dump recorded, over `env_bootstrap`
    ($KAFKA_BOOTSTRAP_SERVERS): the printed commands carry them (spark/origin.py)."""
    from kafka_txn_tools.spark import classify as C
    from kafka_txn_tools.spark.gather import gather
    from kafka_txn_tools.spark.history import check_export
    from kafka_txn_tools.spark.history import trends as history_trends
    from kafka_txn_tools.spark.ingest import classify_input, read_inputs

    if max_transaction_timeout_ms <= 0:
        raise SweepError(f"max transaction timeout must be positive, got {max_transaction_timeout_ms} ms")
    specs = [classify_input(path) for path in inputs]  # bad paths fail before Spark starts
    cluster_id = plan_cluster_id(specs)
    origin = choose(invocation, [spec.connection for spec in specs], cluster_id, env_bootstrap)
    if history is not None:
        check_export(history)
    require_java()
    from pyspark.sql import SparkSession

    # Reuse a session someone else started (tests, notebooks) and leave it running; stop our own.
    active = spark if spark is not None else SparkSession.getActiveSession()
    own = active is None
    session = active if active is not None else get_session(master, executor_python=executor_python)
    try:
        if own and not str(session.sparkContext.master).startswith("local"):
            ship_package(session)
            check_executors(session)
        ingested = read_inputs(session, inputs)
        capture, brokers = _capture_and_brokers(ingested)
        now = as_of_ms if as_of_ms is not None else capture
        if now is None:
            raise SweepError("the inputs hold no rows, so there is no capture time to judge ages by: pass --as-of MS")
        params = C.SweepParams(now, max_transaction_timeout_ms, include_late)
        if max_prepare_ms is not None:
            params = replace(params, max_prepare_ms=max_prepare_ms)
        params = replace(params, invocation=origin.invocation)
        # Spark reduces the inputs to the few partitions that matter; the verdicts are plain Python.
        gathered = gather(ingested.producers, ingested.transactions, params, decisions=ingested.decisions)
        analysis = C.analyze(gathered.open_rows, gathered.replicas, gathered.coordinators, params, gathered.stuck,
                             gathered.owners, gathered.decisions)
        trends = history_trends(session, history, now) if history is not None else None
        return _write_outputs(Path(out_dir), ingested, params, as_of_ms is not None, brokers, gathered, analysis,
                              origin, capture, trends)
    finally:
        if own:
            session.stop()


def _result_schema() -> Any:
    import pyarrow as pa

    types = {
        "kind": pa.string(),
        "last_known_transactional_id": pa.string(),
        "topic": pa.string(),
        "verdict": pa.string(),
        "reason": pa.string(),
        "transactional_id": pa.string(),
        "coordinator_state": pa.string(),
        "open_on_brokers": pa.string(),
        "divergence": pa.string(),
        "missing_on_brokers": pa.string(),
        "source": pa.string(),
        "leader_inferred": pa.bool_(),
        "metric_late": pa.bool_(),
        "partition": pa.int32(),
        "producer_epoch": pa.int32(),
        "coordinator_epoch": pa.int32(),
        "coordinator_id": pa.int32(),
        "coordinator_producer_epoch": pa.int32(),
        "leader_broker_id": pa.int32(),
        "action": pa.string(),
        "commands": pa.list_(pa.string()),
        "coordinator_decision": pa.struct([
            ("outcome", pa.string()), ("transactional_id", pa.string()), ("producer_id", pa.int64()),
            ("producer_epoch", pa.int32()), ("decided_ms", pa.int64()), ("transaction_state_partition", pa.int32()),
            ("offset", pa.int64())]),
    }
    from kafka_txn_tools.spark.classify import OUTPUT_COLUMNS

    return pa.schema([pa.field(c, types.get(c, pa.int64())) for c in OUTPUT_COLUMNS])


def _write_late_transactions(out: Path, rows: list[dict[str, Any]]) -> None:
    """The reported rows are few (the driver holds them anyway for the plan): write them directly."""
    import shutil

    import pyarrow as pa
    import pyarrow.parquet as pq

    from kafka_txn_tools.spark.classify import OUTPUT_COLUMNS

    target = out / "late_transactions"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=_result_schema()), target / "part-00000.parquet")
    _write_csv(out / "late_transactions.csv", rows, OUTPUT_COLUMNS)


def _write_outputs(
    out: Path,
    ingested: Ingested,
    params: SweepParams,
    as_of_given: bool,
    brokers: set[int],
    gathered: Gathered,
    analysis: Analysis,
    origin: Origin | None = None,
    capture_ms: int | None = None,
    trends: dict[str, Any] | None = None,
) -> SweepResult:
    from kafka_txn_tools.spark import classify as C
    from kafka_txn_tools.spark.report import render_report

    out.mkdir(parents=True, exist_ok=True)
    origin = origin or Origin(params.invocation)
    candidates = analysis.verdicts  # late by find-hanging's rule, in report order
    rows = C.reported(candidates, params.include_late)
    stuck = [s.to_row() for s in analysis.stuck]
    if not origin.reaches_cluster:  # a command without a cluster is refused as printed: print none (origin.py)
        rows = [{**r, "commands": []} for r in rows]
        stuck = [{**s, "commands": []} for s in stuck]
    _write_late_transactions(out, rows)
    divergence_rows = [
        {**asdict(d), "broker_ids": ",".join(str(b) for b in d.broker_ids)} for d in analysis.divergence
    ]
    _write_csv(out / "replica_divergence.csv", divergence_rows, [*C.TXN_KEY, "kind", "leader_broker_id", "broker_ids"])
    per_broker = C.late_partition_counts(analysis.late)
    brokers |= {c.leader_broker_id for c in per_broker}
    late_counts = {c.leader_broker_id: c.late_partitions for c in per_broker}
    plan = _plan(rows, params.now_ms, params.max_transaction_timeout_ms, origin.cluster_id, capture_ms)
    plan.connection = origin.plan_connection()
    write_plan(plan, out / "abort-plan.yaml")
    (out / "stuck_transactions.json").write_text(json.dumps(stuck, indent=2) + "\n", encoding="utf-8")
    histogram = gathered.age_histogram
    summary = {
        "as_of_ms": params.now_ms,
        "as_of_given": as_of_given,
        "cluster_id": origin.cluster_id,
        "cluster": origin.to_json(),
        "apply_plan": apply_plan_commands(out / "abort-plan.yaml", origin) if plan.entries else [],
        "left_out_of_plan": left_out_of_plan(rows),
        "max_transaction_timeout_ms": params.max_transaction_timeout_ms,
        "max_prepare_time_ms": params.max_prepare_ms,
        "include_late": params.include_late,
        "inputs": [spec.describe() for spec in ingested.inputs],
        "producer_rows": ingested.known_producer_rows
        if ingested.known_producer_rows is not None
        else ingested.producers.count(),
        "open_transactions": sum(histogram.values()),
        "candidates": len(candidates),
        "hanging": sum(1 for r in candidates if r["verdict"] == "hanging"),
        "late_live": sum(1 for r in candidates if r["verdict"] == "late"),
        "unverified": sum(1 for r in candidates if r["verdict"] == "unverified"),
        "reported": len(rows),
        "stuck": len(stuck),
        "stuck_by_reason": _count_by(stuck, "reason"),
        "counts_by_reason": _count_by(candidates, "reason"),
        "late_partitions_by_broker": {str(b): late_counts.get(b, 0) for b in sorted(brokers)},
        "hanging_by_leader_broker": _count_by([r for r in rows if r["verdict"] == "hanging"], "leader_broker_id"),
        "leader_inferred_partitions": sum(c.inferred_leaders for c in per_broker),
        "divergences": len(divergence_rows),
        "divergence_by_kind": _count_by(divergence_rows, "kind"),
        "dump_errors": _dump_errors(ingested),
        "history": trends,
        "outputs": {name: str(out / name) for name in OUTPUT_FILES},
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n", encoding="utf-8")
    (out / "report.html").write_text(render_report(summary, rows, histogram, stuck=stuck,
                                                               divergence=divergence_rows), encoding="utf-8")
    return SweepResult(out, summary, rows, stuck)


def apply_plan_commands(plan: Path, origin: Origin) -> list[str]:
    """The plan's check and its application, as complete command lines; none when no cluster is known (a
    command without one is refused as printed: the sweep says in prose what to add instead)."""
    if not origin.reaches_cluster:
        return []
    inv, path = origin.invocation, str(plan.resolve())
    return [inv.line("abort", "--plan", path, "--dry-run"), inv.line("abort", "--plan", path)]


OUTPUT_FILES = (
    "late_transactions",
    "late_transactions.csv",
    "replica_divergence.csv",
    "stuck_transactions.json",
    "summary.json",
    "abort-plan.yaml",
    "report.html",
)


def _dump_errors(ingested: Ingested) -> list[dict[str, Any]]:
    """Partial failures the dumps recorded, counted per broker and error."""
    from kafka_txn_tools.dumps.schema import ERRORS, dump_files

    if not any(spec.kind == "dump" and dump_files(spec.path, ERRORS)[1] for spec in ingested.inputs):
        return []  # nothing recorded: skip a Spark job over empty tables
    rows = ingested.errors.groupBy("broker_id", "api", "error_name").count().orderBy("broker_id", "api").collect()
    return [{**r.asDict(), "count": int(r["count"])} for r in rows]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kafka_txn_tools.spark.job", description="Hanging-transaction sweep.")
    parser.add_argument("inputs", nargs="+", help="dump dirs, Kafka log-dir trees, kafka-dump-log.sh text files")
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--master", default=None, help="Spark master (default: spark-submit's, else local[2])")
    parser.add_argument("--max-transaction-timeout", default="15m", help="e.g. 15m, 900s (bare number = minutes)")
    parser.add_argument("--as-of", type=int, default=None, help="judge ages at this epoch ms instead of capture time")
    parser.add_argument("--include-late", action="store_true", help="also report late transactions still live")
    parser.add_argument("--max-prepare-time", default="1m", help="stuck in a Prepare state after this (1m, 90s)")
    parser.add_argument("--executor-python", default=None, metavar="PATH",
                        help="the Python a cluster's executors run (default: spark-submit's spark.pyspark.python, "
                             "else $PYSPARK_PYTHON, else this Python)")
    args = parser.parse_args(argv)
    master = args.master
    if master is None and "PYSPARK_GATEWAY_PORT" not in os.environ:
        master = "local[2]"  # plain `python -m`: no spark-submit around us
    try:
        timeout = parse_duration_ms(args.max_transaction_timeout)
        prepare = parse_duration_ms(args.max_prepare_time, bare_unit="s")
        result = run_sweep(args.inputs, args.out, master, timeout, args.as_of, args.include_late,
                           max_prepare_ms=prepare, executor_python=args.executor_python)
    except (ValueError, RuntimeError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps({k: result.summary[k] for k in ("as_of_ms", "hanging", "late_live", "reported", "stuck")}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
